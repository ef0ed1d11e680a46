package trace_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/glidepath/glidepath/trace"
)

const goodLine = `{"ts":"2025-03-14T15:09:26.535897932Z","run_id":"r","seq":1,"event":"run_start","elapsed_ms":0,"remaining_ms":120000,"phase":"explore","total_ms":120000}`

func TestALineThatIsNotARecordIsAnErrorNamingIt(t *testing.T) {
	without := func(field string) string {
		// The required fields are all followed by a comma in goodLine.
		i := strings.Index(goodLine, `"`+field+`":`)
		j := i + strings.Index(goodLine[i:], ",") + 1
		return goodLine[:i] + goodLine[j:]
	}
	cases := []struct {
		name     string
		trace    string
		wantLine int
		want     string // the error message, exactly
	}{
		{"not JSON", goodLine + "\nnot json\n", 2, "trace: line 2: not JSON: invalid character 'o' in literal null (expecting 'u')"},
		{"cut short", goodLine + "\n" + goodLine[:40], 2, "trace: line 2: not JSON: unexpected end of JSON input"},
		{"two objects on a line", goodLine + goodLine + "\n", 1, "trace: line 1: not JSON: invalid character '{' after top-level value"},
		{"an array", "[1,2]\n", 1, "trace: line 1: a JSON array, not an object"},
		{"a string", `"run_start"` + "\n", 1, "trace: line 1: a JSON string, not an object"},
		{"null", "null\n", 1, "trace: line 1: no ts"},
		{"a field of the wrong type", strings.Replace(goodLine, `"seq":1`, `"seq":"1"`, 1), 1, "trace: line 1: seq is a JSON string, want int64"},
		{"a fraction where an integer belongs", strings.Replace(goodLine, `"elapsed_ms":0`, `"elapsed_ms":0.5`, 1), 1, "trace: line 1: elapsed_ms is a JSON number 0.5, want int64"},
		{"a bad timestamp", strings.Replace(goodLine, `2025-03-14T`, `2025-03-14 `, 1), 1, `trace: line 1: ts: parsing time "2025-03-14 15:09:26.535897932Z" as "2006-01-02T15:04:05Z07:00": cannot parse " 15:09:26.535897932Z" as "T"`},
		{"no ts", without("ts"), 1, "trace: line 1: no ts"},
		{"no run_id", without("run_id"), 1, "trace: line 1: no run_id"},
		{"no seq", without("seq"), 1, "trace: line 1: no seq"},
		{"no event", without("event"), 1, "trace: line 1: no event"},
		{"no elapsed_ms", without("elapsed_ms"), 1, "trace: line 1: no elapsed_ms"},
		{"no remaining_ms", without("remaining_ms"), 1, "trace: line 1: no remaining_ms"},
		{"no phase", without("phase"), 1, "trace: line 1: no phase"},
		{"blank lines count", "\n\n" + goodLine + "\n  \n{}\n", 5, "trace: line 5: no ts"},
		{"a line longer than MaxLine", goodLine + "\n" + strings.Repeat(" ", trace.MaxLine+1) + "\n", 2, "trace: line 2: longer than 1048576 bytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			recs, err := trace.ReadRecords(strings.NewReader(tc.trace))
			if recs != nil {
				t.Errorf("got records %+v beside the error", recs)
			}
			le, ok := errors.AsType[*trace.LineError](err)
			if !ok {
				t.Fatalf("ReadRecords = %v, want a *LineError", err)
			}
			if le.Line != tc.wantLine {
				t.Errorf("line %d, want %d", le.Line, tc.wantLine)
			}
			if got := err.Error(); got != tc.want {
				t.Errorf("error\n%s\nwant\n%s", got, tc.want)
			}
			if !errors.Is(err, trace.ErrBadRecord) {
				t.Errorf("%v does not match ErrBadRecord", err)
			}
		})
	}
}

func TestReadingSkipsBlankLinesAndUnknownFields(t *testing.T) {
	in := "\n" + goodLine + "\r\n\n" + strings.Replace(goodLine, `"seq":1`, `"seq":2,"future":{"x":[1]}`, 1) // CRLF and no final newline
	recs, err := trace.ReadRecords(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 2 || recs[0].Seq != 1 || recs[1].Seq != 2 || recs[1].TotalMs != 120000 {
		t.Errorf("got %+v", recs)
	}
}

func TestALineOfExactlyMaxLineBytesIsRead(t *testing.T) {
	line := goodLine[:len(goodLine)-1] + `,"message":"` + strings.Repeat("x", trace.MaxLine-len(goodLine)-13) + `"}`
	if len(line) != trace.MaxLine {
		t.Fatalf("test line is %d bytes, want %d", len(line), trace.MaxLine)
	}
	recs, err := trace.ReadRecords(strings.NewReader(line + "\n"))
	if err != nil || len(recs) != 1 {
		t.Fatalf("ReadRecords = %d records, %v", len(recs), err)
	}
}

func TestAReadErrorIsReturnedAsItIs(t *testing.T) {
	boom := errors.New("disk on fire")
	_, err := trace.ReadRecords(iotest.ErrReader(boom))
	if err != boom {
		t.Errorf("ReadRecords = %v, want %v", err, boom)
	}
}

func TestAnEmptyTraceHasNoRecords(t *testing.T) {
	recs, err := trace.ReadRecords(strings.NewReader(""))
	if err != nil || len(recs) != 0 {
		t.Errorf("ReadRecords = %v, %v", recs, err)
	}
}

// FuzzReadRecords checks that any input either fails with a *LineError or
// an error of the reader, or reads into records that encode and read back
// as themselves, where their timestamps in UTC are RFC 3339's.
func FuzzReadRecords(f *testing.F) {
	f.Add([]byte(goodLine + "\n"))
	for i, r := range everyKind {
		f.Add(append(trace.AppendJSON(nil, stamp(r, int64(i+1))), '\n'))
	}
	f.Add([]byte(`{"ts":"2025-03-14T15:09:26+02:00","run_id":"\u2028","seq":-1,"event":"x","elapsed_ms":0,"remaining_ms":0,"phase":"","gave_up":true}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		recs, err := trace.ReadRecords(bytes.NewReader(in))
		if err != nil {
			if !errors.Is(err, trace.ErrBadRecord) {
				t.Fatalf("ReadRecords = %v, want a *LineError", err)
			}
			return
		}
		var buf []byte
		for _, r := range recs {
			if y := r.TS.UTC().Year(); y < 0 || y > 9999 {
				return // RFC 3339 has no such year: ts does not survive the trip to UTC
			}
			buf = append(trace.AppendJSON(buf, r), '\n')
		}
		again, err := trace.ReadRecords(bytes.NewReader(buf))
		if err != nil {
			t.Fatalf("re-encoded records do not read: %v\n%s", err, buf)
		}
		if len(again) != len(recs) {
			t.Fatalf("%d records read back, want %d", len(again), len(recs))
		}
		for i := range recs {
			if !again[i].TS.Equal(recs[i].TS) {
				t.Errorf("record %d: ts %v, want %v", i, again[i].TS, recs[i].TS)
			}
			again[i].TS = recs[i].TS
			if again[i] != recs[i] {
				t.Errorf("record %d read back\n%+v\nwant\n%+v", i, again[i], recs[i])
			}
		}
	})
}
