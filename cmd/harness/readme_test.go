package main

import (
	"bufio"
	"os"
	"regexp"
	"strings"
	"testing"
)

// The README's commands write their files under bin/, which .gitignore
// keeps out of the checkout: a user who pastes the first harness run
// example is not left with an untracked run.jsonl (issue 24).
func TestTheREADMEsCommandsWriteTheirFilesUnderBin(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	written := regexp.MustCompile(`--(trace|html|journal|profile)[ =](\S+)`)
	inCode, checked := false, 0
	for i, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "```") {
			inCode = !inCode
			continue
		}
		if !inCode {
			continue
		}
		for _, m := range written.FindAllStringSubmatch(line, -1) {
			checked++
			if path := m[2]; !strings.HasPrefix(path, "bin/") && !strings.HasPrefix(path, "../bin/") {
				t.Errorf("README.md:%d: --%s %s writes outside bin/: %s", i+1, m[1], path, line)
			}
		}
	}
	if checked == 0 {
		t.Error("README.md has no command that writes a file: the test reads nothing")
	}
}

// make test's long stretches say what they do as each starts: the race
// run of every package prints nothing for minutes (issue 24).
func TestTheMakefilesLongStretchesSayWhatTheyDo(t *testing.T) {
	f, err := os.Open("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	first := map[string]string{} // target: its first recipe line
	target := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "\t"):
			if _, ok := first[target]; target != "" && !ok {
				first[target] = strings.TrimPrefix(line, "\t")
			}
		case regexp.MustCompile(`^[a-z-]+:`).MatchString(line):
			target = line[:strings.Index(line, ":")]
		default:
			target = ""
		}
	}
	for _, name := range []string{"lint", "test", "temporal-test"} {
		if got := first[name]; !strings.HasPrefix(got, `@echo "== `) {
			t.Errorf("make %s starts with %q, want an @echo that says what it does", name, got)
		}
	}
}
