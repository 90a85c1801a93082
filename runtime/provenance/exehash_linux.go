package provenance

import (
	"fmt"
	"os"
	"syscall"
	"time"
)

// statKey is fi's cache entry name (device and inode), the key that must
// match for the entry to hold (with size and times in nanoseconds), and
// its last change.
func statKey(fi os.FileInfo) (id, key string, changed time.Time, ok bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return "", "", time.Time{}, false
	}
	m, c := time.Unix(st.Mtim.Unix()), time.Unix(st.Ctim.Unix())
	changed = m
	if c.After(m) {
		changed = c
	}
	id = fmt.Sprintf("%x-%x", st.Dev, st.Ino)
	key = fmt.Sprintf("%d %d %d", st.Size, m.UnixNano(), c.UnixNano())
	return id, key, changed, true
}
