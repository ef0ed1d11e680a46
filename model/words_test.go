package model_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/trace"
	"github.com/openai/openai-go/v3"
)

func TestAnErrorAnswersRecordCarriesTheServersMessageWithoutTheKey(t *testing.T) {
	const key = "sk-test-0123456789abcdefghij"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"Incorrect API key provided: `+key+`.","type":"invalid_request_error","code":"invalid_api_key"}}`)
	}))
	defer srv.Close()
	c, err := model.New(model.Config{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(), Model: "m", APIKey: key})
	if err != nil {
		t.Fatal(err)
	}
	rec := &record{}
	_, err = c.Complete(t.Context(), newBudget(t, time.Minute), ask("q"), rec.observer())
	if _, ok := errors.AsType[*openai.Error](err); !ok {
		t.Fatalf("Complete = %v; want the SDK's error still found in it", err)
	}
	if len(rec.ends) != 1 || rec.ends[0].Err == nil {
		t.Fatalf("attempt_end records %+v, want one that failed", rec.ends)
	}
	// Issue 18: the record said only "OpenAI API error: 401 Unauthorized";
	// the server's message was in the landing record alone.
	msg := rec.ends[0].Err.Error()
	if !strings.Contains(msg, "status 401") || !strings.Contains(msg, "Incorrect API key provided") {
		t.Errorf("attempt_end says %q; want its status and the server's message", msg)
	}
	if strings.Contains(msg, key) {
		t.Errorf("attempt_end says %q: the API key is in it", msg)
	}
	if want := model.Describe(err); !strings.Contains(want, "Incorrect API key provided") || strings.Contains(want, key) {
		t.Errorf("Describe = %q; want the server's message, redacted", want)
	}
}

// Issue 24: a --base-url that answers 200 with a page, garbage or nothing
// was told "its answer ended before it was whole", asked three times, and
// then asked to land.
func TestABaseURLThatIsNotAModelServerIsNamedOnceAndNotRetried(t *testing.T) {
	cases := []struct {
		name        string
		contentType string // "": the server sets none (Go then sniffs one from a body)
		body        string
		words       string // what Describe says after the base URL
	}{
		{"an HTML page", "text/html; charset=utf-8", "<!doctype html>\n<html><body>It works!</body></html>\n",
			"is not an OpenAI-compatible model server: it answered 200 text/html"},
		{"garbage", "", "\x00\x01\x02garbage\xff\xfe",
			"is not an OpenAI-compatible model server: it answered 200 application/octet-stream"},
		{"an empty body", "", "",
			"is not an OpenAI-compatible model server: it answered 200 with an empty body"},
		{"JSON of the wrong shape", "application/json", `{"status":"ok","data":[1,2,3]}`,
			"is not an OpenAI-compatible model server: it answered 200 application/json"},
		{"a chat completion that was not streamed", "application/json",
			`{"id":"c1","object":"chat.completion","created":0,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}]}`,
			"is not an OpenAI-compatible model server: it answered 200 application/json"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var requests atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				requests.Add(1)
				if tc.contentType != "" {
					w.Header().Set("Content-Type", tc.contentType)
				}
				io.WriteString(w, tc.body)
			}))
			defer srv.Close()
			// Credentials and a query in the URL are not repeated.
			base := strings.Replace(srv.URL, "http://", "http://user:hunter2@", 1) + "/v1?token=hunter2"
			c, err := model.New(model.Config{BaseURL: base, HTTPClient: srv.Client(), Model: "m",
				Backoff: budget.Backoff{Rand: func(int64) int64 { return 0 }}})
			if err != nil {
				t.Fatal(err)
			}
			rec := &record{}

			_, err = c.Complete(t.Context(), newBudget(t, time.Minute), ask("q"), rec.observer())

			if !errors.Is(err, model.ErrNotModelServer) || errors.Is(err, model.ErrIncomplete) {
				t.Fatalf("Complete = %v; want ErrNotModelServer, not ErrIncomplete", err)
			}
			if n := requests.Load(); n != 1 {
				t.Errorf("%d requests, want 1: asking again gets the same answer", n)
			}
			if got := rec.outcomes(); !slices.Equal(got, []trace.Outcome{trace.Invalid}) {
				t.Errorf("outcomes %v, want one invalid", got)
			}
			if !model.Refused(err) {
				t.Error("Refused = false; want true: the landing call is not sent to it")
			}
			if got, want := model.Describe(err), srv.URL+"/v1 "+tc.words; got != want {
				t.Errorf("Describe = %q, want %q", got, want)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q repeats the URL's credentials", err)
			}
		})
	}
}

// An event stream that ends before its first event may be a model server
// that dropped the connection: it is a stream cut short, and retried.
func TestAnEmptyEventStreamIsAStreamCutShort(t *testing.T) {
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("Content-Type", "text/event-stream")
	}))
	defer srv.Close()
	c, err := model.New(model.Config{BaseURL: srv.URL + "/v1", HTTPClient: srv.Client(), Model: "m", MaxAttempts: 2,
		Backoff: budget.Backoff{Rand: func(int64) int64 { return 0 }}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Complete(t.Context(), newBudget(t, time.Minute), ask("q"), nil)
	if !errors.Is(err, model.ErrIncomplete) || errors.Is(err, model.ErrNotModelServer) || model.Refused(err) {
		t.Fatalf("Complete = %v; want ErrIncomplete only", err)
	}
	if n := requests.Load(); n != 2 {
		t.Errorf("%d requests, want 2", n)
	}
}
