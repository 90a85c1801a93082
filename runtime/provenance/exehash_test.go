//go:build linux

package provenance

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// sha256 of "hello\n", as sha256sum prints it.
const helloSum = "sha256:5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"

// The cache holds a settled file's hash: a second look reads the entry,
// not the file (shown by an entry rewritten to another hash, which is
// what comes back while the file is unchanged); a file written again is
// hashed again; a file changed within the last seconds is not kept.
func TestCachedFileSHA256(t *testing.T) {
	dir, cache := t.TempDir(), t.TempDir()
	bin := filepath.Join(dir, "nel-run")
	if err := os.WriteFile(bin, []byte("hello\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	now := time.Now()

	// Just written: hashed, not kept.
	if sum, err := cachedFileSHA256(bin, cache, now); err != nil || sum != helloSum {
		t.Fatalf("fresh file: %q, %v; want %s", sum, err, helloSum)
	}
	if entries(t, cache) != 0 {
		t.Fatal("a file changed less than settle ago was kept")
	}

	// Settled: kept, and read back.
	later := now.Add(settle + time.Second)
	if sum, err := cachedFileSHA256(bin, cache, later); err != nil || sum != helloSum {
		t.Fatalf("settled file: %q, %v", sum, err)
	}
	if entries(t, cache) != 1 {
		t.Fatal("the settled file's hash was not kept")
	}
	entry := onlyEntry(t, cache)
	b, _ := os.ReadFile(entry)
	fake := "sha256:" + strings.Repeat("ab", 32)
	os.WriteFile(entry, []byte(strings.Replace(string(b), helloSum, fake, 1)), 0o644)
	if sum, _ := cachedFileSHA256(bin, cache, later); sum != fake {
		t.Errorf("unchanged file: %q, want the kept %s (read from the cache)", sum, fake)
	}

	// Written again (another size, other times): the entry no longer
	// matches and the file is hashed.
	time.Sleep(10 * time.Millisecond)
	if err := os.WriteFile(bin, []byte("hello, world\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	if sum, _ := cachedFileSHA256(bin, cache, later); sum == fake || sum == helloSum {
		t.Errorf("rewritten file: %q, want its new hash", sum)
	}

	// A torn entry is not trusted.
	os.WriteFile(entry, []byte("garbage"), 0o644)
	if sum, _ := cachedFileSHA256(bin, cache, later.Add(time.Hour)); sum == fake || !sumLine.MatchString(sum) {
		t.Errorf("after a torn entry: %q", sum)
	}
}

// Without a usable cache directory the file is hashed all the same.
func TestCachedFileSHA256NoCache(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "f")
	os.WriteFile(bin, []byte("hello\n"), 0o644)
	blocked := filepath.Join(t.TempDir(), "file")
	os.WriteFile(blocked, nil, 0o644) // a file where the directory would go
	for _, cache := range []string{"", blocked} {
		if sum, err := cachedFileSHA256(bin, cache, time.Now().Add(time.Hour)); err != nil || sum != helloSum {
			t.Errorf("cache %q: %q, %v; want %s", cache, sum, err, helloSum)
		}
	}
}

func entries(t *testing.T, cache string) int {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(cache, "nel", "exe-sha256", "*"))
	return len(m)
}

func onlyEntry(t *testing.T, cache string) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(cache, "nel", "exe-sha256", "*"))
	if len(m) != 1 {
		t.Fatalf("entries %v, want 1", m)
	}
	return m[0]
}
