package sim

import (
	"testing"

	"github.com/openai/openai-go/v3"
)

// BenchmarkAnswer measures a whole default-policy answer through
// openai-go: the sim's cost per model call in a harness test.
func BenchmarkAnswer(b *testing.B) {
	for _, tc := range []struct {
		name   string
		server func(*Scenario) *Server
		stream bool
	}{
		{"loopback", NewServer, false},
		{"loopback-stream", NewServer, true},
		{"pipe", NewPipeServer, false},
		{"pipe-stream", NewPipeServer, true},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv := tc.server(nil)
			defer srv.Close()
			c := clientFor(srv)
			params := userAsks("find cats")
			params.Tools = []openai.ChatCompletionToolUnionParam{tool("search", "query")}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, _, err := complete(b.Context(), c, params, tc.stream); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
