//go:build unix

package everything

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The server itself is driven by interop/mcp; these cover how this package
// decides what is installed and what to run, on fixtures.

func TestStaleModulesNamesAPackageNotAsPinned(t *testing.T) {
	lock := `{"packages":{
		"": {"name": "x"},
		"node_modules/@modelcontextprotocol/server-everything": {"version": "2026.8.31"},
		"node_modules/a/node_modules/b": {"version": "1.0.0"}}}`
	cases := []struct {
		name      string
		lock      string
		installed map[string]string // path under node_modules → version
		want      string            // "" fresh; else a part of the answer
		wantErr   bool
	}{
		{name: "as pinned", lock: lock,
			installed: map[string]string{"@modelcontextprotocol/server-everything": "2026.8.31", "a/node_modules/b": "1.0.0"}},
		{name: "missing", lock: lock,
			installed: map[string]string{"@modelcontextprotocol/server-everything": "2026.8.31"},
			want:      "node_modules/a/node_modules/b is not installed at 1.0.0"},
		{name: "another version", lock: lock,
			installed: map[string]string{"@modelcontextprotocol/server-everything": "2026.8.18", "a/node_modules/b": "1.0.0"},
			want:      "server-everything is not installed at 2026.8.31"},
		{name: "nothing installed", lock: lock, want: "is not installed at"},
		{name: "lock without the server", lock: `{"packages":{"node_modules/a":{"version":"1.0.0"}}}`, wantErr: true},
		{name: "broken lock", lock: `{`, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "package-lock.json"), tc.lock)
			for path, version := range tc.installed {
				write(t, filepath.Join(dir, "node_modules", path, "package.json"), `{"version":"`+version+`"}`)
			}
			got, err := staleModules(dir)
			if (err != nil) != tc.wantErr {
				t.Fatalf("staleModules: %q, %v; want an error: %v", got, err, tc.wantErr)
			}
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("staleModules = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestBinIsTheScriptNpxRuns(t *testing.T) {
	cases := []struct {
		name, bin, want string // want "": an error
	}{
		{"a map of one", `{"mcp-server-everything": "dist/index.js"}`, "dist/index.js"},
		{"a path", `"dist/main.js"`, "dist/main.js"},
		{"a map of two", `{"a": "a.js", "b": "b.js"}`, ""},
		{"none", `null`, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			pkgDir := filepath.Join(dir, "node_modules", "@modelcontextprotocol", "server-everything")
			write(t, filepath.Join(pkgDir, "package.json"), `{"bin": `+tc.bin+`}`)
			got, err := bin(dir)
			if tc.want == "" {
				if err == nil {
					t.Errorf("bin = %q, want an error", got)
				}
				return
			}
			if want := filepath.Join(pkgDir, tc.want); err != nil || got != want {
				t.Errorf("bin = %q, %v; want %q", got, err, want)
			}
		})
	}
}

func TestInteropDirIsFoundFromTheModuleRoot(t *testing.T) {
	dir, err := interopDir()
	if err != nil {
		t.Fatal(err)
	}
	if !filepath.IsAbs(dir) || !strings.HasSuffix(dir, filepath.Join("interop", "mcp")) {
		t.Errorf("interopDir = %q, want an absolute path ending in interop/mcp", dir)
	}
	for _, name := range []string{"package.json", "package-lock.json", "loopback.cjs"} {
		if _, err := os.Stat(filepath.Join(dir, name)); err != nil {
			t.Error(err)
		}
	}
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
