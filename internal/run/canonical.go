package run

import "bytes"

// inCanonicalForm reports whether args are already what canonical would
// make of them, so that it need not decode and encode them again, the
// dear part of a step's repeat check (BenchmarkStepCPU): one JSON value,
// no spaces, each object's keys in order and each once, strings of
// printable ASCII that json.Marshal writes as they are (no escapes, no
// <, > or &), and numbers, which canonical keeps as written. It is
// cautious: false says only that canonical must decode args to know.
// Input it takes that is not JSON after all is kept as it is, as
// canonical keeps any input that is not JSON.
func inCanonicalForm(args []byte) bool {
	rest, ok := formValue(args, 0)
	return ok && len(rest) == 0
}

// maxFormDepth bounds the nesting inCanonicalForm follows; deeper
// arguments are decoded.
const maxFormDepth = 32

// formValue reads one value at the start of b, in canonical form, and
// returns what follows it.
func formValue(b []byte, depth int) ([]byte, bool) {
	if len(b) == 0 {
		return nil, false
	}
	switch c := b[0]; {
	case c == '{':
		return formObject(b[1:], depth+1)
	case c == '[':
		return formArray(b[1:], depth+1)
	case c == '"':
		_, rest, ok := formString(b)
		return rest, ok
	case c == '-' || '0' <= c && c <= '9':
		return formNumber(b)
	}
	for _, lit := range [...]string{"true", "false", "null"} {
		if rest, ok := bytes.CutPrefix(b, []byte(lit)); ok {
			return rest, true
		}
	}
	return nil, false
}

// formObject reads an object's members, past its '{', keys strictly in
// order: json.Marshal sorts a map's keys, and a key twice is one key.
func formObject(b []byte, depth int) ([]byte, bool) {
	if depth > maxFormDepth || len(b) == 0 {
		return nil, false
	}
	if b[0] == '}' {
		return b[1:], true
	}
	var last []byte
	for i := 0; ; i++ {
		key, rest, ok := formString(b)
		if !ok || i > 0 && bytes.Compare(last, key) >= 0 || len(rest) == 0 || rest[0] != ':' {
			return nil, false
		}
		last = key
		if b, ok = formValue(rest[1:], depth); !ok || len(b) == 0 {
			return nil, false
		}
		switch b[0] {
		case '}':
			return b[1:], true
		case ',':
			b = b[1:]
		default:
			return nil, false
		}
	}
}

// formArray reads an array's elements, past its '['.
func formArray(b []byte, depth int) ([]byte, bool) {
	if depth > maxFormDepth || len(b) == 0 {
		return nil, false
	}
	if b[0] == ']' {
		return b[1:], true
	}
	for {
		var ok bool
		if b, ok = formValue(b, depth); !ok || len(b) == 0 {
			return nil, false
		}
		switch b[0] {
		case ']':
			return b[1:], true
		case ',':
			b = b[1:]
		default:
			return nil, false
		}
	}
}

// formString reads a string at the start of b, returning its text and
// what follows it: printable ASCII only, with no escape and nothing
// json.Marshal would escape.
func formString(b []byte) (text, rest []byte, ok bool) {
	if len(b) == 0 || b[0] != '"' {
		return nil, nil, false
	}
	for i := 1; i < len(b); i++ {
		switch c := b[i]; {
		case c == '"':
			return b[1:i], b[i+1:], true
		case c < 0x20 || c > 0x7e || c == '\\' || c == '<' || c == '>' || c == '&':
			return nil, nil, false
		}
	}
	return nil, nil, false
}

// formNumber reads a number at the start of b, by JSON's grammar: -?,
// then 0 or a digit 1-9 and more, then an optional fraction and
// exponent.
func formNumber(b []byte) ([]byte, bool) {
	b, _ = bytes.CutPrefix(b, []byte("-"))
	switch {
	case len(b) == 0:
		return nil, false
	case b[0] == '0':
		b = b[1:]
	case '1' <= b[0] && b[0] <= '9':
		b = digits(b)
	default:
		return nil, false
	}
	if rest, ok := bytes.CutPrefix(b, []byte(".")); ok {
		if b = digits(rest); len(b) == len(rest) {
			return nil, false
		}
	}
	if len(b) > 0 && (b[0] == 'e' || b[0] == 'E') {
		rest := b[1:]
		if len(rest) > 0 && (rest[0] == '+' || rest[0] == '-') {
			rest = rest[1:]
		}
		if b = digits(rest); len(b) == len(rest) {
			return nil, false
		}
	}
	return b, true
}

// digits returns b past its leading decimal digits.
func digits(b []byte) []byte {
	for len(b) > 0 && '0' <= b[0] && b[0] <= '9' {
		b = b[1:]
	}
	return b
}
