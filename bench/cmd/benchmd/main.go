// Command benchmd runs Glidepath's benchmarks and writes BENCHMARKS.md:
// every figure of SPEC §7 beside its baseline, each with the command that
// produced it, the machine and the date (`make bench` runs it).
//
//	go run ./bench/cmd/benchmd -o BENCHMARKS.md
//	go run ./bench/cmd/benchmd -only fleet     # one section, on standard output
//	go run ./bench/cmd/benchmd -only battery -scenarios '^responses-'
//
// The micro-benchmarks and whole-run benchmarks are `go test -bench`
// runs, whose output it reads; the fault battery, the duplicate count, the
// fleet and the process runs are measured here, in this process, through
// packages bench/battery and bench/fleet and the bin/harness binary.
// The temporal section builds the test binary of the nested module's
// temporal/bench (`go test -c` in temporal/) and reads its output: the
// root module never imports the Temporal SDK.
//
// The starved section starts copies of this binary beside the runs it
// times: hogs, one per core (package bench/internal/hog), and its
// baseline, a process that only sleeps B; main turns the binary into one
// of them when the environment says so.
package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"regexp"
	"runtime"
	"strings"
	"time"

	"github.com/glidepath/glidepath/bench/internal/hog"
)

func main() {
	hog.Main()    // the starved section's hogs are copies of this binary,
	sleeperMain() // and so is its baseline process
	out := flag.String("o", "", "write the report to `FILE` (default: standard output)")
	only := flag.String("only", "", "run one `section`: "+strings.Join(sectionNames(), ", "))
	harness := flag.String("harness", "bin/harness", "the harness `binary` the process section runs")
	scenarios := flag.String("scenarios", "", "run only the battery scenarios whose names match `REGEXP` (battery and silence sections)")
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), "usage: benchmd [-o FILE] [-only SECTION] [-scenarios REGEXP] [-harness BINARY]\n\nFlags:\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "benchmd: unexpected argument %q\n", flag.Arg(0))
		flag.Usage()
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, *out, *only, *scenarios, *harness); err != nil {
		fmt.Fprintln(os.Stderr, "benchmd:", err)
		var ue usageError
		if errors.As(err, &ue) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

type usageError string

func (e usageError) Error() string { return string(e) }

func run(ctx context.Context, out, only, scenarios, harness string) error {
	rep := &report{harness: harness, started: time.Now()}
	if scenarios != "" {
		re, err := regexp.Compile(scenarios)
		if err != nil {
			return usageError(fmt.Sprintf("-scenarios %q: %v", scenarios, err))
		}
		rep.match = re
	}
	secs := sections
	if only != "" {
		secs = nil
		for _, s := range sections {
			if s.name == only {
				secs = append(secs, s)
			}
		}
		if secs == nil {
			return usageError(fmt.Sprintf("-only %q: want one of %s", only, strings.Join(sectionNames(), ", ")))
		}
	}
	for _, s := range secs {
		fmt.Fprintf(os.Stderr, "benchmd: %s...\n", s.title)
		t := time.Now()
		if err := s.run(ctx, rep); err != nil {
			return fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Fprintf(os.Stderr, "benchmd: %s took %v\n", s.name, time.Since(t).Round(time.Second))
	}
	var buf bytes.Buffer
	rep.write(&buf, only == "")
	if out == "" {
		_, err := os.Stdout.Write(buf.Bytes())
		return err
	}
	// Written whole at the end, so that a run cut short leaves the last
	// report as it was.
	tmp := out + ".tmp"
	if err := os.WriteFile(tmp, buf.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

// goBench runs `go test -run '^$' -bench ARGS…` with env added and returns
// its results and the command, as a reader would type it.
func goBench(ctx context.Context, env []string, args ...string) ([]result, string, error) {
	argv := append([]string{"test", "-run", "^$"}, args...)
	cmd := exec.CommandContext(ctx, "go", argv...)
	cmd.Env = append(os.Environ(), env...)
	shown := strings.TrimSpace(strings.Join(env, " ") + " go " + quoteArgs(argv))
	res, err := runBench(cmd, shown)
	return res, shown, err
}

// runBench runs cmd, a benchmark binary or `go test -bench`, and parses
// its results; shown is the command as a reader would type it, for the
// errors. A run that fails says so with the last lines it printed.
func runBench(cmd *exec.Cmd, shown string) ([]result, error) {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s: %v\n%s%s", shown, err, lastLines(stdout.String(), 20), lastLines(stderr.String(), 20))
	}
	res, err := parseBench(&stdout)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", shown, err)
	}
	if len(res) == 0 {
		return nil, fmt.Errorf("%s: no benchmark ran\n%s", shown, lastLines(stdout.String(), 20))
	}
	return res, nil
}

func quoteArgs(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if strings.ContainsAny(a, "^$|()*? ") {
			a = "'" + a + "'"
		}
		q[i] = a
	}
	return strings.Join(q, " ")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n") + "\n"
}

// machine describes where the figures were measured.
func machine() string {
	cpu := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for line := range strings.SplitSeq(string(b), "\n") {
			if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
				cpu = strings.TrimSpace(v)
				break
			}
		}
	}
	kernel := ""
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		kernel = ", Linux " + strings.TrimSpace(string(b))
	}
	return fmt.Sprintf("%s/%s, %d CPUs (%s)%s, %s", runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), cpu, kernel, runtime.Version())
}
