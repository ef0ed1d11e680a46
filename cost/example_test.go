package cost_test

import (
	"errors"
	"fmt"

	"github.com/glidepath/glidepath/cost"
)

// A run capped at two cents on a model priced at $2.50 and $10 per million
// input and output tokens leases each attempt's output limit from what is
// left above its reserve, charges what the attempt used, and is refused,
// before sending, the turn it can no longer afford.
func Example() {
	prices, err := cost.Parse([]byte(`{
		"gpt-example": {"input_cost_per_token": 2.5e-06, "output_cost_per_token": 1e-05, "max_output_tokens": 16384}
	}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	price, err := prices.Require("openai/gpt-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	limit, _ := cost.ParseUSD("0.02") // --max-cost 0.02
	b, err := cost.New(cost.Config{Cap: cost.Amount{Cost: limit}})
	if err != nil {
		fmt.Println(err)
		return
	}
	for turn := 1; ; turn++ {
		ask := cost.Ask{Input: 1000 * int64(turn), Ceiling: price.MaxOutput, P50: 200}
		out, err := b.Lease(ask, price)
		if re, ok := errors.AsType[*cost.RefusedError](err); ok {
			fmt.Printf("turn %d: refused (%v)\n  %v\n", turn, re.Rule, err)
			break
		}
		used := cost.Usage{Input: ask.Input, Output: 100}
		b.Charge(cost.Of(used, price))
		fmt.Printf("turn %d: max_completion_tokens %d, spent %v (%.0f%%)\n", turn, out, b.Charged().Cost, 100*b.Spent())
	}
	landing, err := b.LandingLease(cost.Ask{Input: 3000, Ceiling: price.MaxOutput}, price)
	fmt.Println("landing: max_completion_tokens", landing, err, "with the reserve of", b.Reserve().Cost)
	// Output:
	// turn 1: max_completion_tokens 1550, spent $0.0035 (18%)
	// turn 2: max_completion_tokens 950, spent $0.0095 (48%)
	// turn 3: refused (below p50)
	//   cost: refused model: $0.0085 left, below its expected $0.0095 (p50 output)
	// landing: max_completion_tokens 300 <nil> with the reserve of $0.002
}

// A parent with a dollar carves a sub-agent's slice, keeping its reserve
// and what it needs to use the answer; the slice is charged at once, and
// settled to what the child really spent when it ends.
func ExampleBudget_Slice() {
	parent, _ := cost.New(cost.Config{Cap: cost.Amount{Cost: cost.Dollar}}) // reserve: $0.10
	parent.Charge(cost.Amount{Cost: 30 * cost.Cent})

	child, err := parent.Slice(cost.Amount{}, cost.Amount{Cost: 5 * cost.Cent})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("child's cap:", child.Cap().Cost, "parent charged:", parent.Charged().Cost)

	child.Charge(cost.Amount{Cost: 12 * cost.Cent})
	parent.Settle(child)
	fmt.Println("after the child spent $0.12, parent charged:", parent.Charged().Cost)

	_, err = parent.Slice(cost.Amount{}, cost.Amount{Cost: 50 * cost.Cent})
	fmt.Println(err)
	// Output:
	// child's cap: $0.55 parent charged: $0.85
	// after the child spent $0.12, parent charged: $0.42
	// cost: refused agent: $0.48 left, parent keeps $0.50
}
