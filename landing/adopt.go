package landing

// Adopt returns the calls a parent run makes its own from the in_flight of
// a sub-agent's result: the child's orphans, whose outcome nobody knows,
// named agent/tool and asked for at the parent's step. They were journaled
// once, by the child; listed in the parent's record, they keep the parent
// from saying complete while a write of its child may or may not have
// happened (SPEC §5b). Both hosts adopt by this rule (issue 25: on
// Temporal a child's orphan never reached its parent's in_flight). What
// the child cancelled or abandoned is settled, and is not adopted.
func Adopt(step int, agent string, inFlight []InFlight) []Call {
	var calls []Call
	for _, f := range inFlight {
		if f.State != StateOrphaned {
			continue
		}
		calls = append(calls, Call{Step: step, Tool: agent + "/" + f.Tool, Key: f.IdempotencyKey,
			Outcome: Interrupted, State: StateOrphaned})
	}
	return calls
}
