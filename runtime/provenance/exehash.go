package provenance

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/atomicfile"
)

// Hashing the nel-run binary (~33 MB) costs every shard process 20-30 ms
// of CPU, as much as the requests of a few hundred samples (issue 23: a
// tenth of a 4,000-sample shard's CPU). A job runs the same binary in
// every shard, so the hash is kept in a small file beside the user's
// caches, keyed by what the kernel changes whenever the file is written:
// device, inode, size, modification and change times (what git's index
// and Go's build cache trust too). A cache that cannot be read or written
// only costs the hash.

// settle is how old a file's last change must be before its hash is kept:
// file times have the kernel's clock tick as granularity, so a file
// written again within the same tick would keep its key (git's "racily
// clean" entries).
const settle = 2 * time.Second

var sumLine = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// cachedFileSHA256 is FileSHA256(path), read from or kept under cacheDir
// ("" for no cache) when the file's identity can be stated.
func cachedFileSHA256(path, cacheDir string, now time.Time) (string, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	id, key, changed, ok := statKey(fi)
	if !ok || cacheDir == "" {
		return FileSHA256(path)
	}
	entry := filepath.Join(cacheDir, "nel", "exe-sha256", id)
	if b, err := os.ReadFile(entry); err == nil {
		k, sum, _ := strings.Cut(strings.TrimSuffix(string(b), "\n"), " sha256:")
		if k == key && sumLine.MatchString("sha256:"+sum) {
			return "sha256:" + sum, nil
		}
	}
	sum, err := FileSHA256(path)
	if err != nil || now.Sub(changed) < settle {
		return sum, err
	}
	keep(entry, key+" "+sum+"\n")
	return sum, nil
}

// keep writes an entry whole or not at all (atomicfile), and ignores
// failures: the cache is an optimisation, not durable state.
func keep(entry, line string) {
	if os.MkdirAll(filepath.Dir(entry), 0o755) == nil {
		atomicfile.WriteFile(entry, []byte(line))
	}
}

// exeCacheDir is where the executable's hash is kept: $XDG_CACHE_HOME or
// ~/.cache, or "" when neither is known.
func exeCacheDir() string {
	d, err := os.UserCacheDir()
	if err != nil {
		return ""
	}
	return d
}
