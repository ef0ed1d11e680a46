package kit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/glidepath/glidepath/tools/kit"
)

func ExampleServer() {
	var srv kit.Server
	err := srv.Register(kit.Tool{
		Name:   "greet",
		Effect: kit.Read,
		P50:    5 * time.Millisecond,
		P95:    20 * time.Millisecond,
		Max:    time.Second,
		Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			var args struct{ Name string }
			if err := json.Unmarshal(call.Args, &args); err != nil {
				return nil, &kit.Error{Message: "greet: " + err.Error()}
			}
			return "hello, " + args.Name, nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	ts := httptest.NewServer(&srv)
	defer ts.Close()
	defer srv.Close()

	req, _ := http.NewRequest("POST", ts.URL+"/tools/greet", strings.NewReader(`{"arguments":{"name":"Ada"}}`))
	req.Header.Set("Idempotency-Key", "gp_example")
	req.Header.Set("Budget-Remaining-Ms", "800")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Println(resp.Status, resp.Header.Get("Content-Type"))
	fmt.Print(string(body))
	// Output:
	// 200 OK application/json
	// {"output":"hello, Ada"}
}

func ExampleServer_Register_duplicate() {
	var srv kit.Server
	echo := kit.Tool{Name: "echo", Effect: kit.Read, Handler: func(ctx context.Context, call *kit.Call) (any, error) {
		return call.Args, nil
	}}
	fmt.Println(srv.Register(echo))
	err := srv.Register(echo)
	fmt.Println(err)
	fmt.Println(errors.Is(err, kit.ErrDuplicate), errors.Is(err, kit.ErrBadTool))
	// Output:
	// <nil>
	// kit: tool "echo" registered twice
	// true true
}

func ExampleCall_Progress() {
	var srv kit.Server
	srv.Register(kit.Tool{
		Name:        "index",
		Effect:      kit.Write,
		Cancellable: true,
		Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			call.Progress(1, 1, "indexed")
			call.Progress(1, 1, "again") // dropped: units did not increase
			return map[string]int{"documents": 42}, nil
		},
	})
	ts := httptest.NewServer(&srv)
	defer ts.Close()
	defer srv.Close()

	req, _ := http.NewRequest("POST", ts.URL+"/tools/index", strings.NewReader(`{"arguments":{}}`))
	req.Header.Set("Idempotency-Key", "gp_index_1")
	req.Header.Set("Accept", "text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	stream, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(string(stream))

	// The outcome stays known by its key.
	resp, err = http.Get(ts.URL + "/tools/index/calls/gp_index_1")
	if err != nil {
		fmt.Println(err)
		return
	}
	status, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(string(status))
	// Output:
	// event: progress
	// data: {"units":1,"total":1,"message":"indexed"}
	//
	// event: result
	// data: {"output":{"documents":42}}
	//
	// {"state":"done","output":{"documents":42},"units":1}
}

func ExampleServer_MCPHandler() {
	var srv kit.Server
	srv.Register(kit.Tool{
		Name:   "greet",
		Effect: kit.Read,
		Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			var args struct{ Name string }
			json.Unmarshal(call.Args, &args)
			return map[string]string{"greeting": "hello, " + args.Name}, nil
		},
	})
	// Both protocols on one address.
	mux := http.NewServeMux()
	mux.Handle("/mcp", srv.MCPHandler())
	mux.Handle("/", &srv)
	ts := httptest.NewServer(mux)
	defer ts.Close()
	defer srv.Close()

	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ts.URL + "/mcp"}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Name:      "greet",
		Arguments: map[string]string{"name": "Ada"},
		Meta:      mcp.Meta{kit.MetaIdempotencyKey: "gp_greet_1", kit.MetaBudgetRemaining: 800},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(res.Content[0].(*mcp.TextContent).Text)

	// The call's record is the kit's, whichever protocol asks.
	resp, err := http.Get(ts.URL + "/tools/greet/calls/gp_greet_1")
	if err != nil {
		fmt.Println(err)
		return
	}
	status, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Print(string(status))
	// Output:
	// {"greeting":"hello, Ada"}
	// {"state":"done","output":{"greeting":"hello, Ada"},"units":0}
}

func ExampleServer_ServeMCP() {
	var srv kit.Server
	srv.Register(kit.Tool{
		Name:   "index",
		Effect: kit.Write,
		Handler: func(ctx context.Context, call *kit.Call) (any, error) {
			call.Progress(1, 2, "half")
			return nil, &kit.Error{Message: "index: disk full"}
		},
	})
	defer srv.Close()
	// In memory here; a command MCP server serves &mcp.StdioTransport{}.
	serverEnd, clientEnd := mcp.NewInMemoryTransports()
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- srv.ServeMCP(ctx, serverEnd) }()
	defer func() {
		stop()
		<-served
	}()

	progress := make(chan string, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- fmt.Sprintf("progress %v of %v: %s", req.Params.Progress, req.Params.Total, req.Params.Message)
		},
	})
	cs, err := client.Connect(ctx, clientEnd, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "index", Meta: mcp.Meta{"progressToken": "p1"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(<-progress)
	fmt.Println(res.IsError, res.Content[0].(*mcp.TextContent).Text)
	// Output:
	// progress 1 of 2: half
	// true index: disk full
}
