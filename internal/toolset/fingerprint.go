package toolset

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/glidepath/glidepath/tools"
)

// A Fingerprint identifies a tools file by what a call depends on: each
// tool's name, its effect, and where it runs (a builtin by its name, a
// tool server by its URL, a subprocess by its argv, a sub-agent by its own
// set's fingerprint, an MCP server by its command or URL), sorted by name,
// so that two files that order the same tools differently match. It is
// made from the file as written, before any manifest is fetched, so that
// a tool server down at one worker's start does not change it. It holds no
// secret: an entry's env, an MCP server's headers and env, a URL's
// password and query are left out.
//
// It is the hex SHA-256 of that description; [Fingerprint.Short] is its
// printable form. The zero Fingerprint is not [None]: it is a run set up
// before fingerprints existed, which nothing is checked against.
type Fingerprint string

// None is the fingerprint of no tools: a worker started without a tools
// file.
var None = Of(nil, nil)

// ErrMismatch is matched by a [MismatchError].
var ErrMismatch = errors.New("toolset: another toolset")

// A MismatchError is a worker refusing a run's tool step because the run
// was set up with other tools than the worker's: the step was not sent.
type MismatchError struct {
	Run    Fingerprint // the fingerprint the run recorded at its setup
	Worker Fingerprint // the fingerprint of the worker's tools
	Who    string      // the worker's identity
	Step   string      // what was refused: "tool:commit", "the model turn"
}

func (e *MismatchError) Error() string {
	return fmt.Sprintf("toolset: %s was not sent: the run was set up with toolset %s, worker %s runs toolset %s; "+
		"every worker of a task queue must run the same tools file", e.Step, e.Run.Label(), e.Who, e.Worker.Label())
}

func (e *MismatchError) Unwrap() error { return ErrMismatch }

// Check returns a [*MismatchError] when run, a run's recorded fingerprint,
// is not worker's; nil when they match or run is zero (a run set up before
// fingerprints, whose tools nothing says).
func Check(run, worker Fingerprint, who, step string) error {
	if run == "" || run == worker {
		return nil
	}
	return &MismatchError{Run: run, Worker: worker, Who: who, Step: step}
}

// ShortLen is the length of [Fingerprint.Short].
const ShortLen = 12

// Short is f's first 12 hex digits: what a worker's identity and the
// messages name it by.
func (f Fingerprint) Short() string {
	if len(f) < ShortLen {
		return string(f)
	}
	return string(f[:ShortLen])
}

// Label is f's short form, followed by "(no tools)" for [None], whose
// short form f may be.
func (f Fingerprint) Label() string {
	if f.Short() == None.Short() {
		return f.Short() + " (no tools)"
	}
	return f.Short()
}

// Fingerprint is the fingerprint of s's tools file, its sub-agents' among
// them; a nil Set's, or a Set with no file's, is [None].
func (s *Set) Fingerprint() Fingerprint {
	if s == nil {
		return None
	}
	return s.fingerprint
}

// Of is the fingerprint of cfg (nil: no tools), whose builtins are
// builtins: a builtin entry that does not state its effect has its
// builtin's.
func Of(cfg *tools.Config, builtins map[string]tools.Tool) Fingerprint {
	b, err := json.Marshal(describe(cfg, builtins))
	if err != nil {
		panic(err) // strings and slices of them always encode
	}
	sum := sha256.Sum256(append([]byte("glidepath toolset v1\n"), b...))
	return Fingerprint(hex.EncodeToString(sum[:]))
}

// described is one tool as a fingerprint sees it.
type described struct {
	Name   string   `json:"name"`
	Effect string   `json:"effect"`
	Runs   []string `json:"runs"` // where: ["builtin", NAME], ["url", U], ["command", argv…], ["agent", FINGERPRINT], ["mcp", …]
}

func describe(cfg *tools.Config, builtins map[string]tools.Tool) []described {
	if cfg == nil {
		return []described{}
	}
	out := make([]described, 0, len(cfg.Entries)+len(cfg.MCPServers))
	for _, e := range cfg.Entries {
		d := described{Name: e.Name, Effect: string(e.Effect)}
		switch {
		case e.Builtin != "":
			d.Runs = []string{"builtin", e.Builtin}
			if b := builtins[e.Builtin]; d.Effect == "" && b != nil {
				d.Effect = string(b.Spec().Effect)
			}
		case e.URL != "":
			d.Runs = []string{"url", withoutSecrets(e.URL)}
		case e.Agent != nil:
			d.Runs = []string{"agent", string(Of(e.Agent.Tools, builtins)), e.Agent.Model}
		default:
			d.Runs = append(append([]string{"command"}, e.Command...), append([]string{"status"}, e.Status...)...)
		}
		out = append(out, d)
	}
	for _, m := range cfg.MCPServers {
		runs := append([]string{"mcp", m.Command}, m.Args...)
		if m.URL != "" {
			runs = []string{"mcp", withoutSecrets(m.URL)}
		}
		out = append(out, described{Name: "mcp server " + m.Name, Runs: append(runs, m.AllowedTools...)})
	}
	slices.SortFunc(out, func(a, b described) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// withoutSecrets is raw without its user info, query and fragment, where
// a tools file may put a token; one that does not parse is hashed as
// nothing, as it may be a secret itself.
func withoutSecrets(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return ""
	}
	u.User, u.RawQuery, u.ForceQuery, u.Fragment, u.RawFragment = nil, "", false, "", ""
	return u.String()
}
