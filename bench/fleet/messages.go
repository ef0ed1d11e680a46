package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/harness"
	"github.com/glidepath/glidepath/model"
	"github.com/glidepath/glidepath/sim"
	"github.com/openai/openai-go/v3"
)

// Task is what every run of a fleet is asked.
const Task = "explain deadline budgets"

// A Message is one message of a request, as its role and its text.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// FirstMessages returns the messages the first request of a Glidepath run
// carries — the harness's system prompt, the task, the budget note —
// given task, on a budget of total and a quiet period of quiet (zero: the
// default). It makes one such run against a sim of its own and reads them
// off the wire. A baseline that sends them sends the same first request
// as a run (SPEC §7: "the same first requests"), so that what a run costs
// beside it is the harness's, not a longer prompt's (issue 20: the SDK
// baseline used to send the task alone, which the sim's side and
// openai-go's encoder paid less for).
func FirstMessages(ctx context.Context, task string, total, quiet time.Duration) ([]Message, error) {
	srv := sim.NewPipeServer(nil)
	defer srv.Close()
	tap := &firstBody{next: srv.Client().Transport}
	c, err := model.New(model.Config{BaseURL: srv.URL, HTTPClient: &http.Client{Transport: tap}, Model: sim.ModelID})
	if err != nil {
		return nil, err
	}
	b, err := budget.New(budget.Config{Total: total})
	if err != nil {
		return nil, err
	}
	if _, err := harness.Run(ctx, b, harness.Config{Task: task, Quiet: quiet, Model: c}); err != nil {
		return nil, err
	}
	var req struct {
		Messages []Message `json:"messages"`
	}
	if err := json.Unmarshal(tap.first(), &req); err != nil {
		return nil, fmt.Errorf("fleet: the run's first request: %w", err)
	}
	for _, m := range req.Messages {
		switch m.Role {
		case "system", "user":
		default:
			return nil, fmt.Errorf("fleet: the run's first request has a %s message, which a baseline does not send", m.Role)
		}
	}
	if len(req.Messages) == 0 {
		return nil, fmt.Errorf("fleet: the run sent no chat request")
	}
	return req.Messages, nil
}

// IncludeUsage is the stream options a run's streaming request carries, so
// that its trace has the tokens: a streaming baseline sends them too.
var IncludeUsage = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}

// Params builds msgs as openai-go's parameters, anew at each call, as a
// loop builds its conversation for each request it sends.
func Params(msgs []Message) []openai.ChatCompletionMessageParamUnion {
	p := make([]openai.ChatCompletionMessageParamUnion, len(msgs))
	for i, m := range msgs {
		if m.Role == "user" {
			p[i] = openai.UserMessage(m.Content)
		} else {
			p[i] = openai.SystemMessage(m.Content)
		}
	}
	return p
}

// firstBody keeps the body of the first chat request it carries.
type firstBody struct {
	next http.RoundTripper
	mu   sync.Mutex
	body []byte // the first chat request's; guarded by mu
}

func (f *firstBody) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body == nil || !strings.HasSuffix(r.URL.Path, "/chat/completions") {
		return f.next.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	f.mu.Lock()
	if f.body == nil {
		f.body = body
	}
	f.mu.Unlock()
	// A RoundTripper does not change the request it was given.
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(bytes.NewReader(body))
	return f.next.RoundTrip(r2)
}

func (f *firstBody) first() []byte {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.body
}
