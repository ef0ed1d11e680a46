package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/cancel"
	"github.com/glidepath/glidepath/internal/inflight"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

// KindPrefix starts the step kind of every tool in the budget's estimates:
// a tool named search is leased as kind "tool:search".
const KindPrefix = "tool:"

// AgentKindPrefix starts the step kind of a sub-agent (SPEC §5b), in-process
// or served by harness serve: "agent:researcher". Its attempts are leased
// as slices of the run's budget, min(ceiling, available − [Run.Keep])
// ([budget.Budget.SliceLease]), not as work leases.
const AgentKindPrefix = "agent:"

// MaxArguments bounds the arguments of one call.
const MaxArguments = 1 << 20 // 1 MiB

var (
	namePattern   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	defaultParams = json.RawMessage(`{"type":"object"}`)
)

// A Registry holds the tools a run may call, by name. It is a value, like
// an http.ServeMux: make one per set of tools with [NewRegistry]. The zero
// Registry is ready to use too; having no estimates of its own, it declares
// each tool's hints on the run's when a call starts. A Registry is safe for
// concurrent use.
type Registry struct {
	est *budget.Estimates

	mu    sync.RWMutex // guards tools and order
	tools map[string]*registered
	order []string

	// stragglers are local tool functions still running after their call
	// returned, because they ignored their context. The Registry owns them.
	stragglers inflight.Group
}

// registered is a tool as the registry keeps it: its spec with defaults
// filled in and its compiled schema.
type registered struct {
	tool   Tool
	impl   Tool // tool itself, or the tool a config entry respecified: where its capabilities are
	spec   Spec // Kind always set
	schema *jsonschema.Schema
}

// NewRegistry returns an empty registry that declares each tool's P50 and
// P95 on est when the tool is registered. Pass the estimates the runs'
// budgets use (budget.Config.Estimates); a run whose budget uses others gets
// the declaration when a call starts. Nil est declares only then.
func NewRegistry(est *budget.Estimates) *Registry {
	return &Registry{est: est, tools: make(map[string]*registered)}
}

// Register adds t. It returns a [*SpecError] when the name is taken
// (matching [ErrDuplicate]) or the spec cannot be used: a bad name, an
// unknown effect, a negative duration, a p50 above the p95 or the ceiling,
// a schema that does not compile, a command with no argv, a remote tool
// with no URL, a capability the type does not have ([ErrNoCapability]).
// The schema is compiled here, once. What t can do beyond an attempt is
// read off its type here: see [Tool].
func (r *Registry) Register(t Tool) error {
	if t == nil {
		return &SpecError{Field: "tool", Err: errors.New("nil")}
	}
	reg, err := prepare(t)
	if err != nil {
		return err
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.tools == nil {
		r.tools = make(map[string]*registered)
	}
	if _, ok := r.tools[reg.spec.Name]; ok {
		return &SpecError{Tool: reg.spec.Name, Field: "name", Err: ErrDuplicate}
	}
	r.tools[reg.spec.Name] = reg
	r.order = append(r.order, reg.spec.Name)
	if r.est != nil {
		r.est.Kind(reg.spec.Kind).Declare(reg.spec.P50, reg.spec.P95)
	}
	return nil
}

// prepare checks t's spec, fills its defaults and compiles its schema.
func prepare(t Tool) (*registered, error) {
	spec := t.Spec()
	bad := func(field string, err error) error {
		return &SpecError{Tool: spec.Name, Field: field, Err: err}
	}
	if !namePattern.MatchString(spec.Name) {
		return nil, bad("name", errBadName)
	}
	switch spec.Effect {
	case "":
		spec.Effect = Write
	case Read, Write:
	default:
		return nil, bad("effect", fmt.Errorf("%q is neither read nor write", spec.Effect))
	}
	if err := checkDurations(spec); err != nil {
		return nil, bad(err.field, err.err)
	}
	switch {
	case spec.MaxAttempts < 0:
		return nil, bad("max_attempts", errors.New("must not be negative"))
	case spec.MaxAttempts == 0:
		spec.MaxAttempts = DefaultMaxAttempts
	}
	if len(bytes.TrimSpace(spec.Parameters)) == 0 {
		spec.Parameters = defaultParams
	}
	schema, err := compileSchema(spec.Parameters)
	if err != nil {
		return nil, bad("parameters", err)
	}
	impl := t
	if r, ok := t.(respec); ok {
		impl = r.Tool
	}
	if c, ok := impl.(checker); ok {
		if err := c.check(); err != nil {
			return nil, bad(err.field, err.err)
		}
	}
	// A capability is what the type implements; the spec may only turn it
	// off (issue 17: a Canceller whose spec forgot Cancellable was never
	// cancelled, and the model was told it "could not be cancelled").
	_, canceller := impl.(cancel.Canceller)
	switch {
	case spec.Cancellable && spec.NotCancellable:
		return nil, bad("cancellable", errors.New("both Cancellable and NotCancellable"))
	case spec.Cancellable && !canceller:
		return nil, bad("cancellable", fmt.Errorf("%w: %T is not a cancel.Canceller", ErrNoCapability, impl))
	}
	spec.Cancellable = canceller && !spec.NotCancellable
	if spec.Kind == "" {
		spec.Kind = KindPrefix + spec.Name
	}
	return &registered{tool: t, impl: impl, spec: spec, schema: schema}, nil
}

var errBadName = errors.New("must be 1 to 64 letters, digits, '_' or '-'")

type fieldErr struct {
	field string
	err   error
}

// checkDurations checks what the budget would otherwise trip on at every
// call: a ceiling below the p50 makes every lease a refusal.
func checkDurations(s Spec) *fieldErr {
	for _, d := range [...]struct {
		field string
		v     any
		neg   bool
	}{{"ceiling", s.Ceiling, s.Ceiling < 0}, {"p50", s.P50, s.P50 < 0}, {"p95", s.P95, s.P95 < 0}, {"silence", s.Silence, s.Silence < 0}} {
		if d.neg {
			return &fieldErr{d.field, fmt.Errorf("%v must not be negative", d.v)}
		}
	}
	if s.P95 > 0 && s.P50 > s.P95 {
		return &fieldErr{"p50", fmt.Errorf("%v is above p95 %v", s.P50, s.P95)}
	}
	if s.Ceiling > 0 && s.P50 > s.Ceiling {
		return &fieldErr{"ceiling", fmt.Errorf("%v is below p50 %v, so every call would be refused", s.Ceiling, s.P50)}
	}
	return nil
}

// refusingLoader refuses every schema it is asked to load, so that a $ref
// resolves only inside the tool's own schema: a schema from a config file
// or a tool server must not make the harness read files or fetch URLs.
type refusingLoader struct{}

func (refusingLoader) Load(url string) (any, error) {
	return nil, fmt.Errorf("external schema %s not allowed", clip(url, 128))
}

// compileSchema compiles a tool's JSON Schema. Schemas without $schema are
// read as draft 2020-12.
func compileSchema(params json.RawMessage) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(params))
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.UseLoader(refusingLoader{})
	const loc = "https://tool.invalid/parameters.json" // never fetched: added as a resource
	if err := c.AddResource(loc, doc); err != nil {
		return nil, err
	}
	return c.Compile(loc)
}

// Lookup returns the tool registered under name.
func (r *Registry) Lookup(name string) (Tool, bool) {
	reg, ok := r.lookup(name)
	if !ok {
		return nil, false
	}
	return reg.tool, true
}

func (r *Registry) lookup(name string) (*registered, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	reg, ok := r.tools[name]
	return reg, ok
}

// Specs returns the registered tools' specs in registration order, with
// defaults filled in (Kind, Effect, MaxAttempts, Parameters) and
// Cancellable as it is used (the type is a [cancel.Canceller] and the spec
// did not turn it off): what to offer the model and what the landing
// ladder needs to know.
func (r *Registry) Specs() []Spec {
	r.mu.RLock()
	defer r.mu.RUnlock()
	specs := make([]Spec, 0, len(r.order))
	for _, name := range r.order {
		specs = append(specs, r.tools[name].spec)
	}
	return specs
}

// names lists the registered names, for the model when it calls one that
// does not exist.
func (r *Registry) names() string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return strings.Join(r.order, ", ")
}

// Wait blocks until every local tool function that outlived its call has
// returned. A call returns when its lease ends even if its function ignores
// the context; the Registry keeps count of such functions so that a
// process can wait for them before it exits.
func (r *Registry) Wait() { r.stragglers.Wait(context.Background()) }

// Close closes every tool that is a [Closer], the last registered first,
// then waits for the local functions that outlived their calls, until ctx
// ends; it returns the tools' errors and ctx's cause, joined. Calls must
// have ended: a registry is closed when the runs that use it are done.
func (r *Registry) Close(ctx context.Context) error {
	r.mu.RLock()
	var closers []Closer
	for i := len(r.order) - 1; i >= 0; i-- {
		if c, ok := r.tools[r.order[i]].impl.(Closer); ok {
			closers = append(closers, c)
		}
	}
	r.mu.RUnlock()
	var errs []error
	for _, c := range closers {
		if err := c.Close(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	if err := r.stragglers.Wait(ctx); err != nil {
		errs = append(errs, fmt.Errorf("tools: local functions still running: %w", err))
	}
	return errors.Join(errs...)
}

// Validate checks the model's arguments for the tool registered under
// name against its parameters, compiled once when it was registered, and
// returns them compacted, exactly as [Registry.Call] sends them: a host
// that makes the attempts elsewhere (a Temporal worker) checks them by the
// same rule (issue 25). A name not registered is an [ErrUnknownTool]; a
// mismatch an [*ArgumentsError].
func (r *Registry) Validate(name string, args json.RawMessage) (json.RawMessage, error) {
	reg, ok := r.lookup(name)
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, clip(name, 64))
	}
	return reg.validate(args)
}

// validate checks the model's arguments against the tool's schema and
// returns them compacted, as they will be sent. Empty arguments are {}:
// models send "" for tools without parameters.
func (reg *registered) validate(args json.RawMessage) (json.RawMessage, error) {
	bad := func(err error) error { return &ArgumentsError{Tool: reg.spec.Name, Err: err} }
	if len(args) > MaxArguments {
		return nil, bad(fmt.Errorf("larger than %d bytes", MaxArguments))
	}
	if len(bytes.TrimSpace(args)) == 0 {
		args = json.RawMessage(`{}`)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, args); err != nil {
		return nil, bad(fmt.Errorf("not JSON: %w", err))
	}
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(buf.Bytes()))
	if err != nil {
		return nil, bad(fmt.Errorf("not JSON: %w", err))
	}
	if err := reg.schema.Validate(inst); err != nil {
		return nil, bad(schemaMismatch(err))
	}
	return buf.Bytes(), nil
}

// schemaMismatch restates a validation error for the model: the list of
// what is wrong where, without the schema's location, which is ours.
func schemaMismatch(err error) error {
	msg := err.Error()
	if _, ok := errors.AsType[*jsonschema.ValidationError](err); ok {
		if _, rest, found := strings.Cut(msg, "\n"); found {
			msg = rest
		}
	}
	return fmt.Errorf("they do not match its parameters:\n%s", clip(msg, 2048))
}
