package sim

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// Serve uses a real socket, which synctest cannot see: these tests bound
// generously and assert order and outcome.
const patience = 10 * time.Second

// logLines runs a reader of Serve's log; the returned wait ends it once the
// log writer is closed.
func logLines(t *testing.T) (io.WriteCloser, <-chan string, func()) {
	pr, pw := io.Pipe()
	lines := make(chan string, 1000)
	var wg sync.WaitGroup
	wg.Go(func() {
		defer close(lines)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			lines <- sc.Text()
		}
	})
	return pw, lines, wg.Wait
}

func nextLine(t *testing.T, lines <-chan string, containing string) string {
	t.Helper()
	timeout := time.After(patience)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("log ended before a line containing %q", containing)
			}
			if strings.Contains(l, containing) {
				return l
			}
		case <-timeout:
			t.Fatalf("no log line containing %q within %v", containing, patience)
		}
	}
}

func TestServeAnswersOnLoopbackAndStopsWhenItsContextEnds(t *testing.T) {
	log, lines, waitLog := logLines(t)
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	served := make(chan error, 1)
	go func() {
		served <- Serve(ctx, ":0", &Scenario{Rules: []Rule{{Request: 2, Hang: true}}}, log)
		log.Close()
	}()
	base := strings.TrimPrefix(nextLine(t, lines, "listening on"), "sim: listening on ")
	if !strings.HasPrefix(base, "http://127.0.0.1:") || !strings.HasSuffix(base, "/v1") {
		t.Fatalf("listening on %q, want loopback with /v1", base)
	}

	client := &http.Client{Timeout: patience}
	res, err := client.Post(base+"/chat/completions", "application/json",
		strings.NewReader(`{"model":"sim","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !strings.Contains(string(body), `"object":"chat.completion"`) || !strings.Contains(string(body), "[sim] Summary") {
		t.Fatalf("answer %d %s", res.StatusCode, body)
	}
	nextLine(t, lines, "completion=1")

	// The second request hangs; ending Serve's context must cut it.
	var hung sync.WaitGroup
	var hangErr error
	hung.Go(func() {
		req, _ := http.NewRequestWithContext(t.Context(), http.MethodPost, base+"/chat/completions",
			strings.NewReader(`{"model":"sim","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
		res, err := (&http.Client{}).Do(req)
		if err == nil {
			_, err = io.ReadAll(res.Body)
			res.Body.Close()
			if err == nil {
				err = errors.New("a complete response")
			}
		}
		hangErr = err
	})
	nextLine(t, lines, "completion=2")
	cancel()
	select {
	case err := <-served:
		if err != nil {
			t.Errorf("Serve returned %v, want nil after its context ended", err)
		}
	case <-time.After(patience):
		t.Fatal("Serve did not return after its context ended")
	}
	hung.Wait()
	if hangErr == nil || hangErr.Error() == "a complete response" {
		t.Errorf("the hanging request ended with %v, want a cut connection", hangErr)
	}
	waitLog()
	if _, err := client.Get(base + "/models"); err == nil {
		t.Error("the server still answers after Serve returned")
	}
}

func TestServeRefusesBadScenariosAndAddresses(t *testing.T) {
	err := Serve(t.Context(), "127.0.0.1:0", &Scenario{Rules: []Rule{{Status: 1}}}, nil)
	if !errors.Is(err, ErrScenario) {
		t.Errorf("invalid scenario: %v, want ErrScenario", err)
	}
	err = Serve(t.Context(), "127.0.0.1:99999", nil, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "sim: ") {
		t.Errorf("bad address: %v, want a sim: error", err)
	}
}
