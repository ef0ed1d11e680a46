package cost

// A Price is what one model charges per token, as a price table lists it.
// Every field is used as it is: [Parse] fills CacheRead and Reasoning from
// Input and Output when a file does not list them, so a Price written by
// hand should set them too.
type Price struct {
	Model     string // the name the table knows the model by
	Input     Money  // per input token not read from the provider's cache
	CacheRead Money  // per input token read from the provider's cache
	Output    Money  // per output token that is not reasoning
	Reasoning Money  // per reasoning token
	MaxOutput int64  // the most output tokens the model gives per request; 0: not known
}

// Usage is what one attempt consumed, in tokens, as the provider reports
// it. It is this package's own type rather than
// [github.com/glidepath/glidepath/trace.Usage], which has input, output
// and total only: cost needs the cached and reasoning parts, which are
// priced apart. Cached is part of Input and Reasoning part of
// Output, as in the OpenAI APIs (prompt_tokens_details.cached_tokens,
// completion_tokens_details.reasoning_tokens).
type Usage struct {
	Input     int64 // input (prompt) tokens, Cached included
	Cached    int64 // of Input, tokens read from the provider's cache
	Output    int64 // output (completion) tokens, Reasoning included
	Reasoning int64 // of Output, reasoning tokens
}

// Amount is a quantity of both things a cap may limit: money and tokens.
// In a [Budget] a zero field of the cap means no cap on that thing.
type Amount struct {
	Cost   Money
	Tokens int64
}

// Cost returns what u costs at p. A report that does not add up is read
// so as never to undercharge: a negative count is none, and a part larger
// than its whole (Cached above Input, Reasoning above Output) makes the
// whole that large. A cost too large for [Money] saturates.
func (p Price) Cost(u Usage) Money {
	in, cached := parts(u.Input, u.Cached)
	out, reasoning := parts(u.Output, u.Reasoning)
	c := mulSat(in-cached, int64(p.Input))
	c = addSat(c, mulSat(cached, int64(p.CacheRead)))
	c = addSat(c, mulSat(out-reasoning, int64(p.Output)))
	c = addSat(c, mulSat(reasoning, int64(p.Reasoning)))
	return Money(c)
}

// Of returns the amount u spends at p: its cost and all its tokens, input
// and output. It is what [Budget.Charge] is given after an attempt.
func Of(u Usage, p Price) Amount {
	in, _ := parts(u.Input, u.Cached)
	out, _ := parts(u.Output, u.Reasoning)
	return Amount{Cost: p.Cost(u), Tokens: addSat(in, out)}
}

// parts returns a whole and its part, each at least zero and the whole at
// least the part.
func parts(whole, part int64) (int64, int64) {
	part = max(part, 0)
	return max(whole, part), part
}

// outputRate is the price of one output token when it is not yet known
// whether it will be reasoning: the dearer of the two, so that a lease
// never grants more tokens than the money left can pay for.
func (p Price) outputRate() Money { return max(p.Output, p.Reasoning) }
