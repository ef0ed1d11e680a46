// Package procstart records when the process started, as nearly as Go
// code can see it, so that a command can spend its own start-up from the
// budget it is given (SPEC §3; issue 17).
//
// Its one variable is set while packages are initialized. Go initializes
// the packages that are ready in the order of their import paths, and this
// one needs only package time: it is initialized just after time, before
// the initializers of dependencies whose paths sort after its own and that
// need time too — in `harness`, before github.com/santhosh-tekuri/jsonschema,
// openai-go, the MCP SDK and OpenTelemetry, which spend several ms of CPU
// at start-up (GODEBUG=inittrace=1 shows the order). What it cannot see is
// the exec and the runtime's own start, under a millisecond on an idle
// machine.
package procstart

import "time"

// At is when this package was initialized, with a monotonic reading.
var At = time.Now()
