package runctl

import (
	"bytes"
	"os"
	"testing"

	"github.com/nel-eval/nel/runtime/rundir"
)

// Under --shard --follow, a shard's own log that appears after the first
// look is shown whole (it is the shard's, though its lines do not name
// it), and a file filtered to nothing at the first look gets its header
// when it later has lines to show.
func TestFollowShardLateFiles(t *testing.T) {
	d := rundir.Dir(t.TempDir())
	if err := os.MkdirAll(d.Meta(), 0o755); err != nil {
		t.Fatal(err)
	}
	planJSON := `{"plan_version": 1, "shards": 2, "benchmarks": [{"key": "gsm8k", "name": "gsm8k", "dir": "gsm8k"}]}`
	if err := os.WriteFile(d.Plan("abc"), []byte(planJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(string(d.Logs()), 0o755); err != nil {
		t.Fatal(err)
	}
	one := 1
	keep, err := Target{Dir: d}.shardFilter(&one)
	if err != nil {
		t.Fatal(err)
	}
	run := d.Logs().Run()
	os.WriteFile(run, []byte("level=INFO msg=start shard=0/2\n"), 0o644)
	var w bytes.Buffer
	offsets, last, err := showTails(&w, []string{run}, -1, keep)
	if err != nil || last != "" || w.Len() != 0 {
		t.Fatalf("first look at a file with nothing of shard 1: last %q, wrote %q, %v", last, w.String(), err)
	}

	// Later: the run log names shard 1, and shard 1's own log appears.
	f, _ := os.OpenFile(run, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString("level=INFO msg=started shard=1/2\n")
	f.Close()
	own := d.Logs().Shard("gsm8k", 1, "77")
	os.WriteFile(own, []byte("sample 3 done\n"), 0o644)
	for _, file := range []string{own, run} {
		if last, err = follow(&w, file, offsets, last, keep(file)); err != nil {
			t.Fatal(err)
		}
	}
	want := "==> " + own + " <==\nsample 3 done\n==> " + run + " <==\nlevel=INFO msg=started shard=1/2\n"
	if got := w.String(); got != want {
		t.Errorf("followed output:\n%s\nwant:\n%s", got, want)
	}
}
