package merge

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/rundir"
)

// shardFiles finds the finished shards from one listing of the folder: the
// present ones in order, the absent ones named in the error.
func TestShardFiles(t *testing.T) {
	dir := rundir.Bench(filepath.Join(t.TempDir(), "gsm8k"))
	b := &plan.Benchmark{Key: "gsm8k"}
	if _, err := shardFiles(b, dir, 3); err == nil || !strings.Contains(err.Error(), "3 of 3 shards not finished (shard 0, 1, 2,") {
		t.Fatalf("no shards folder: %v", err)
	}
	if err := os.MkdirAll(dir.Shards(), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, i := range []int{1, 2} {
		if err := os.WriteFile(string(dir.Shard(i, 3)), []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A shard of another shard count is not one of these.
	os.WriteFile(string(dir.Shard(0, 4)), []byte("x"), 0o644)
	if _, err := shardFiles(b, dir, 3); err == nil || !strings.Contains(err.Error(), "1 of 3 shards not finished (shard 0,") {
		t.Fatalf("shard 0 missing: %v", err)
	}
	os.WriteFile(string(dir.Shard(0, 3)), []byte("x"), 0o644)
	files, err := shardFiles(b, dir, 3)
	if err != nil || len(files) != 3 {
		t.Fatalf("all present: %v, %v", files, err)
	}
	for i, f := range files {
		if f.i != i || f.path != string(dir.Shard(i, 3)) {
			t.Errorf("file %d: %+v", i, f)
		}
	}
}
