package cancel_test

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/glidepath/glidepath/cancel"
)

const key = cancel.Key("gp_testkey")

func TestNewKeyIsPrefixedBase32AndNeverRepeats(t *testing.T) {
	shape := regexp.MustCompile(`^gp_[a-z2-7]{26}$`)
	seen := map[cancel.Key]bool{}
	for range 1000 {
		k := cancel.NewKey()
		if !shape.MatchString(string(k)) {
			t.Fatalf("NewKey() = %q, want gp_ and 26 lowercase base32 characters", k)
		}
		if seen[k] {
			t.Fatalf("NewKey() returned %q twice", k)
		}
		seen[k] = true
	}
}

func TestArgsSHA256HashesTheBytesAsSent(t *testing.T) {
	cases := []struct {
		args string
		want string
	}{
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{`{"amount":5}`, "7e84cbf0f7a7c92c037058665d66152f8eb8580ab2534e52c877bccceb9cc7bf"},
	}
	for _, tc := range cases {
		if got := cancel.ArgsSHA256(json.RawMessage(tc.args)); got != tc.want {
			t.Errorf("ArgsSHA256(%q) = %s, want %s", tc.args, got, tc.want)
		}
	}
	if cancel.ArgsSHA256(json.RawMessage(`{"amount":5}`)) == cancel.ArgsSHA256(json.RawMessage(`{"amount": 5}`)) {
		t.Error("differently spaced arguments hash alike; the hash must be of the bytes sent")
	}
}

func TestStatusReadsTheCallsStateOverHTTP(t *testing.T) {
	cases := []struct {
		name    string
		answer  answer
		want    cancel.Status
		wantErr []string // substrings of the error, which must match ErrUnreachable
	}{
		{name: "running reports its units", answer: running, want: cancel.Status{State: cancel.Running, Units: 3}},
		{name: "done carries the output", answer: done, want: cancel.Status{State: cancel.Done, Output: json.RawMessage(`{"id":7}`), Units: 9}},
		{name: "failed is a state, not an error", answer: failed, want: cancel.Status{State: cancel.Failed, Output: json.RawMessage(`"card declined"`)}},
		{name: "404 means never received", answer: unknown, want: cancel.Status{State: cancel.NeverReceived}},
		{name: "a 500 is unreachable with the tool's message", answer: answer{code: 500, body: `{"error":{"message":"db down"}}`},
			wantErr: []string{"cancel: status endpoint unreachable: GET http://", "/tools/pay/calls/gp_testkey: 500 Internal Server Error: tool says: db down"}},
		{name: "a 503 without a JSON body is unreachable", answer: answer{code: 503, body: "busy"}, wantErr: []string{": 503 Service Unavailable"}},
		{name: "another 4xx is unreachable", answer: answer{code: 401, body: "{}"}, wantErr: []string{": 401 Unauthorized"}},
		{name: "garbage JSON is a malformed answer", answer: garbage, wantErr: []string{"200 OK: malformed answer: invalid character '<'"}},
		{name: "an unknown state is a malformed answer", answer: answer{code: 200, body: `{"state":"paused"}`}, wantErr: []string{`malformed answer: unknown state "paused"`}},
		{name: "an answer without a state is malformed", answer: answer{code: 200, body: `{"output":1}`}, wantErr: []string{`malformed answer: no "state"`}},
		{name: "never_received in a body is not the protocol's 404", answer: answer{code: 200, body: `{"state":"never_received"}`}, wantErr: []string{`unknown state "never_received"`}},
		{name: "an answer over 1 MiB is refused", answer: answer{code: 200, body: `{"state":"done","output":"` + strings.Repeat("x", cancel.MaxAnswer) + `"}`}, wantErr: []string{"answer larger than 1 MiB"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tool := &toolServer{answers: []answer{tc.answer}}
			srv := httptest.NewServer(tool)
			defer srv.Close()
			e := cancel.Endpoint{URL: srv.URL, Tool: "pay"}

			got, err := e.Status(t.Context(), key)
			if want := []string{"GET /tools/pay/calls/gp_testkey"}; !slices.Equal(tool.seen(), want) {
				t.Errorf("server saw %q, want %q", tool.seen(), want)
			}
			if tc.wantErr != nil {
				if !errors.Is(err, cancel.ErrUnreachable) {
					t.Fatalf("err = %v, want one matching ErrUnreachable", err)
				}
				for _, w := range tc.wantErr {
					if !strings.Contains(err.Error(), w) {
						t.Errorf("err = %q, want it to contain %q", err, w)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.State != tc.want.State || got.Units != tc.want.Units || string(got.Output) != string(tc.want.Output) {
				t.Errorf("Status = %+v (output %s), want %+v (output %s)", got, got.Output, tc.want, tc.want.Output)
			}
		})
	}
}

func TestStatusOfAToolThatIsGoneIsUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close() // nothing listens on its address any more
	_, err := cancel.Endpoint{URL: srv.URL, Tool: "pay"}.Status(t.Context(), key)
	if !errors.Is(err, cancel.ErrUnreachable) || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("err = %v, want ErrUnreachable from a refused connection", err)
	}
	re, ok := errors.AsType[*cancel.RequestError](err)
	if !ok || re.Method != http.MethodGet || re.Code != 0 {
		t.Errorf("err = %#v, want a *RequestError of a GET with no status code", err)
	}
}

func TestEndpointURLs(t *testing.T) {
	cases := []struct {
		name     string
		base     string // appended to the server's URL
		tool     string
		key      cancel.Key
		wantPath string // "" when no request may be sent
	}{
		{name: "the call lives under the tool", tool: "pay", key: key, wantPath: "/tools/pay/calls/gp_testkey"},
		{name: "a base path is kept", base: "/api/v1/", tool: "pay", key: key, wantPath: "/api/v1/tools/pay/calls/gp_testkey"},
		{name: "names are escaped as one segment", tool: "a/b c", key: "k?x=1", wantPath: "/tools/a%2Fb%20c/calls/k%3Fx=1"},
		{name: "an empty key sends nothing", tool: "pay", key: ""},
		{name: "a dot-dot key sends nothing", tool: "pay", key: ".."},
		{name: "an empty tool sends nothing", tool: "", key: key},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tool := &toolServer{answers: []answer{running}}
			srv := httptest.NewServer(tool)
			defer srv.Close()
			_, err := cancel.Endpoint{URL: srv.URL + tc.base, Tool: tc.tool}.Status(t.Context(), tc.key)
			if tc.wantPath == "" {
				if !errors.Is(err, cancel.ErrUnreachable) || len(tool.seen()) != 0 {
					t.Errorf("err = %v and server saw %q, want ErrUnreachable and no request", err, tool.seen())
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := []string{"GET " + tc.wantPath}; !slices.Equal(tool.seen(), want) {
				t.Errorf("server saw %q, want %q", tool.seen(), want)
			}
		})
	}
}

func TestErrorsNeverCarryAURLPassword(t *testing.T) {
	tool := &toolServer{answers: []answer{broken}}
	srv := httptest.NewServer(tool)
	defer srv.Close()
	withPassword := strings.Replace(srv.URL, "http://", "http://user:s3cret@", 1)
	_, err := cancel.Endpoint{URL: withPassword, Tool: "pay"}.Status(t.Context(), key)
	if err == nil || strings.Contains(err.Error(), "s3cret") || !strings.Contains(err.Error(), "user:xxxxx@") {
		t.Errorf("err = %v, want an error with the password redacted", err)
	}
}

func TestCancelSendsDelete(t *testing.T) {
	cases := []struct {
		name        string
		answer      answer
		wantUnknown bool
		wantErr     string // "" for success
	}{
		{name: "202 is accepted", answer: answer{code: 202}},
		{name: "204 is accepted too", answer: answer{code: 204}},
		{name: "404 is an unknown call", answer: unknown, wantUnknown: true, wantErr: "cancel: call unknown to the tool: DELETE http://"},
		{name: "a 503 is unreachable", answer: broken, wantErr: "503 Service Unavailable: tool says: db down"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tool := &toolServer{answers: []answer{tc.answer}}
			srv := httptest.NewServer(tool)
			defer srv.Close()
			err := cancel.Endpoint{URL: srv.URL, Tool: "pay"}.Cancel(t.Context(), key)
			if want := []string{"DELETE /tools/pay/calls/gp_testkey"}; !slices.Equal(tool.seen(), want) {
				t.Errorf("server saw %q, want %q", tool.seen(), want)
			}
			if tc.wantErr == "" {
				if err != nil {
					t.Errorf("Cancel = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("Cancel = %v, want an error containing %q", err, tc.wantErr)
			}
			if got := errors.Is(err, cancel.ErrUnknownCall); got != tc.wantUnknown {
				t.Errorf("errors.Is(err, ErrUnknownCall) = %v, want %v", got, tc.wantUnknown)
			}
			if got := errors.Is(err, cancel.ErrUnreachable); got == tc.wantUnknown {
				t.Errorf("errors.Is(err, ErrUnreachable) = %v, want %v", got, !tc.wantUnknown)
			}
		})
	}
}

func TestCancelOfAToolThatIsGoneIsUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	srv.Close()
	err := cancel.Endpoint{URL: srv.URL, Tool: "pay"}.Cancel(t.Context(), key)
	if !errors.Is(err, cancel.ErrUnreachable) || !strings.Contains(err.Error(), "cancel: cancel endpoint unreachable: DELETE ") {
		t.Errorf("Cancel = %v, want the cancel endpoint unreachable", err)
	}
}
