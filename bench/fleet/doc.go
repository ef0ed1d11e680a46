// Package fleet measures a fleet of runs in one process whose budgets
// expire together, against one shared sim that turns every one of them
// away at one instant with 503 and Retry-After (SPEC §7, issue 13).
//
// What it asks: does every run still end labeled, within its budget; do
// the retries the server asked for come back as one burst, or spread
// (the busiest 50ms window against the mean window of the stretch they
// came back over); what does a run cost in memory while it waits; and is
// any goroutine left when the fleet is done. [Glidepath] runs the fleet
// as harness.Run calls sharing one model.Client; [SDKDefaults] is the
// baseline, the same requests through openai-go with its defaults, which
// honor Retry-After to the millisecond; [SDKStreaming] is that baseline
// making the same streaming call Glidepath's runs make, the one a run's
// start cost and memory are judged against (issue 20). Both baselines send
// what a run's first request carries, read off the wire of a real run
// ([FirstMessages]: the harness's system prompt, the task, the budget
// note), built anew for each call: the same first request on both sides.
//
// A fleet's start is measured as it happens: [Result.FirstSpread], how
// long the runs' first requests took to all go out (a run's first is its
// first attempt, never a landing call), and, over the same stretch, the
// process's CPU and the heap it allocated per run
// ([Result.StartCPUPerRun]), and the CPU until every run was turned away
// and had decided its sleep ([Result.AwayCPUPerRun]): what the start is
// made of, beside the SDK's. BenchmarkFirstSpread measures a fleet's
// start alone, BenchmarkToFirstRetry one run's start at a time, and
// BenchmarkOneTurn one whole run.
//
// The sim is served in memory (sim.NewPipeServer): ten thousand loopback
// connections would need more file descriptors than a default process
// may open, and the question is the clients' behavior, not the kernel's.
//
//	res, err := fleet.Glidepath(ctx, fleet.Config{Runs: 1000})
//	fmt.Println(res.Labeled, res.PeakWindow, res.MeanWindow)
//
// `make bench` runs it with 1,000 and 10,000 runs (bench/cmd/benchmd); the
// package's tests run a small fleet as part of `make test`.
package fleet
