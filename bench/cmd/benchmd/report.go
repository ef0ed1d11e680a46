package main

import (
	"fmt"
	"io"
	"math"
	"os"
	"regexp"
	"strings"
	"time"
)

// A report is what the sections measured: their text, and the rows of the
// SPEC §7 table at its top.
type report struct {
	harness string
	started time.Time
	// match, when set, is the -scenarios filter: the battery scenarios
	// the battery and silence sections run ([report.scenarios]).
	match *regexp.Regexp
	parts []part
	spec  []specRow
	// losses are the measured cases where Glidepath does worse than a
	// baseline, one generated sentence each, for the report's opening
	// paragraph (issue 20).
	losses []string
}

type part struct {
	title    string
	commands []string
	body     string
}

// A specRow is one number of SPEC §7: the target, what Glidepath measured,
// the baseline beside it, and whether the target is met; a shortfall says
// its cause in note.
type specRow struct {
	target, glidepath, baseline string
	met                         bool
	note                        string
	// idle is the load average when the row was measured, for a figure
	// that holds only on an idle machine (a time bound, a count that
	// depends on timers firing on time); "" for one that does not.
	idle string
}

func (r *report) add(title string, commands []string, body string) {
	r.parts = append(r.parts, part{title, commands, body})
}

func (r *report) target(target, glidepath, baseline string, met bool, note string) {
	r.spec = append(r.spec, specRow{target: target, glidepath: glidepath, baseline: baseline, met: met, note: note})
}

// idle marks the row just added as a figure that depends on an idle
// machine, with the load average as it is now, at the end of its
// measurement.
func (r *report) idle() {
	if len(r.spec) > 0 {
		r.spec[len(r.spec)-1].idle = loadAverage()
	}
}

// lose records a case where Glidepath measured worse than a baseline.
func (r *report) lose(sentence string) { r.losses = append(r.losses, sentence) }

// starvedLink is the anchor of the starved-machine section, where the
// idle-machine figures are measured again under load.
const starvedLink = "[A starved machine](#a-starved-machine)"

// loadAverage is the 1-minute load average, as /proc/loadavg says it, or
// "unknown".
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	if f := strings.Fields(string(b)); len(f) > 0 {
		return f[0]
	}
	return "unknown"
}

// writeLosses writes the opening paragraph: every SPEC §7 number not met
// and every case the sections recorded where Glidepath did worse than a
// baseline, all generated from what was measured.
func (r *report) writeLosses(w io.Writer) {
	var ls []string
	for _, s := range r.spec {
		if !s.met {
			l := fmt.Sprintf("%s: not met, %s", strings.TrimSuffix(s.target, "."), s.glidepath)
			if s.note != "" {
				l += " (" + s.note + ")"
			}
			ls = append(ls, l)
		}
	}
	ls = append(ls, r.losses...)
	fmt.Fprintf(w, "## Where Glidepath loses\n\n")
	if len(ls) == 0 {
		fmt.Fprintf(w, "Nowhere in what this report measured.\n\n")
		return
	}
	fmt.Fprintf(w, "Generated from the measured rows below, section by section:\n\n")
	for _, l := range ls {
		fmt.Fprintf(w, "- %s.\n", strings.TrimSuffix(l, "."))
	}
	fmt.Fprintln(w)
}

func (r *report) write(w io.Writer, whole bool) {
	if whole {
		fmt.Fprintf(w, "# Benchmarks\n\n")
		fmt.Fprintf(w, "Written by `make bench` (`go run ./bench/cmd/benchmd -o BENCHMARKS.md`) on %s, in %v.\n",
			r.started.UTC().Format("2006-01-02 15:04 MST"), time.Since(r.started).Round(time.Second))
		fmt.Fprintf(w, "Machine: %s.\n\n", machine())
		fmt.Fprintf(w, "Each figure is measured beside its baseline in the same run, so read ratios, not absolute numbers:\n")
		fmt.Fprintf(w, "this machine is shared and noisy. Every section names the command that reproduces it.\n\n")
	}
	if whole || len(r.losses) > 0 {
		r.writeLosses(w)
	}
	if len(r.spec) > 0 {
		fmt.Fprintf(w, "## SPEC §7, number by number\n\n")
		fmt.Fprintf(w, "A row marked *idle machine* holds only on an idle machine (its load average when measured is given);\n")
		fmt.Fprintf(w, "the same bounds under load are measured in %s.\n\n", starvedLink)
		fmt.Fprintf(w, "| SPEC §7 | Glidepath | baseline | met |\n| --- | --- | --- | --- |\n")
		for _, s := range r.spec {
			met := "yes"
			if !s.met {
				met = "**no**"
			}
			if s.note != "" {
				met += ": " + s.note
			}
			if s.idle != "" {
				met += fmt.Sprintf(" (*idle machine*: load average %s; under load see %s)", s.idle, starvedLink)
			}
			fmt.Fprintf(w, "| %s | %s | %s | %s |\n", cell(s.target), cell(s.glidepath), cell(s.baseline), cell(met))
		}
		fmt.Fprintln(w)
	}
	for _, p := range r.parts {
		fmt.Fprintf(w, "## %s\n\n", p.title)
		for _, c := range p.commands {
			fmt.Fprintf(w, "    %s\n", c)
		}
		if len(p.commands) > 0 {
			fmt.Fprintln(w)
		}
		fmt.Fprintf(w, "%s\n", strings.TrimRight(p.body, "\n")+"\n")
	}
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

// table renders rows under header as a Markdown table.
func table(header []string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(header, " | ") + " |\n|")
	for range header {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, r := range rows {
		cs := make([]string, len(r))
		for i, c := range r {
			cs[i] = cell(c)
		}
		b.WriteString("| " + strings.Join(cs, " | ") + " |\n")
	}
	return b.String()
}

// resultsTable renders go test results: one row per benchmark, its
// metrics as printed.
func resultsTable(res []result) string {
	var rows [][]string
	for _, r := range res {
		var ms []string
		for _, u := range r.Units {
			if u == "ns/op" && r.Metrics[u] == 0 {
				continue // the whole-run benchmarks zero it: their figures are custom
			}
			ms = append(ms, num(r.Metrics[u])+" "+u)
		}
		rows = append(rows, []string{"`" + strings.TrimPrefix(r.Name, "Benchmark") + "`", fmt.Sprint(r.N), strings.Join(ms, " · ")})
	}
	return table([]string{"benchmark", "iterations", "figures"}, rows)
}

// num prints a figure with three significant digits, or as an integer.
func num(v float64) string {
	switch {
	case v == math.Trunc(v) && math.Abs(v) < 1e15:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	case math.Abs(v) >= 1:
		return fmt.Sprintf("%.2f", v)
	}
	return fmt.Sprintf("%.3g", v)
}

// dur prints d in ms with enough precision for the figure's size.
func dur(d time.Duration) string {
	return num(float64(d)/float64(time.Millisecond)) + "ms"
}

// find returns the result named name (without "Benchmark"), or a zero one
// whose missing metrics read as NaN.
func find(res []result, name string) result {
	for _, r := range res {
		if strings.TrimPrefix(r.Name, "Benchmark") == name {
			return r
		}
	}
	return result{Name: name}
}

// worst returns the largest value of unit over the result named name and
// its sub-benchmarks (name/…): a figure holds only if it holds for each.
func worst(res []result, name, unit string) float64 {
	w := math.NaN()
	for _, r := range res {
		n := strings.TrimPrefix(r.Name, "Benchmark")
		if n != name && !strings.HasPrefix(n, name+"/") {
			continue
		}
		if v := r.get(unit); math.IsNaN(w) || v > w {
			w = v
		}
	}
	return w
}

func (r result) get(unit string) float64 {
	if v, ok := r.Metrics[unit]; ok {
		return v
	}
	return math.NaN()
}
