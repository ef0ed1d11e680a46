package battery_test

import (
	"context"
	"fmt"

	"github.com/glidepath/glidepath/bench/battery"
)

// One cell of the battery: a write whose first request is lost on the
// way, made twice by Glidepath, which asks the tool's status, learns the
// write never arrived and sends it again with the same key.
func ExampleRun() {
	sc, _ := battery.Lookup("lost-write")
	sys, _ := battery.SystemNamed(battery.Glidepath)
	r, err := battery.Run(context.Background(), sc, sys, 2)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s on %s: %d of %d runs labeled, %d writes committed, %d duplicates\n",
		r.Scenario, r.System, r.Labeled, r.Runs, r.Writes, r.Duplicates)
	// Output: lost-write on glidepath: 2 of 2 runs labeled, 2 writes committed, 0 duplicates
}
