package main

import (
	"errors"
	"fmt"
	"io"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// planFile is a plan configuration as written. Every value is a [scalar]
// rather than a typed field so that a bad one is reported with its line and
// in our words, not the decoder's.
type planFile struct {
	Budget           scalar         `yaml:"budget"`
	Steps            scalar         `yaml:"steps"`
	ToolCallsPerStep scalar         `yaml:"tool_calls_per_step"`
	Model            planFileLimits `yaml:"model"`
	Tools            []planFileTool `yaml:"tools"`
}

type planFileLimits struct {
	Ceiling scalar `yaml:"ceiling"`
	Retries scalar `yaml:"retries"`
}

type planFileTool struct {
	Name    scalar `yaml:"name"`
	Ceiling scalar `yaml:"ceiling"`
	Retries scalar `yaml:"retries"`
}

// scalar is one value as written and the line it was written on. A value
// left out, null or "" is unset.
type scalar struct {
	value string
	line  int
	kind  yaml.Kind // 0 when left out or null
}

// UnmarshalYAML records the node; it never fails, so that checking happens
// in one place, where the field's path is known. The decoder does not call
// it for null.
func (s *scalar) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	*s = scalar{value: n.Value, line: n.Line, kind: n.Kind}
	return nil
}

func (s scalar) set() bool {
	return s.kind != 0 && (s.kind != yaml.ScalarNode || s.value != "")
}

// loadPlan reads a plan configuration from r, named name in messages. The
// file is YAML; JSON is read by the same decoder (a JSON document is a YAML
// document), so both are strict alike: an unknown field, a repeated key or
// a second document is an error, reported with its line.
func loadPlan(name string, r io.Reader) (planConfig, error) {
	dec := yaml.NewDecoder(r)
	dec.KnownFields(true)
	var f planFile
	switch err := dec.Decode(&f); {
	case errors.Is(err, io.EOF):
		// An empty file leaves everything to the defaults, as {} does.
	case isTypeError(err):
		// The decoder went on past these, so the values it did read can
		// be checked too, and every mistake reported at once.
		_, cerr := f.config(name)
		return planConfig{}, errors.Join(yamlError(name, err), cerr)
	case err != nil:
		return planConfig{}, yamlError(name, err)
	default:
		var more yaml.Node
		if err := dec.Decode(&more); !errors.Is(err, io.EOF) {
			if err != nil {
				return planConfig{}, yamlError(name, err)
			}
			return planConfig{}, fmt.Errorf("%s:%d: a second document; a plan file holds one", name, more.Line)
		}
	}
	return f.config(name)
}

// config turns the file into a planConfig, checking what only the file can
// get wrong: a value that is not a duration or a number. Ranges are checked
// by [makePlan], for flags and file alike.
func (f *planFile) config(name string) (planConfig, error) {
	c := planConfig{Origin: make(map[string]string)}
	var errs []error
	at := func(field string, s scalar) string {
		where := fmt.Sprintf("%s:%d", name, s.line)
		c.Origin[field] = where
		return where
	}
	duration := func(field string, s scalar) *time.Duration {
		if !s.set() {
			return nil
		}
		return parseScalar(s, field, at(field, s), &errs, time.ParseDuration, errNotDuration)
	}
	integer := func(field string, s scalar) *int {
		if !s.set() {
			return nil
		}
		return parseScalar(s, field, at(field, s), &errs, strconv.Atoi, errNotInteger)
	}

	c.Budget = duration("budget", f.Budget)
	c.Steps = integer("steps", f.Steps)
	c.ToolCallsPerStep = integer("tool_calls_per_step", f.ToolCallsPerStep)
	c.Model.Ceiling = duration("model.ceiling", f.Model.Ceiling)
	c.Model.Retries = integer("model.retries", f.Model.Retries)
	for i, t := range f.Tools {
		field := fmt.Sprintf("tools[%d]", i)
		tc := toolConfig{Name: t.Name.value}
		switch {
		case t.Name.set() && t.Name.kind != yaml.ScalarNode:
			errs = append(errs, &fieldError{Where: at(field+".name", t.Name), Field: field + ".name", Err: errNotScalar})
		case t.Name.set():
			at(field+".name", t.Name)
		default:
			// A missing name has no line of its own; point at the entry.
			line := 0
			for _, s := range []scalar{t.Ceiling, t.Retries} {
				if s.line > 0 && (line == 0 || s.line < line) {
					line = s.line
				}
			}
			if line > 0 {
				c.Origin[field+".name"] = fmt.Sprintf("%s:%d", name, line)
			}
		}
		tc.Ceiling = duration(field+".ceiling", t.Ceiling)
		tc.Retries = integer(field+".retries", t.Retries)
		c.Tools = append(c.Tools, tc)
	}
	return c, errors.Join(errs...)
}

var (
	yamlLine    = regexp.MustCompile(`^(?:yaml: )?line (\d+): (.*)$`)
	yamlUnknown = regexp.MustCompile(`^field (\S+) not found in type (\S+)$`)
)

// yamlError restates the decoder's errors as "FILE:LINE: what", one per
// line, and an unknown field with where it was and the fields known there.
func yamlError(name string, err error) error {
	msgs := []string{strings.TrimPrefix(err.Error(), "yaml: ")}
	if te, ok := errors.AsType[*yaml.TypeError](err); ok {
		msgs = te.Errors
	}
	errs := make([]error, 0, len(msgs))
	for _, m := range msgs {
		where := name
		if sub := yamlLine.FindStringSubmatch(m); sub != nil {
			where, m = name+":"+sub[1], sub[2]
		}
		if sub := yamlUnknown.FindStringSubmatch(m); sub != nil {
			m = fmt.Sprintf("unknown field %q%s", sub[1], knownFields(sub[2]))
		}
		errs = append(errs, fmt.Errorf("%s: %s", where, m))
	}
	return errors.Join(errs...)
}

func isTypeError(err error) bool {
	_, ok := errors.AsType[*yaml.TypeError](err)
	return ok
}

// knownFields names, for the Go type the decoder named, where in the file
// that is and which fields are allowed there.
func knownFields(typeName string) string {
	for _, s := range []struct {
		t     reflect.Type
		where string
	}{
		{reflect.TypeFor[planFile](), "at the top level"},
		{reflect.TypeFor[planFileLimits](), "in model"},
		{reflect.TypeFor[planFileTool](), "in a tools entry"},
	} {
		if s.t.String() != typeName {
			continue
		}
		var names []string
		for f := range s.t.Fields() {
			names = append(names, f.Tag.Get("yaml"))
		}
		return fmt.Sprintf(" %s (known: %s)", s.where, strings.Join(names, ", "))
	}
	return ""
}

// parseScalar parses the set scalar s of field, written at where, with
// parse; a value that is not a scalar, or that parse rejects (as notOK), is
// appended to errs and gives nil.
func parseScalar[T any](s scalar, field, where string, errs *[]error, parse func(string) (T, error), notOK error) *T {
	if s.kind != yaml.ScalarNode {
		*errs = append(*errs, &fieldError{Where: where, Field: field, Err: errNotScalar})
		return nil
	}
	v, err := parse(s.value)
	if err != nil {
		*errs = append(*errs, &fieldError{Where: where, Field: field, Value: s.value, Err: notOK})
		return nil
	}
	return &v
}
