package harness

import (
	"encoding/json"
	"maps"
	"sync"

	"github.com/openai/openai-go/v3/shared"
)

// decodedSchemas are the tools' schemas as [Offer] has decoded them. Runs
// offer the same tools over and over, and decoding a tool's schema at
// every run was the dearest part of a run's first request after the
// model client's own (BenchmarkStepCPU).
var decodedSchemas = schemaCache{m: make(map[string]decodedSchema)}

// maxDecodedSchemas bounds what decodedSchemas keeps: a process that
// offers more schemas than that decodes the others at each run.
const maxDecodedSchemas = 1024

// schemaCache keeps schemas decoded, by their text.
type schemaCache struct {
	mu sync.Mutex
	m  map[string]decodedSchema
}

// decodedSchema is a schema as json.Unmarshal decodes it into a
// shared.FunctionParameters, and whether it did (ok is false for a
// schema that is not an object). params is never handed out: each
// request gets a copy of its own, which its model may write.
type decodedSchema struct {
	params shared.FunctionParameters
	ok     bool
}

// of returns schema decoded, as json.Unmarshal into a
// shared.FunctionParameters makes it, and whether it could be: a copy
// of the caller's own.
func (c *schemaCache) of(schema []byte) (shared.FunctionParameters, bool) {
	c.mu.Lock()
	d, found := c.m[string(schema)]
	c.mu.Unlock()
	if !found {
		d.ok = json.Unmarshal(schema, &d.params) == nil
		c.keep(string(schema), d)
	}
	if !d.ok {
		return nil, false
	}
	return copyObject(d.params), true
}

// keep remembers d, the decoded schema, while there is room.
func (c *schemaCache) keep(schema string, d decodedSchema) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.m) < maxDecodedSchemas {
		c.m[schema] = d
	}
}

// copyObject returns a deep copy of m, a JSON object as json.Unmarshal
// decodes it; nil for nil, as Unmarshal decodes null.
func copyObject(m map[string]any) map[string]any {
	if m == nil {
		return nil
	}
	out := maps.Clone(m)
	for k, v := range out {
		out[k] = copyValue(v)
	}
	return out
}

// copyValue returns a deep copy of v, a JSON value as json.Unmarshal
// decodes it into an any: its objects and arrays are copied, and the
// rest, which cannot be written, shared.
func copyValue(v any) any {
	switch v := v.(type) {
	case map[string]any:
		return copyObject(v)
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = copyValue(e)
		}
		return out
	}
	return v
}
