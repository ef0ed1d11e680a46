package model

import (
	"errors"
	"fmt"
)

// ErrNotAnswer is matched by every [*ReplyError]: the model's reply is
// not a whole answer, and a run that took it for one would present a
// partial result as complete (SPEC §3).
var ErrNotAnswer = errors.New("model: the reply is not a whole answer")

// ReplyError reports a reply the model stopped for a reason other than
// having finished: cut at the token limit (finish reason "length") or
// withheld by a content filter ("content_filter"). It matches
// [ErrNotAnswer].
type ReplyError struct {
	FinishReason string
}

func (e *ReplyError) Error() string {
	switch e.FinishReason {
	case "length":
		return "model: the reply was cut at the token limit (finish reason length)"
	case "content_filter":
		return "model: the reply was withheld by a content filter (finish reason content_filter)"
	}
	return fmt.Sprintf("model: the reply is not a whole answer (finish reason %s)", e.FinishReason)
}

// Is reports whether target is [ErrNotAnswer].
func (e *ReplyError) Is(target error) bool { return target == ErrNotAnswer }

// CheckFinish classifies a reply by its finish reason: a [*ReplyError]
// when the model did not stop on its own ("length", "content_filter"),
// nil otherwise. Other reasons pass, since OpenAI-compatible servers spell
// "stop" in more ways than one, and an empty one is a stream's business
// ([ErrIncomplete]). The harness's own loop and [Client] judge replies
// with it; a loop that calls openai-go itself should too, on
// Choices[0].FinishReason.
func CheckFinish(reason string) error {
	switch reason {
	case "length", "content_filter":
		return &ReplyError{FinishReason: reason}
	}
	return nil
}
