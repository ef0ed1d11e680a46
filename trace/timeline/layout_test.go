package timeline

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestFmtMs(t *testing.T) {
	cases := []struct {
		name string
		ms   int64
		want string
	}{
		{"zero is a bare 0", 0, "0"},
		{"under a second is whole milliseconds", 849, "849ms"},
		{"a whole second has no decimals", 2000, "2s"},
		{"seconds keep three significant digits", 1051, "1.05s"},
		{"a lease is never shown longer than it was", 14949, "14.9s"},
		{"tens of seconds keep one decimal", 44949, "44.9s"},
		{"a minute and more is minutes and seconds", 90_000, "1m30s"},
		{"a whole minute has no seconds", 60_000, "1m"},
		{"seconds that round to 60 carry to the minute", 119_700, "2m"},
		{"a negative duration keeps its sign", -250, "−250ms"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmtMs(tc.ms); got != tc.want {
				t.Errorf("fmtMs(%d) = %q, want %q", tc.ms, got, tc.want)
			}
		})
	}
}

func TestFmtPct(t *testing.T) {
	cases := []struct {
		name string
		f    float64
		want string
	}{
		{"a share is a whole percent", 0.71, "71%"},
		{"a small share keeps a decimal", 0.01545, "1.5%"},
		{"nothing is 0%", 0, "0%"},
		{"the whole is 100%", 1, "100%"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := fmtPct(tc.f); got != tc.want {
				t.Errorf("fmtPct(%v) = %q, want %q", tc.f, got, tc.want)
			}
		})
	}
}

func TestNiceStep(t *testing.T) {
	cases := []struct {
		name string
		d    int64
		max  int
		want int64
	}{
		{"2.25s in ten steps is 250ms", 2250, 10, 250},
		{"1.2s in ten steps is 200ms", 1200, 10, 200},
		{"20s in ten steps is 2s", 20000, 10, 2000},
		{"a minute in ten steps is 10s", 60000, 10, 10000},
		{"350ms in ten steps is 50ms", 350, 10, 50},
		{"9ms in ten steps is 1ms", 9, 10, 1},
		{"25ms in ten steps is 2.5ms, which is no whole step: 5ms", 25, 10, 5},
		{"no time at all is a step of 1", 0, 10, 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := niceStep(tc.d, tc.max); got != tc.want {
				t.Errorf("niceStep(%d, %d) = %d, want %d", tc.d, tc.max, got, tc.want)
			}
		})
	}
}

func TestDomainOf(t *testing.T) {
	cases := []struct {
		name        string
		total, last int64
		want        int64
		wantZoomed  bool
	}{
		{"a run that spent half its budget shows the whole budget", 20000, 10000, 20000, false},
		{"a run that spent 71% shows the whole budget", 1200, 852, 1200, false},
		{"a run that spent 10% shows its stretch, rounded up to a tick", 20000, 2005, 2250, true},
		{"a run that spent 1.5% shows its stretch", 20000, 309, 350, true},
		{"a run past its budget shows all it took", 1000, 1200, 1200, false},
		{"a run whose trace gives no budget shows what it took", 0, 850, 900, true},
		{"a run of no time shows its budget", 5000, 0, 5000, false},
		{"a run of no time and no budget shows a second", 0, 0, 1000, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, zoomed := domainOf(tc.total, tc.last)
			if got != tc.want || zoomed != tc.wantZoomed {
				t.Errorf("domainOf(%d, %d) = %d, %v; want %d, %v", tc.total, tc.last, got, zoomed, tc.want, tc.wantZoomed)
			}
		})
	}
}

func TestScale(t *testing.T) {
	s := scale{domain: 2000}
	cases := []struct {
		name string
		got  float64
		want float64
	}{
		{"0ms is the plot's left edge", s.x(0), plotX},
		{"the domain's end is the plot's right edge", s.x(2000), plotRight},
		{"half the domain is the middle", s.x(1000), plotX + plotW/2},
		{"a time past the domain is kept at the right edge", s.x(5000), plotRight},
		{"a time before 0 is kept at the left edge", s.x(-10), plotX},
		{"an attempt of 0ms is still minBarW wide", s.width(500, 500), minBarW},
		{"an attempt's width is its share of the plot", s.width(0, 500), round1(plotW / 4)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("got %v, want %v", tc.got, tc.want)
			}
		})
	}
}

func TestAssignRows(t *testing.T) {
	cases := []struct {
		name     string
		ivs      []interval
		wantRows []int
		wantN    int
	}{
		{"calls one after another share a row", []interval{{0, 10}, {20, 30}, {40, 50}}, []int{0, 0, 0}, 1},
		{"a call that starts as another ends shares its row", []interval{{0, 10}, {10, 20}}, []int{0, 0}, 1},
		{"calls at once take a row each", []interval{{0, 100}, {3, 80}, {3, 500}}, []int{0, 1, 2}, 3},
		{"a row freed early is used again first", []interval{{0, 10}, {0, 100}, {20, 30}}, []int{0, 1, 0}, 2},
		{"the order given does not matter, only the starts", []interval{{20, 30}, {0, 10}, {5, 25}}, []int{0, 0, 1}, 2},
		{"no calls take no rows", nil, []int{}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rows, n := assignRows(tc.ivs)
			if !slices.Equal(rows, tc.wantRows) || n != tc.wantN {
				t.Errorf("assignRows(%v) = %v, %d; want %v, %d", tc.ivs, rows, n, tc.wantRows, tc.wantN)
			}
		})
	}
}

func TestSpacePlace(t *testing.T) {
	long, short := "lease 14.9s · ok", "14.9s · ok" // 16 and 10 characters
	cases := []struct {
		name           string
		taken          []interval
		from, to       float64
		limit          float64
		wantText       string
		wantX          float64
		wantIn, wantOK bool
	}{
		{"a label that fits goes inside its bar", nil, 100, 300, 1000, long, 104, true, true},
		{"a bar too short for the long label holds the short one", nil, 100, 100 + textWidth(short) + 10, 1000, short, 104, true, true},
		{"a short bar's label goes just right of it", nil, 100, 102, 1000, long, 105, false, true},
		{"a label that would cover the next bar falls back to the short text", []interval{{105 + textWidth(short) + 10, 400}}, 100, 102, 1000, short, 105, false, true},
		{"a label with no room either way is left out", []interval{{110, 400}}, 100, 102, 1000, "", 0, false, false},
		{"a label is not set past the plot's edge", nil, 100, 102, 150, "", 0, false, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sp := space{taken: slices.Clone(tc.taken)}
			text, x, in, ok := sp.place(tc.from, tc.to, tc.limit, long, short)
			if text != tc.wantText || x != tc.wantX || in != tc.wantIn || ok != tc.wantOK {
				t.Errorf("place = %q at %v, inside %v, %v; want %q at %v, inside %v, %v", text, x, in, ok, tc.wantText, tc.wantX, tc.wantIn, tc.wantOK)
			}
			if ok && !in && sp.free(x, x+textWidth(text), 0) {
				t.Error("a label set beside its bar did not take its room")
			}
		})
	}
}

func TestStack(t *testing.T) {
	cases := []struct {
		name     string
		labels   []stacked
		rows     int
		down     bool
		want     []int
		wantEnd  []bool
		wantText []string // "" for the label's own text
	}{
		{
			name:    "labels far apart share the first row",
			labels:  []stacked{{x: 300, text: "60%"}, {x: 600, text: "reserve 5s"}},
			rows:    2,
			want:    []int{0, 0},
			wantEnd: []bool{false, false},
		},
		{
			name:    "a label too close to another goes to the next row",
			labels:  []stacked{{x: 300, text: "reserve 5s"}, {x: 330, text: "80%"}},
			rows:    2,
			want:    []int{0, 1},
			wantEnd: []bool{false, false},
		},
		{
			name:    "a label with no room on either side in any row is dropped",
			labels:  []stacked{{x: 220, text: "reserve 5s"}, {x: 225, text: "80%"}},
			rows:    1,
			want:    []int{0, -1},
			wantEnd: []bool{false, false},
		},
		{
			name:    "a label with no room on the right of its line sits on its left",
			labels:  []stacked{{x: 300, text: "reserve 5s"}, {x: 310, text: "80%"}, {x: 320, text: "end 2s"}},
			rows:    2,
			want:    []int{0, 1, 1},
			wantEnd: []bool{false, true, false},
		},
		{
			name:     "a label falls back to its shorter text, so that the next one has room",
			labels:   []stacked{{x: 300, text: "reserve 5s from 15s", alts: []string{"reserve 5s"}}, {x: 400, text: "80%"}},
			rows:     1,
			want:     []int{0, 0},
			wantEnd:  []bool{false, false},
			wantText: []string{"reserve 5s", ""},
		},
		{
			name:    "a label that would cross the right edge sits left of its line",
			labels:  []stacked{{x: 1180, text: "end 20s"}},
			rows:    2,
			want:    []int{0},
			wantEnd: []bool{true},
		},
		{
			name:    "a pole crosses no label: its label moves nearer the plot",
			labels:  []stacked{{x: 280, text: "60%", pole: true}, {x: 230, text: "reserve 5s"}},
			rows:    2,
			down:    true,
			want:    []int{1, 0}, // in row 0, 60%'s pole would cross reserve 5s in row 1
			wantEnd: []bool{false, false},
		},
		{
			name:    "labels on one line sit either side of it",
			labels:  []stacked{{x: 400, text: "landed · model", pole: true}, {x: 400, text: "end 852ms", pole: true}},
			rows:    2,
			down:    true,
			want:    []int{0, 0},
			wantEnd: []bool{false, true},
		},
		{
			name:    "below the plot, a pole crosses the rows above its label",
			labels:  []stacked{{x: 280, text: "60%", pole: true}, {x: 230, text: "reserve 5s"}},
			rows:    2,
			down:    false,
			want:    []int{0, 1},
			wantEnd: []bool{false, false},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			labels := slices.Clone(tc.labels)
			got := stack(labels, tc.rows, plotX, svgWidth, tc.down)
			if !slices.Equal(got, tc.want) {
				t.Errorf("rows %v, want %v", got, tc.want)
			}
			for i, l := range labels {
				if l.end != tc.wantEnd[i] {
					t.Errorf("label %q left of its line: %v, want %v", l.text, l.end, tc.wantEnd[i])
				}
				want := tc.labels[i].text
				if tc.wantText != nil && tc.wantText[i] != "" {
					want = tc.wantText[i]
				}
				if l.text != want {
					t.Errorf("label %d reads %q, want %q", i, l.text, want)
				}
			}
		})
	}
}

// TestStackNeverCoversALabel lays out many crowds of line labels and
// checks what stack promises of each: no two labels of a row touch, no
// pole crosses a label, and every label is inside the bounds.
func TestStackNeverCoversALabel(t *testing.T) {
	rng := rand.New(rand.NewPCG(18, 6))
	texts := []string{"60%", "80%", "reserve 300ms", "landed · model", "end 852ms", "budget 1.2s", "end 1.29s · 87ms late"}
	for n := range 300 {
		var labels []stacked
		for range 2 + rng.IntN(6) {
			labels = append(labels, stacked{x: plotX + rng.Float64()*plotW, text: texts[rng.IntN(len(texts))], alts: []string{"x"}, pole: rng.IntN(2) == 0})
		}
		down := n%2 == 0
		rows := stack(labels, 3, plotX, svgWidth-2, down)
		for i, a := range labels {
			if rows[i] < 0 {
				continue
			}
			from, to := a.span()
			if from < plotX || to > svgWidth-2 {
				t.Fatalf("crowd %d: label %q at %v–%v is out of bounds", n, a.text, from, to)
			}
			for j, b := range labels {
				if j == i || rows[j] < 0 {
					continue
				}
				bf, bt := b.span()
				if rows[j] == rows[i] && from < bt+labelPad && bf < to+labelPad && j > i {
					t.Fatalf("crowd %d: labels %q and %q touch in row %d", n, a.text, b.text, rows[i])
				}
				crosses := down && rows[j] > rows[i] || !down && rows[j] < rows[i]
				if a.pole && crosses && bf-1 < a.x && a.x < bt+1 {
					t.Fatalf("crowd %d: the pole of %q at %v crosses %q at %v–%v", n, a.text, a.x, b.text, bf, bt)
				}
			}
		}
	}
}

func TestEllipsize(t *testing.T) {
	cases := []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"a short name is kept", "tool:search", 20, "tool:search"},
		{"a long name loses its middle", "tool:mcp__everything__trigger-long-running-operation", 24, "tool:mcp__e…ng-operation"},
		{"runes are counted, not bytes", "tool:ñandú_ñandú_ñandú", 9, "tool…andú"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := ellipsize(tc.s, tc.n)
			if got != tc.want {
				t.Errorf("ellipsize(%q, %d) = %q, want %q", tc.s, tc.n, got, tc.want)
			}
			if n := len([]rune(got)); n > tc.n {
				t.Errorf("%q has %d runes, more than %d", got, n, tc.n)
			}
		})
	}
}

func TestReserveOf(t *testing.T) {
	cases := []struct {
		name        string
		total, land int64
		want        int64
		wantSet     bool
	}{
		{"a ladder that reached land on its own shows the reserve", 60000, 45000, 15000, true},
		{"without such a phase record the default rule applies", 20000, -1, 5000, false},
		{"the default rule keeps 25% of a short budget", 1200, -1, 300, false},
		{"a land past the budget says nothing", 1000, 1500, 250, false},
		{"no budget has no reserve", 0, 500, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, set := reserveOf(tc.total, tc.land)
			if got != tc.want || set != tc.wantSet {
				t.Errorf("reserveOf(%d, %d) = %d, %v; want %d, %v", tc.total, tc.land, got, set, tc.want, tc.wantSet)
			}
		})
	}
}

func TestBins(t *testing.T) {
	cases := []struct {
		name  string
		utils []float64
		want  []int
	}{
		{"runs fall in tenths", []float64{0.05, 0.1, 0.19, 0.71}, []int{1, 2, 0, 0, 0, 0, 0, 1, 0, 0}},
		{"a run that spent all of it is in the last tenth", []float64{1}, []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 1}},
		{"a run past its budget gets a bin of its own", []float64{1.2}, []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}},
		{"no runs are ten empty bins", nil, []int{0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := bins(tc.utils); !slices.Equal(got, tc.want) {
				t.Errorf("bins(%v) = %v, want %v", tc.utils, got, tc.want)
			}
		})
	}
}
