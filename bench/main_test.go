package bench_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glidepath/glidepath/bench/internal/hog"
	"github.com/glidepath/glidepath/sim"
)

// simChildEnv, when set, makes the test binary a sim server instead: the
// idle-run benchmark starts one in a process of its own, so that what it
// measures is the runs' memory alone and not the server's side of every
// connection too. The value is how many chat requests stream keepalives
// until their clients leave; later ones get the default policy.
const simChildEnv = "GLIDEPATH_BENCH_SIM_CHILD"

// idleKeepaliveEvery is how often an idle stream hears a keepalive: often
// enough that the runs are really streaming, rarely enough that 10,000 of
// them leave the two cores alone.
const idleKeepaliveEvery = 2 * time.Second

func TestMain(m *testing.M) {
	hog.Main() // BenchmarkStarvedRun's hogs are copies of this binary
	if v, ok := os.LookupEnv(simChildEnv); ok {
		os.Exit(serveIdleSim(v))
	}
	os.Exit(m.Run())
}

// serveIdleSim serves the sim until its standard input ends, printing only
// the line that names its URL.
func serveIdleSim(times string) int {
	k, err := strconv.Atoi(times)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: %v\n", simChildEnv, times, err)
		return 2
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// The parent closes our standard input to stop us; Serve returns
	// after that, so this goroutine has ended before we exit.
	go func() {
		io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	sc := &sim.Scenario{Rules: []sim.Rule{{Times: k, Keepalive: sim.Forever, KeepaliveEvery: idleKeepaliveEvery}}}
	if err := sim.Serve(ctx, "127.0.0.1:0", sc, &firstLine{w: os.Stdout}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// firstLine passes on its first line and drops the rest: Serve logs every
// request, and nobody reads past the URL.
type firstLine struct {
	w    io.Writer
	done bool
}

func (f *firstLine) Write(p []byte) (int, error) {
	if f.done {
		return len(p), nil
	}
	line := p
	if i := strings.IndexByte(string(p), '\n'); i >= 0 {
		line, f.done = p[:i+1], true
	}
	if _, err := f.w.Write(line); err != nil {
		return 0, err
	}
	return len(p), nil
}

// childSim is a sim server in a process of its own, reached over loopback
// TCP, with a client that counts the streams it has opened.
type childSim struct {
	url   string
	cmd   *exec.Cmd
	stdin io.Closer
	tr    *http.Transport
	open  openCounter
}

// startChildSim starts a sim whose first k chat requests stream only
// keepalives until their clients leave.
func startChildSim(b *testing.B, k int) *childSim {
	b.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), simChildEnv+"="+strconv.Itoa(k))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		b.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		b.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	s := &childSim{cmd: cmd, stdin: stdin}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	_, url, ok := strings.Cut(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		s.stop()
		b.Fatalf("sim child: got %q (%v), want its URL", line, err)
	}
	s.url = url
	// Idle connections are only a cache; keeping few of them lets the
	// goroutine count fall back once the runs have ended.
	s.tr = &http.Transport{MaxIdleConnsPerHost: 2}
	s.open.rt = s.tr
	return s
}

func (s *childSim) client() *http.Client { return &http.Client{Transport: &s.open} }

// waitOpen waits until k streams are open, then lets their clients
// settle into reading the body.
func (s *childSim) waitOpen(b *testing.B, k int) {
	b.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for s.open.n.Load() < int64(k) {
		if time.Now().After(deadline) {
			b.Fatalf("only %d of %d streams opened", s.open.n.Load(), k)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(500 * time.Millisecond)
}

// stop drops the client's idle connections and ends the child, waiting
// for it.
func (s *childSim) stop() {
	if s.tr != nil {
		s.tr.CloseIdleConnections()
	}
	s.stdin.Close()
	s.cmd.Wait()
}

// openCounter counts the responses that came back 200 OK: for a streaming
// call, the moment its stream is open and its caller starts waiting on
// the body.
type openCounter struct {
	rt http.RoundTripper
	n  atomic.Int64
}

func (c *openCounter) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := c.rt.RoundTrip(r)
	if err == nil && resp.StatusCode == http.StatusOK {
		c.n.Add(1)
	}
	return resp, err
}
