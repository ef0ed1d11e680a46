package tools

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"sync"
	"time"

	"github.com/glidepath/glidepath/internal/redact"
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
	switch {
	case e.Tool == "":
		return fmt.Sprintf("tools: manifest of %s: %v", e.URL, e.Err)
	case errors.Is(e.Err, ErrNotListed):
		return fmt.Sprintf("tools: manifest of %s: tool %q: not in the manifest", e.URL, e.Tool)
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
		SilenceMs   int64           `json:"silence_ms"`
		Agent       bool            `json:"agent"` // a sub-agent that harness serve serves
	} `json:"tools"`
}

// Servers returns the base URLs of the config's url entries, each once, in
// the order of the entries: the manifests [Config.ResolveServer] fetches.
func (c *Config) Servers() []string {
	var out []string
	for _, e := range c.Entries {
		if e.URL != "" && !slices.Contains(out, e.URL) {
			out = append(out, e.URL)
		}
	}
	return out
}

// ResolveServer fetches the manifest of the tool server at base (GET
// base/tools) on ctx, which bounds it, and fills what the url entries of
// that server left out: description, parameters, effect, cancellable, p50
// and p95. Where the entry and the manifest both speak, the entry wins.
// client nil uses one with no Timeout of its own. Inside a run, ctx is a
// lease of the run's budget (harness.Session.Setup), so that fetching
// spends the run's time rather than adding to it.
//
// It fills what it can and returns every failure joined, each a
// [*ManifestError]; an entry whose manifest failed keeps what it had. The
// caller decides whether that is fatal: such a tool still works if the
// entry said enough. ResolveServer is safe to call for several servers at
// once; each fills only its own entries.
func (c *Config) ResolveServer(ctx context.Context, client *http.Client, base string) error {
	if client == nil {
		client = &http.Client{}
	}
	m, err := fetchManifest(ctx, client, base)
	if err != nil {
		return err
	}
	var errs []error
	for i := range c.Entries {
		e := &c.Entries[i]
		if e.URL != base {
			continue
		}
		if err := e.fill(m); err != nil {
			errs = append(errs, &ManifestError{URL: redact.URL(e.URL), Tool: e.Name, Err: err})
		}
	}
	return errors.Join(errs...)
}

// Resolve fills what url entries left out from their servers' manifests,
// as [Config.ResolveServer] does, asking every server at once, all within
// timeout (zero: [DefaultResolveTimeout]): a step before any run, for a
// caller that has no budget to lease from. It returns every failure
// joined.
func (c *Config) Resolve(ctx context.Context, client *http.Client, timeout time.Duration) error {
	if timeout <= 0 {
		timeout = DefaultResolveTimeout
	}
	// No run has started, so there is no deadline to lease from: this is
	// a fixed bound on a one-off step, not time arithmetic.
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	servers := c.Servers()
	errs := make([]error, len(servers))
	var wg sync.WaitGroup
	for i, base := range servers {
		wg.Go(func() { errs[i] = c.ResolveServer(ctx, client, base) })
	}
	wg.Wait()
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
		return ErrNotListed
	}
	t := m.Tools[i]
	switch t.Effect {
	case "", Read, Write:
	default:
		return fmt.Errorf("effect %q is neither read nor write", clip(string(t.Effect), 32))
	}
	if t.P50Ms < 0 || t.P95Ms < 0 || t.SilenceMs < 0 {
		return errors.New("negative p50_ms, p95_ms or silence_ms")
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
	if e.Silence == 0 {
		e.Silence = time.Duration(t.SilenceMs) * time.Millisecond
	}
	e.RemoteAgent = t.Agent
	return nil
}

func fetchManifest(ctx context.Context, client *http.Client, base string) (*manifest, error) {
	fail := func(err error) (*manifest, error) {
		return nil, &ManifestError{URL: redact.URL(base), Err: err}
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
		return fail(statusError(resp.StatusCode))
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
		// An HTML page (a proxy's, a web server's at the wrong base URL)
		// is named by its type rather than by the JSON error alone.
		return fail(fmt.Errorf("not a manifest (%s): %v", cmp.Or(resp.Header.Get("Content-Type"), "no Content-Type"), err))
	}
	return &m, nil
}

// statusError is the HTTP status a tool server answered GET U/tools with,
// other than 200. A 4xx or a 501 says the server serves no manifest
// ([ErrNoManifest]); any other 5xx says it, or the service behind the
// proxy that answered, is down, and its tools are as unavailable as a
// mute server's (issue 24).
type statusError int

func (e statusError) Error() string { return fmt.Sprintf("HTTP %d", int(e)) }

// Is reports whether target is [ErrNoManifest] and the status says that
// no manifest is served, or [ErrServerDown] and it says the server is
// down.
func (e statusError) Is(target error) bool {
	noManifest := e < 500 || e == http.StatusNotImplemented
	return target == ErrNoManifest && noManifest || target == ErrServerDown && !noManifest
}
