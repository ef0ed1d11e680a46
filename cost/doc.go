// Package cost is the money and tokens of one agent run: a cap written
// once, leased to every model call as its output-token limit, with a
// reserve kept for landing and slices carved for sub-agents. It is the
// twin of package budget, which does the same for time (issue 28).
//
// Everything here is pure arithmetic on integers: no clock, no lock, no
// I/O but [Load]'s reading of a file. A run's machine, in process or in a
// Temporal workflow, keeps a [Budget] and asks it before each call, so
// that both hosts grant and refuse by the same rule.
//
// # Money
//
// [Money] counts picodollars in an int64. Costs are summed over hundreds
// of attempts and compared with a cap, so they must add up exactly and
// identically on both hosts; a float would drift. [ParseUSD] reads
// --max-cost's decimal without a float.
//
// # Prices
//
// A [Table] maps model names to a [Price] per token: input, cached input,
// output and reasoning, and the model's most output tokens. [Parse] reads
// LiteLLM's model_prices_and_context_window.json, the file users already
// keep (input_cost_per_token, output_cost_per_token,
// cache_read_input_token_cost, output_cost_per_reasoning_token,
// max_output_tokens or max_tokens; every other field and the
// "sample_spec" entry are ignored). [Builtin] prices the simulated model,
// [SimModel]; [Load] merges a user's file over it, a model's entry
// replacing the built-in one whole. [Table.Lookup] also tries the name
// without its "provider/" prefix. A bad price is an error naming the model
// and the field, all of them at once; a model with no price is an error
// only when a run under a cost cap asks for it, by [Table.Require].
//
// # Usage
//
// [Usage] is an attempt's tokens as the provider reports them, cached
// input within input and reasoning within output. [Price.Cost] prices
// each part at its own rate; [Of] gives the [Amount] (money and tokens)
// to [Budget.Charge] after the attempt.
//
// # Budget
//
// A [Budget] has a cap in money, tokens or both ([Config]; a zero field is
// no cap on that thing, and the zero Budget has none: it counts what it is
// charged and refuses nothing), what has been charged, and a reserve held
// back for the landing call (its p95 cost where known, else
// [DefaultReserve], a tenth of the cap; [Budget.SetReserve] updates it
// as the conversation grows).
//
// # Leases
//
// An attempt's output-token limit is leased from what is left:
//
//	limit = ⌊(cap − charged − reserve − input's cost) / one output token's cost⌋, at most the ceiling
//
// on each capped field, the least of them granted ([Budget.Lease]). The
// input is priced as if none were cached and an output token at the
// dearer of the output and reasoning prices, so the attempt cannot spend
// more than is left unless the provider ignores the limit; a run is over
// its cap by at most what one attempt's usage exceeds its estimate. A
// turn whose expected cost, its input and the kind's p50 output, does not
// fit is refused before it is sent, with a [*RefusedError] that names the
// rule, the cap and what was left. [Budget.LandingLease] may spend the
// reserve. A tool that declares a cost per call is admitted by
// [Budget.LeaseCall] on the same terms.
//
// # Sub-agents
//
// [Budget.Slice] carves a child's budget out of what the parent has left
// above its reserve and what it keeps to use the answer, never a fresh
// one, and charges it to the parent at once, so that slices side by side
// cannot overspend; [Budget.Settle] replaces that charge with what the
// child really spent.
//
// # The ladder
//
// [Budget.Spent] is the fraction of the further-spent cap, for the ladder
// to follow whichever budget, time or cost, is further spent;
// [Budget.MustLand] reports that no work is left to pay for.
//
// # Errors
//
// A refusal is a [*RefusedError], matching [ErrRefused] and, as every
// refusal before I/O does, [budget.ErrRefused]; ask for [ErrRefused] to
// label a run's cause "cost". Bad price tables match [ErrBadPrices], a
// model without a price under a cap [ErrNoPrice], a bad [Config] is a
// [*ConfigError]. The parsers never panic on any input.
package cost
