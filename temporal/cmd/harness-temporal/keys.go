package main

import (
	"context"
	"strings"
	"time"

	"github.com/glidepath/glidepath/temporal/durable"
	enumspb "go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
)

// keyMark precedes the ID of a worker's --encrypt-key in its identity
// (codec.AESGCM.KeyID, which says nothing of the key), so that a run or a
// worker with another key is refused before it starts: a run whose
// workers have another key would be carried out, its task in clear and
// its writes made, and its result then unreadable.
const keyMark = "@key="

// noKey is the key ID of a process without --encrypt-key.
const noKey = "none"

// checkKeys returns a usage error when a live worker of queue encrypts
// with another key than own, or with none when own is one (or one when
// own is none). A worker that states no key (another build) is not
// counted: CheckQueue refuses those.
func checkKeys(ctx context.Context, cl client.Client, queue, own string) error {
	ctx, cancel := context.WithTimeout(ctx, checkWait)
	defer cancel()
	resp, err := cl.DescribeTaskQueue(ctx, queue, enumspb.TASK_QUEUE_TYPE_WORKFLOW)
	if err != nil {
		// A server that will not say (a key without that permission) is
		// not a reason to refuse: a payload under another key still fails
		// naming both keys, only later.
		return nil
	}
	for _, p := range resp.GetPollers() {
		_, theirs, ok := strings.Cut(p.GetIdentity(), keyMark)
		if !ok || theirs == own || time.Since(p.GetLastAccessTime().AsTime()) > durable.LivePoller {
			continue
		}
		return usage("task queue %q is served by %s, whose --encrypt-key is %s; this process's is %s. Every worker and run of a task queue "+
			"must share one key (or none): give this one theirs", queue, p.GetIdentity(), keyLabel(theirs), keyLabel(own))
	}
	return nil
}

// checkWait bounds checkKeys: a server that accepts and never answers
// must not hold a start.
const checkWait = 5 * time.Second

// keyLabel says a key ID as a person reads it.
func keyLabel(id string) string {
	if id == noKey {
		return "none"
	}
	return "key " + id
}
