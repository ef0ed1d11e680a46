package tools

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
)

// inherited are the names of the harness's environment a tool's process
// gets without asking: where programs, the home folder and temporary
// files are, and how text is shown. Nothing else passes, however it is
// named (issue 24): a key or token the harness holds (OPENAI_API_KEY, a
// cloud's credentials, a database URL with its password) stays with it.
//
// It is an allowlist, not a denylist of credential-looking names, because
// a denylist only knows the names someone thought of (GH_PAT, PGPASSWORD
// and DATABASE_URL look like none of *_API_KEY, *_TOKEN, *SECRET*), and a
// name it misses leaks; a tool that needs more says so in its entry's env,
// where the config shows it. The MCP TypeScript SDK's stdio transport
// starts its servers the same way (HOME, LOGNAME, PATH, SHELL, TERM, USER).
var inherited = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL", "TERM", "TZ", "TMPDIR",
	"LANG", "LANGUAGE", // and every LC_*
	"XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR",
	"SSL_CERT_FILE", "SSL_CERT_DIR",
}

// envRef is a reference to the harness's environment in an env value.
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// Environ returns the environment of a process the harness starts as a
// tool: a command tool, its status command, an MCP stdio server. It holds
// the harness's own values of the names a program needs to run (PATH,
// HOME, USER, LOGNAME, SHELL, TERM, TZ, TMPDIR, LANG, LANGUAGE, LC_*, the
// XDG_* folders, SSL_CERT_FILE and SSL_CERT_DIR) and nothing else of it;
// then env, the entry's own, in which ${NAME} is the harness's value of
// NAME (empty when unset), so that a tool that needs a key is given it
// by name, in the config, without writing it there; then protocol, the
// GLIDEPATH_* the call sets. A later value of a name wins.
func Environ(env map[string]string, protocol ...string) []string {
	out := make([]string, 0, len(inherited)+len(env)+len(protocol))
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if slices.Contains(inherited, name) || strings.HasPrefix(name, "LC_") {
			out = append(out, kv)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(env)) {
		v := envRef.ReplaceAllStringFunc(env[k], func(ref string) string {
			return os.Getenv(envRef.FindStringSubmatch(ref)[1])
		})
		out = append(out, k+"="+v)
	}
	return append(out, protocol...)
}

// Secrets returns the harness's values that c, or the tools file of one
// of its sub-agents, hands a tool or an MCP server by ${NAME} in an env:
// credentials the harness holds, which the tool may echo back in its
// output, its error or its stderr, and which nothing the run writes or
// prints may repeat (issue 24). Only the values the environment has are
// returned, each once, in the order they are first named.
func (c *Config) Secrets() []string {
	var out []string
	add := func(env map[string]string) {
		for _, k := range slices.Sorted(maps.Keys(env)) {
			for _, m := range envRef.FindAllStringSubmatch(env[k], -1) {
				if v := os.Getenv(m[1]); v != "" && !slices.Contains(out, v) {
					out = append(out, v)
				}
			}
		}
	}
	for _, cc := range c.Configs() {
		for _, e := range cc.Entries {
			add(e.Env)
		}
		for _, s := range cc.MCPServers {
			add(s.Env)
		}
	}
	return out
}
