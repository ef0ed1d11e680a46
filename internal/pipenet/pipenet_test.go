package pipenet_test

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/glidepath/glidepath/internal/pipenet"
)

func TestAnHTTPServerAnswersOverPipesInsideABubble(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := pipenet.Listen("test.invalid")
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			time.Sleep(2 * time.Second) // fake time: exact
			io.WriteString(w, "hello")
		})}
		var wg sync.WaitGroup
		wg.Go(func() { srv.Serve(l) })
		tr := l.Transport()
		client := &http.Client{Transport: tr}
		start := time.Now()
		resp, err := client.Get("http://test.invalid/")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != "hello" || time.Since(start) != 2*time.Second {
			t.Errorf("got %q after %v, want hello after 2s", body, time.Since(start))
		}
		if l.Addr().String() != "test.invalid" || l.Addr().Network() != "pipe" {
			t.Errorf("addr %v/%v", l.Addr().Network(), l.Addr())
		}
		srv.Close()
		wg.Wait()
		tr.CloseIdleConnections()
	})
}

func TestDialFailsOnceClosedOrWhenItsContextEnds(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		l := pipenet.Listen("x")
		ctx, cancel := context.WithTimeout(t.Context(), time.Second)
		defer cancel()
		if _, err := l.DialContext(ctx, "tcp", "x:80"); !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("dial with nobody accepting = %v, want the context's end", err)
		}
		l.Close()
		l.Close()
		if _, err := l.DialContext(t.Context(), "tcp", "x:80"); !errors.Is(err, net.ErrClosed) {
			t.Errorf("dial after close = %v", err)
		}
		if _, err := l.Accept(); !errors.Is(err, net.ErrClosed) {
			t.Errorf("accept after close = %v", err)
		}
	})
}
