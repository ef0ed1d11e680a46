package redact

import "testing"

func TestURLHidesThePasswordAndNeverRepeatsWhatDoesNotParse(t *testing.T) {
	cases := []struct{ in, want string }{
		{"http://user:secret@tools.example:8090/v1", "http://user:xxxxx@tools.example:8090/v1"},
		{"https://tools.example/v1", "https://tools.example/v1"},
		{"http://user@tools.example", "http://user@tools.example"},
		{"http://user:secret@[::1:80", "(unparsable URL)"},
	}
	for _, tc := range cases {
		if got := URL(tc.in); got != tc.want {
			t.Errorf("URL(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
