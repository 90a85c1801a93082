//go:build !unix

package merge

// Lock is a no-op where flock is not available.
func Lock(path string) (unlock func(), err error) { return func() {}, nil }

// tryLock cannot tell whether another process holds path here: never ok,
// so nothing that might be in use is removed.
func tryLock(path string) (unlock func(), ok bool) { return nil, false }
