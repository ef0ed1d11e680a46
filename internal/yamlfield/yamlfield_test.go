package yamlfield

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"
)

func TestParseTakesEmptyAndNullDocumentsForNone(t *testing.T) {
	for _, in := range []string{"", "\n", "# only a comment\n", "~\n", "null", "---\n", "--- ~\n"} {
		root, err := Parse([]byte(in))
		if root != nil || err != nil {
			t.Errorf("Parse(%q) = %v, %v; want no root and no error", in, root, err)
		}
	}
}

func TestParseRefusesWhatNoFieldCanBeReadFrom(t *testing.T) {
	cases := []struct {
		name      string
		in        string
		wantLine  int
		wantField string
		wantIs    error // nil: the YAML library's own message
		wantMsg   string
	}{
		{"a syntax error names its line", "a: 1\n  b: 2\n", 2, "", nil, "mapping values are not allowed in this context"},
		{"an unclosed quote names its line", "a: 1\nb: \"x\n", 2, "", nil, "found unexpected end of stream"},
		{"a tab in the indentation is a syntax error", "a: 1\n\tb: 2\n", 2, "", nil, "tab character"},
		// The library names the line its list began on, 0-based (issue 18).
		{"a misindented key deep in a list names its own line", "tools:\n  - name: search\n    builtin: search\n    ceiling: 1s\n   effect: read\n",
			5, "", nil, "did not find expected '-' indicator"},
		{"a tab deep in a list names its own line", "tools:\n  - name: search\n    builtin: search\n\tceiling: 1s\n", 4, "", nil, "tab character"},
		{"a tab deep in a scenario names its own line", "# c\nrules:\n  - request: 1\n\tstatus: 500\n", 4, "", nil, "tab character"},
		{"a flow list left open by a cut is not taken for the fault", "a: [1,\n  2]\nb:\n  - c: 1\n   d: 2\n", 5, "", nil, "did not find expected '-' indicator"},
		{"an unknown anchor is a syntax error", "a: *nowhere\n", 1, "", nil, "unknown anchor 'nowhere' referenced"},
		{"a second document names its line", "a: 1\n---\nb: 2\n", 2, "", ErrSecondDocument, "a second document"},
		{"an alias names its path and its anchor's line", "a: &x 1\nrules:\n  - request: *x\n", 3, "rules[0].request", ErrAlias,
			"YAML aliases are not supported; write out the value anchored at line 1 instead of *x"},
		{"a merge key is an alias too", "base: &b {c: 1}\nlist:\n  - <<: *b\n    d: 2\n", 3, "list[0].<<", ErrAlias, "instead of *b"},
		{"an alias used as a key is refused at its mapping", "a: &k x\nm:\n  *k : 1\n", 3, "m", ErrAlias, "instead of *k"},
		{"an alias of its own anchor ends the walk", "a: &x {b: *x}\n", 1, "a.b", ErrAlias, "instead of *x"},
		{"the first of many aliases is named", "a: &x [1]\nb: [*x, *x]\nc: *x\n", 2, "b[0]", ErrAlias, "*x"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			root, err := Parse([]byte(tc.in))
			e, ok := errors.AsType[*Error](err)
			if !ok {
				t.Fatalf("Parse = %v, %v; want an *Error", root, err)
			}
			if root != nil {
				t.Errorf("Parse returned a root beside its error")
			}
			if e.Line != tc.wantLine || e.Field != tc.wantField {
				t.Errorf("line %d field %q, want line %d field %q (%v)", e.Line, e.Field, tc.wantLine, tc.wantField, err)
			}
			if tc.wantIs != nil && !errors.Is(err, tc.wantIs) {
				t.Errorf("%v does not match %v", err, tc.wantIs)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("%q does not say %q", err, tc.wantMsg)
			}
		})
	}
}

func TestParseAllowsAnAnchorThatNoAliasUses(t *testing.T) {
	root, err := Parse([]byte("a: &x 1\nb: [&y 2]\n"))
	if err != nil || root == nil || root.Kind != yaml.MappingNode {
		t.Fatalf("Parse = %v, %v; want the mapping", root, err)
	}
}

// parse parses in, failing the test on an error.
func parse(t *testing.T, in string) Field {
	t.Helper()
	root, err := Parse([]byte(in))
	if err != nil || root == nil {
		t.Fatalf("Parse(%q) = %v, %v", in, root, err)
	}
	return Root(root)
}

// messages renders errs as "LINE FIELD: MESSAGE", the value left out.
func messages(errs []*Error) []string {
	var out []string
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%d %s: %v", e.Line, e.Field, e.Err))
	}
	return out
}

func TestFieldsYieldsKnownKeysInOrderAndRecordsTheRest(t *testing.T) {
	cases := []struct {
		name      string
		in        string
		known     []string
		wantNames []string
		wantPaths []string
		wantErrs  []string
	}{
		{
			name:      "known keys come in the order written with their paths",
			in:        "b: 1\na: 2\n",
			known:     []string{"a", "b"},
			wantNames: []string{"b", "a"},
			wantPaths: []string{"b", "a"},
		},
		{
			name:     "an unknown key is named with the keys known there",
			in:       "a: 1\nbb: 2\n",
			known:    []string{"a", "b"},
			wantErrs: []string{"2 bb: unknown field (known: a, b)"},
			// a is still yielded.
			wantNames: []string{"a"},
			wantPaths: []string{"a"},
		},
		{
			name:      "a repeated key names the line it was first given at",
			in:        "a: 1\nb: 2\na: 3\n",
			known:     []string{"a", "b"},
			wantNames: []string{"a", "b"},
			wantPaths: []string{"a", "b"},
			wantErrs:  []string{"3 a: repeated; first given at line 1"},
		},
		{
			name:      "a null value is left out",
			in:        "a:\nb: ~\nc: null\nd: 4\n",
			known:     []string{"a", "b", "c", "d"},
			wantNames: []string{"d"},
			wantPaths: []string{"d"},
		},
		{
			name:     "a null value is still checked for being known and given once",
			in:       "a: 1\na: ~\nz: ~\n",
			known:    []string{"a"},
			wantErrs: []string{"2 a: repeated; first given at line 1", "3 z: unknown field (known: a)"},
			// The first a is yielded.
			wantNames: []string{"a"},
			wantPaths: []string{"a"},
		},
		{
			name:     "a key that is a list is refused at its mapping",
			in:       "? [a]\n: 1\n",
			known:    []string{"a"},
			wantErrs: []string{"1 : a key that is not a string"},
		},
		{
			name:      "a number as a key is a key like any other",
			in:        "{1: x, 2: y}",
			known:     []string{"1"},
			wantNames: []string{"1"},
			wantPaths: []string{"1"},
			wantErrs:  []string{"1 2: unknown field (known: 1)"},
		},
		{
			name:     "a list is not a mapping",
			in:       "- a\n",
			known:    []string{"a"},
			wantErrs: []string{"1 : not a mapping"},
		},
		{
			name:     "JSON is read alike and keeps its lines",
			in:       "{\n  \"a\": 1,\n  \"b\": 2\n}\n",
			known:    []string{"a"},
			wantErrs: []string{"3 b: unknown field (known: a)"},
			// a is yielded.
			wantNames: []string{"a"},
			wantPaths: []string{"a"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var w Walker
			var names, paths []string
			for f := range w.Fields(parse(t, tc.in), tc.known...) {
				names, paths = append(names, f.Name), append(paths, f.Path)
			}
			if !slices.Equal(names, tc.wantNames) || !slices.Equal(paths, tc.wantPaths) {
				t.Errorf("yielded names %q paths %q, want %q and %q", names, paths, tc.wantNames, tc.wantPaths)
			}
			if got := messages(w.Errs()); !slices.Equal(got, tc.wantErrs) {
				t.Errorf("errors %q, want %q", got, tc.wantErrs)
			}
		})
	}
}

func TestMapYieldsEveryKeyButStillChecksThem(t *testing.T) {
	var w Walker
	var names []string
	for f := range w.Map(parse(t, "b: 1\nfree name: 2\nb: 3\nnull: ~\n")) {
		names = append(names, f.Name)
	}
	if !slices.Equal(names, []string{"b", "free name"}) {
		t.Errorf("yielded %q, want b and free name: any key, in order, the repeat and the null left out", names)
	}
	if got := messages(w.Errs()); !slices.Equal(got, []string{"3 b: repeated; first given at line 1"}) {
		t.Errorf("errors %q", got)
	}
}

func TestAnUnknownFieldSaysWhereAndWhatIsKnown(t *testing.T) {
	var w Walker
	root := parse(t, "model:\n  timeout: 3s\n")
	for f := range w.Fields(root, "model") {
		for range w.Fields(f, "ceiling", "retries") {
		}
	}
	errs := w.Errs()
	if len(errs) != 1 {
		t.Fatalf("errors %v, want one", messages(errs))
	}
	u, ok := errors.AsType[*UnknownFieldError](errs[0])
	if !ok || !errors.Is(errs[0], ErrUnknownField) {
		t.Fatalf("%v is not an *UnknownFieldError matching ErrUnknownField", errs[0])
	}
	if u.Key != "timeout" || u.In != "model" || !slices.Equal(u.Known, []string{"ceiling", "retries"}) {
		t.Errorf("key %q in %q known %q, want timeout in model, known ceiling and retries", u.Key, u.In, u.Known)
	}
	if errs[0].Line != 2 || errs[0].Field != "model.timeout" {
		t.Errorf("line %d field %q, want line 2 field model.timeout", errs[0].Line, errs[0].Field)
	}
}

func TestFieldsRecordsMistakesInTheOrderOfTheFile(t *testing.T) {
	var w Walker
	root := parse(t, "a:\n  x: 1\nb: 2\nc:\n  y: 3\n")
	for f := range w.Fields(root, "a", "c") {
		for range w.Fields(f) {
		}
	}
	want := []string{"2 a.x: unknown field (known: )", "3 b: unknown field (known: a, c)", "5 c.y: unknown field (known: )"}
	if got := messages(w.Errs()); !slices.Equal(got, want) {
		t.Errorf("errors %q, want %q", got, want)
	}
}

func TestItemsYieldsEveryItemWithItsPath(t *testing.T) {
	var w Walker
	root := parse(t, "tools:\n  - a\n  - ~\n  - [b]\nnot: x\n")
	var paths []string
	var lines []int
	for f := range w.Fields(root, "tools", "not") {
		for it := range w.Items(f) {
			paths, lines = append(paths, it.Path), append(lines, it.Line)
		}
	}
	if want := []string{"tools[0]", "tools[1]", "tools[2]"}; !slices.Equal(paths, want) {
		t.Errorf("paths %q, want %q", paths, want)
	}
	if want := []int{2, 3, 4}; !slices.Equal(lines, want) {
		t.Errorf("lines %v, want %v", lines, want)
	}
	if want := []string{"5 not: not a list"}; !slices.Equal(messages(w.Errs()), want) {
		t.Errorf("errors %q, want %q", messages(w.Errs()), want)
	}
}

// value parses "v: IN" and returns v's field.
func value(t *testing.T, in string) Field {
	t.Helper()
	var w Walker
	for f := range w.Fields(parse(t, "v: "+in+"\n"), "v") {
		return f
	}
	t.Fatalf("v: %s has no value", in)
	return Field{}
}

func TestScalarsAreReadWithTheirYAMLTypes(t *testing.T) {
	type read struct {
		v   any
		err error // nil when read
	}
	cases := []struct {
		in                                            string
		scalar, str, integer, integer64, flag, during read
	}{
		{
			in:     "hello",
			scalar: read{"hello", nil}, str: read{"hello", nil}, integer: read{0, ErrNotInteger}, integer64: read{int64(0), ErrNotInteger},
			flag: read{false, ErrNotBool}, during: read{time.Duration(0), ErrNotDuration},
		},
		{
			in:     "12",
			scalar: read{"12", nil}, str: read{"", ErrNotString}, integer: read{12, nil}, integer64: read{int64(12), nil},
			flag: read{false, ErrNotBool}, during: read{time.Duration(0), ErrNotDuration},
		},
		{
			in:     `"12"`,
			scalar: read{"12", nil}, str: read{"12", nil}, integer: read{0, ErrNotInteger}, integer64: read{int64(0), ErrNotInteger},
			flag: read{false, ErrNotBool}, during: read{time.Duration(0), ErrNotDuration},
		},
		{
			in:     "0",
			scalar: read{"0", nil}, str: read{"", ErrNotString}, integer: read{0, nil}, integer64: read{int64(0), nil},
			flag: read{false, ErrNotBool}, during: read{time.Duration(0), nil},
		},
		{
			in:     "1_000",
			scalar: read{"1_000", nil}, str: read{"", ErrNotString}, integer: read{1000, nil}, integer64: read{int64(1000), nil},
			flag: read{false, ErrNotBool}, during: read{time.Duration(0), ErrNotDuration},
		},
		{
			in:     "1.5",
			scalar: read{"1.5", nil}, str: read{"", ErrNotString}, integer: read{0, ErrNotInteger}, integer64: read{int64(0), ErrNotInteger},
			flag: read{false, ErrNotBool}, during: read{time.Duration(0), ErrNotDuration},
		},
		{
			in:     "18446744073709551615",
			scalar: read{"18446744073709551615", nil}, str: read{"", ErrNotString}, integer: read{0, ErrOutOfRange}, integer64: read{int64(0), ErrOutOfRange},
			flag: read{false, ErrNotBool}, during: read{time.Duration(0), ErrNotDuration},
		},
		{
			in:     "true",
			scalar: read{"true", nil}, str: read{"", ErrNotString}, integer: read{0, ErrNotInteger}, integer64: read{int64(0), ErrNotInteger},
			flag: read{true, nil}, during: read{time.Duration(0), ErrNotDuration},
		},
		{
			in:     "yes",
			scalar: read{"yes", nil}, str: read{"yes", nil}, integer: read{0, ErrNotInteger}, integer64: read{int64(0), ErrNotInteger},
			flag: read{false, ErrNotBool}, during: read{time.Duration(0), ErrNotDuration},
		},
		{
			in:     "1m30s",
			scalar: read{"1m30s", nil}, str: read{"1m30s", nil}, integer: read{0, ErrNotInteger}, integer64: read{int64(0), ErrNotInteger},
			flag: read{false, ErrNotBool}, during: read{90 * time.Second, nil},
		},
		{
			in:     "-1s",
			scalar: read{"-1s", nil}, str: read{"-1s", nil}, integer: read{0, ErrNotInteger}, integer64: read{int64(0), ErrNotInteger},
			flag: read{false, ErrNotBool}, during: read{time.Duration(0), ErrNegative},
		},
		{
			in:     "[1s]",
			scalar: read{"", ErrNotScalar}, str: read{"", ErrNotString}, integer: read{0, ErrNotInteger}, integer64: read{int64(0), ErrNotInteger},
			flag: read{false, ErrNotBool}, during: read{time.Duration(0), ErrNotDuration},
		},
		{
			in:     "{a: 1}",
			scalar: read{"", ErrNotScalar}, str: read{"", ErrNotString}, integer: read{0, ErrNotInteger}, integer64: read{int64(0), ErrNotInteger},
			flag: read{false, ErrNotBool}, during: read{time.Duration(0), ErrNotDuration},
		},
	}
	check := func(t *testing.T, what string, w *Walker, got any, ok bool, want read) {
		t.Helper()
		if got != want.v || ok != (want.err == nil) {
			t.Errorf("%s = %v, %t; want %v, %t", what, got, ok, want.v, want.err == nil)
		}
		errs := w.Errs()
		switch {
		case want.err == nil && len(errs) > 0:
			t.Errorf("%s recorded %v", what, messages(errs))
		case want.err != nil && (len(errs) != 1 || !errors.Is(errs[0], want.err) || errs[0].Line != 1 || errs[0].Field != "v"):
			t.Errorf("%s recorded %q, want one %v at line 1 of v", what, messages(errs), want.err)
		}
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			f := value(t, tc.in)
			{
				var w Walker
				v, ok := w.Scalar(f)
				check(t, "Scalar", &w, v, ok, tc.scalar)
			}
			{
				var w Walker
				v, ok := w.String(f)
				check(t, "String", &w, v, ok, tc.str)
			}
			{
				var w Walker
				v, ok := w.Int(f)
				check(t, "Int", &w, v, ok, tc.integer)
			}
			{
				var w Walker
				v, ok := w.Int64(f)
				check(t, "Int64", &w, v, ok, tc.integer64)
			}
			{
				var w Walker
				v, ok := w.Bool(f)
				check(t, "Bool", &w, v, ok, tc.flag)
			}
			{
				var w Walker
				v, ok := w.Duration(f)
				check(t, "Duration", &w, v, ok, tc.during)
			}
		})
	}
}

func TestIntReadsTheWholeRangeOfInt64(t *testing.T) {
	for _, n := range []int64{math.MaxInt64, math.MinInt64, -1} {
		var w Walker
		if got, ok := w.Int64(value(t, fmt.Sprint(n))); got != n || !ok {
			t.Errorf("Int64(%d) = %d, %t", n, got, ok)
		}
	}
}

func TestFailRecordsTheValueAsWrittenWhenItIsAScalar(t *testing.T) {
	var w Walker
	root := parse(t, "a: 'some text'\nb: [1]\n")
	for f := range w.Fields(root, "a", "b") {
		w.Fail(f, errors.New("no good"))
	}
	w.Report(&Error{Line: 9, Field: "c", Err: errors.New("missing")})
	errs := w.Errs()
	if len(errs) != 3 {
		t.Fatalf("errors %q, want three", messages(errs))
	}
	for i, want := range []Error{
		{Line: 1, Field: "a", Value: "some text"},
		{Line: 2, Field: "b"},
		{Line: 9, Field: "c"},
	} {
		if e := errs[i]; e.Line != want.Line || e.Field != want.Field || e.Value != want.Value {
			t.Errorf("error %d: line %d field %q value %q, want %d %q %q", i, e.Line, e.Field, e.Value, want.Line, want.Field, want.Value)
		}
	}
}

func TestErrorSaysWhereWhatAndWhy(t *testing.T) {
	cases := []struct {
		err  Error
		want string
	}{
		{Error{Line: 3, Field: "tools[0].ceiling", Value: "soon", Err: ErrNotDuration}, `yamlfield: line 3: tools[0].ceiling "soon": not a duration such as "1s" or "250ms"`},
		{Error{Line: 2, Field: "rules", Err: ErrNotList}, `yamlfield: line 2: rules: not a list`},
		{Error{Line: 4, Err: ErrSecondDocument}, `yamlfield: line 4: a second document; the file holds one`},
		{Error{Err: errors.New("control characters are not allowed")}, `yamlfield: control characters are not allowed`},
	}
	for _, tc := range cases {
		if got := tc.err.Error(); got != tc.want {
			t.Errorf("Error() = %s, want %s", got, tc.want)
		}
	}
}
