package cancel

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
)

// A Key is an idempotency key. It names one logical call: it is minted once,
// before the call's first attempt, and sent unchanged with every attempt, so
// that a tool that already did the work can answer with what it did instead
// of doing it again. A key minted per attempt would be a new key on every
// retry, which is the double-payment bug wearing a hat (SPEC §5).
type Key string

// KeyPrefix starts every key [NewKey] mints, so that a key found in a log
// or a tool's database can be traced back to Glidepath.
const KeyPrefix = "gp_"

// NewKey mints a key: [KeyPrefix] and 26 lowercase base32 characters from
// crypto/rand, 130 random bits. Two keys never collide in practice, across
// runs and processes alike, with no coordination.
func NewKey() Key {
	// rand.Text is 26 characters of the RFC 4648 base32 alphabet; lowercase
	// reads better in headers and logs and changes nothing else.
	return Key(KeyPrefix + strings.ToLower(rand.Text()))
}

// ArgsSHA256 returns the hex SHA-256 of args as sent, byte for byte, so that
// a journal entry can say which arguments an orphan carried without keeping
// them: they may hold data that does not belong in a state file.
func ArgsSHA256(args json.RawMessage) string {
	sum := sha256.Sum256(args)
	return hex.EncodeToString(sum[:])
}
