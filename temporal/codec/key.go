package codec

import (
	"encoding/hex"
	"fmt"
	"os"
	"strings"
)

// ReadKeyFile reads an [AESGCM] key from path: [KeySize] bytes written as
// hex (64 characters; `openssl rand -hex 32` makes one), with spaces and
// newlines around them ignored. A file that others may read is refused,
// as ssh refuses such a private key: the key reads every run's history.
func ReadKeyFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w file: %v", ErrKey, err)
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("%w file %s: others may read it (mode %04o); chmod 600 %s", ErrKey, path, fi.Mode().Perm(), path)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w file: %v", ErrKey, err)
	}
	text := strings.TrimSpace(string(data))
	key, err := hex.DecodeString(text)
	if err != nil || len(key) != KeySize {
		return nil, fmt.Errorf("%w file %s: want %d hex characters (%d bytes; make one with: openssl rand -hex %d > %s), have %d characters",
			ErrKey, path, 2*KeySize, KeySize, KeySize, path, len(text))
	}
	return key, nil
}
