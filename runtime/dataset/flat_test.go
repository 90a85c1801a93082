package dataset

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/nel-eval/nel/internal/datagen"
)

// TestStreamMemoryFlat: reading a dataset a window at a time holds a
// bounded heap whatever the dataset's size, in every format a Stream
// reads: the live heap (measured after a collection, every 16th window)
// reading 200,000 records stays within 4 MB of reading 20,000. Load,
// which holds every record, holds far more (measured too, so that the
// bound is known to tell them apart).
func TestStreamMemoryFlat(t *testing.T) {
	if testing.Short() {
		t.Skip("writes and reads 200,000 records in three formats")
	}
	dir := t.TempDir()
	const bound = 4 << 20
	for _, format := range []string{"jsonl", "json", "parquet"} {
		var live [2]uint64
		for k, n := range []int{20_000, 200_000} {
			path := filepath.Join(dir, fmt.Sprintf("d%d.%s", n, format))
			if err := datagen.Write(path, format, n, 10_000); err != nil {
				t.Fatal(err)
			}
			live[k] = streamLive(t, path, n)
		}
		t.Logf("%s: live heap %.1f MB at 20,000 records, %.1f MB at 200,000", format, float64(live[0])/1e6, float64(live[1])/1e6)
		if live[1] > live[0]+bound {
			t.Errorf("%s: the live heap grew from %.1f MB at 20,000 records to %.1f MB at 200,000 (bound +%d MB)", format, float64(live[0])/1e6, float64(live[1])/1e6, bound>>20)
		}
		held, _ := liveAfter(func() any {
			ds, err := localLoader(dir).Load(context.Background(), fmt.Sprintf("d200000.%s", format), LoadOptions{})
			if err != nil {
				t.Fatal(err)
			}
			return ds
		})
		if held < live[0]+bound {
			t.Errorf("%s: Load holds %.1f MB of 200,000 records, within the bound: it tells nothing", format, float64(held)/1e6)
		}
	}
}

// streamLive streams the file at path, Pick as a shard reads it, and
// returns the most live heap seen.
func streamLive(t *testing.T, path string, n int) uint64 {
	t.Helper()
	st, ok := localLoader("").Stream(context.Background(), path)
	if !ok {
		t.Fatalf("%s is not streamed", path)
	}
	var peak uint64
	windows, records := 0, 0
	_, err := st.Windows(context.Background(), LoadOptions{Pick: []string{"question", "answer"}}, 4096, func(w *Dataset) error {
		for _, p := range w.Parts {
			records += len(p.Records)
		}
		if windows++; windows%16 == 1 {
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			peak = max(peak, ms.HeapAlloc)
		}
		return nil
	})
	if err != nil || records != n {
		t.Fatalf("%s: %d records, %v", path, records, err)
	}
	return peak
}

// liveAfter runs f and returns the live heap after it, what f returned
// still held.
func liveAfter(f func() any) (uint64, any) {
	runtime.GC()
	v := f()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	runtime.KeepAlive(v)
	return ms.HeapAlloc, v
}
