package sim

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
)

// schemaNamePattern is what OpenAI allows as a json_schema's name.
var schemaNamePattern = regexp.MustCompile(`^[a-zA-Z0-9_-]+$`)

// maxSchemaName is the longest json_schema name OpenAI allows.
const maxSchemaName = 64

// responseFormat is response_format decoded.
type responseFormat struct {
	kind   string             // "" when absent, "text", "json_object" or "json_schema"
	name   string             // json_schema.name
	schema any                // json_schema.schema as encoding/json decodes it; nil when absent
	strict bool               // json_schema.strict
	check  *jsonschema.Schema // schema compiled, to check what the sim answers against it
}

// decodeFormat reads response_format and checks it as OpenAI does: a
// known type, a json_schema with a good name and a schema that compiles,
// and for json_object the word "json" somewhere in the messages.
func (req *chatRequest) decodeFormat(msgs []Message) *apiError {
	req.format = responseFormat{}
	raw := bytes.TrimSpace(req.ResponseFormat)
	if len(raw) == 0 || string(raw) == "null" {
		return nil
	}
	var rf struct {
		Type       string `json:"type"`
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if json.Unmarshal(raw, &rf) != nil {
		return invalid("response_format", "Invalid type for 'response_format': expected an object with a 'type'.")
	}
	req.format.kind = rf.Type // recorded even if refused below
	switch rf.Type {
	case "text":
	case "json_object":
		if !slices.ContainsFunc(msgs, func(m Message) bool { return strings.Contains(strings.ToLower(m.Content), "json") }) {
			return invalid("messages", "'messages' must contain the word 'json' in some form, to use 'response_format' of type 'json_object'.")
		}
	case "json_schema":
		js := rf.JSONSchema
		switch {
		case js == nil:
			return invalid("response_format.json_schema", "Missing required parameter: 'response_format.json_schema'.")
		case js.Name == "":
			return invalid("response_format.json_schema.name", "Missing required parameter: 'response_format.json_schema.name'.")
		case len(js.Name) > maxSchemaName:
			return invalid("response_format.json_schema.name", fmt.Sprintf(
				"Invalid 'response_format.json_schema.name': string too long. Expected a string with maximum length %d, but got a string with length %d instead.",
				maxSchemaName, len(js.Name)))
		case !schemaNamePattern.MatchString(js.Name):
			return invalid("response_format.json_schema.name",
				"Invalid 'response_format.json_schema.name': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]+$'.")
		}
		f := &req.format
		f.name, f.strict = js.Name, js.Strict != nil && *js.Strict
		if s := bytes.TrimSpace(js.Schema); len(s) > 0 && string(s) != "null" {
			check, err := compileSchema(s)
			if err == nil {
				err = json.Unmarshal(s, &f.schema)
			}
			if err != nil {
				return invalid("response_format", fmt.Sprintf("Invalid schema for response_format '%s': %s", js.Name, clip(err.Error(), 1024)))
			}
			f.check = check
		}
	default:
		return invalid("response_format.type", fmt.Sprintf(
			"Invalid value: '%s'. Supported values are: 'json_object', 'json_schema', and 'text'.", rf.Type))
	}
	return nil
}

// record is the format as [Request.ResponseFormat] records it.
func (f *responseFormat) record() string {
	if f.kind == "json_schema" {
		return f.kind + ":" + f.name
	}
	return f.kind
}

// refusingLoader keeps a schema from making the sim read files or fetch
// URLs: only references within the schema resolve.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("the sim resolves only references within the schema, not %s", clip(url, 128))
}

// compileSchema compiles a response schema; without $schema it is read as
// draft 2020-12. Patterns are Go regular expressions (RE2 syntax).
func compileSchema(raw []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refusingLoader{})
	const loc = "https://sim.invalid/response_format.json" // never fetched: added as a resource
	err = c.AddResource(loc, doc)
	var sch *jsonschema.Schema
	if err == nil {
		sch, err = c.Compile(loc)
	}
	if err != nil {
		// The location is the sim's, not the client's: say "the schema".
		msg := strings.ReplaceAll(err.Error(), `"`+loc+`#"`, "the schema")
		return nil, errors.New(strings.ReplaceAll(msg, loc, ""))
	}
	return sch, nil
}

// content shapes the text of an answer as the format asks: the text
// itself; for json_object (and a json_schema without a schema) the object
// {"answer": text}; for json_schema a value built from the schema by
// [instance] and checked against it, or a 400 when that value does not
// satisfy it.
func (f *responseFormat) content(text, task string, seed int64) (string, *apiError) {
	var v any
	switch {
	case f.kind == "" || f.kind == "text":
		return text, nil
	case f.schema == nil:
		v = map[string]any{"answer": text}
	default:
		v = instance(f.schema, text, task, seed, f.name, f.strict)
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return "", f.unsatisfiable(err)
	}
	out := bytes.TrimSpace(b.Bytes())
	if f.check != nil {
		inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(out))
		if err == nil {
			err = f.check.Validate(inst)
		}
		if err != nil {
			return "", f.unsatisfiable(err)
		}
	}
	return string(out), nil
}

// unsatisfiable is the 400 for a schema the sim cannot build a value for:
// better than an answer that breaks the schema the client will check.
func (f *responseFormat) unsatisfiable(err error) *apiError {
	msg := err.Error()
	if _, ok := errors.AsType[*jsonschema.ValidationError](err); ok {
		// The first line names the schema's location, which is the sim's;
		// the others list what is wrong where, one a line.
		var what []string
		for i, line := range strings.Split(msg, "\n") {
			if line = strings.TrimLeft(line, " -"); i > 0 && line != "" {
				what = append(what, line)
			}
		}
		msg = strings.Join(what, "; ")
	}
	return invalid("response_format", fmt.Sprintf(
		"[sim] cannot build a value that satisfies the schema of response_format '%s' (the sim builds the simplest value of each type, with required properties, or all when strict): %s",
		f.name, clip(msg, 1024)))
}
