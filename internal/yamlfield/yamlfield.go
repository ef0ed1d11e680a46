package yamlfield

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"iter"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// The mistakes a walk finds by itself. An [*Error]'s Err is one of these,
// wraps one (ErrRepeated, ErrAlias), or is an [*UnknownFieldError].
var (
	ErrSecondDocument = errors.New("a second document; the file holds one")
	ErrAlias          = errors.New("YAML aliases are not supported")
	ErrKey            = errors.New("a key that is not a string")
	ErrRepeated       = errors.New("repeated")
	ErrUnknownField   = errors.New("unknown field")
	ErrNotMapping     = errors.New("not a mapping")
	ErrNotList        = errors.New("not a list")
	ErrNotScalar      = errors.New("not a single value")
	ErrNotString      = errors.New("not a string")
	ErrNotInteger     = errors.New("not an integer")
	ErrOutOfRange     = errors.New("out of range")
	ErrNotBool        = errors.New("not true or false")
	ErrNotDuration    = errors.New(`not a duration such as "1s" or "250ms"`)
	ErrNegative       = errors.New("must not be negative")
)

// An Error is one mistake in a document: where, in which field, and why.
type Error struct {
	Line  int    // 1-based; 0 when the YAML library gave none
	Field string // the field's path, e.g. "tools[2].ceiling"; "" for the document
	Value string // the scalar as written, when the value is one
	Err   error
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("yamlfield: ")
	if e.Line > 0 {
		fmt.Fprintf(&b, "line %d: ", e.Line)
	}
	if e.Field != "" {
		b.WriteString(e.Field)
	}
	if e.Value != "" {
		fmt.Fprintf(&b, " %q", e.Value)
	}
	if e.Field != "" || e.Value != "" {
		b.WriteString(": ")
	}
	b.WriteString(e.Err.Error())
	return b.String()
}

func (e *Error) Unwrap() error { return e.Err }

// An UnknownFieldError is the Err of an [Error] about a key the mapping
// does not allow. It matches [ErrUnknownField].
type UnknownFieldError struct {
	Key   string   // as written
	In    string   // the path of the mapping; "" at the top level
	Known []string // the keys allowed there, in the order the parser gave them
}

func (e *UnknownFieldError) Error() string {
	return "unknown field (known: " + strings.Join(e.Known, ", ") + ")"
}

// Is reports whether target is [ErrUnknownField].
func (e *UnknownFieldError) Is(target error) bool { return target == ErrUnknownField }

// Parse reads data as one YAML document and returns its root node, or nil
// when the document is empty: no input, only comments, or null. A syntax
// error, a second document and an alias anywhere in the document are an
// [*Error] with the line.
func Parse(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	switch err := dec.Decode(&doc); {
	case errors.Is(err, io.EOF):
		return nil, nil
	case err != nil:
		return nil, syntaxError(data, err)
	}
	var more yaml.Node
	switch err := dec.Decode(&more); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, syntaxError(data, err)
	default:
		return nil, &Error{Line: more.Line, Err: ErrSecondDocument}
	}
	if err := refuseAliases(&doc, ""); err != nil {
		return nil, err
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 || isNull(doc.Content[0]) {
		return nil, nil
	}
	return doc.Content[0], nil
}

var syntaxLine = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)

// syntaxError restates the YAML library's "yaml: line 3: …" as an Error
// with the line of the fault in data. The library's number is the line
// where the enclosing collection began, not where the fault is (a
// misindented key on line 5 of a list that starts on line 2 comes back
// "line 1", 0-based), so the line is found again: the first line at
// which data, cut there, fails the same way (issue 18).
func syntaxError(data []byte, err error) *Error {
	msg := strings.TrimPrefix(err.Error(), "yaml: ")
	e := &Error{Err: errors.New(msg)}
	if m := syntaxLine.FindStringSubmatch(msg); m != nil {
		if line, err := strconv.Atoi(m[1]); err == nil {
			e = &Error{Line: line, Err: errors.New(m[2])}
		}
	}
	if line := faultLine(data, e.Err.Error()); line > 0 {
		e.Line = line
	}
	return e
}

// maxFaultLines and maxFaultBytes bound the search of [faultLine], which
// parses the document once per line: configuration files are short, and a
// longer document keeps the library's line.
const (
	maxFaultLines = 2000
	maxFaultBytes = 256 << 10
)

// faultLine returns the first line n such that the first n lines of data
// fail to parse with the problem problem, or 0 when none does. A cut that
// fails some other way (a flow list left open by the cut) is not the
// fault and is passed over.
func faultLine(data []byte, problem string) int {
	if len(data) > maxFaultBytes {
		return 0
	}
	var prefix []byte
	for n := 1; n <= maxFaultLines && len(prefix) < len(data); n++ {
		end := bytes.IndexByte(data[len(prefix):], '\n')
		if end < 0 {
			prefix = data
		} else {
			prefix = data[:len(prefix)+end+1]
		}
		dec := yaml.NewDecoder(bytes.NewReader(prefix))
		for {
			var doc yaml.Node
			err := dec.Decode(&doc)
			if err == nil {
				continue
			}
			if !errors.Is(err, io.EOF) {
				msg := strings.TrimPrefix(err.Error(), "yaml: ")
				if m := syntaxLine.FindStringSubmatch(msg); m != nil {
					msg = m[2]
				}
				if msg == problem {
					return n
				}
			}
			break
		}
	}
	return 0
}

// refuseAliases returns an Error for the first alias under n, at path. It
// does not follow aliases, so it ends on cyclic documents too, and the
// YAML library bounds the nesting it recurses through (10,000 levels).
func refuseAliases(n *yaml.Node, path string) *Error {
	if n.Kind == yaml.AliasNode {
		e := &Error{Line: n.Line, Field: path, Err: fmt.Errorf("%w; write out *%s", ErrAlias, n.Value)}
		if n.Alias != nil {
			e.Err = fmt.Errorf("%w; write out the value anchored at line %d instead of *%s", ErrAlias, n.Alias.Line, n.Value)
		}
		return e
	}
	for i, c := range n.Content {
		p := path
		switch n.Kind {
		case yaml.MappingNode:
			if k := n.Content[i&^1]; i%2 == 1 && k.Kind == yaml.ScalarNode {
				p = Join(path, k.Value)
			}
		case yaml.SequenceNode:
			p = fmt.Sprintf("%s[%d]", path, i)
		}
		if err := refuseAliases(c, p); err != nil {
			return err
		}
	}
	return nil
}

// Join returns the path of the field key of the mapping at path.
func Join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func isNull(n *yaml.Node) bool { return n.Kind == yaml.ScalarNode && n.Tag == "!!null" }

// A Field is a value of a document and where it stands.
type Field struct {
	Name  string     // the key as written; "" for a list item or the root
	Path  string     // e.g. "tools[2].ceiling"; "" for the root
	Line  int        // the line of the key, or of the value where there is no key
	Value *yaml.Node // never nil or an alias; null only for a list item
}

// Root returns the field that is a document's root, n from [Parse].
func Root(n *yaml.Node) Field { return Field{Line: n.Line, Value: n} }

// A Walker walks the fields of one document and collects what is wrong
// with them. The zero Walker is ready to use. A Walker is not safe for
// concurrent use.
type Walker struct {
	errs []*Error
}

// Errs returns every mistake found so far, in the order found.
func (w *Walker) Errs() []*Error { return w.errs }

// Fail records that f's value is wrong because of err, at the value's line
// and, when the value is a scalar, with the value as written.
func (w *Walker) Fail(f Field, err error) {
	e := &Error{Line: f.Line, Field: f.Path, Err: err}
	if n := f.Value; n != nil {
		e.Line = n.Line
		if n.Kind == yaml.ScalarNode {
			e.Value = n.Value
		}
	}
	w.errs = append(w.errs, e)
}

// Report records e as it is: a mistake that is not about one value, such
// as a field that is missing or two that conflict.
func (w *Walker) Report(e *Error) { w.errs = append(w.errs, e) }

// Fields yields the fields of the mapping f in the order written. Its keys
// are checked as the loop reaches them: a key that is not a scalar, one
// given twice or one that is not among known is recorded and not yielded,
// and neither is a field whose value is null, which is left out. When f is
// not a mapping, that is recorded and nothing is yielded. A loop that stops
// early leaves the keys after it unchecked.
func (w *Walker) Fields(f Field, known ...string) iter.Seq[Field] {
	return w.fields(f, func(key string) bool { return slices.Contains(known, key) }, known)
}

// Map yields the fields of the mapping f, whatever their keys, in the
// order written: a mapping whose keys are names the file chooses, such as
// MCP servers or environment variables. Keys are checked as in
// [Walker.Fields], but any scalar key is known.
func (w *Walker) Map(f Field) iter.Seq[Field] {
	return w.fields(f, func(string) bool { return true }, nil)
}

func (w *Walker) fields(f Field, isKnown func(string) bool, known []string) iter.Seq[Field] {
	return func(yield func(Field) bool) {
		m := f.Value
		if m.Kind != yaml.MappingNode {
			w.Fail(f, ErrNotMapping)
			return
		}
		first := make(map[string]int, len(m.Content)/2)
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, v := m.Content[i], m.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				w.Report(&Error{Line: k.Line, Field: f.Path, Err: ErrKey})
				continue
			}
			path := Join(f.Path, k.Value)
			if line, ok := first[k.Value]; ok {
				w.Report(&Error{Line: k.Line, Field: path, Err: fmt.Errorf("%w; first given at line %d", ErrRepeated, line)})
				continue
			}
			first[k.Value] = k.Line
			if !isKnown(k.Value) {
				w.Report(&Error{Line: k.Line, Field: path, Err: &UnknownFieldError{Key: k.Value, In: f.Path, Known: known}})
				continue
			}
			if isNull(v) {
				continue
			}
			if !yield(Field{Name: k.Value, Path: path, Line: k.Line, Value: v}) {
				return
			}
		}
	}
}

// Items yields the items of the list f, each with its path ("tools[2]").
// A null item is yielded: a list has no field to leave out. When f is not
// a list, that is recorded and nothing is yielded.
func (w *Walker) Items(f Field) iter.Seq[Field] {
	return func(yield func(Field) bool) {
		if f.Value.Kind != yaml.SequenceNode {
			w.Fail(f, ErrNotList)
			return
		}
		for i, n := range f.Value.Content {
			if !yield(Field{Path: fmt.Sprintf("%s[%d]", f.Path, i), Line: n.Line, Value: n}) {
				return
			}
		}
	}
}

// Scalar returns the text of f's value as written, whatever its YAML type:
// "12" for 12, "true" for true. A mapping, a list or a null is recorded as
// [ErrNotScalar].
func (w *Walker) Scalar(f Field) (string, bool) {
	if f.Value.Kind != yaml.ScalarNode || isNull(f.Value) {
		w.Fail(f, ErrNotScalar)
		return "", false
	}
	return f.Value.Value, true
}

// String returns f's value, a YAML string; anything else is recorded as
// [ErrNotString].
func (w *Walker) String(f Field) (string, bool) {
	if f.Value.Kind != yaml.ScalarNode || f.Value.Tag != "!!str" {
		w.Fail(f, ErrNotString)
		return "", false
	}
	return f.Value.Value, true
}

// Int returns f's value, a YAML integer that fits in an int. Anything else
// is recorded as [ErrNotInteger], or [ErrOutOfRange] for an integer too
// large.
func (w *Walker) Int(f Field) (int, bool) { return integer[int](w, f) }

// Int64 is [Walker.Int] for an int64.
func (w *Walker) Int64(f Field) (int64, bool) { return integer[int64](w, f) }

func integer[T int | int64](w *Walker, f Field) (T, bool) {
	var v T
	if f.Value.Kind != yaml.ScalarNode || f.Value.Tag != "!!int" {
		w.Fail(f, ErrNotInteger)
		return 0, false
	}
	if err := f.Value.Decode(&v); err != nil {
		// YAML's integers go up to 2^64−1; the decoder refuses what T
		// cannot hold.
		w.Fail(f, ErrOutOfRange)
		return 0, false
	}
	return v, true
}

// Bool returns f's value, true or false; anything else is recorded as
// [ErrNotBool].
func (w *Walker) Bool(f Field) (bool, bool) {
	var v bool
	if f.Value.Kind != yaml.ScalarNode || f.Value.Tag != "!!bool" || f.Value.Decode(&v) != nil {
		w.Fail(f, ErrNotBool)
		return false, false
	}
	return v, true
}

// Duration returns f's value, a Go duration string ([time.ParseDuration]),
// whatever its YAML type, so that 0 is one. One that does not parse is
// recorded as [ErrNotDuration], a negative one as [ErrNegative].
func (w *Walker) Duration(f Field) (time.Duration, bool) {
	if f.Value.Kind != yaml.ScalarNode || isNull(f.Value) {
		w.Fail(f, ErrNotDuration)
		return 0, false
	}
	d, err := time.ParseDuration(f.Value.Value)
	switch {
	case err != nil:
		w.Fail(f, ErrNotDuration)
		return 0, false
	case d < 0:
		w.Fail(f, ErrNegative)
		return 0, false
	}
	return d, true
}
