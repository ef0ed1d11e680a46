// Harness runs an agent on one deadline and lands it inside its budget.
//
// Usage:
//
//	harness <command> [arguments]
//	harness help [command]
//
// Every command takes --help. Flags and arguments may come in any order
// (after "sim serve", which is one command of two words); an argument
// after "--" is never a flag.
//
// # harness run
//
//	harness run [flags] TASK
//
// Run answers TASK ("-" reads it from standard input) with an agent on one
// deadline (SPEC §4): every model turn and tool call is leased from the
// budget (--budget, default 2m), a reserve is kept for landing (--reserve,
// auto: max(10%·B, min(20s, 25%·B))), nothing starts with less than the floor
// (--floor, 50ms), and a quiet clock (--quiet, 60s) that only semantic events
// reset tells a stalled run from a working one. Each call in flight holds
// the quiet clock for its allowance, 2 × its kind's p95 at its place, at
// most --max-silence (5m) (issue 27); --quiet-mode (enforce) says what a
// stall does: enforce lands the run, warn records a quiet_warning and goes
// on, off never fires. --model sim (the default) is
// the embedded simulated model, served in memory; any other name goes to the
// OpenAI-compatible server at --base-url, with the key from OPENAI_API_KEY.
// --api chat (the default) speaks Chat Completions to it, --api responses
// the Responses API; the run, its leases, retries and records are the same.
// --tools FILE is a tool config (YAML or JSON; builtin entries name the demo
// tools of package tools/demo; agent entries are sub-agents, each call a
// child run on a slice of this one's budget, SPEC §5b, with the model its
// entry names at the same --base-url and key, or this run's, in the API
// its entry names (api: chat or responses), or --api; mcpServers
// beside tools are MCP servers, each connected as a setup step, whose
// tools are offered as mcp__SERVER__TOOL, SPEC §5b). --trace FILE writes the JSONL trace, --journal
// FILE the orphan journal, --max-steps (50) bounds the model turns,
// --max-repeats (3) the repeated tool calls (the same tool, arguments and
// result as an earlier step's) before the run lands with cause stuck, and
// --parallel (4) the tool calls at once. The answer is printed, a partial one
// after its boundary, or with --json as one object, the moment the run's
// result exists (SPEC §3, issue 24): the tools and their servers, the
// latency profile, the spans and the trace are released after it, each
// within the run's deadline; its spent_ms is read in the same instant as
// the trace's run_end, so a late answer says so in both. On a terminal a live line
// on standard error, redrawn every 100ms, shows the budget as a bar with the
// 60% and 80% marks and the reserve, the time spent and left, the phase, the
// step and the call in flight with its lease (--progress auto|always|never);
// below 100 columns the bar has 10 cells, and the calls drop their "tool:",
// then their leases, then the last of them ("+1"), so that what is in
// flight stays in view on 80 columns (issue 24).
// The first Ctrl-C lands the run at once (cause cancelled), its landing call
// leased at most the reserve, and prints one line on standard error
// saying so: "harness run: interrupted: landing now, with an answer within
// 2.0s; press Ctrl-C again to quit at once, without one" (the reserve, or
// what is left of the budget if less). The second exits with 130.
//
// Tools that are really there (SPEC §4, issue 24): a command entry (or
// its status command), or a stdio MCP server, whose program exec.LookPath
// cannot find — a bare name on PATH, a path with a slash as it is written
// (an MCP server's against its cwd) — is bad config, exit 2, before
// anything is sent; harness serve and harness plan --tools refuse it too.
// A tool the config names that the run cannot use — a tool server that
// cannot be reached for its manifest (refused, not resolved, or silent
// until the manifest's lease ends: "its manifest did not arrive in
// 1.1s"), one that sends no usable manifest (an HTML page, garbage, the
// wrong shape; an HTTP error is a server with no manifest, whose entries
// must say enough: a warning) or a manifest that does not list the tool, an
// MCP server that does not come up or does not list an allowed tool, a
// tool whose ceiling is below the p50 its builtin or manifest declares or
// its p50 on this machine (the latency profile says it is slower than its
// ceiling lets it be), a sub-agent that cannot be made — is not offered
// to the model, is warned about on standard error
// by name and reason ("harness run: warning: tool lookup is unavailable:
// its tool server http://… is down: dial tcp …: connection refused"), and
// is listed in --json as "unavailable":[{"tool","why"}] (always present,
// [] when none; a sub-agent's result has its own); the run goes on with
// the rest. --require-tools makes any of them bad usage: exit 2 once the
// setup is done and before the first model turn, with nothing sent to the
// model (the setup was spent from the budget, and the trace shows it).
//
// --max-wait D refuses a run the process could not start within D of its
// own start (a machine queueing for the CPU): nothing is started, and its
// labeled result, cause at_capacity, is printed at once, exit 4, rather
// than an answer after B (issue 25, package admit).
//
// A model that never answers is named: a model attempt that received
// nothing — no status, no chunk, not even a keepalive — before its lease
// or the quiet clock ended it is in the boundary ("Stopped at step 1: the
// model sent nothing for 3.6s."), and the landing call is not sent to
// that same server: the result is the harness's summary of its own
// record. So is one that received only keepalives ("the model sent only
// keepalives for 3.7s") or chunks of an answer it never finished ("the
// model's answer was still streaming after 3.7s; it never finished"), for
// keepalives and tokens are not an answer (issue 24). A --base-url that
// answers 200 with no event stream — an HTML page, an empty body, JSON of
// any shape — is not a model server and is named so once, not retried
// and not sent the landing call: cause upstream, exit 3, and standard
// error says "harness run: The model failed at step 1: http://…/v1 is not
// an OpenAI-compatible model server: it answered 200 text/html." A run
// with no call to list says where it was ("Ran out of allotted time at
// step 0: no model turn had started."), never anything about tool calls.
//
// A run whose model answered after tool calls none of which brought a
// result — each failed, was not started or was cut — keeps the answer but
// is partial, cause tools_failed, exit 3 ("Answered at step 2 without a
// tool's result: search failed."): an answer made without its tools is
// not presented as complete, and a script learns that the tools are
// broken. A run that made no tool call at all is complete.
//
// Seeing a run (SPEC §8): -v logs each record of the run on standard error
// through zerolog — console lines on a terminal, JSON lines otherwise or
// with --log-format json, in which case every line the command writes on
// standard error is one JSON object. When OTEL_EXPORTER_OTLP_ENDPOINT (or
// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) is set, the run's spans —
// invoke_agent, chat and execute_tool, GenAI attributes beside the
// budget's glidepath.* — are exported over OTLP/HTTP, the other OTEL_*
// variables applying as the SDK reads them; the export is given at most 2s
// after the run. An endpoint variable that is not an absolute http or https
// URL is warned about, by name and with what is wrong, and ignored (the
// OpenTelemetry SDK's rule for an invalid value); the SDK's own errors and
// warnings are warnings of the command, JSON lines with --log-format json,
// and the spans not delivered are counted once, with the last export's
// error. API keys, bearer tokens and Authorization values are
// scrubbed from logs, traces, spans and errors alike, and from everything
// harness run prints (issue 24): the answer on standard output, as text or
// --json (every string of the object), every line on standard error, and
// the standard error of the MCP stdio servers, which is passed through
// line by line (with --log-format json, each of its lines one JSON object;
// a last line without its newline is shown when the servers stop). A
// command tool and an MCP stdio server never see OPENAI_API_KEY or any
// other key of the harness's environment: they get only what a program
// needs to run (tools.Environ) and what their entry's env names. --profile FILE (default
// profile.json in the state folder beside the journal; off for none) is the
// latency profile: the run starts its kinds' p50 and p95 from what runs on
// this machine recorded in the last 7 days at the same place — the same
// model on the same server, the same tool URL, command or MCP server — so
// a model call the machine's own history says cannot finish is refused,
// and it adds what its attempts took when it ends. It also keeps, apart,
// the attempts the quiet clock cut: a cut says only that the call takes
// at least that long, so it never counts in the p50 and p95, but the next
// run at the same place allows that kind's calls at least twice the
// longest cut of silence (capped by --max-silence), rather than cut them
// again where they were cut (issue 27). One model's history never refuses
// another's calls. A corrupt profile is a warning and is not used.
//
// A run is complete only when its answer stands on settled work. When the
// model answered while a write's outcome stayed unknown (its attempt timed
// out and its tool could not say how it ended), the result is partial with
// cause unsettled: the answer is kept, the write is in in_flight with its
// idempotency key and in the orphan journal, and the boundary names the
// command that settles it (harness reconcile, with --journal FILE for a
// journal of one's own; or, for a tool no program can ask, the --settle with
// which a person records what they found); the line on standard error says
// the model answered and to run harness reconcile. When the model fails, its status and
// message are printed on standard error, in the boundary and in the
// attempt's attempt_end record (redacted of the key); a 401, 403 or 404, or a
// server that cannot be reached, is not retried and gets no landing call, so
// the result is built from the run's own record. A --base-url that is not an
// absolute http or https URL, or a real model without OPENAI_API_KEY, is bad
// usage before anything is sent; the --trace file is opened, its folder made
// as --journal's is, before any request. Each record is written to it, one
// write, no buffer, before the run's next step, so that a process killed
// mid-run (Ctrl-C twice, SIGKILL) leaves every record up to that instant
// (issue 24).
//
// The budget starts when the process does (package internal/procstart:
// before the costly package initializers; issue 17), or, for a task read
// from standard input, once it is read, and is the run's only one: the
// process's own start-up, reading the tools file and fetching the remote tools'
// manifests are spent from it, each manifest recorded in the trace as a
// step "setup" on a lease of its own, so that --budget 20s reports a total
// of 20000ms whatever came first. The manifests are fetched, and the MCP
// servers started, all at once, each on the run's setup share: the
// smaller of 5s and a quarter of the work time B − R (an MCP server's
// connect_timeout, when given, instead), so that mute servers cost a 6s
// run 1.1s, not its work time (issue 24). The numbers are judged where they are
// defined — the budget's by package budget, the quiet period by the
// watchdog, the steps and parallel calls by the harness — and an error
// names the flag the user gave: "--reserve 30s: must be less than --budget
// 20s", and "--budget 1ns: must be more than the floor, 50ms (--floor)" to
// one who gave no --floor; a value a flag cannot take says what is wrong
// ("--max-steps abc: not a whole number"); a file's syntax error names the
// line of the fault; an orphan journal that cannot be opened is bad usage
// naming --journal (exit 2). A duration or count of 0 selects its default,
// except --reserve: a reserve of 0 would keep no time to land, and is bad
// usage ("--reserve 0: no time would be kept for landing; want auto or a
// duration above 0"), not the automatic reserve. The whole configuration is checked
// before any request is sent; a manifest that cannot be had makes its
// tools unavailable, and the run goes on with the tools it has.
//
// # harness serve
//
//	harness serve --tools FILE [--addr 127.0.0.1:8091] [--max-budget 10m] [flags]
//
// Serve makes every agent entry of FILE a remote tool over the protocol
// of SPEC §5 (SPEC §5c), so that a parent in another process calls it as a
// url tool; its manifest marks each "agent": true, so that a Glidepath
// parent leases it as a slice of its budget and gates it as a sub-agent. A POST runs a child on exactly the Budget-Remaining-Ms it
// received, from the request's arrival, clamped to --max-budget; the
// answer is an event stream of progress, whose units grow at each of the
// child's attempts, and one result, the child's --json object. A repeated
// POST with a known Idempotency-Key follows the child already running, or
// gets its result: it starts none. DELETE of the call lands the child now,
// cancelled; GET gives its state. SIGTERM or Ctrl-C lands every running
// child, answers its caller and exits 0 (a second exits 130). --model,
// --base-url and --api give the children's model as harness run's do, for
// a child whose entry names none, --quiet their
// quiet period; --trace FILE gets every child's records, each child's
// run_start naming the call's key, and --journal the children's orphans.
// Each call is logged on standard error as it ends. --max-runs N is the
// most children running at once, --max-wait D the most a call may wait
// from its arrival until its child starts (the child's budget starts at
// the arrival): a call past either is answered at once with its labeled
// result, cause at_capacity, and starts no child. A FILE with no agent
// entries is bad usage; its other entries are not served. As for harness
// run, a command tool of a child whose program is not there, or a
// --journal that cannot be opened, is bad config before anything is
// served (exit 2).
//
// # harness plan
//
//	harness plan [flags] [FILE]
//	harness plan --tools TOOLSFILE [flags] [FILE]
//
// Plan prints the worst case a configuration really ships without a
// budget, and beside it what the same configuration costs under Glidepath.
//
// Without a budget, every attempt may run to its ceiling and then fail in a
// way that is retried, and every sleep before a retry may be its longest:
//
//	model call = model ceiling × (1 + model retries) + model backoff sleeps
//	tool call  = tool ceiling × (1 + tool retries) + tool backoff sleeps
//	per step   = model call + tool_calls_per_step × slowest tool call
//	total      = steps × per step
//
// A value the configuration leaves out takes the default of the library in
// charge of it, and plan says which default it used. For the model that is
// openai-go (v3), with the defaults package model records beside the client
// that turns them off: no request timeout at all, so an unset model ceiling makes
// the total unbounded; 2 retries; sleeps of 0.5s·2^n, at most 8s. A server's
// Retry-After replaces those sleeps and openai-go honors up to 2m of it per
// retry, which plan shows as a second total. For a tool that is net/http: no
// timeout, no retries; a tool's retries are taken to sleep as Glidepath's
// backoff does (250ms·2^(n−1), at most 8s). A ceiling of 0 means no timeout.
//
// Under Glidepath the run costs at most its budget B, whatever the
// configuration: every attempt's timeout and every sleep is leased from one
// deadline, a reserve R (max(10%·B, min(20s, 25%·B))) is kept for landing,
// and the run returns a labeled answer, complete or partial.
//
// FILE is YAML or JSON ("-" reads standard input); flags override it:
//
//	budget: 2m              # --budget; default 2m, as harness run
//	steps: 20               # --max-steps (or --steps); max model turns, default 50
//	tool_calls_per_step: 1  # --tool-calls-per-step; default 1
//	model:
//	  ceiling: 60s          # --model-ceiling
//	  retries: 2            # --model-retries
//	tools:                  # --tool-ceiling and --tool-retries set every tool
//	  - name: search
//	    ceiling: 30s
//	    retries: 2
//
// Durations are Go duration strings ("90s", "2m"). An unknown or repeated
// field, a value that is not a duration or a whole number, a negative value,
// a budget that is not positive or a YAML alias is an error that names the
// field and, in a file, its line; a field whose value is null is left out.
// The tools file and sim scenarios follow the same rules. --json prints one
// JSON object instead of the table, with every duration in milliseconds and
// an unbounded one as null beside a true "*_unbounded" field.
//
// --tools TOOLSFILE reads the tool config harness run --tools reads (SPEC
// §5), with the same builtins, so that plan answers "what does my run ship
// without Glidepath?". Each tool keeps the limits the file gives it, and only
// the run's one deadline is taken away: its ceiling is its entry's, else its
// builtin's, else none (no timeout); a read is retried max_attempts − 1 times
// (max_attempts left out: 3), and a write, or a tool that does not say it
// reads, never, as Glidepath would not retry it blindly. Plan fetches no
// manifest, so a remote tool whose effect only its server states counts as a
// write. The tools of mcpServers count too, as mcp__SERVER__TOOL called by
// the MCP SDK (no timeout of its own): those allowed_tools names, else those
// its tools entries name, with their limits; a server without
// allowed_tools counts the tools the file cannot name, which plan, which
// connects to nothing, cannot list, as one, mcp__SERVER__*, with no
// ceiling, and says so (issue 24). The model is openai-go's unless --model-ceiling or --model-retries
// say otherwise; the run is --budget and --max-steps. With FILE too, FILE
// gives the run and the model and TOOLSFILE the tools, and FILE must list
// none. A bad tools file is bad config, with harness run's messages.
//
//	harness plan --tools examples/demo/tools.yaml
//	harness plan --tools examples/demo/tools.yaml examples/plan/demo.yaml
//
// # harness orphans
//
//	harness orphans [--journal FILE] [--json]
//
// Orphans lists the open orphans of the journal: write calls whose outcome a
// run could not learn before it had to land, because the tool still said
// running, its status did not answer, or it has none to ask. One line each,
// "KEY TOOL WHERE since TS run RUN_ID"; KEY is the call's Idempotency-Key,
// WHERE the tool's URL, else the tools file that built it, else its kind. The
// journal defaults to $XDG_STATE_HOME/glidepath/orphans.jsonl, falling back to
// ~/.local/state/glidepath/orphans.jsonl; a journal that does not exist has
// no orphans. --json prints a JSON array of the entries. Standard error then
// names each orphan's next step, the command the run's boundary named
// (cancel.ReconcileCommand, cancel.SettleCommand; issue 24): "harness
// reconcile" for those whose tool can be asked, and for each one whose tool
// no program can ask, why, and the --settle with which a person records what
// they found by hand.
//
// A line of the journal that is not an entry — a torn last line a crash
// left, one bad line in the middle — is named on standard error as
// FILE:LINE: why, counted, and skipped; the orphans of every other line are
// listed (issue 24). The same holds for harness reconcile.
//
// # harness reconcile
//
//	harness reconcile [--journal FILE] [--tools FILE] [--budget D]
//	harness reconcile [--journal FILE] --settle KEY=STATE
//
// Reconcile asks the tool of every open orphan for the call's status, once,
// and appends an entry with the settled state (done, failed or
// never_received) for each that settled. Orphans still running or whose tool
// does not answer stay open. The journal is only appended to, never
// rewritten. Every status request is leased from one budget (--budget,
// default 30s); the exit code is 0 when every orphan settled and 3 when some
// stay open, and the line on standard error says what is left to do.
//
// A remote tool's orphan is asked at the URL its call went to. Any other
// orphan names the tools file that built its tool: reconcile reads it again
// from there (--tools FILE stands in for one that moved), builds its tools
// and asks each that can say how a call went: a command entry with a status
// command (status: [argv], run with the key in GLIDEPATH_IDEMPOTENCY_KEY,
// printing {"state":…,"output":…}). A kind that cannot — a command with no
// status command, a builtin (it lived in the process that ran it), an MCP
// server's tool, a sub-agent — stays open, and its line says why and names
// the command with which a person settles it after checking by hand:
// --settle KEY=done (it happened), KEY=failed (it did not) or
// KEY=never_received, which appends that state for the open orphan KEY,
// marked by_hand, and asks no tool. A program's own tool kinds are
// reconciled by that program (cancel.ReconcileJournal).
//
// # harness sim serve
//
//	harness sim serve [--addr 127.0.0.1:8089] [--scenario FILE]
//
// Serves the simulated OpenAI-compatible model (model id "sim") at
// http://ADDR/v1 until interrupted, so that any OpenAI client, curl
// included, can talk to it: Chat Completions (POST /v1/chat/completions)
// and the Responses API (POST /v1/responses) alike. A scenario file scripts faults per request or
// per turn (see package sim); a bad one is bad usage, with the field and line
// named. A bare :PORT listens on loopback. One line per request is logged on
// standard error, never with header values.
//
// # harness profile
//
//	harness profile [--profile FILE] [--json]
//
// Profile prints the latency profile (SPEC §5b), one line per step kind
// and place (WHERE: the model and its server's host, a tool's URL, command
// or builtin, an MCP server): how many observations it holds, their
// nearest-rank p50 and p95, the longest attempt the quiet clock cut there
// (CUT, "—" for none: the next run there allows the kind's calls at least
// twice it, capped by --max-silence) and the dates of the oldest and
// newest. Observations and cuts older than 7 days are dropped and each
// place keeps a bounded number; the file is written
// atomically under a file lock, so concurrent runs lose no update. --json
// prints one object. A corrupt profile is reported and exits 1. A tool's
// or sub-agent's COUNT below 5 is marked "*", with a line under the table:
// a run leases it by the p50 and p95 it declares until it has 5
// observations at that place (the profile's and its own), so those
// numbers are not used yet (issue 24); a model's are used from the first.
//
// # harness report
//
//	harness report [--json] [--html FILE] [--story] TRACE...
//
// Report reads the JSONL traces of runs ("-" reads standard input), grouped
// by run ID across files, and prints: budget utilization (spent/total per
// finished run) at p50, p90 and p99 by nearest rank; the time of each step
// kind (model, tool:NAME, agent:NAME: attempt durations plus backoff sleeps)
// and its share; for each run whose run_end cause is budget, the step that
// spent most of it beside the step that held the budget when it ran out;
// attempt outcomes, "we gave up" (gave_up, quiet, cancelled) apart from
// "they failed" (upstream_error, rate_limited, invalid), with refusals,
// retries, retries given up and, apart from them, give-ups on a server's
// Retry-After the budget could not afford; cancels sent and how they
// ended; reconcile records by state, and orphans. A run that landed on a
// server's wait is not among those whose budget ran out. A sub-agent's run
// (its records carry parent_run_id, or its run_start the key of another
// run's call, as harness serve's do) is not counted as a run: its time is
// its parent's step, and the children of each step are summed up apart —
// how they ended, the slices they got, what they spent them on. --json prints
// one JSON object (trace.Report).
//
// --html FILE also writes the runs as one self-contained HTML page
// (package trace/timeline: inline SVG, CSS and script, nothing fetched when
// it is viewed): per run a title with its result and cause and a timeline
// with a lane per step kind, each attempt a bar labeled with its granted
// lease and outcome and coloured by it (ok, we gave up, they failed),
// backoff sleeps as hatched gaps, the phases shaded with the 60%, 80% and
// reserve lines, quiet-clock resets as ticks, refusals and the landing
// marked, and each sub-agent's run nested under the call that ran it; over
// all runs the utilization histogram and what spent the budget of the runs
// that ran out. With --html the tables are not printed, only a line that
// says where the page was written; with --json as well, the JSON is. A
// FILE that cannot be written is an error (exit 1).
//
// --story prints instead, per run in the order the runs began, a line with
// its ID and budget, then one line per record that shows what its clocks
// did, at the record's elapsed time: an attempt cut and by what (its
// ceiling, the run's time for work, the quiet clock, a cancel of the run),
// with its idempotency key; a retry with the same key and how it ended; a
// cancel, at the time of its answer, with the time it was sent and how it
// settled (accepted, the tool did not know the call, failed, or no
// answer); a write's status asked by key and what it said; an orphan and
// whether it is in the journal; a refusal; the landing; and the end. Every
// line is read from a record: make demo prints it after each run. It is
// not combined with --json or --html.
//
// A line that is not a record is named on standard error as FILE:LINE:
// why, and skipped; the rest is reported. A trace that cannot be read, or
// traces none of whose lines is a record, are bad usage.
//
// # Exit codes
//
//	0  success; for run, a complete answer
//	1  internal error
//	2  bad usage or a bad configuration: the message on standard error names
//	   what is wrong, nothing is started and nothing is printed on standard
//	   output
//	3  run: a partial result, labeled with its boundary (the run landed early,
//	   a write's outcome is unknown, or every tool call failed or never
//	   started); reconcile: orphans still open
//	4  a run refused at the door, not started (cause at_capacity): the
//	   process runs as many as it can serve on time; submit it again later
//	130 a second Ctrl-C
//
// A run whose record is not whole — a trace file that could not be
// written, a sink that fell behind or panicked — still prints its result
// and exits with its own code; the record's failure is a warning on
// standard error.
package main
