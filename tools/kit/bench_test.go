package kit_test

import (
	"context"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/glidepath/glidepath/tools/kit"
)

// BenchmarkServeCall is the kit's cost per call, in memory: a JSON call to
// a tool that answers at once, each with a new key.
func BenchmarkServeCall(b *testing.B) {
	srv := &kit.Server{}
	if err := srv.Register(echo("echo")); err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		r := httptest.NewRequest("POST", "/tools/echo", strings.NewReader(`{"arguments":{"q":"cats"}}`))
		r.Header.Set("Idempotency-Key", "k"+strconv.Itoa(i))
		r.Header.Set("Budget-Remaining-Ms", "1000")
		srv.ServeHTTP(httptest.NewRecorder(), r)
	}
}

// BenchmarkProgress is what a handler pays per report while a stream
// follows the call.
func BenchmarkProgress(b *testing.B) {
	srv := &kit.Server{KeepaliveEvery: -1}
	ready := make(chan *kit.Call)
	finish := make(chan struct{})
	if err := srv.Register(kit.Tool{Name: "p", Effect: kit.Read, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
		ready <- call
		<-finish
		return nil, nil
	}}); err != nil {
		b.Fatal(err)
	}
	defer srv.Close()
	r := httptest.NewRequest("POST", "/tools/p", strings.NewReader(`{"arguments":{}}`))
	r.Header.Set("Idempotency-Key", "k")
	r.Header.Set("Accept", "text/event-stream")
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeHTTP(newMemoryRecorder(), r)
	}()
	call := <-ready
	b.ReportAllocs()
	units := int64(0)
	for b.Loop() {
		units++
		call.Progress(units, 0, "")
	}
	b.StopTimer()
	close(finish)
	<-done
}
