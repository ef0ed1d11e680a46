package logs_test

import (
	"errors"
	"testing"

	"github.com/glidepath/glidepath/trace/logs"
)

func TestModeOf(t *testing.T) {
	cases := []struct {
		name     string
		verbose  bool
		format   string
		terminal bool
		want     logs.Mode
		err      error
	}{
		{"without -v, text", false, "auto", true, logs.Text, nil},
		{"-v on a terminal, console lines", true, "auto", true, logs.Console, nil},
		{"-v elsewhere, JSON lines", true, "auto", false, logs.JSON, nil},
		{"-v with console, console lines anywhere", true, "console", false, logs.Console, nil},
		{"console without -v, text", false, "console", true, logs.Text, nil},
		{"json, JSON lines even without -v", false, "json", true, logs.JSON, nil},
		{"another format, an error", true, "yaml", false, logs.Text, logs.ErrFormat},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := logs.ModeOf(tc.verbose, tc.format, tc.terminal)
			if got != tc.want || !errors.Is(err, tc.err) {
				t.Errorf("ModeOf = %v, %v; want %v, %v", got, err, tc.want, tc.err)
			}
		})
	}
}
