package model

import "time"

// What openai-go does with a request whose options leave its retries and
// timeouts alone, read from openai-go v3.98.0, internal/requestconfig
// (NewRequestConfig, retryDelay, parseRetryAfterHeader); read them again
// when go.mod moves openai-go to another version.
//
// A [Client] turns every one of them off: it passes
// option.WithMaxRetries(0), sets no RequestTimeout and leases each attempt
// from the run's budget instead, since the harness is the one retry layer
// (SPEC §2). They are here, beside the code that turns them off, for
// whatever describes what an unbudgeted openai-go client ships: `harness
// plan` counts them.
const (
	// SDKMaxRetries is NewRequestConfig's MaxRetries: a call makes up to
	// three attempts. Retried are connection errors, 408, 409, 429 and
	// every 5xx, or whatever the server's x-should-retry header says.
	SDKMaxRetries = 2

	// SDKRequestTimeout is the RequestTimeout a request gets: zero, which
	// sets no timeout at all. An attempt lasts until the server answers
	// or the caller's context ends, and http.DefaultClient, the SDK's
	// client, has no Timeout either.
	SDKRequestTimeout time.Duration = 0

	// SDKBackoffBase and SDKBackoffCap bound retryDelay's sleep before
	// retry n (n = 1, 2, …): min(SDKBackoffCap, SDKBackoffBase·2^(n−1)),
	// less a jitter of up to a quarter of it, so that bound is also the
	// longest sleep. SDKBackoffCap is DefaultMaxServerDelay.
	SDKBackoffBase = 500 * time.Millisecond
	SDKBackoffCap  = 8 * time.Second

	// SDKMaxRetryAfter is defaultMaxRetryAfterDelay: a server's
	// Retry-After-Ms or Retry-After up to this long replaces the backoff
	// sleep and is waited out in full; a longer one stops the retries.
	SDKMaxRetryAfter = 2 * time.Minute
)
