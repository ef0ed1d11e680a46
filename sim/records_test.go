package sim

import (
	"encoding/json"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// heapAfterGC is the heap in use once everything unreachable is freed.
func heapAfterGC() uint64 {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

func TestAServerKeepsTheLastMaxRecordsAndItsHeapStopsGrowing(t *testing.T) {
	srv := NewPipeServer(&Scenario{Rules: []Rule{{Times: 1, Status: 500}}})
	defer srv.Close()
	// Each conversation is its own 4 KiB, so a server that kept them, or
	// anything keyed by them, would grow by that much a request.
	const size = 4 << 10
	send := func(i int) {
		body, _ := json.Marshal(map[string]any{"model": "sim", "messages": []map[string]string{
			{"role": "user", "content": fmt.Sprintf("task %d %s", i, strings.Repeat("x", size))},
		}})
		res, err := srv.Client().Post(srv.URL+"/chat/completions", "application/json", strings.NewReader(string(body)))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
	}
	const n = MaxRecords
	for i := range n {
		send(i)
	}
	full := heapAfterGC()
	for i := n; i < 5*n; i++ {
		send(i)
	}
	later := heapAfterGC()

	reqs := srv.Requests()
	if len(reqs) != n || srv.Received() != 5*n {
		t.Fatalf("holds %d records of %d received, want %d of %d", len(reqs), srv.Received(), n, 5*n)
	}
	for i, r := range reqs {
		if want := 4*n + 1 + i; r.Index != want || r.Completion != want {
			t.Fatalf("record %d is request %d (completion %d), want the last ones in order from %d", i, r.Index, r.Completion, 4*n+1)
		}
	}
	if want := fmt.Sprintf("task %d ", 5*n-1); !strings.HasPrefix(reqs[n-1].Messages[0].Content, want) {
		t.Errorf("last record's conversation starts %.20q, want %q", reqs[n-1].Messages[0].Content, want)
	}
	// Keeping the 4n later conversations would take 4n·size (16 MiB);
	// allow a quarter of that for noise.
	if grew := int64(later) - int64(full); grew > n*size {
		t.Errorf("heap grew %d KiB over %d more requests, want it flat (at most %d KiB)", grew>>10, 4*n, n*size>>10)
	}
}

func TestRequestsComeInArrivalOrderAcrossTheRing(t *testing.T) {
	cases := []struct {
		name      string
		received  int
		wantFirst int
	}{
		{"none", 0, 0},
		{"fewer than the bound", 3, 1},
		{"exactly the bound", MaxRecords, 1},
		{"one more than the bound", MaxRecords + 1, 2},
		{"past the bound twice and a half", 2*MaxRecords + MaxRecords/2, MaxRecords + MaxRecords/2 + 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// Driven through admit: the order is the ring's, not HTTP's.
			h := newHandler(nil, true, nil, nil)
			for range tc.received {
				h.admit(&Request{}, false, false)
			}
			reqs := h.records()
			if len(reqs) != min(tc.received, MaxRecords) || h.received() != tc.received {
				t.Fatalf("%d records of %d received, want %d of %d", len(reqs), h.received(), min(tc.received, MaxRecords), tc.received)
			}
			for i, r := range reqs {
				if r.Index != tc.wantFirst+i {
					t.Fatalf("record %d is request %d, want %d", i, r.Index, tc.wantFirst+i)
				}
			}
		})
	}
}

func TestRequestsReturnsACopyTheServerDoesNotChange(t *testing.T) {
	h := newHandler(nil, true, nil, nil)
	for range MaxRecords {
		h.admit(&Request{}, false, false)
	}
	before := h.records()
	h.admit(&Request{}, false, false)
	if before[0].Index != 1 || before[MaxRecords-1].Index != MaxRecords {
		t.Errorf("an earlier copy changed when the ring moved on: first %d, last %d", before[0].Index, before[MaxRecords-1].Index)
	}
}
