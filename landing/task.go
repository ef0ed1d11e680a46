package landing

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// ErrChildTask is matched by the error of a sub-agent call whose
// arguments name no task ([ChildTask]).
var ErrChildTask = errors.New(`the arguments are not {"task": "…"}`)

// ChildTask reads the task out of the arguments of a call to the
// sub-agent named agent (SPEC §5b: {"task": "…"}), before anything of the
// call starts: arguments that are not that object, or whose task is
// empty or only white space, are the call's failure, with no attempt
// (tool call arguments are checked before any I/O). Both hosts read a
// sub-agent's arguments through it and record a rejected call alike: no
// attempt, its result failed with outcome invalid and the error's words
// (issue 25).
func ChildTask(agent string, args json.RawMessage) (string, error) {
	var a struct {
		Task string `json:"task"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return "", fmt.Errorf("%s: %w: %w", agent, ErrChildTask, err)
	}
	if strings.TrimSpace(a.Task) == "" {
		return "", fmt.Errorf("%s: %w: the task is empty", agent, ErrChildTask)
	}
	return a.Task, nil
}
