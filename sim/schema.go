package sim

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"regexp"
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// taskNames are the string properties that get the user's task text: the
// names tools commonly give their main input.
var taskNames = map[string]bool{
	"query": true, "q": true, "question": true, "task": true, "prompt": true, "text": true,
	"input": true, "search": true, "search_query": true, "topic": true, "keywords": true,
	"keyword": true, "message": true, "request": true, "instructions": true,
}

// answerNames are the string properties of a structured answer
// (response_format json_schema) that get the text the sim would have
// answered with, so that its answers still say they are the sim's.
var answerNames = map[string]bool{
	"answer": true, "final_answer": true, "summary": true, "response": true, "reply": true,
	"result": true, "output": true, "content": true, "text": true, "message": true,
	"explanation": true, "conclusion": true,
}

// maxSchemaDepth bounds nesting and $ref chains, so a recursive schema
// still gives an answer.
const maxSchemaDepth = 16

// maxItems bounds the items of a generated array; [maxSchemaValues]
// bounds them all.
const maxItems = 64

// maxSchemaValues bounds the values generated for one tool's arguments.
// Depth alone does not: a schema whose object requires k properties that
// each refer back to it grows as k^depth, so a request could make the sim
// spin and answer with gigabytes. Past the bound, values are null.
const maxSchemaValues = 1024

// arguments generates the JSON text of arguments that satisfy a tool's
// parameters schema: required properties only, each the simplest value of
// its type. It is deterministic for the seed.
func arguments(params json.RawMessage, task string, seed int64, tool string) string {
	var root any
	if len(params) == 0 || json.Unmarshal(params, &root) != nil {
		return "{}"
	}
	g := generator{root: root, task: task, seed: seed, tool: tool, left: maxSchemaValues}
	v := g.value(root, "", 0)
	if _, ok := v.(map[string]any); !ok {
		v = map[string]any{}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return "{}"
	}
	return string(b)
}

// instance generates a structured answer for a response_format schema
// (decoded by encoding/json) named name: the same simplest values as
// [arguments], every property when all is set (strict schemas), and the
// answer text in the string properties named like an answer
// ([answerNames]). It is deterministic for the seed; the caller checks the
// value against the schema, since not every schema can be met this way.
func instance(schema any, answer, task string, seed int64, name string, all bool) any {
	g := generator{root: schema, task: task, seed: seed, tool: name, left: maxSchemaValues,
		answer: answer, response: true, all: all}
	return g.value(schema, "", 0)
}

type generator struct {
	root any
	task string
	seed int64
	tool string // the tool, or the response format's name: it varies the generated strings
	left int    // values still allowed, from maxSchemaValues down

	response bool   // generating an answer, not a tool's arguments
	answer   string // for a response: the text of answer-like properties
	all      bool   // every property of an object, not only the required ones
}

func (g *generator) value(schema any, path string, depth int) any {
	if b, ok := schema.(bool); ok && b {
		schema = map[string]any{} // true: anything goes
	}
	s, ok := schema.(map[string]any)
	if !ok || depth > maxSchemaDepth || g.left <= 0 {
		return nil
	}
	g.left--
	if ref, ok := s["$ref"].(string); ok {
		return g.value(g.resolve(ref), path, depth+1)
	}
	if c, ok := s["const"]; ok {
		return c
	}
	if e, ok := s["enum"].([]any); ok && len(e) > 0 {
		return e[0]
	}
	if d, ok := s["default"]; ok {
		return d
	}
	for _, k := range []string{"anyOf", "oneOf"} {
		if alts, ok := s[k].([]any); ok && len(alts) > 0 {
			for _, a := range alts {
				if m, ok := a.(map[string]any); !ok || m["type"] != "null" {
					return g.value(a, path, depth+1)
				}
			}
			return nil
		}
	}
	if all, ok := s["allOf"].([]any); ok && len(all) > 0 {
		return g.value(merge(s, all), path, depth+1)
	}
	switch schemaType(s) {
	case "object":
		obj := map[string]any{}
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		var names []string
		for _, r := range req {
			if name, ok := r.(string); ok && !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
		if g.all {
			// Sorted: values are bounded in number, so the order they are
			// made in must not vary.
			for _, name := range slices.Sorted(maps.Keys(props)) {
				if !slices.Contains(names, name) {
					names = append(names, name)
				}
			}
		}
		for _, name := range names {
			obj[name] = g.value(orEmpty(props[name]), path+"/"+name, depth+1)
		}
		return obj
	case "array":
		n := min(int(number(s, "minItems", 0)), maxItems)
		prefix, _ := s["prefixItems"].([]any)
		items := make([]any, n)
		for i := range items {
			item := s["items"]
			if i < len(prefix) {
				item = prefix[i]
			}
			items[i] = g.value(orEmpty(item), path+"/"+strconv.Itoa(i), depth+1)
		}
		return items
	case "integer":
		return bounded(s, true)
	case "number":
		return bounded(s, false)
	case "boolean":
		return true
	case "null":
		return nil
	}
	return g.text(s, path)
}

// text is the string for a property: a placeholder for well-known
// formats, the answer for answer-like names in a response, the task for
// task-like names, else a short deterministic string; if that does not
// match the schema's pattern, a short string that does. Then it is
// padded or cut to the length bounds.
func (g *generator) text(s map[string]any, path string) string {
	name := strings.ToLower(path[strings.LastIndex(path, "/")+1:])
	format, _ := s["format"].(string)
	var v string
	switch {
	case format == "uri" || format == "url" || format == "iri" || format == "uri-reference" ||
		name == "url" || name == "uri" || name == "link":
		v = "https://example.com/sim"
	case format == "email":
		v = "sim@example.com"
	case format == "date":
		v = "2000-01-01"
	case format == "date-time":
		v = "2000-01-01T00:00:00Z"
	case format == "time":
		v = "00:00:00Z"
	case format == "uuid":
		h := hash(g.seed, g.tool, path)
		v = fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", h>>32, h>>16&0xffff, h>>4&0xfff, h&0xfff, h&0xffffffffffff)
	case format == "ipv4":
		v = "192.0.2.1"
	case format == "ipv6":
		v = "2001:db8::1"
	case format == "hostname":
		v = "example.com"
	case g.response && answerNames[name]:
		v = g.answer
	case taskNames[name] && g.task != "":
		v = g.task
	default:
		v = fmt.Sprintf("sim-%08x", uint32(hash(g.seed, g.tool, path)))
	}
	if p, ok := s["pattern"].(string); ok {
		if re, err := regexp.Compile(p); err == nil && !re.MatchString(v) {
			if m, ok := matching(p); ok {
				v = m
			}
		}
	}
	r := []rune(v)
	if n := int(number(s, "minLength", 0)); len(r) < n {
		r = append(r, []rune(strings.Repeat("x", min(n, 1<<16)-len(r)))...)
	}
	if n, ok := s["maxLength"].(float64); ok && n >= 0 && float64(len(r)) > n {
		r = r[:int(n)]
	}
	return string(r)
}

func (g *generator) resolve(ref string) any {
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok {
		return nil
	}
	cur := g.root
	for tok := range strings.SplitSeq(strings.TrimPrefix(ptr, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		m, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = m[tok]
	}
	return cur
}

// merge folds allOf into one schema: properties and required united, other
// keys from the first schema that has them.
func merge(s map[string]any, all []any) map[string]any {
	out := map[string]any{}
	props := map[string]any{}
	var req []any
	for _, part := range append([]any{s}, all...) {
		m, ok := part.(map[string]any)
		if !ok {
			continue
		}
		for k, v := range m {
			switch k {
			case "allOf":
			case "properties":
				if p, ok := v.(map[string]any); ok {
					maps.Copy(props, p)
				}
			case "required":
				if r, ok := v.([]any); ok {
					req = append(req, r...)
				}
			default:
				if _, seen := out[k]; !seen {
					out[k] = v
				}
			}
		}
	}
	out["properties"], out["required"] = props, req
	return out
}

func schemaType(s map[string]any) string {
	switch t := s["type"].(type) {
	case string:
		return t
	case []any:
		for _, x := range t {
			if name, ok := x.(string); ok && name != "null" {
				return name
			}
		}
		return "null"
	}
	switch {
	case s["properties"] != nil || s["required"] != nil:
		return "object"
	case s["items"] != nil || s["prefixItems"] != nil:
		return "array"
	}
	return "string"
}

// bounded is 1, moved into the schema's bounds.
func bounded(s map[string]any, integer bool) float64 {
	v := 1.0
	if lo, ok := s["minimum"].(float64); ok && v < lo {
		v = lo
	}
	if lo, ok := s["exclusiveMinimum"].(float64); ok && v <= lo {
		v = lo + 1
	}
	if m, ok := s["multipleOf"].(float64); ok && m > 0 {
		v = math.Ceil(v/m) * m
	}
	if integer {
		v = math.Ceil(v)
	}
	if hi, ok := s["maximum"].(float64); ok && v > hi {
		v = hi
	}
	if hi, ok := s["exclusiveMaximum"].(float64); ok && v >= hi {
		v = hi - 1
	}
	if integer {
		v = math.Floor(v)
	}
	if math.IsInf(v, 0) || math.IsNaN(v) {
		return 1
	}
	return v
}

func number(s map[string]any, key string, def float64) float64 {
	if v, ok := s[key].(float64); ok && v >= 0 && v < math.MaxInt32 {
		return v
	}
	return def
}

func orEmpty(s any) any {
	if s == nil {
		return map[string]any{}
	}
	return s
}

// maxPatternRunes bounds the string [matching] builds: a pattern such as
// a{100000} is met only by a long string, and the sim gives up instead.
const maxPatternRunes = 1 << 12

// matching builds a short string that pattern (a Go regular expression)
// matches: literals as written, each class's plainest member, repeats at
// their minimum, the first alternative. It reports false when it cannot
// build one; word boundaries are not considered, so the caller checks.
func matching(pattern string) (string, bool) {
	re, err := syntax.Parse(pattern, syntax.Perl)
	if err != nil {
		return "", false
	}
	var b []rune
	if !build(&b, re.Simplify()) || len(b) > maxPatternRunes {
		return "", false
	}
	m := string(b)
	if ok, _ := regexp.MatchString(pattern, m); !ok {
		return "", false
	}
	return m, true
}

func build(b *[]rune, re *syntax.Regexp) bool {
	if len(*b) > maxPatternRunes {
		return false
	}
	switch re.Op {
	case syntax.OpLiteral:
		for _, r := range re.Rune {
			if re.Flags&syntax.FoldCase != 0 {
				r = unicode.ToLower(r)
			}
			*b = append(*b, r)
		}
	case syntax.OpCharClass:
		r, ok := plainest(re.Rune)
		if !ok {
			return false
		}
		*b = append(*b, r)
	case syntax.OpAnyChar, syntax.OpAnyCharNotNL:
		*b = append(*b, 'a')
	case syntax.OpCapture, syntax.OpPlus:
		return build(b, re.Sub[0])
	case syntax.OpRepeat:
		for range re.Min {
			if !build(b, re.Sub[0]) {
				return false
			}
		}
	case syntax.OpConcat:
		for _, sub := range re.Sub {
			if !build(b, sub) {
				return false
			}
		}
	case syntax.OpAlternate:
		return build(b, re.Sub[0])
	case syntax.OpNoMatch:
		return false
	}
	// The rest match the empty string: anchors, boundaries, star and
	// quest.
	return true
}

// plainest picks a member of a class given as rune ranges: a lower-case
// letter, a digit or an upper-case letter if it has one, else its first
// printable ASCII character, else its first rune.
func plainest(ranges []rune) (rune, bool) {
	if len(ranges) == 0 {
		return 0, false
	}
	in := func(r rune) bool {
		for i := 0; i+1 < len(ranges); i += 2 {
			if ranges[i] <= r && r <= ranges[i+1] {
				return true
			}
		}
		return false
	}
	for _, r := range "a0Ax" {
		if in(r) {
			return r, true
		}
	}
	for r := rune('!'); r <= '~'; r++ {
		if in(r) {
			return r, true
		}
	}
	return ranges[0], true
}
