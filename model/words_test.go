package model_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/model"
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
