package main

import (
	"bytes"
	"strings"
	"testing"
)

// The report opens with where Glidepath loses, generated from what the
// sections measured: every SPEC §7 row not met, and every loss a section
// recorded; a row that holds only on an idle machine says so and links
// the starved-machine section.
func TestTheReportOpensWithWhereGlidepathLoses(t *testing.T) {
	r := &report{}
	r.target("A thing: at most 1.1×", "1.23×", "1.0", false, "heap 35 KB")
	r.target("Another thing: under 1ms", "0.5ms", "—", true, "")
	r.idle()
	r.lose("silent-1.5Q: Glidepath cut 10 healthy calls")
	var b bytes.Buffer
	r.write(&b, true)
	out := b.String()

	loses := strings.Index(out, "## Where Glidepath loses")
	spec := strings.Index(out, "## SPEC §7")
	if loses < 0 || spec < 0 || loses > spec {
		t.Fatalf("want the losses before the SPEC table:\n%s", out)
	}
	para := out[loses:spec]
	for _, want := range []string{"- A thing: at most 1.1×: not met, 1.23× (heap 35 KB).", "- silent-1.5Q: Glidepath cut 10 healthy calls."} {
		if !strings.Contains(para, want) {
			t.Errorf("the losses miss %q:\n%s", want, para)
		}
	}
	if strings.Contains(para, "Another thing") {
		t.Errorf("a row that is met is not a loss:\n%s", para)
	}
	row := out[strings.Index(out, "| Another thing"):]
	row = row[:strings.Index(row, "\n")]
	if !strings.Contains(row, "*idle machine*: load average") || !strings.Contains(row, starvedLink) {
		t.Errorf("an idle-machine row does not say so, or does not link %s: %s", starvedLink, row)
	}
}

// With nothing lost, the paragraph says so rather than vanish.
func TestAReportWithNoLossSaysSo(t *testing.T) {
	r := &report{}
	r.target("A thing", "fine", "—", true, "")
	var b bytes.Buffer
	r.write(&b, true)
	if !strings.Contains(b.String(), "## Where Glidepath loses\n\nNowhere in what this report measured.") {
		t.Errorf("got:\n%s", b.String())
	}
}
