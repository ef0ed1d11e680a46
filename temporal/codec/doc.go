// Package codec keeps what a durable run carries out of Temporal's
// history in clear.
//
// A run's history holds every payload its workflow and activities pass:
// the task, the instructions, each model attempt's whole conversation,
// every tool's arguments and output, idempotency keys, the result and the
// trace. The Temporal server stores them, and anyone who can read the
// namespace reads them. A [converter.PayloadCodec] encodes each payload
// on the client and the worker before it leaves the process, so that the
// server stores only ciphertext; the server never needs to read a
// payload to run a workflow.
//
// [AESGCM] is such a codec: AES-256-GCM, with a fresh nonce per payload
// and the payload's metadata authenticated beside its data, under a key
// that every worker and every client of the namespace share. [Options]
// installs it, and failures' messages and stack traces are encoded too
// (they can quote a tool's output). `harness-temporal worker` and `run`
// take the key from --encrypt-key FILE.
//
// A payload that is not encrypted is decoded as it is, so that runs
// started before encryption was turned on still replay; one encrypted
// under another key is an error that names both keys' IDs, never bytes
// read as something else. What stays in clear is what is not a payload:
// workflow IDs, task queue and activity names, timer durations and the
// event types a history is made of.
package codec
