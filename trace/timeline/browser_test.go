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

// dumpDOM loads the page at path in headless chromium and returns the
// DOM once the page's script ran. It is bounded generously, since a
// browser starts slowly on a loaded machine; it takes about a second.
func dumpDOM(t *testing.T, browser, path string) string {
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
		"--window-size=1280,900",
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
	dom := dumpDOM(t, browser, path)

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
