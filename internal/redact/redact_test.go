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

func TestJSONRedactsEveryStringAndKeepsTheRestAsWritten(t *testing.T) {
	cases := []struct{ name, in, want string }{
		{"a secret in a nested string", `{"answer":"key my-own-secret-key","in_flight":[{"why":"sk-test-abcdefgh12"}],"n":1.50,"ok":true,"x":null}`,
			`{"answer":"key [redacted]","in_flight":[{"why":"sk-[redacted]"}],"n":1.50,"ok":true,"x":null}`},
		// Redacting the text would take `abc\"` for the token and cut the
		// escape of the quote: the string would end early.
		{"an Authorization whose value ends in an escaped quote", `{"a":"Authorization: abcdefgh\"","b":[]}`,
			`{"a":"Authorization: [redacted]\"","b":[]}`},
		{"a secret written with escapes", `["my-own-\u0073ecret-key",{}]`, `["[redacted]",{}]`},
		{"fields keep their order", `{"z":1,"a":{"y":[1,2],"b":"c"}}`, `{"z":1,"a":{"y":[1,2],"b":"c"}}`},
		{"values one after another", "{\"a\":\"sk-abcdefgh123\"}\n[]\n", "{\"a\":\"sk-[redacted]\"}\n[]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := JSON([]byte(tc.in), "my-own-secret-key")
			if err != nil || string(got) != tc.want {
				t.Errorf("JSON(%s) = %s, %v; want %s", tc.in, got, err, tc.want)
			}
		})
	}
	if _, err := JSON([]byte(`{"a":`)); err == nil {
		t.Error("JSON of a cut object: no error")
	}
}
