package main

import (
	"reflect"
	"strings"
	"testing"
)

func TestParseBenchReadsResultLinesAndSkipsTheRest(t *testing.T) {
	out := `goos: linux
goarch: amd64
pkg: github.com/glidepath/glidepath/budget
cpu: AMD EPYC
BenchmarkLease-2         	17852314	        66.81 ns/op	       0 B/op	       0 allocs/op
BenchmarkHangingRun/floor=1ms-2   	      50	         0 ns/op	         0.2500 glidepath-p50-ms	  2.900 naive-p99-ms
    hang_test.go:90: BenchmarkHangingRun 3 runs
BenchmarkIdleRuns   1   0 ns/op   1000 runs
PASS
ok  	github.com/glidepath/glidepath/budget	3.2s
`
	got, err := parseBench(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	want := []result{
		{Name: "BenchmarkLease", N: 17852314, Units: []string{"ns/op", "B/op", "allocs/op"}, Metrics: map[string]float64{"ns/op": 66.81, "B/op": 0, "allocs/op": 0}},
		{Name: "BenchmarkHangingRun/floor=1ms", N: 50, Units: []string{"ns/op", "glidepath-p50-ms", "naive-p99-ms"}, Metrics: map[string]float64{"ns/op": 0, "glidepath-p50-ms": 0.25, "naive-p99-ms": 2.9}},
		{Name: "BenchmarkIdleRuns", N: 1, Units: []string{"ns/op", "runs"}, Metrics: map[string]float64{"ns/op": 0, "runs": 1000}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got\n%+v\nwant\n%+v", got, want)
	}
}

func TestParseBenchNamesALineItCannotRead(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"a value that is not a number", "BenchmarkX-2 10 fast ns/op\n", "line 1: metric \"ns/op\""},
		{"a value without its unit", "ok\nBenchmarkX-2 10 5 ns/op 7\n", "line 2: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parseBench(strings.NewReader(tc.in))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestTrimProcsDropsOnlyANumericSuffix(t *testing.T) {
	for in, want := range map[string]string{
		"BenchmarkLease-2":               "BenchmarkLease",
		"BenchmarkLease":                 "BenchmarkLease",
		"BenchmarkRun/system=per-call":   "BenchmarkRun/system=per-call",
		"BenchmarkRun/system=per-call-8": "BenchmarkRun/system=per-call",
	} {
		if got := trimProcs(in); got != want {
			t.Errorf("trimProcs(%q) = %q, want %q", in, got, want)
		}
	}
}
