package sandbox

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// The uid pool (used as root only): uids held at once differ; a released
// one is handed out again; one whose lock another holder has (another
// engine, another nel-run) is skipped; a lock folder others may write is
// refused.
func TestApptainerUIDPool(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("the uid pool serves nel-run as root; its folder must be root's")
	}
	dir := filepath.Join(t.TempDir(), "uids")
	p := &uidPool{dir: dir}
	a, err := p.get()
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.get()
	if err != nil {
		t.Fatal(err)
	}
	// Not necessarily the range's first two: a container of another
	// test binary may run as one of them, which the pool skips.
	if a.uid == b.uid || a.uid < sandboxUIDBase || b.uid >= sandboxUIDBase+sandboxUIDCount {
		t.Errorf("uids %d and %d, want two of the range", a.uid, b.uid)
	}
	a.release()
	c, err := p.get()
	if err != nil {
		t.Fatal(err)
	}
	if c.uid != a.uid {
		t.Errorf("after a release got %d, want %d again", c.uid, a.uid)
	}
	// Another holder of the next uid: an open file description of its
	// own, as another process has.
	other := max(a.uid, b.uid) + 1
	f, err := os.OpenFile(filepath.Join(dir, strconv.Itoa(other)), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		t.Fatal(err)
	}
	d, err := p.get()
	if err != nil {
		t.Fatal(err)
	}
	if d.uid <= other {
		t.Errorf("got %d, want one above %d, which another holds", d.uid, other)
	}
	for _, u := range []*heldUID{b, c, d} {
		u.release()
	}
	if err := os.Chmod(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if u, err := p.get(); err == nil || !strings.Contains(err.Error(), "no one else may write") {
		t.Errorf("a folder all may write: uid %v, error %v; want a refusal", u, err)
	}
}
