# Glidepath. `make demo` runs the main job, `make test` the tests.
GO        ?= go
FUZZTIME  ?= 10s
PKGS      := ./...

.PHONY: build test temporal-test temporal-histories temporal-race temporal-demo demo subagents mcp plan bench fuzz lint screenshot

build:
	$(GO) build -o bin/harness ./cmd/harness

# The CI gate: formatting, vet, then every test under the race detector.
# Each long stretch says what it does as it starts: the race run prints
# nothing for minutes while cmd/harness's process tests run (issue 24).
test: lint
	@echo "== go test -race: every package under the race detector; minutes on 2 cores, cmd/harness (harness run as processes) about three"
	$(GO) test -race -shuffle=on -count=1 $(PKGS)
	$(MAKE) temporal-test

# The nested module temporal/ (durable runs on Temporal, SPEC §9), which
# has its own go.mod so that the core never pulls the Temporal SDK or
# server: vet, go fix, then its tests on an in-process Temporal server
# (temporaltest). Without -race here: the race build of the server is a
# second cold compile of it, which took CI past its 15 minutes on 2 cores
# (issue 19); make temporal-race runs them under the race detector.
temporal-test:
	@echo "== temporal/: vet, go fix, then its tests on an in-process Temporal server (the first build compiles the server: minutes)"
	cd temporal && $(GO) vet ./...
	@out=$$(cd temporal && $(GO) fix -diff ./... 2>&1); \
		if [ -n "$$out" ]; then echo "go fix would change (temporal):"; echo "$$out"; exit 1; fi
	cd temporal && $(GO) test -count=1 ./...

# Records the histories temporal/durable/testdata holds again, from fresh
# runs, for the replay tests of make temporal-test: after a change to the
# workflow's commands, with durable.RulesVersion bumped (issue 25).
temporal-histories:
	cd temporal && $(GO) test -count=1 -run TestARunsHistoryReplaysOnAFreshWorker ./durable/ -update

temporal-race:
	cd temporal && $(GO) test -race -count=1 ./...

# A worker SIGKILLed mid-payment is a non-event (SPEC §9, issue 19):
# harness-temporal dev on a free loopback port, the demo's tool server
# (examples/toolserver) at the address examples/temporal/tools.yaml names,
# worker A, and a run whose simulated model pays and searches; once the
# payment is running at the tool server (its key read from the run's
# history, its state from the status endpoint), worker B starts and A is
# killed. It checks that the run completes on B by its original deadline
# and that the payment was sent and committed once, prints harness report
# of the trace, and stops everything it started (temporal/cmd/
# harness-temporal-demo; logs and the trace in bin/temporal-demo*).
temporal-demo: build
	cd temporal && $(GO) build -o ../bin/ ./cmd/harness-temporal ./cmd/harness-temporal-demo
	$(GO) build -o bin/toolserver ./examples/toolserver
	bin/harness-temporal-demo --bin bin --tools examples/temporal/tools.yaml

# Two real runs on the embedded simulated model and the demo tools (see
# examples/demo/tools.yaml), then the report over both traces: the first
# completes after a read is cut, cancelled and retried and a late write is
# reconciled rather than sent twice; the second, on 1.2s, lands early with a
# labeled partial answer (exit 3, expected here) and leaves a write whose
# outcome is unknown in the demo's own orphan journal. The demo keeps its
# own latency profile, started afresh, so that what it prints never
# depends on this machine's history of other models and tools. After each
# run, `harness report --story` prints from that run's trace the lines that
# show the point: the cut and retried read with its key, the cancel and how
# it settled, the write reconciled by key, the refusal, the orphan.
demo: build
	@rm -f bin/demo-trace.jsonl bin/demo-short.jsonl bin/demo-orphans.jsonl bin/demo-profile.json
	bin/harness run --budget 20s --tools examples/demo/tools.yaml --journal bin/demo-orphans.jsonl \
		--profile bin/demo-profile.json --trace bin/demo-trace.jsonl "Pay invoice 42, then explain deadline budgets"
	@bin/harness report --story bin/demo-trace.jsonl
	bin/harness run --budget 1.2s --tools examples/demo/tools.yaml --journal bin/demo-orphans.jsonl \
		--profile bin/demo-profile.json --trace bin/demo-short.jsonl "Pay invoice 43, then explain deadline budgets" || [ $$? -eq 3 ]
	@bin/harness report --story bin/demo-short.jsonl
	bin/harness report --html bin/demo-timeline.html bin/demo-trace.jsonl bin/demo-short.jsonl
	bin/harness orphans --journal bin/demo-orphans.jsonl

# The README's picture: make demo's timeline page in headless chromium.
screenshot: demo
	chromium --headless --no-sandbox --disable-gpu --no-first-run --disable-background-networking \
		--user-data-dir=$$(mktemp -d) --hide-scrollbars --window-size=1280,1330 \
		--screenshot=docs/timeline.png file://$(CURDIR)/bin/demo-timeline.html

# A parent with three researcher sub-agents at once, each on a slice of its
# one budget: two in this process, one in `harness serve` on port 8093;
# then the report over both traces, the slices in its sub-agents table.
subagents: build
	sh examples/subagents/run.sh

# A run whose tools are MCP servers: the reference server over stdio,
# fetched by npx (so it needs Node and the npm registry), and the kit's
# demo tools over streamable HTTP on port 8090; then its report.
mcp: build
	sh examples/mcp/run.sh

# The worst case an unbudgeted configuration really ships.
plan:
	$(GO) run ./cmd/harness plan examples/plan/agent.yaml

# Every figure of SPEC §7 beside its baseline, written to BENCHMARKS.md
# with the command of each, the machine and the date (bench/cmd/benchmd):
# micro-benchmarks, whole runs, the fault battery, duplicate writes, the
# fleet, the harness run process, a tool whose POST and cancel both hang,
# a starved machine (a hog process on every core, for a few minutes), and
# on Temporal (temporal/bench, built and run in the nested module as a
# subprocess, so that the root module never imports it; about 2 minutes).
# `go run ./bench/cmd/benchmd -only NAME` runs one section; `go test
# -bench` in a package runs its own.
bench: build
	$(GO) run ./bench/cmd/benchmd -o BENCHMARKS.md

# Runs every fuzz target for FUZZTIME each. The seed corpora in testdata/fuzz
# also run as plain tests in `make test`.
fuzz:
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
		for f in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$pkg $$f"; \
			$(GO) test -run='^$$' -fuzz="^$$f$$" -fuzztime=$(FUZZTIME) $$pkg; \
		done; \
	done

lint:
	@echo "== lint: gofmt, go vet, go fix -diff"
	@out=$$(gofmt -l $$(git ls-files '*.go') $$(git ls-files --others --exclude-standard '*.go')); \
		if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi
	$(GO) vet $(PKGS)
	@out=$$($(GO) fix -diff $(PKGS) 2>&1); \
		if [ -n "$$out" ]; then echo "go fix would change:"; echo "$$out"; exit 1; fi
