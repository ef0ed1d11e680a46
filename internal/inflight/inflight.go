// Package inflight keeps count of goroutines that outlive the call that
// started them and lets their owner wait for them with a deadline, which a
// sync.WaitGroup cannot do without a goroutine of its own that would then
// outlive the owner too. A run's cancels, whose answers it does not wait
// for, and local tool functions that ignored their context are such
// goroutines.
package inflight

import (
	"context"
	"sync"
)

// A Group counts the goroutines started with [Group.Go] that have not
// returned, and the work counted with [Group.Add] that is not Done. The zero Group is ready to use; it must not be copied after
// first use.
type Group struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n drops to zero; made when n leaves zero
}

// Go runs f on a new goroutine, counted until f returns.
func (g *Group) Go(f func()) {
	g.Add()
	go func() {
		defer g.Done()
		f()
	}()
}

// Add counts one more piece of work in flight, which [Group.Done] ends:
// work that runs on the caller's own goroutine, such as a call made while
// the owner may be closing.
func (g *Group) Add() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n == 0 {
		g.idle = make(chan struct{})
	}
	g.n++
}

// Done ends one piece of work counted by [Group.Add] or [Group.Go].
func (g *Group) Done() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.n--; g.n == 0 {
		close(g.idle)
	}
}

// Idle reports whether no goroutine of g is running now: a caller about to
// wait on a context it would make for the wait needs none (issue 25: a
// run that ends with nothing in flight made a context and a timer for
// each wait).
func (g *Group) Idle() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.n == 0
}

// Wait blocks until no goroutine of g is running, or ctx ends; then it
// returns context.Cause(ctx). A goroutine started while Wait waits is
// waited for too.
func (g *Group) Wait(ctx context.Context) error {
	for {
		g.mu.Lock()
		n, idle := g.n, g.idle
		g.mu.Unlock()
		if n == 0 {
			return nil
		}
		select {
		case <-idle:
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}
