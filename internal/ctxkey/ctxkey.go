// Package ctxkey holds the keys of the values Glidepath's contexts carry
// that more than one of its packages reads: a context type of the
// harness's own answers them itself, rather than wrap a context in one of
// context.WithValue's per value (issue 25 item 6).
package ctxkey

// Budget is the key a context carries its run's *budget.Budget under
// (budget.WithBudget, budget.FromContext).
type Budget struct{}
