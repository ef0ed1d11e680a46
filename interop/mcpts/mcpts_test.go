// Package mcpts_test drives the kit's MCP handler (tools/kit) with the
// official TypeScript SDK client, @modelcontextprotocol/sdk as
// package-lock.json pins it (SPEC §5b, issue 17): it serves a kit Server
// on a free loopback port and runs client.test.mjs against it with
// node --test.
//
// It needs node (20 or later) on PATH, and npm when node_modules is
// missing or does not hold the versions package-lock.json pins (then it
// runs npm ci, which needs the npm registry; .ci/run runs npm ci first).
// Without node it skips, unless CI is "true": in CI a missing node is a
// failure, so the check cannot silently stop running.
package mcpts_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/glidepath/glidepath/internal/nodetest"
	"github.com/glidepath/glidepath/tools/kit"
)

// patience bounds the whole: npm ci when it is needed, and the Node test.
const patience = 2 * time.Minute

// The tools the Node test calls: steps reports progress, wait waits until
// its context ends (an abort, or its budget), cancelled says why the last
// wait ended once its request's stream is closed, lease says what the
// call's _meta budget made of it.
func tools(t *testing.T, srv *kit.Server, waited <-chan struct{}) {
	causes := make(chan error, 8)
	register := func(tool kit.Tool) {
		t.Helper()
		tool.Effect = kit.Read
		if err := srv.Register(tool); err != nil {
			t.Fatal(err)
		}
	}
	register(kit.Tool{Name: "steps", Description: "Counts to n, reporting each step.",
		Parameters: json.RawMessage(`{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`),
		Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			var args struct{ N int64 }
			if err := json.Unmarshal(call.Args, &args); err != nil {
				return nil, err
			}
			for i := int64(1); i <= args.N; i++ {
				call.Progress(i, args.N, fmt.Sprintf("step %d", i))
			}
			return map[string]int64{"done": args.N}, nil
		}})
	register(kit.Tool{Name: "wait", Description: "Waits until it is cancelled or its time is up.", Cancellable: true, Max: patience,
		Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			call.Progress(1, 0, "waiting")
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return nil, context.Cause(ctx)
		}})
	register(kit.Tool{Name: "cancelled", Description: "Says why the last wait ended.", Max: patience,
		Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			var cause error
			select {
			case cause = <-causes:
			case <-ctx.Done():
				return nil, fmt.Errorf("no wait ended: %w", context.Cause(ctx))
			}
			select {
			case <-waited:
			case <-ctx.Done():
				return nil, fmt.Errorf("the wait's stream did not close: %w", context.Cause(ctx))
			}
			return cause.Error(), nil
		}})
	register(kit.Tool{Name: "lease", Description: "Says what lease and deadline the call has.",
		Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			deadline, _ := ctx.Deadline()
			return map[string]int64{"lease_ms": call.Lease.Milliseconds(), "deadline_ms": time.Until(deadline).Milliseconds()}, nil
		}})
}

func TestTheOfficialTypeScriptClientDrivesTheKit(t *testing.T) {
	node := nodetest.Need(t, "node", "the TypeScript MCP client interop test")
	ctx, cancel := context.WithTimeout(t.Context(), patience)
	defer cancel()
	nodetest.Install(t, ".", "the TypeScript MCP client interop test")

	srv := &kit.Server{}
	// waited hears when the POST of a call of wait has been served: its
	// stream is closed, and whatever the kit answered on it is sent.
	waited := make(chan struct{}, 8)
	tools(t, srv, waited)
	mcpHandler := srv.MCPHandler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body []byte
		if r.Body != nil {
			body, _ = io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		mcpHandler.ServeHTTP(w, r)
		if bytes.Contains(body, []byte(`"tools/call"`)) && bytes.Contains(body, []byte(`"name":"wait"`)) {
			waited <- struct{}{}
		}
	}))
	defer hs.Close()
	defer srv.Close()

	cmd := exec.CommandContext(ctx, node, "--test", "client.test.mjs")
	cmd.Env = append(os.Environ(), "KIT_MCP_URL="+hs.URL+"/mcp", "NO_COLOR=1")
	start := time.Now()
	out, err := cmd.CombinedOutput()
	took := time.Since(start).Round(time.Millisecond)
	if err != nil {
		t.Fatalf("node --test client.test.mjs against %s: %v after %v\n%s", hs.URL, err, took, out)
	}
	t.Logf("node --test client.test.mjs passed in %v\n%s", took, out)
}
