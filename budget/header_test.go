package budget

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"testing/synctest"
	"time"
)

func TestParseRetryAfterReadsEveryForm(t *testing.T) {
	now := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		header http.Header
		want   time.Duration
		ok     bool
		reason string // non-empty: a *RetryAfterError with this reason
	}{
		{"absent", http.Header{}, 0, false, ""},
		{"nil header", nil, 0, false, ""},
		{"ms integer", http.Header{"Retry-After-Ms": {"200"}}, 200 * time.Millisecond, true, ""},
		{"ms fraction", http.Header{"Retry-After-Ms": {"1.5"}}, 1500 * time.Microsecond, true, ""},
		{"ms zero", http.Header{"Retry-After-Ms": {"0"}}, 0, true, ""},
		{"ms wins over seconds", http.Header{"Retry-After-Ms": {"5"}, "Retry-After": {"9"}}, 5 * time.Millisecond, true, ""},
		{"delta-seconds", http.Header{"Retry-After": {"120"}}, 2 * time.Minute, true, ""},
		{"delta-seconds with spaces", http.Header{"Retry-After": {" 3 "}}, 3 * time.Second, true, ""},
		{"delta-seconds fraction", http.Header{"Retry-After": {"0.25"}}, 250 * time.Millisecond, true, ""},
		{"IMF-fixdate", http.Header{"Retry-After": {"Sun, 29 Nov 2026 12:00:30 GMT"}}, 30 * time.Second, true, ""},
		{"RFC 850 date", http.Header{"Retry-After": {"Sunday, 29-Nov-26 12:01:00 GMT"}}, time.Minute, true, ""},
		{"asctime date", http.Header{"Retry-After": {"Sun Nov 29 12:00:05 2026"}}, 5 * time.Second, true, ""},
		{"date in the past", http.Header{"Retry-After": {"Sun, 29 Nov 2026 11:00:00 GMT"}}, 0, true, ""},
		{"negative seconds", http.Header{"Retry-After": {"-1"}}, 0, false, "negative"},
		{"negative ms", http.Header{"Retry-After-Ms": {"-200"}}, 0, false, "negative"},
		{"NaN", http.Header{"Retry-After": {"NaN"}}, 0, false, "neither delta-seconds nor an HTTP-date"},
		{"NaN ms", http.Header{"Retry-After-Ms": {"NaN"}}, 0, false, "not a non-negative decimal number"},
		{"Inf ms", http.Header{"Retry-After-Ms": {"+Inf"}}, 0, false, "not a non-negative decimal number"},
		{"exponent", http.Header{"Retry-After": {"1e3"}}, 0, false, "not a non-negative decimal number"},
		{"hex", http.Header{"Retry-After": {"0x10"}}, 0, false, "not a non-negative decimal number"},
		{"trailing dot", http.Header{"Retry-After": {"1."}}, 0, false, "not a non-negative decimal number"},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0, false, "neither delta-seconds nor an HTTP-date"},
		{"blank", http.Header{"Retry-After": {"   "}}, 0, false, "neither delta-seconds nor an HTTP-date"},
		{"absurd seconds", http.Header{"Retry-After": {"99999999999999999999999"}}, 0, false, tooLarge},
		{"past a week", http.Header{"Retry-After": {"604801"}}, 0, false, tooLarge},
		{"a week", http.Header{"Retry-After": {"604800"}}, MaxRetryAfter, true, ""},
		{"absurd date", http.Header{"Retry-After": {"Fri, 01 Jan 2100 00:00:00 GMT"}}, 0, false, tooLarge},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d, ok, err := ParseRetryAfter(tc.header, now)
			if d != tc.want || ok != tc.ok {
				t.Errorf("= %v, %v, %v; want %v, %v", d, ok, err, tc.want, tc.ok)
			}
			if tc.reason == "" {
				if err != nil {
					t.Errorf("unexpected error %v", err)
				}
				return
			}
			re, isRA := errors.AsType[*RetryAfterError](err)
			if !isRA || !errors.Is(err, ErrBadRetryAfter) || re.Reason != tc.reason {
				t.Errorf("error %v, want reason %q", err, tc.reason)
			}
		})
	}
}

func TestRetryAfterErrorTruncatesHugeValues(t *testing.T) {
	_, _, err := ParseRetryAfter(http.Header{"Retry-After": {strings.Repeat("x", 10000)}}, time.Now())
	if re, _ := errors.AsType[*RetryAfterError](err); re == nil || len(re.Value) != 64 {
		t.Errorf("error %v keeps %d bytes of the value, want 64", err, len(re.Value))
	}
}

func TestParseRemainingAcceptsOnlyNonNegativeIntegers(t *testing.T) {
	cases := []struct {
		in     string
		want   time.Duration
		reason string
	}{
		{"750", 750 * time.Millisecond, ""},
		{"0", 0, ""},
		{" 42 ", 42 * time.Millisecond, ""},
		{"007", 7 * time.Millisecond, ""},
		{"31536000000", MaxHeader, ""},
		{"31536000001", 0, "larger than a year"},
		{"9223372036854775808", 0, "larger than a year"},
		{"", 0, "empty"},
		{"-5", 0, "negative"},
		{"+5", 0, "not an integer"},
		{"1.5", 0, "not an integer"},
		{"1e3", 0, "not an integer"},
		{"NaN", 0, "not an integer"},
		{"12ms", 0, "not an integer"},
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			d, err := ParseRemaining(tc.in)
			if d != tc.want {
				t.Errorf("ParseRemaining(%q) = %v, want %v", tc.in, d, tc.want)
			}
			if tc.reason == "" {
				if err != nil {
					t.Errorf("unexpected error %v", err)
				}
				return
			}
			he, ok := errors.AsType[*HeaderError](err)
			if !ok || !errors.Is(err, ErrBadHeader) || he.Reason != tc.reason {
				t.Errorf("error %v, want reason %q", err, tc.reason)
			}
		})
	}
}

func TestFormatRemainingRoundsDownToWholeMilliseconds(t *testing.T) {
	cases := map[time.Duration]string{
		750 * time.Millisecond:          "750",
		1999 * time.Microsecond:         "1",
		time.Microsecond:                "0",
		-time.Second:                    "0",
		2*time.Minute + time.Nanosecond: "120000",
	}
	for d, want := range cases {
		if got := FormatRemaining(d); got != want {
			t.Errorf("FormatRemaining(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestReceiveTurnsTheHeaderIntoALocalDeadline(t *testing.T) {
	cases := []struct {
		name   string
		header http.Header
		limit  time.Duration
		wantAt time.Duration // 0: no deadline
		cause  error
	}{
		{"the caller's budget", http.Header{Header: {"750"}}, 10 * time.Second, 750 * time.Millisecond, ErrDeadline},
		{"clamped to the receiver's limit", http.Header{Header: {"3600000"}}, 30 * time.Second, 30 * time.Second, ErrLeaseExpired},
		{"a caller cannot extend the limit at the boundary", http.Header{Header: {"30001"}}, 30 * time.Second, 30 * time.Second, ErrLeaseExpired},
		{"no header: the limit", http.Header{}, 5 * time.Second, 5 * time.Second, ErrLeaseExpired},
		{"no limit: the header", http.Header{Header: {"2000"}}, 0, 2 * time.Second, ErrDeadline},
		{"zero ms ends at once", http.Header{Header: {"0"}}, time.Second, 0, ErrDeadline},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				start := time.Now()
				ctx, cancel, err := Receive(t.Context(), tc.header, tc.limit)
				if err != nil {
					t.Fatal(err)
				}
				defer cancel()
				<-ctx.Done()
				if got := time.Since(start); got != tc.wantAt {
					t.Errorf("ended after %v, want %v", got, tc.wantAt)
				}
				if !errors.Is(context.Cause(ctx), tc.cause) {
					t.Errorf("cause %v, want %v", context.Cause(ctx), tc.cause)
				}
			})
		})
	}
}

func TestReceiveWithoutHeaderOrLimitHasNoDeadline(t *testing.T) {
	ctx, cancel, err := Receive(context.Background(), http.Header{}, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer cancel()
	if _, ok := ctx.Deadline(); ok {
		t.Error("a deadline appeared from nowhere")
	}
}

func TestReceiveRejectsMalformedValues(t *testing.T) {
	for _, h := range []http.Header{
		{Header: {"-1"}},
		{Header: {"abc"}},
		{Header: {""}},
		{Header: {"99999999999999999999"}},
		{Header: {"5", "6"}},
	} {
		ctx, cancel, err := Receive(context.Background(), h, time.Second)
		if !errors.Is(err, ErrBadHeader) || ctx != nil || cancel != nil {
			t.Errorf("Receive(%v) = %v, %v; want ErrBadHeader and no context", h, ctx, err)
		}
	}
}

func TestSliceCarvesTheChildFromTheParentsAvailableTime(t *testing.T) {
	// Parent: 10s budget, 2.5s reserve, 50ms floor; 7.5s available at the start.
	cases := []struct {
		name      string
		want      time.Duration
		keep      time.Duration
		wantTotal time.Duration
		rule      Rule
	}{
		{"asks less than is available", 2 * time.Second, time.Second, 2 * time.Second, 0},
		{"asks more: gets available − keep", time.Minute, 2 * time.Second, 5500 * time.Millisecond, 0},
		{"asks nothing: gets all it may", 0, 500 * time.Millisecond, 7 * time.Second, 0},
		{"the parent keeps too much", time.Second, 7460 * time.Millisecond, 0, ParentKeep},
		{"a slice no larger than the floor", 40 * time.Millisecond, 0, 0, BelowFloor},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				parent := mustNew(t, Config{Total: 10 * time.Second})
				child, err := parent.Slice(tc.want, tc.keep)
				if tc.rule != 0 {
					re, ok := errors.AsType[*RefusedError](err)
					if !ok || re.Rule != tc.rule || !errors.Is(err, ErrRefused) {
						t.Fatalf("Slice = %v, %v; want refusal %v", child, err, tc.rule)
					}
					return
				}
				if err != nil {
					t.Fatal(err)
				}
				if child.Total() != tc.wantTotal {
					t.Errorf("child total %v, want %v", child.Total(), tc.wantTotal)
				}
				limit := parent.Deadline().Add(-parent.Reserve() - tc.keep)
				if child.Deadline().After(limit) {
					t.Errorf("child deadline %v passes parent's D − R − keep %v", child.Deadline(), limit)
				}
				if child.Reserve() != DefaultReserve(child.Total()) || child.Floor() != parent.Floor() || child.Estimates() != parent.Estimates() {
					t.Errorf("child reserve %v floor %v shares estimates %v", child.Reserve(), child.Floor(), child.Estimates() == parent.Estimates())
				}
			})
		})
	}
}

func TestSliceIsRefusedInsideTheParentsReserve(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent := mustNew(t, Config{Total: 10 * time.Second})
		time.Sleep(8 * time.Second)
		if _, err := parent.Slice(time.Second, 0); !errors.Is(err, ErrRefused) {
			t.Errorf("Slice inside the reserve = %v, want a refusal", err)
		}
	})
}

func TestASliceLeaseIsTheChildsWholeBudgetAndEndsWithIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		parent := mustNew(t, Config{Total: 10 * time.Second})
		k := parent.Estimates().Kind("agent:researcher")
		k.Declare(9*time.Second, 9*time.Second) // a p50 above the slice does not refuse it
		l, err := parent.SliceLease(k, 3*time.Second, time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if l.Granted != 3*time.Second || !l.Capped || l.Landing {
			t.Errorf("lease %+v, want 3s capped by what the child asked", l)
		}
		time.Sleep(time.Second) // the child starts a second after its lease: that second is its own spent
		child := parent.Child(l)
		if !child.Deadline().Equal(l.Deadline) || child.Total() != 3*time.Second || child.Spent() != time.Second ||
			child.Reserve() != DefaultReserve(3*time.Second) {
			t.Errorf("child ends %v (lease %v), total %v, spent %v, reserve %v", child.Deadline(), l.Deadline, child.Total(), child.Spent(), child.Reserve())
		}
		_, err = parent.SliceLease(k, 0, 7*time.Second) // 6s available now, less than keep and floor
		if re, ok := errors.AsType[*RefusedError](err); !ok || re.Rule != ParentKeep || re.Step != "agent:researcher" {
			t.Errorf("SliceLease keeping 7s of 6s = %v, want a parent keep refusal of agent:researcher", err)
		}
	})
}
