package yamlfield

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// FuzzWalk parses any input and walks all of it with every reader: nothing
// panics, every mistake is a located *Error, every field yielded has a
// value and the path of where it stands, and a read records one mistake
// exactly when it fails.
func FuzzWalk(f *testing.F) {
	f.Add([]byte("tools:\n  - name: a\n    ceiling: 1s\n"))
	f.Add([]byte(`{"budget": "2m", "steps": 3, "model": {"ceiling": null}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		root, err := Parse(data)
		if err != nil {
			e, ok := errors.AsType[*Error](err)
			if !ok || e.Err == nil || e.Line < 0 || root != nil {
				t.Fatalf("Parse = %v, %v; want no root and a located *Error", root, err)
			}
			return
		}
		if root == nil {
			return
		}
		var w Walker
		walk(t, &w, Root(root))
		for _, e := range w.Errs() {
			if e.Err == nil || e.Line < 1 {
				t.Fatalf("mistake %+v has no line or no reason", e)
			}
		}
	})
}

// known are the keys the fuzz walk allows; the others are unknown.
var known = []string{"a", "b", "name", "tools", "ceiling", "budget", "steps", "model", "<<"}

func walk(t *testing.T, w *Walker, f Field) {
	if f.Value == nil || f.Value.Kind == yaml.AliasNode {
		t.Fatalf("field %q has no value, or an alias", f.Path)
	}
	switch f.Value.Kind {
	case yaml.MappingNode:
		for c := range w.Fields(f, known...) {
			if c.Path != Join(f.Path, c.Name) || isNull(c.Value) {
				t.Fatalf("field %q of %q yielded at %q, or null", c.Name, f.Path, c.Path)
			}
			walk(t, w, c)
		}
	case yaml.SequenceNode:
		i := 0
		for c := range w.Items(f) {
			if want := fmt.Sprintf("%s[%d]", f.Path, i); c.Path != want {
				t.Fatalf("item %d of %q yielded at %q", i, f.Path, c.Path)
			}
			i++
			walk(t, w, c)
		}
	default:
		reads := []func() bool{
			func() bool { _, ok := w.Scalar(f); return ok },
			func() bool { _, ok := w.String(f); return ok },
			func() bool { _, ok := w.Int(f); return ok },
			func() bool { _, ok := w.Int64(f); return ok },
			func() bool { _, ok := w.Bool(f); return ok },
			func() bool { _, ok := w.Duration(f); return ok },
		}
		for i, read := range reads {
			before := len(w.Errs())
			ok := read()
			if recorded := len(w.Errs()) - before; recorded != 0 == ok || recorded > 1 {
				t.Fatalf("read %d of %q: ok %t but %d recorded", i, f.Value.Value, ok, recorded)
			}
			if !ok && !strings.HasPrefix(w.Errs()[before].Field, f.Path) {
				t.Fatalf("read %d of %q recorded at %q", i, f.Path, w.Errs()[before].Field)
			}
		}
	}
}
