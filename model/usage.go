package model

import (
	"github.com/glidepath/glidepath/trace"
	"github.com/openai/openai-go/v3"
)

// usageOf is the record's usage of what the server reported: the tokens
// in and out and, where it said them, those of the input read from its
// cache and those of the output spent reasoning (issue 28). A Responses
// answer's usage reaches here restated in Chat Completions' shape
// ([gathered.end]), so both APIs are read by this one rule.
func usageOf(u openai.CompletionUsage) trace.Usage {
	return trace.Usage{Input: u.PromptTokens, Output: u.CompletionTokens, Total: u.TotalTokens,
		Cached: u.PromptTokensDetails.CachedTokens, Reasoning: u.CompletionTokensDetails.ReasoningTokens}
}
