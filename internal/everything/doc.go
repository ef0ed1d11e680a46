// Package everything runs the MCP reference server,
// @modelcontextprotocol/server-everything, for tests in any package of the
// module, over stdio ([Stdio]) or streamable HTTP ([HTTP]). The version is
// the one interop/mcp/package-lock.json pins (issue 11, item 7).
//
// # Installing
//
// Both first find node on PATH, then interop/mcp from the module root (the
// first directory holding go.mod, walking up from the working directory),
// and check that interop/mcp/node_modules holds exactly what
// package-lock.json pins. When it does not, they run npm ci there, which
// needs npm and the npm registry; .ci/run runs it before the tests, so in CI
// this costs nothing. Test binaries running at once (go test ./... runs
// packages in parallel) take turns by an exclusive flock on
// package-lock.json, so one npm ci never deletes node_modules under another
// test's server. Nothing is downloaded when the server starts: node runs the
// package's entry script (its bin, read from its installed package.json)
// directly, never through npx.
//
// # Skipping
//
// Without node on PATH the calling test is skipped with a message that says
// so, unless the environment variable CI is "true": then it fails, so that
// the interop tests cannot silently stop running in CI.
//
// # Loopback
//
// The server runs under the preload interop/mcp/loopback.cjs (node --require),
// which forces every TCP listen in the process onto 127.0.0.1: the package's
// HTTP modes would otherwise listen on every interface. It also writes the
// address it bound to stderr, which is how [HTTP] learns its port.
//
// # Processes
//
// [Stdio] starts nothing: it returns a command line, and whoever runs it
// owns the process (the harness kills it as a process group when its run
// ends). [HTTP] starts the server as a child in a process group of its own
// and, when the test ends, kills that whole group and waits for it, so no
// process and no goroutine outlives the test.
//
// Both block until they are done or the test is failed or skipped; they call
// t.Fatal, t.Skip and t.Cleanup, so call them from the test's goroutine.
package everything
