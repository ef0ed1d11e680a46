//go:build !unix

package everything

import "testing"

// Stdio skips the test: running the reference server needs process groups
// and flock, which this package only has on Unix.
func Stdio(t testing.TB) (command string, args []string, env []string) {
	t.Helper()
	t.Skip("everything: the MCP reference server is only run on Unix")
	return "", nil, nil
}

// HTTP skips the test, as [Stdio] does.
func HTTP(t testing.TB) (url string) {
	t.Helper()
	t.Skip("everything: the MCP reference server is only run on Unix")
	return ""
}
