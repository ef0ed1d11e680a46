package run

import (
	"bytes"
	"strings"
	"testing"
)

// canonicalCases are arguments in canonical form and arguments that only
// look it: each must come out of canonical as decoding and encoding them
// makes them.
var canonicalCases = []string{
	`{"query":"look up cats"}`,
	`{}`, `[]`, `null`, `true`, `false`, `"a"`, `0`, `-0`, `12.5e-3`, `1E+9`, `123456789012345678901234567890`,
	`{"a":1,"b":[1,"x",{"c":null}],"d":{"e":false}}`,
	`{"b":1,"a":2}`,     // keys out of order
	`{"a":1,"a":2}`,     // a key twice
	`{"a": 1}`,          // a space
	`{"a":"<b>"}`,       // what json.Marshal escapes
	`{"a":"x&y"}`,       // likewise
	`{"a":"\u00e9"}`,    // an escape
	`{"a":"é"}`,         // not ASCII
	`{"a":"tab\there"}`, // an escape again
	`{"a":1}}`,          // more than one value: the decoder takes the first
	`{"a":1} {"b":2}`,   // two values
	`{"a":01}`,          // not JSON
	`{"a":1.}`,          // not JSON
	`{"a":1e}`,          // not JSON
	`{"a":tru}`,         // not JSON
	`{"a":truex}`,       // not JSON
	`{"a":1,}`,          // not JSON
	`[1,2`,              // not JSON
	`{"a"`,              // not JSON
	`"unterminated`,     // not JSON
	`not json at all`,   // not JSON
	`{"a":[[[[[[[[[[1]]]]]]]]]]}`,
	strings.Repeat("[", 40) + strings.Repeat("]", 40), // deeper than the form is followed
}

func TestArgumentsInCanonicalFormAreKeptAndOthersDecoded(t *testing.T) {
	for _, args := range canonicalCases {
		t.Run(args, func(t *testing.T) {
			if got, want := canonical([]byte(args)), decodedCanonical([]byte(args)); !bytes.Equal(got, want) {
				t.Errorf("canonical(%s) = %s, want %s, as decoding makes it", args, got, want)
			}
		})
	}
}

func TestTheRepeatCheckOfArgumentsInCanonicalFormDecodesNothing(t *testing.T) {
	args := []byte(`{"n":[1,2.5,{"deep":true}],"query":"look up cats"}`)
	if !bytes.Equal(canonical(args), decodedCanonical(args)) {
		t.Fatalf("canonical(%s) is not what decoding makes it", args)
	}
	if n := testing.AllocsPerRun(100, func() { canonical(args) }); n != 0 {
		t.Errorf("canonical allocates %v times, want 0", n)
	}
}

// FuzzCanonicalForm checks that what canonical keeps as it is, without
// decoding it, is what decoding and encoding it would have made.
func FuzzCanonicalForm(f *testing.F) {
	for _, args := range canonicalCases {
		f.Add([]byte(args))
	}
	f.Fuzz(func(t *testing.T, args []byte) {
		args = bytes.TrimSpace(args)
		if len(args) == 0 || !inCanonicalForm(args) {
			return
		}
		if want := decodedCanonical(args); !bytes.Equal(args, want) {
			t.Fatalf("kept %q, but decoding makes it %q", args, want)
		}
	})
}
