// Package redact hides the secrets a value may carry before it is shown:
// a URL's password, which error messages, logs and pasted output must never
// repeat.
package redact

import "net/url"

// URL returns raw with any password replaced by "xxxxx", or
// "(unparsable URL)" when raw is not a URL: a string that does not parse
// may still hold a secret, so it is not repeated either.
func URL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
