package lines_test

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/glidepath/glidepath/internal/lines"
)

func TestEachLineIsPassedWithItsNumberAndWhatIsWrongWithIt(t *testing.T) {
	const max = 8
	cases := []struct {
		name string
		in   string
		want []string // n:line, with [unended] or [long]
	}{
		{"lines end in LF or CRLF", "a\nb\r\n", []string{"1:a", "2:b"}},
		{"blank lines are passed and counted", "\n\na\n", []string{"1:", "2:", "3:a"}},
		{"a last line without a newline is unended", "a\nbc", []string{"1:a", "2:bc[unended]"}},
		{"a line of max bytes is read, its CRLF not counted", "12345678\r\nx\n", []string{"1:12345678", "2:x"}},
		{"a longer line is passed empty as too long, and the next is read", "123456789\nx\n", []string{"1:[long]", "2:x"}},
		{"a last line too long and unended", "x\n123456789", []string{"1:x", "2:[unended][long]"}},
		{"nothing has no lines", "", nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			err := lines.Each(strings.NewReader(tc.in), max, func(n int, line []byte, unended, tooLong bool) {
				s := fmt.Sprintf("%d:%s", n, line)
				if unended {
					s += "[unended]"
				}
				if tooLong {
					s += "[long]"
				}
				got = append(got, s)
			})
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestAReadErrorEndsEachAfterTheLinesBeforeIt(t *testing.T) {
	boom := errors.New("disk on fire")
	var got []string
	err := lines.Each(io.MultiReader(strings.NewReader("a\n"), iotest.ErrReader(boom)), 8, func(n int, line []byte, _, _ bool) {
		got = append(got, string(line))
	})
	if err != boom || !slices.Equal(got, []string{"a"}) {
		t.Errorf("Each = %v after %q, want %v after [a]", err, got, boom)
	}
}

func TestALineLongerThanTheReadBufferIsWhole(t *testing.T) {
	long := strings.Repeat("x", 200<<10)
	var got []int
	err := lines.Each(strings.NewReader(long+"\ny\n"), len(long), func(n int, line []byte, _, tooLong bool) {
		if tooLong {
			t.Errorf("line %d too long", n)
		}
		got = append(got, len(line))
	})
	if err != nil || !slices.Equal(got, []int{len(long), 1}) {
		t.Errorf("Each = %v, line lengths %v; want %d and 1", err, got, len(long))
	}
}
