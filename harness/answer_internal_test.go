package harness

import "testing"

// valued decides which chunks of a stream the middleware decodes: one it
// wrongly skips loses the finish reason, and End fails a whole answer as
// cut short.
func TestValuedFindsAFieldWithAValueHoweverTheServerSpacesIt(t *testing.T) {
	cases := []struct {
		name string
		data string
		key  string
		want bool
	}{
		{"a finish reason with no spaces", `{"choices":[{"delta":{},"finish_reason":"stop"}]}`, `"finish_reason"`, true},
		{"a finish reason with spaces around the colon", `{"choices":[{"finish_reason" : "stop"}]}`, `"finish_reason"`, true},
		{"a null finish reason", `{"choices":[{"delta":{"content":"hi"},"finish_reason":null}]}`, `"finish_reason"`, false},
		{"a null one with a space", `{"choices":[{"finish_reason": null}]}`, `"finish_reason"`, false},
		{"no finish reason at all", `{"choices":[{"delta":{"content":"hi"}}]}`, `"finish_reason"`, false},
		{"usage after a null usage elsewhere", `{"usage":null,"x":{"usage":{"total_tokens":3}}}`, `"usage"`, true},
		{"the key's words inside content", `{"choices":[{"delta":{"content":"the \"usage\": 3"},"finish_reason":null}]}`, `"usage"`, false},
		{"the key at the very end", `{"a":1,"usage"`, `"usage"`, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := valued([]byte(tc.data), tc.key); got != tc.want {
				t.Errorf("valued(%s, %s) = %v, want %v", tc.data, tc.key, got, tc.want)
			}
		})
	}
}
