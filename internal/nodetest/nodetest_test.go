//go:build unix

package nodetest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStaleNamesAPackageMissingOrOfAnotherVersion(t *testing.T) {
	lock := `{"packages":{"":{"name":"x"},"node_modules/a":{"version":"1.2.3"}}}`
	cases := []struct {
		name      string
		installed string // node_modules/a/package.json; "" for none
		want      string // a part of Stale's answer; "" for none
	}{
		{"as pinned", `{"version":"1.2.3"}`, ""},
		{"another version", `{"version":"1.2.4"}`, "node_modules/a is not installed at 1.2.3"},
		{"missing", "", "node_modules/a is not installed at 1.2.3"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			write(t, filepath.Join(dir, "package-lock.json"), lock)
			if tc.installed != "" {
				write(t, filepath.Join(dir, "node_modules", "a", "package.json"), tc.installed)
			}
			got, err := Stale(dir)
			if err != nil {
				t.Fatal(err)
			}
			if tc.want == "" && got != "" || !strings.Contains(got, tc.want) {
				t.Errorf("Stale = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestStaleReportsALockfileItCannotRead(t *testing.T) {
	dir := t.TempDir()
	write(t, filepath.Join(dir, "package-lock.json"), "{not json")
	if _, err := Stale(dir); err == nil || !strings.Contains(err.Error(), "package-lock.json") {
		t.Errorf("Stale = %v, want an error naming package-lock.json", err)
	}
}

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}
