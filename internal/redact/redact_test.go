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

func TestSecretsHidesKeysTokensAndAuthorization(t *testing.T) {
	cases := []struct{ in, want string }{
		{"Incorrect API key provided: my-own-secret-key.", "Incorrect API key provided: [redacted]."},
		{"key sk-proj-abcdefgh1234 rejected", "key sk-[redacted] rejected"},
		{"Authorization: Bearer abcdefghijkl", "Authorization: [redacted]"},
		{`{"Authorization":"Bearer abcdefghijkl"}`, `{"Authorization":"[redacted]"}`},
		{"sent bearer abcdefghijklmnop", "sent Bearer [redacted]"},
		{"a short key abc stays", "a short key abc stays"},
		{"nothing here", "nothing here"},
	}
	for _, tc := range cases {
		if got := Secrets(tc.in, "my-own-secret-key", "abc"); got != tc.want {
			t.Errorf("Secrets(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
