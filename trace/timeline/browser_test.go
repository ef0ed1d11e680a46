package timeline

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/glidepath/glidepath/trace"
)

// chromium finds a headless browser, Debian's chromium (.ci/run installs
// it). Without one the browser test skips, unless CI is "true": in CI a
// missing browser is a failure, not a pass.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if path, err := exec.LookPath(name); err == nil {
			return path
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not on PATH, and CI=true: install it (.ci/run does: apt-get install chromium)")
	}
	t.Skip("chromium is not on PATH: the page is not checked in a browser (with CI=true this fails)")
	return ""
}

// dumpDOM loads the page at path in headless chromium, in a window width
// pixels wide, and returns the DOM once the page's script ran. It is
// bounded generously, since a browser starts slowly on a loaded machine;
// it takes about a second.
func dumpDOM(t *testing.T, browser, path string, width int) string {
	t.Helper()
	profile, err := os.MkdirTemp("", "timeline-chromium-")
	if err != nil {
		t.Fatal(err)
	}
	// Not t.TempDir: the browser's helpers may still be closing files in
	// its profile as the test ends, and that is no failure of the page.
	t.Cleanup(func() { os.RemoveAll(profile) })
	ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, browser,
		"--headless",
		"--no-sandbox", // as root, chromium will not start without it; the page is the test's own
		"--disable-gpu",
		"--no-first-run",
		"--disable-background-networking",
		"--user-data-dir="+profile,
		"--window-size="+strconv.Itoa(width)+",900",
		"--dump-dom",
		"file://"+path,
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s --dump-dom: %v after %v\n%s", browser, err, time.Since(start), &stderr)
	}
	t.Logf("chromium loaded the page and dumped its DOM in %v", time.Since(start).Round(time.Millisecond))
	return stdout.String()
}

// TestPageInABrowser loads the page of real runs (make demo, make
// subagents, make mcp) in headless chromium and reads the DOM back after
// the page's script ran: every attempt of the traces has its bar, no
// label the browser shows covers another, and nothing of the trace ran
// as markup or script.
func TestPageInABrowser(t *testing.T) {
	browser := chromium(t)
	recs := fixtures(t)
	// And a run whose messages would run script if they were not escaped.
	evil := newRun("run-evil", 5000)
	evil.attempt("tool:x", 1, 1, "gp_x", 1000, 0, 400, trace.UpstreamError)
	evil.recs[len(evil.recs)-1].Message = `</title></text></svg><script>document.body.setAttribute("data-pwned","script")</script>`
	evil.at(450, trace.Record{Event: trace.Progress, Step: "tool:x", Key: "gp_x", Message: `<img src=x onerror="document.body.setAttribute('data-pwned','img')">`})
	evil.end(500, "upstream", "partial")
	recs = append(recs, evil.recs...)

	path := filepath.Join(t.TempDir(), "page.html")
	var page bytes.Buffer
	if err := Write(&page, recs, Options{Title: "browser test", Sources: []string{"testdata"}}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, page.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := dumpDOM(t, browser, path, 1280)

	var body element
	for _, e := range elements(dom) {
		if e.tag == "body" {
			body = e
			break
		}
	}
	if body.attrs["data-ready"] != "true" {
		t.Fatalf("the page's script did not run to its end: body %v", body.attrs)
	}
	if v, ok := body.attrs["data-pwned"]; ok {
		t.Errorf("text of the trace ran in the page (%s)", v)
	}
	want := wantBars(recs)
	if got := gotBars(dom); !slices.Equal(got, want) {
		t.Errorf("bars in the DOM:\n%v\nwant one for each attempt of the traces:\n%v", got, want)
	}
	if got := body.attrs["data-drawn"]; got != strconv.Itoa(len(want)) {
		t.Errorf("the script found %s bars, want %d", got, len(want))
	}
	t.Logf("%d bars; labels the script had to hide: %s", len(want), body.attrs["data-labels-hidden"])

	// The script measured every label it left shown and every shape of
	// its row (data-box): no label covers another, nor a bar, a wait or a
	// mark beside it; one inside a bar covers no mark over it.
	type box struct {
		from, to float64
		mark     bool
	}
	labels := map[string][]box{}
	shapes := map[string][]box{}
	for _, e := range elements(dom) {
		row := e.attrs["data-row"]
		if e.attrs["data-box"] == "" || e.attrs["data-hidden"] != "" || row == "" {
			continue
		}
		var b box
		if err := parseBox(e.attrs["data-box"], &b.from, &b.to); err != nil {
			t.Fatalf("data-box %q: %v", e.attrs["data-box"], err)
		}
		switch e.tag {
		case "text":
			b.mark = e.attrs["data-in"] != "" // here: inside a bar
			labels[row] = append(labels[row], b)
		default:
			b.mark = e.tag == "g"
			shapes[row] = append(shapes[row], b)
		}
	}
	covers := func(a, b box) bool { return a.from < b.to-0.5 && b.from < a.to-0.5 }
	shown := 0
	for row, ls := range labels {
		for i, l := range ls {
			shown++
			for _, o := range ls[i+1:] {
				if covers(l, o) {
					t.Errorf("in row %s, a label at %v covers one at %v", row, l, o)
				}
			}
			for _, s := range shapes[row] {
				if (!l.mark || s.mark) && covers(l, s) {
					t.Errorf("in row %s, a label at %v covers a shape at %v", row, l, s)
				}
			}
		}
	}
	if shown == 0 {
		t.Error("no label was measured")
	}
}

// parseBox reads "from to", as the page's script writes a box.
func parseBox(s string, from, to *float64) error {
	x, y, _ := strings.Cut(s, " ")
	var err error
	if *from, err = strconv.ParseFloat(x, 64); err != nil {
		return err
	}
	*to, err = strconv.ParseFloat(y, 64)
	return err
}

// measure is a script the fit test appends to the page, after the page's
// own: it writes where the browser drew each run's end, landing and
// reserve lines and their labels (data-rect, "left right" in CSS pixels),
// the window's width (data-vw) and how wide the page is (data-sw).
const measure = `<script>
(function () {
  var root = document.documentElement;
  document.body.setAttribute("data-vw", String(root.clientWidth));
  document.body.setAttribute("data-sw", String(root.scrollWidth));
  document.querySelectorAll("svg line.ln, svg text.lbl.line, svg text.lbl.strip, svg rect.bar, g.mark").forEach(function (el) {
    var r = el.getBoundingClientRect();
    el.setAttribute("data-rect", r.left.toFixed(1) + " " + r.right.toFixed(1));
  });
})();
</script>
`

// TestThePageFitsTheWindowItIsOpenedIn loads a page of real runs, a run
// that waited for its cancel answers and a run that ended late in
// chromium at 1000px and 1400px wide: the page is no wider than the
// window, and every run's end, landing and reserve, their labels, every
// bar and every mark are inside it; each cancel is one mark, and the
// 60%, 80% and reserve lines of each budget strip are labeled.
func TestThePageFitsTheWindowItIsOpenedIn(t *testing.T) {
	browser := chromium(t)
	recs := fixtures(t)
	wait := newRun("run-waited", 1200)
	wait.attempt("tool:fetch", 1, 1, "gp_f", 800, 0, 800, trace.GaveUp)
	wait.at(800, cancelOf("tool:fetch", "gp_f", "sent"))
	wait.attempt("model", 0, 1, "", 300, 800, 850, trace.OK)
	wait.at(850, trace.Record{Event: trace.Landing, Cause: "budget", Result: "model"})
	wait.at(950, cancelOf("tool:fetch", "gp_f", "failed"))
	wait.end(950, "budget", "partial")
	late := newRun("run-late", 1200)
	late.attempt("tool:slow", 1, 1, "gp_s", 900, 0, 1280, trace.GaveUp)
	late.at(1285, trace.Record{Event: trace.Landing, Cause: "budget", Result: "harness"})
	late.at(1287, trace.Record{Event: trace.RunEnd, TotalMs: 1200, Cause: "budget", Result: "partial", LateMs: 87})
	recs = slices.Concat(recs, wait.recs, late.recs)
	cancels := 0
	for _, r := range allRuns(recs) {
		cancels += len(r.cancels)
	}

	var page bytes.Buffer
	if err := Write(&page, recs, Options{Title: "fit test"}); err != nil {
		t.Fatal(err)
	}
	html := strings.Replace(page.String(), "</body>", measure+"</body>", 1)
	path := filepath.Join(t.TempDir(), "page.html")
	if err := os.WriteFile(path, []byte(html), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, width := range []int{1000, 1400} {
		t.Run(strconv.Itoa(width)+"px", func(t *testing.T) {
			dom := dumpDOM(t, browser, path, width)
			els := elements(dom)
			var body element
			for _, e := range els {
				if e.tag == "body" {
					body = e
				}
			}
			if body.attrs["data-ready"] != "true" {
				t.Fatalf("the page's script did not run to its end: body %v", body.attrs)
			}
			vw, err1 := strconv.ParseFloat(body.attrs["data-vw"], 64)
			sw, err2 := strconv.ParseFloat(body.attrs["data-sw"], 64)
			if err1 != nil || err2 != nil {
				t.Fatalf("the measuring script did not run: body %v", body.attrs)
			}
			if sw > vw {
				t.Errorf("the page is %vpx wide in a window of %vpx: part of it is off-screen", sw, vw)
			}
			seen := map[string]int{}
			marks := 0
			for _, e := range els {
				class := e.attrs["class"]
				if e.tag == "g" && strings.HasPrefix(class, "mark cancel") {
					marks++
				}
				if e.attrs["data-rect"] == "" || e.attrs["data-hidden"] != "" {
					continue
				}
				var left, right float64
				if err := parseBox(e.attrs["data-rect"], &left, &right); err != nil {
					t.Fatalf("data-rect %q: %v", e.attrs["data-rect"], err)
				}
				if left < -0.5 || right > vw+0.5 {
					t.Errorf("a %s of class %q is drawn from %v to %v, outside the window's 0–%v", e.tag, class, left, right, vw)
				}
				for _, what := range []string{"ln end", "ln landed", "ln reserve", "lbl line end", "lbl strip narrow", "lbl strip fit", "lbl strip reserve"} {
					if strings.HasPrefix(class, what) {
						seen[what]++
					}
				}
			}
			runs := strings.Count(dom, `<section class="card run `)
			for what, want := range map[string]int{"ln end": runs, "lbl line end": 1, "ln landed": 1, "ln reserve": runs, "lbl strip narrow": runs, "lbl strip fit": runs, "lbl strip reserve": runs} {
				if seen[what] < want {
					t.Errorf("%d elements of class %q drawn in the window, want at least %d (%d runs)", seen[what], what, want, runs)
				}
			}
			if marks != cancels {
				t.Errorf("%d cancel marks in the DOM, want one for each of the %d cancels", marks, cancels)
			}
		})
	}
}

// allRuns is every run of records, nested or not.
func allRuns(records []trace.Record) []*run {
	_, all := readRuns(records)
	var out []*run
	for _, r := range all {
		out = append(out, r)
	}
	return out
}
