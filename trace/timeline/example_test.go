package timeline_test

import (
	"bytes"
	"fmt"
	"os"
	"strings"

	"github.com/glidepath/glidepath/trace"
	"github.com/glidepath/glidepath/trace/timeline"
)

// The page of the demo's first run (make demo): every attempt a bar.
func ExampleWrite() {
	file, err := os.Open("testdata/demo.jsonl")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer file.Close()
	recs, err := trace.ReadRecords(file)
	if err != nil {
		fmt.Println(err)
		return
	}
	var page bytes.Buffer
	if err := timeline.Write(&page, recs, timeline.Options{Sources: []string{"run.jsonl"}}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(strings.Count(page.String(), ` data-attempt="`), "attempts drawn")
	fmt.Println(strings.Contains(page.String(), "Complete in 3.19s of 20s (16%)"))
	// Output:
	// 7 attempts drawn
	// true
}
