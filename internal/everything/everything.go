//go:build unix

package everything

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/glidepath/glidepath/internal/nodetest"
)

const (
	// pkg is the npm package that interop/mcp/package.json pins.
	pkg = "@modelcontextprotocol/server-everything"
	// startPatience bounds the HTTP server's start; it takes under a second.
	startPatience = 30 * time.Second
	// listening starts the line loopback.cjs writes once the server listens.
	listening = "loopback: listening on "
)

// Stdio returns what an mcpServers entry needs to start the reference server
// over stdio: the absolute path of node, and the arguments
//
//	--require DIR/loopback.cjs DIR/node_modules/@modelcontextprotocol/server-everything/dist/index.js stdio
//
// with DIR the absolute path of interop/mcp. env holds KEY=VALUE entries to
// add to the inherited environment; the server needs none today, so it is
// empty, but a caller passes it on. Stdio starts nothing: the caller runs
// the command and owns the process.
func Stdio(t testing.TB) (command string, args []string, env []string) {
	t.Helper()
	s := setup(t)
	return s.node, s.args("stdio"), nil
}

// HTTP starts the reference server in its streamable HTTP mode on a free
// port of 127.0.0.1 and returns its MCP endpoint, http://127.0.0.1:PORT/mcp.
// It returns once the endpoint answers. The server runs in a process group
// of its own, which a cleanup registered on t kills (SIGKILL) and waits for;
// if the test failed, the cleanup also logs what the server wrote.
func HTTP(t testing.TB) (url string) {
	t.Helper()
	s := setup(t)
	// The package reads its port from PORT (dist/transports/streamableHttp.js:
	// app.listen(process.env.PORT || 3001)); "0" asks the kernel for a free
	// one, and loopback.cjs reports which.
	cmd := exec.Command(s.node, s.args("streamableHttp")...)
	cmd.Env = append(os.Environ(), "PORT=0")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatalf("everything: %v", err)
	}
	cmd.Stdout, cmd.Stderr = w, w // one pipe, so the log keeps its order
	err = cmd.Start()
	w.Close() // the group holds its own copies; EOF comes when it is gone
	if err != nil {
		r.Close()
		t.Fatalf("everything: starting %s: %v", cmd, err)
	}

	var log output
	addr := make(chan string, 1) // host:port, once
	read := make(chan struct{})  // closed when the pipe is read to its end
	go func() {
		defer close(read)
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			line := sc.Text()
			log.add(line)
			if a, ok := strings.CutPrefix(line, listening); ok {
				select {
				case addr <- a:
				default:
				}
			}
		}
		io.Copy(io.Discard, r) // past a line too long to scan, keep the pipe from filling
	}()
	t.Cleanup(func() {
		// The group's id is the leader's pid (Setpgid with Pgid 0); the
		// minus sign kills every process in it. ESRCH: already gone.
		if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL); err != nil && err != syscall.ESRCH {
			t.Errorf("everything: killing the server's process group %d: %v", cmd.Process.Pid, err)
		}
		cmd.Wait()
		select {
		case <-read:
		case <-time.After(5 * time.Second):
			r.Close() // a process that left the group still holds the pipe
			<-read
		}
		r.Close()
		if t.Failed() {
			t.Logf("everything: %s said:\n%s", pkg, log.String())
		}
	})

	ctx, cancel := context.WithTimeout(t.Context(), startPatience)
	defer cancel()
	select {
	case a := <-addr:
		url = "http://" + a + "/mcp"
	case <-read:
		t.Fatalf("everything: %s ended before it listened:\n%s", pkg, log.String())
	case <-ctx.Done():
		t.Fatalf("everything: %s did not listen within %v:\n%s", pkg, startPatience, log.String())
	}
	answers(ctx, t, url)
	return url
}

// answers checks that the MCP endpoint is there. loopback.cjs writes its
// line once the socket listens, so no poll is needed: one request either
// answers or fails. A GET without a session is refused (400), but only by
// the server's /mcp route: a 404 would mean another path.
func answers(ctx context.Context, t testing.TB, url string) {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatalf("everything: %v", err)
	}
	req.Close = true // keep no idle connection, and no goroutine, behind
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("everything: %s does not answer at %s: %v", pkg, url, err)
	}
	resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		t.Fatalf("everything: %s has no MCP endpoint at %s: %s", pkg, url, resp.Status)
	}
}

// server is how to run the installed package.
type server struct {
	node    string // absolute path of node
	preload string // absolute path of loopback.cjs
	entry   string // absolute path of the package's bin script
}

// args runs mode: "stdio", "sse" or "streamableHttp" (dist/index.js).
func (s server) args(mode string) []string {
	return []string{"--require", s.preload, s.entry, mode}
}

// setup finds node and interop/mcp and makes sure the package is installed
// as pinned.
func setup(t testing.TB) server {
	t.Helper()
	node := nodetest.Need(t, "node", "this test against the MCP reference server")
	dir, err := interopDir()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := staleModules(dir); err != nil {
		t.Fatal(err)
	}
	nodetest.Install(t, dir, "this test against the MCP reference server")
	entry, err := bin(dir)
	if err != nil {
		t.Fatal(err)
	}
	return server{node: node, preload: filepath.Join(dir, "loopback.cjs"), entry: entry}
}

// interopDir returns the absolute path of interop/mcp: the first directory
// holding go.mod, walking up from the working directory, is the module root.
func interopDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("everything: %w", err)
	}
	for d := wd; ; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "go.mod")); err == nil {
			return filepath.Join(d, "interop", "mcp"), nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("everything: no go.mod in %s or above it", wd)
		}
	}
}

// staleModules is [nodetest.Stale] for dir, whose package-lock.json must
// pin the reference server.
func staleModules(dir string) (string, error) {
	var lock struct {
		Packages map[string]json.RawMessage `json:"packages"`
	}
	if err := readJSON(filepath.Join(dir, "package-lock.json"), &lock); err != nil {
		return "", err
	}
	if _, ok := lock.Packages["node_modules/"+pkg]; !ok {
		return "", fmt.Errorf("everything: %s/package-lock.json does not pin %s", dir, pkg)
	}
	return nodetest.Stale(dir)
}

// bin returns the absolute path of the script the installed package names
// as its bin, the one npx would run.
func bin(dir string) (string, error) {
	pkgDir := filepath.Join(dir, "node_modules", filepath.FromSlash(pkg))
	var manifest struct {
		Bin json.RawMessage `json:"bin"` // a path, or a map of command to path
	}
	if err := readJSON(filepath.Join(pkgDir, "package.json"), &manifest); err != nil {
		return "", err
	}
	var script string
	if json.Unmarshal(manifest.Bin, &script) != nil {
		var byName map[string]string
		if json.Unmarshal(manifest.Bin, &byName) == nil && len(byName) == 1 {
			script = slices.Collect(maps.Values(byName))[0] // npx runs the only one
		}
	}
	if script == "" {
		return "", fmt.Errorf("everything: %s names no single bin: %s", pkg, manifest.Bin)
	}
	return filepath.Join(pkgDir, filepath.FromSlash(script)), nil
}

func readJSON(path string, v any) error {
	b, err := os.ReadFile(path)
	if err == nil {
		err = json.Unmarshal(b, v)
	}
	if err != nil {
		return fmt.Errorf("everything: reading %s: %w", path, err)
	}
	return nil
}

// output is what the server wrote, kept for the test's log. It is safe for
// concurrent use.
type output struct {
	mu sync.Mutex // guards b
	b  strings.Builder
}

func (o *output) add(line string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.b.WriteString(line)
	o.b.WriteByte('\n')
}

func (o *output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}
