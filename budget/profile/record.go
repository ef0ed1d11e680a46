package profile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"
)

// Record merges obs into the profile at path and returns once the merged
// profile is on disk. It drops the observations that are not less than
// [MaxAge] old at now, keeps the bounds ([MaxPerKind], [MaxKinds]) and
// ignores an observation the file already holds (same kind, date and
// duration), so that recording a batch again after an error changes
// nothing. An observation without a kind or a date, or with a negative
// duration, is an error, and nothing is recorded. Recording no
// observations does nothing.
//
// Record creates the file's folder (0700) and the file (0600) if needed.
// It holds an exclusive lock across the read, the merge and the write, so
// that runs recording into one profile at once, in one process or many,
// lose none of each other's observations, and it waits for the lock until
// ctx ends; the lock is held for the few milliseconds a write takes. The
// write is atomic: a crash at any point leaves the old profile or the new
// one, never a mix. A file that is not a profile ([ErrCorrupt]) is kept
// beside it as path + ".corrupt" and replaced.
func Record(ctx context.Context, path string, obs []Observation, now time.Time) error {
	for i, o := range obs {
		if err := o.check(); err != nil {
			return fmt.Errorf("profile: record %s: observation %d (%q): %w", path, i+1, o.Kind, err)
		}
	}
	if len(obs) == 0 {
		return nil
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("profile: record: %w", err)
	}
	unlock, err := lock(ctx, path+".lock")
	if err != nil {
		return fmt.Errorf("profile: record %s: %w", path, err)
	}
	defer unlock()

	if crossProcess {
		removeTemps(path)
	}
	p, err := Load(path)
	if errors.Is(err, ErrCorrupt) {
		// Kept for whoever wants to know what went wrong; the next
		// corrupt file replaces it.
		if err := os.Rename(path, path+".corrupt"); err != nil {
			return fmt.Errorf("profile: record: %w", err)
		}
	} else if err != nil {
		return fmt.Errorf("profile: record %s: %w", path, err)
	}
	if err := writeAtomic(path, p.merge(obs, now).encode()); err != nil {
		return fmt.Errorf("profile: record %s: %w", path, err)
	}
	return nil
}

// tempPrefix starts the names of the temporary files a write renames onto
// path; no reader ever opens them.
func tempPrefix(path string) string { return filepath.Base(path) + ".tmp-" }

// testHookBeforeRename, when set, is called with the name of the written
// and synced temporary file just before it is renamed onto the profile:
// tests end the process there, as a crash would.
var testHookBeforeRename func(tmp string)

// writeAtomic replaces path with data: written to a temporary file in the
// same folder, synced, renamed onto path, and the folder synced, so that a
// crash leaves either the old file or the new one.
func writeAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, tempPrefix(path)+"*") // 0600
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(tmp)
		}
	}()
	if _, err := f.Write(data); err != nil {
		return err
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("sync: %w", err)
	}
	if err := f.Close(); err != nil {
		return err
	}
	if testHookBeforeRename != nil {
		testHookBeforeRename(tmp)
	}
	if err := os.Rename(tmp, path); err != nil {
		return err
	}
	// The new name lives in the folder: sync it too, or a crash could
	// bring back the old profile after Record said the new one was there.
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}

// removeTemps removes the temporary files of writes that a crash cut
// short. Only while holding a lock that other processes honour: otherwise
// one of them could be about to rename its own.
func removeTemps(path string) {
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		return // the write will say what is wrong
	}
	prefix := tempPrefix(path)
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), prefix) && e.Type().IsRegular() {
			os.Remove(filepath.Join(filepath.Dir(path), e.Name()))
		}
	}
}

func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil // Windows cannot sync a folder
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// lockWait is the longest pause between two tries for a lock that another
// writer holds: writers hold it for milliseconds.
const lockWait = 20 * time.Millisecond

// lock takes the exclusive lock of a profile, the advisory lock of the
// file name, which it creates (0600) if needed, waiting for it until ctx
// ends. The lock is on a file of its own, never replaced, rather than on
// the profile: a writer that waited for the profile's lock would hold that
// of a file that the writer before it had just renamed over.
func lock(ctx context.Context, name string) (unlock func(), err error) {
	f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("lock: %w", err)
	}
	wait := time.Millisecond
	for {
		ok, err := tryLock(f)
		if err != nil {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", name, err)
		}
		if ok {
			return func() { unlockFile(f); f.Close() }, nil
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("waiting for the lock %s: %w", name, context.Cause(ctx))
		case <-t.C:
		}
		wait = min(2*wait, lockWait)
	}
}
