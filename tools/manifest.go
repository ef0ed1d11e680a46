package tools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// DefaultResolveTimeout bounds [Config.Resolve] when its timeout is zero.
const DefaultResolveTimeout = 5 * time.Second

// ManifestError reports a tool server's manifest that could not fill in an
// entry: the server could not be reached, answered with an error, sent
// something that is not a manifest, or does not list the tool. It matches
// [ErrManifest].
type ManifestError struct {
	URL  string // the server's base URL, any password redacted
	Tool string // empty when the whole manifest failed
	Err  error
}

func (e *ManifestError) Error() string {
	if e.Tool == "" {
		return fmt.Sprintf("tools: manifest of %s: %v", e.URL, e.Err)
	}
	return fmt.Sprintf("tools: manifest of %s: tool %q: %v", e.URL, e.Tool, e.Err)
}

func (e *ManifestError) Unwrap() error { return e.Err }

// Is reports whether target is [ErrManifest].
func (e *ManifestError) Is(target error) bool { return target == ErrManifest }

// manifest is GET U/tools (SPEC §5).
type manifest struct {
	Tools []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Effect      Effect          `json:"effect"`
		Cancellable *bool           `json:"cancellable"`
		P50Ms       int64           `json:"p50_ms"`
		P95Ms       int64           `json:"p95_ms"`
	} `json:"tools"`
}

// Resolve fills what url entries left out from their servers' manifests
// (GET U/tools): description, parameters, effect, cancellable, p50 and p95.
// Where the entry and the manifest both speak, the entry wins. Each server
// is asked once, all at the same time, and all within timeout (zero:
// [DefaultResolveTimeout]); client nil uses one with no Timeout of its own.
//
// When ctx carries a run's budget ([budget.WithBudget]), the requests run
// on one work lease of it with timeout as the ceiling, so that resolving
// spends the run's time rather than adding to it; a refused lease sends
// nothing and fails every url entry. Without a budget, Resolve is a step
// before any run, and timeout alone bounds it.
//
// It fills what it can and returns every failure joined, each a
// [*ManifestError]; an entry whose manifest failed keeps what it had. The
// caller decides whether that is fatal: such a tool still works if the
// entry said enough.
func (c *Config) Resolve(ctx context.Context, client *http.Client, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultResolveTimeout
	}
	if client == nil {
		client = &http.Client{}
	}
	var cancel context.CancelFunc
	if b, ok := budget.FromContext(ctx); ok {
		lease, err := b.Lease(nil, timeout)
		if err != nil {
			var errs []error
			for _, e := range c.Entries {
				if e.URL != "" {
					errs = append(errs, &ManifestError{URL: redact(e.URL), Tool: e.Name, Err: err})
				}
			}
			return errors.Join(errs...)
		}
		ctx, cancel = lease.Context(ctx)
	} else {
		// No run has started, so there is no deadline to lease from: this
		// is a fixed bound on a one-off step, not time arithmetic.
		ctx, cancel = context.WithTimeout(ctx, timeout)
	}
	defer cancel()

	type fetched struct {
		m   *manifest
		err error
	}
	results := make(map[string]*fetched)
	var wg sync.WaitGroup
	for _, e := range c.Entries {
		if e.URL == "" || results[e.URL] != nil {
			continue
		}
		f := &fetched{}
		results[e.URL] = f
		wg.Go(func() { f.m, f.err = fetchManifest(ctx, client, e.URL) })
	}
	wg.Wait()

	var errs []error
	for _, f := range results {
		if f.err != nil {
			errs = append(errs, f.err)
		}
	}
	for i := range c.Entries {
		e := &c.Entries[i]
		f := results[e.URL]
		if e.URL == "" || f.err != nil {
			continue
		}
		if err := e.fill(f.m); err != nil {
			errs = append(errs, &ManifestError{URL: redact(e.URL), Tool: e.Name, Err: err})
		}
	}
	return errors.Join(errs...)
}

// fill sets what e left out from m's entry for e.Name.
func (e *Entry) fill(m *manifest) error {
	i := -1
	for j, t := range m.Tools {
		if t.Name == e.Name {
			i = j
			break
		}
	}
	if i < 0 {
		return errors.New("not in the manifest")
	}
	t := m.Tools[i]
	switch t.Effect {
	case "", Read, Write:
	default:
		return fmt.Errorf("effect %q is neither read nor write", clip(string(t.Effect), 32))
	}
	if t.P50Ms < 0 || t.P95Ms < 0 {
		return errors.New("negative p50_ms or p95_ms")
	}
	if e.Description == "" {
		e.Description = t.Description
	}
	if e.Parameters == nil && len(t.Parameters) > 0 && !bytes.Equal(t.Parameters, []byte("null")) {
		e.Parameters = t.Parameters
	}
	if e.Effect == "" {
		e.Effect = t.Effect
	}
	if e.Cancellable == nil && t.Cancellable != nil {
		b := *t.Cancellable
		e.Cancellable = &b
	}
	if e.P50 == 0 {
		e.P50 = time.Duration(t.P50Ms) * time.Millisecond
	}
	if e.P95 == 0 {
		e.P95 = time.Duration(t.P95Ms) * time.Millisecond
	}
	return nil
}

func fetchManifest(ctx context.Context, client *http.Client, base string) (*manifest, error) {
	fail := func(err error) (*manifest, error) {
		return nil, &ManifestError{URL: redact(base), Err: err}
	}
	u, err := url.JoinPath(base, "tools")
	if err != nil {
		return fail(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return fail(err)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		if ue, ok := errors.AsType[*url.Error](err); ok {
			err = ue.Err // its message would repeat the URL, password and all
		}
		return fail(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fail(fmt.Errorf("HTTP %d", resp.StatusCode))
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, MaxAnswer+1))
	if err != nil {
		return fail(err)
	}
	if len(data) > MaxAnswer {
		return fail(fmt.Errorf("larger than %d bytes", MaxAnswer))
	}
	var m manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return fail(fmt.Errorf("not a manifest: %v", err))
	}
	return &m, nil
}

// redact returns raw with any password replaced, for messages.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
