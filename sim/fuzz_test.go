package sim

import (
	"errors"
	"testing"
)

// FuzzParseScenario checks that any input parses or fails with a
// ScenarioError, never panics, and that what parses is valid.
func FuzzParseScenario(f *testing.F) {
	f.Add([]byte("rules:\n  - request: 1\n    status: 500\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		sc, err := ParseScenario(data)
		if err != nil {
			if !errors.Is(err, ErrScenario) {
				t.Fatalf("error %v does not match ErrScenario", err)
			}
			if sc != nil {
				t.Fatalf("returned %+v with error %v", sc, err)
			}
			return
		}
		if err := sc.Validate(); err != nil {
			t.Fatalf("parsed scenario fails Validate: %v", err)
		}
	})
}
