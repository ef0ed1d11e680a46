package harness

import (
	"regexp"
	"testing"
)

// A run's id is "run-" and 26 lower-case base32 characters, and no two
// are alike: it names the run in every record and span.
func TestARunIDIsRunAndTwentySixRandomCharacters(t *testing.T) {
	shape := regexp.MustCompile(`^run-[a-z2-7]{26}$`)
	seen := make(map[string]bool)
	for range 1000 {
		id := newRunID()
		if !shape.MatchString(id) {
			t.Fatalf("id %q: want run- and 26 of [a-z2-7]", id)
		}
		if seen[id] {
			t.Fatalf("id %q made twice", id)
		}
		seen[id] = true
	}
}
