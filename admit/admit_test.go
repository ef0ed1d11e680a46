package admit_test

import (
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/glidepath/glidepath/admit"
)

func TestAdmitRefusesWhatItCannotServeAtOnce(t *testing.T) {
	t0 := time.Now()
	for _, tc := range []struct {
		name    string
		cfg     admit.Config
		running int           // runs admitted before
		waited  time.Duration // from submission to the door
		want    *admit.AtCapacityError
	}{
		{name: "the zero config admits any number of runs", running: 100_000},
		{name: "the zero config admits a run however late it comes", waited: time.Hour},
		{name: "a run under the limit is admitted", cfg: admit.Config{Limit: 3}, running: 2},
		{name: "a run at the limit is refused", cfg: admit.Config{Limit: 3}, running: 3,
			want: &admit.AtCapacityError{Running: 3, Limit: 3}},
		{name: "a run that waited up to Late is admitted", cfg: admit.Config{Late: 100 * time.Millisecond}, waited: 100 * time.Millisecond},
		{name: "a run that waited past Late is refused", cfg: admit.Config{Late: 100 * time.Millisecond}, waited: 101 * time.Millisecond,
			want: &admit.AtCapacityError{Waited: 101 * time.Millisecond, Late: 100 * time.Millisecond}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, err := admit.New(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			for range tc.running {
				if err := l.Admit(t0, t0); err != nil {
					t.Fatalf("filling: %v", err)
				}
			}
			err = l.Admit(t0.Add(tc.waited), t0)
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Admit: %v, want admitted", err)
				}
				if got := l.Running(); got != tc.running+1 {
					t.Errorf("Running %d after admitting, want %d", got, tc.running+1)
				}
				l.Done()
				if got := l.Running(); got != tc.running {
					t.Errorf("Running %d after Done, want %d", got, tc.running)
				}
				return
			}
			if !errors.Is(err, admit.ErrAtCapacity) {
				t.Fatalf("Admit: %v, want ErrAtCapacity", err)
			}
			ae, ok := errors.AsType[*admit.AtCapacityError](err)
			if !ok || *ae != *tc.want {
				t.Fatalf("Admit: %#v, want %#v", err, tc.want)
			}
			if got := l.Running(); got != tc.running {
				t.Errorf("Running %d after a refusal, want %d: a refused run holds no place", got, tc.running)
			}
		})
	}
}

func TestAFreedPlaceIsGivenToTheNextRun(t *testing.T) {
	l, err := admit.New(admit.Config{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if err := l.Admit(now, now); err != nil {
		t.Fatal(err)
	}
	if err := l.Admit(now, now); !errors.Is(err, admit.ErrAtCapacity) {
		t.Fatalf("second run: %v, want ErrAtCapacity", err)
	}
	l.Done()
	if err := l.Admit(now, now); err != nil {
		t.Fatalf("after Done: %v, want admitted", err)
	}
}

// Runs that come together never get more places than the limit, and a
// refused one never takes a place from another.
func TestRunsThatComeAtOnceGetExactlyTheLimit(t *testing.T) {
	const limit, runs = 10, 200
	l, err := admit.New(admit.Config{Limit: limit})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	admitted := 0
	now := time.Now()
	for range runs {
		wg.Go(func() {
			if l.Admit(now, now) == nil {
				mu.Lock()
				admitted++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if admitted != limit || l.Running() != limit {
		t.Errorf("%d admitted, %d running, want %d", admitted, l.Running(), limit)
	}
}

func TestANilLimiterAdmitsEveryRun(t *testing.T) {
	var l *admit.Limiter
	now := time.Now()
	if err := l.Admit(now, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	l.Done()
	if l.Running() != 0 || l.Config() != (admit.Config{}) {
		t.Errorf("nil Limiter: Running %d, Config %+v; want 0 and the zero Config", l.Running(), l.Config())
	}
}

func TestNewRejectsANegativeField(t *testing.T) {
	for _, tc := range []struct {
		name  string
		cfg   admit.Config
		field string
	}{
		{"a negative limit is an error", admit.Config{Limit: -1}, "limit"},
		{"a negative wait is an error", admit.Config{Late: -time.Second}, "late"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := admit.New(tc.cfg)
			ce, ok := errors.AsType[*admit.ConfigError](err)
			if !ok || ce.Field != tc.field {
				t.Fatalf("New: %v, want a *ConfigError of field %s", err, tc.field)
			}
		})
	}
}
