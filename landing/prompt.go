package landing

import (
	"fmt"
	"strings"
	"time"

	"github.com/glidepath/glidepath/budget"
)

// SystemPrompt is what a run tells its model first, before the task: that
// its time is a budget, that a note says at every turn how much is left,
// and that it may be asked to land. Both hosts send it (issue 25).
const SystemPrompt = `You are an agent working on the user's task, with the tools you are offered.
Your time is a budget with a hard deadline. At every turn a system note tells you the time left until the deadline and until landing begins, the phase of the run, and what the phase does not allow. Plan for it: prefer the calls that settle the task soonest, and answer within your budget.
When you have what you need, answer without calling a tool. If the run must stop early, you will be asked to summarize what is established, what is not, and what was in flight.`

// System returns the system message of a run whose own instructions are
// instructions (blank: none): they come first, then [SystemPrompt].
func System(instructions string) string {
	if in := strings.TrimSpace(instructions); in != "" {
		return in + "\n\n" + SystemPrompt
	}
	return SystemPrompt
}

// Prompt returns what the landing call asks of the model: to stop, with the
// run's boundary, and summarize without calling a tool.
func Prompt(boundary string) string {
	return fmt.Sprintf(`The run must stop now. %s
Do not call any tool. Summarize for the user what is established, what is not established, and what was in flight when the run stopped. Say plainly that the answer is partial.`, boundary)
}

// A ModelEnd is how the last model attempt of a run that lands ended, as
// far as [ModelEnd.Call] needs to know. The zero ModelEnd is an attempt
// that answered, or none: the landing call is sent.
type ModelEnd struct {
	// Refused reports whether the model's server refused the run itself
	// (model.Refused: 401, 403 or 404, or it could not be reached).
	Refused bool
	// Mute reports whether the attempt was ended by its lease or the quiet
	// clock before its server sent a status: it sent nothing, only
	// keepalives, or an answer it never finished.
	Mute bool
	// RetryAfter is the wait its server asked for before a retry, when
	// the run gave up rather than wait it out; 0 for none.
	RetryAfter time.Duration
}

// Call reports whether a run that lands sends the landing call to its
// model's server, or the harness summarizes from the run's own record
// (SPEC §3): the one rule both hosts apply (issue 25). It is not sent to a
// server that refused the run, to one that was mute until it was cut (it
// would most likely keep the landing waiting as long: issue 24), nor to
// one that asked for a wait the run could not afford, which would only
// answer the same again (issue 25, item 6).
func (m ModelEnd) Call() bool {
	return !m.Refused && !m.Mute && m.RetryAfter <= 0
}

// RefusedWords says, for a person, why the budget refused a model attempt.
func RefusedWords(re *budget.RefusedError) string {
	switch re.Rule {
	case budget.BelowP50:
		return fmt.Sprintf("its lease would have been %s, below the model's p50 of %s", Human(re.Left), Human(re.Need))
	case budget.ParentKeep:
		return fmt.Sprintf("%s was left, and the parent run keeps %s", Human(re.Left), Human(re.Need))
	}
	return fmt.Sprintf("only %s was left before the reserve (the floor is %s)", Human(max(re.Left, 0)), Human(re.Need))
}

// NoModelTurn is [Record.Doing] for a run whose model turn the budget
// refused before anything was sent: that there was no time for one, and
// why.
func NoModelTurn(re *budget.RefusedError) string {
	return "there was no time for a model turn: " + RefusedWords(re)
}
