// Package redact hides the secrets a value may carry before it is shown:
// a URL's password, an API key, a bearer token, which error messages,
// logs, traces and pasted output must never repeat.
package redact

import (
	"bytes"
	"encoding/json"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"
)

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

// secretPatterns are what a secret looks like when nobody told us its
// value: a bearer token, an API key of OpenAI's shape, an Authorization
// header written out.
//
// Each is tried only on a string that holds its literal, foldCase telling
// whether the pattern ignores case: a regexp's scan of every error message
// was a run's own largest cost after a 503 in a fleet (issue 20), and most
// messages hold none of the three.
var secretPatterns = []struct {
	literal  string
	foldCase bool
	re       *regexp.Regexp
	with     string
}{
	{"authorization", true, regexp.MustCompile(`(?i)(authorization"?\s*[:=]\s*)("?)[^\s",}]+(\s+[^\s",}]+)?`), "${1}${2}[redacted]"},
	{"bearer", true, regexp.MustCompile(`(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{8,}`), "Bearer [redacted]"},
	{"sk-", false, regexp.MustCompile(`\bsk-[A-Za-z0-9_-]{8,}`), "sk-[redacted]"},
}

// holds reports whether s holds lit, ignoring case if fold. Folding is
// the simple folding (?i) uses; it is exact here because no letter of the
// literals folds to a rune of another length (TestTheLiteralsFoldOnlyToASCII).
func holds(s, lit string, fold bool) bool {
	if !fold {
		return strings.Contains(s, lit)
	}
	for i := 0; i+len(lit) <= len(s); i++ {
		if strings.EqualFold(s[i:i+len(lit)], lit) {
			return true
		}
	}
	return false
}

// Secrets returns s with every known secret (of eight bytes or more: a
// shorter one would blank ordinary words) and everything shaped like a
// bearer token, an OpenAI API key or an Authorization header replaced by
// "[redacted]". What a server says back may quote the key it was sent,
// and none of it may reach a log, a trace or a span.
func Secrets(s string, known ...string) string {
	for _, k := range known {
		if len(k) >= 8 {
			s = strings.ReplaceAll(s, k, "[redacted]")
		}
	}
	for _, p := range secretPatterns {
		if holds(s, p.literal, p.foldCase) {
			s = p.re.ReplaceAllString(s, p.with)
		}
	}
	return s
}

// JSON returns the JSON text data with [Secrets] applied to every string
// in it, keys included, and everything else as it was: the order of
// fields, the numbers as written. Redacting the text itself could cut a
// string's escape in two ("…\"" after a secret), so it is done string by
// string. data that is not JSON is an error.
func JSON(data []byte, known ...string) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var out bytes.Buffer
	// open holds, for each container being written, whether it is an
	// object and how many tokens it holds so far (an object's keys and
	// values both count), which decides the separator before the next.
	type container struct {
		object bool
		n      int
	}
	var open []container
	for {
		tok, err := dec.Token()
		if err == io.EOF && len(open) == 0 {
			return out.Bytes(), nil
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF // a container left open
		}
		if err != nil {
			return nil, err
		}
		if d, ok := tok.(json.Delim); ok && (d == '}' || d == ']') {
			open = open[:len(open)-1]
			out.WriteByte(byte(d))
			continue
		}
		if len(open) > 0 {
			c := &open[len(open)-1]
			switch {
			case c.object && c.n%2 == 1:
				out.WriteByte(':')
			case c.n > 0:
				out.WriteByte(',')
			}
			c.n++
		} else if out.Len() > 0 {
			out.WriteByte('\n') // values one after another, as an Encoder writes them
		}
		switch v := tok.(type) {
		case json.Delim:
			out.WriteByte(byte(v))
			open = append(open, container{object: v == '{'})
		case string:
			s, _ := json.Marshal(Secrets(v, known...)) // a string always encodes
			out.Write(s)
		case json.Number:
			out.WriteString(string(v))
		case bool:
			out.WriteString(strconv.FormatBool(v))
		case nil:
			out.WriteString("null")
		}
	}
}
