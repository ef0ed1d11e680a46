package plan_test

import (
	"fmt"
	"time"

	"github.com/glidepath/glidepath/plan"
)

// An embedder computes the worst case of its own configuration: twenty
// steps, a 60s model ceiling with openai-go's two retries left in, and one
// search call per step with a 30s ceiling and no retries.
func ExampleMake() {
	p, err := plan.Make(plan.Config{
		Budget: new(2 * time.Minute),
		Steps:  new(20),
		Model:  plan.Limits{Ceiling: new(60 * time.Second)},
		Tools:  []plan.Tool{{Name: "search", Limits: plan.Limits{Ceiling: new(30 * time.Second), Retries: new(0)}}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("per step:", p.PerStep)
	fmt.Println("total:", p.Total)
	fmt.Println(p.Verdict())
	// Output:
	// per step: 3m31.5s
	// total: 1h10m30s
	// unbudgeted worst case is 1h10m30s, 35.2× the 2m0s budget; under Glidepath the run lands by 2m0s
}

// A value that cannot be used is reported with where it was given.
func ExampleMake_badValue() {
	_, err := plan.Make(plan.Config{
		Steps:  new(0),
		Origin: map[string]string{"steps": "--max-steps"},
	})
	fmt.Println(err)
	// Output:
	// --max-steps 0: must be positive
}
