package main

import (
	"fmt"
	"io"
	"math"
	"strings"
	"time"
)

// A report is what the sections measured: their text, and the rows of the
// SPEC §7 table at its top.
type report struct {
	harness string
	started time.Time
	parts   []part
	spec    []specRow
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
}

func (r *report) add(title string, commands []string, body string) {
	r.parts = append(r.parts, part{title, commands, body})
}

func (r *report) target(target, glidepath, baseline string, met bool, note string) {
	r.spec = append(r.spec, specRow{target, glidepath, baseline, met, note})
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
	if len(r.spec) > 0 {
		fmt.Fprintf(w, "## SPEC §7, number by number\n\n")
		fmt.Fprintf(w, "| SPEC §7 | Glidepath | baseline | met |\n| --- | --- | --- | --- |\n")
		for _, s := range r.spec {
			met := "yes"
			if !s.met {
				met = "**no**"
			}
			if s.note != "" {
				met += ": " + s.note
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
