package main

import (
	"fmt"
	"github.com/glidepath/glidepath/tools/demo"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
)

// Call the demo's search tool over HTTP, as a harness would.
func Example_search() {
	srv := demo.NewServer(demo.ServerConfig{})
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.Close()

	req, _ := http.NewRequest("POST", ts.URL+"/tools/search", strings.NewReader(`{"arguments":{"query":"late commits","limit":2}}`))
	req.Header.Set("Idempotency-Key", "gp_search_1")
	req.Header.Set("Budget-Remaining-Ms", "1000")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Print(string(body))
	// Output:
	// {"output":{"query":"late commits","results":[{"title":"late commits (1)","url":"https://docs.example/late-commits/1","score":0.98},{"title":"late commits (2)","url":"https://docs.example/late-commits/2","score":0.89}]}}
}
