package cancel_test

import (
	"path/filepath"
	"testing"

	"github.com/glidepath/glidepath/cancel"
)

func BenchmarkNewKey(b *testing.B) {
	for b.Loop() {
		cancel.NewKey()
	}
}

// An Append is dominated by its fsync: the price of an orphan that
// survives a crash.
func BenchmarkJournalAppend(b *testing.B) {
	j, err := cancel.OpenJournal(filepath.Join(b.TempDir(), "orphans.jsonl"))
	if err != nil {
		b.Fatal(err)
	}
	defer j.Close()
	e := entry("gp_bench", cancel.Open)
	for b.Loop() {
		if err := j.Append(e); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkReadJournal1000(b *testing.B) {
	path := filepath.Join(b.TempDir(), "orphans.jsonl")
	j, err := cancel.OpenJournal(path)
	if err != nil {
		b.Fatal(err)
	}
	for range 1000 {
		if err := j.Append(entry("gp_bench", cancel.Open)); err != nil {
			b.Fatal(err)
		}
	}
	j.Close()
	for b.Loop() {
		if _, err := cancel.ReadJournal(path); err != nil {
			b.Fatal(err)
		}
	}
}
