package main

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// A result is one line of `go test -bench` output: the benchmark's name
// without its -GOMAXPROCS suffix, its iterations and its metrics by unit,
// in the order printed.
type result struct {
	Name    string
	N       int
	Units   []string
	Metrics map[string]float64
}

// parseBench reads the result lines of `go test -bench` output and skips
// the rest (goos, pkg, PASS, ok, logs). A line that starts like a result
// but does not parse as one is an error naming its line: a figure that
// cannot be read is not left out quietly.
func parseBench(r io.Reader) ([]result, error) {
	var out []result
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for line := 1; sc.Scan(); line++ {
		f := strings.Fields(sc.Text())
		if len(f) == 0 || !strings.HasPrefix(f[0], "Benchmark") || len(f) < 2 {
			continue
		}
		n, err := strconv.Atoi(f[1])
		if err != nil {
			continue // a log line that happens to start with a benchmark's name
		}
		if len(f)%2 != 0 {
			return nil, fmt.Errorf("line %d: %q: metrics are not value-unit pairs", line, sc.Text())
		}
		res := result{Name: trimProcs(f[0]), N: n, Metrics: map[string]float64{}}
		for i := 2; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("line %d: metric %q: %v", line, f[i+1], err)
			}
			if _, dup := res.Metrics[f[i+1]]; !dup {
				res.Units = append(res.Units, f[i+1])
			}
			res.Metrics[f[i+1]] = v
		}
		out = append(out, res)
	}
	return out, sc.Err()
}

// trimProcs drops the "-8" that go test appends to a benchmark's name for
// GOMAXPROCS, so that names read the same on any machine.
func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}
