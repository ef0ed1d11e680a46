package landing

import "slices"

// MarkUnavailable returns list with tool listed as unavailable for why,
// unless list names it already: a result lists a tool once, with the
// first reason given (SPEC §4), whichever host found it (issue 25).
func MarkUnavailable(list []Unavailable, tool, why string) []Unavailable {
	if slices.ContainsFunc(list, func(u Unavailable) bool { return u.Tool == tool }) {
		return list
	}
	return append(list, Unavailable{Tool: tool, Why: why})
}
