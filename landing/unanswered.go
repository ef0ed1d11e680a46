package landing

import (
	"fmt"
	"time"

	"github.com/glidepath/glidepath/budget"
	"github.com/glidepath/glidepath/trace"
)

// Unanswered says, for the boundary ([Record.Failure]), how a, a model
// attempt of a step (not the landing call), went unanswered when it was
// ended: its server sent nothing of an answer — no status, no chunk, not
// even a keepalive; only keepalives; or chunks of an answer it never
// finished (issue 24). mute reports whether its lease or the quiet clock
// ended it so ([ModelEnd.Mute]); one the caller cancelled is named and
// not mute. An attempt that ended in any other way, or with a status,
// says nothing. Both hosts read their attempt through it (issue 25).
func Unanswered(a trace.Attempt) (words string, mute bool) {
	cut := a.Outcome == trace.GaveUp || a.Outcome == trace.Quiet
	if !(cut || a.Outcome == trace.Cancelled) || a.Status != 0 {
		return "", false
	}
	took := Human(max(a.End.Sub(a.Start), time.Nanosecond))
	switch {
	case a.Chunks > 0 && cut:
		words = "the model's answer was still streaming after " + took + "; it never finished"
	case a.Chunks > 0:
		words = "the model's answer was still streaming after " + took
	case a.Keepalives > 0:
		words = "the model sent only keepalives for " + took
	default:
		words = sentNothing + took
	}
	return words, cut
}

// sentNothing begins the words of [Unanswered] for an attempt whose
// server sent nothing of an answer: no chunk, not even a keepalive.
const sentNothing = "the model sent nothing for "

// RetryAfterWords says, for the boundary ([Record.Failure]), why a run
// gave up on a retry its model's server asked it to wait for: asked is
// the wait (0: one too long to be meant, beyond [budget.MaxRetryAfter]),
// left the time the run had before its reserve, which a retry's work
// lease never spends. Both hosts say it so (issue 25).
func RetryAfterWords(asked, left time.Duration) string {
	wait := Human(asked)
	if asked <= 0 {
		wait = fmt.Sprintf("longer than %d days", budget.MaxRetryAfter/(24*time.Hour))
	}
	return fmt.Sprintf("the model's server asked to wait %s before a retry, and the run had only %s left before its reserve",
		wait, Human(max(left, 0)))
}

// GaveUpWords says, for the boundary ([Record.Failure]), why a run gave
// up on its model after failed, the model's failure for a person, when
// the wait before a retry would have outlasted left, the time before the
// reserve. Both hosts say it so (issue 25).
func GaveUpWords(failed string, left time.Duration) string {
	return fmt.Sprintf("the model failed (%s), and the wait before a retry would have outlasted the %s left before the reserve",
		failed, Human(max(left, 0)))
}
