package profile

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"
)

// FuzzLoad feeds Load's parser any bytes: it never panics, and what it
// accepts it writes back in a form it reads as the same profile, which
// merging keeps within the bounds.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(`{"version":1,"kinds":{"model":[{"at":"2026-05-04T08:59:59Z","ns":1000000}]}}`))
	f.Add([]byte(""))
	f.Add([]byte(`{"version":1}`))
	f.Add([]byte(`{"version":2,"kinds":{}}`))
	now := time.Date(2026, 5, 4, 9, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := decode(data)
		if err != nil {
			if p != nil {
				t.Fatalf("decode returned a profile with error %v", err)
			}
			return
		}
		enc := p.encode()
		if !json.Valid(enc) {
			t.Fatalf("encode wrote invalid JSON:\n%s", enc)
		}
		q, err := decode(enc)
		if err != nil {
			t.Fatalf("decode of what encode wrote: %v\n%s", err, enc)
		}
		if again := q.encode(); !bytes.Equal(again, enc) {
			t.Fatalf("a second round trip changed the profile:\n%s\nthen\n%s", enc, again)
		}
		for _, k := range p.Summary(now).Kinds {
			if k.Count < 0 || k.Cuts < 0 || k.Count+k.Cuts == 0 || k.P50 > k.P95 || k.Oldest.After(k.Newest) {
				t.Fatalf("inconsistent summary %+v", k)
			}
		}
		m := p.merge(nil, now)
		if len(m.places) > MaxKinds {
			t.Fatalf("merge kept %d places", len(m.places))
		}
		for pl, ss := range m.places {
			if len(ss) == 0 || len(ss) > MaxPerKind {
				t.Fatalf("merge kept %d observations of %v", len(ss), pl)
			}
		}
		for pl, ss := range m.cuts {
			if len(ss) == 0 || len(ss) > MaxCutsPerKind {
				t.Fatalf("merge kept %d cuts of %v", len(ss), pl)
			}
		}
	})
}
