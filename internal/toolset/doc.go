// Package toolset loads a tools file for runs, once for both hosts (SPEC
// §4, §5, §5b; issue 25): a [Set] is a tools config with the sets of its
// sub-agents by path, whose manifests were fetched and MCP servers
// connected all at once ([Set.Resolve]), whose tools were registered in
// the file's order ([Set.Register]), with what the fetches left
// unavailable and why, each tool's capabilities, the secrets its tools are
// handed, and Close.
//
// The in-process host (harness.Toolset, `harness run --tools`) resolves
// with its run's setup leases and builds a sub-agent of each agent entry
// through [Hooks]; the Temporal worker (temporal/durable) loads with
// [Load], before any run, and lists a set's tools to each run that uses
// it. What differs is only what a host can run: a worker refuses MCP
// servers and a sub-agent's own model before it loads.
//
// A [Fingerprint] identifies a tools file by what its calls depend on, so
// that the workers of one Temporal task queue can be held to one toolset
// (issue 26): a step of a run set up with another is refused
// ([MismatchError]), never sent.
//
// It is internal, not part of package tools: it composes tools with
// tools/mcp, which imports tools, and its hooks name the hosts' own steps.
// The nested module temporal/ imports it, as its path is under the root
// module's.
package toolset
