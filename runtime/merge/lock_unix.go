//go:build unix

package merge

import (
	"fmt"
	"os"
	"syscall"
)

// Lock takes an exclusive lock on path (created if needed), waiting for it:
// the last shards of a job array may finish together and both try to merge.
// The lock goes away with the process, even on kill -9.
func Lock(path string) (unlock func(), err error) {
	unlock, err = flock(path, syscall.LOCK_EX)
	if err != nil {
		return nil, fmt.Errorf("merge lock: %w", err)
	}
	return unlock, nil
}

// tryLock takes an exclusive lock on path (created if needed) without
// waiting. ok is false when another open file holds it, or when it cannot
// be taken at all; a lock held by a process that died is free again.
func tryLock(path string) (unlock func(), ok bool) {
	unlock, err := flock(path, syscall.LOCK_EX|syscall.LOCK_NB)
	return unlock, err == nil
}

// flock opens path and locks it as how says (syscall.Flock's flags).
func flock(path string, how int) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), how); err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return func() {
		syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
		f.Close()
	}, nil
}
