package shard

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
)

// The limit is the live heap, the base (or the live heap again, if
// larger) and 12 KiB per request in flight: at 10,000 in flight over
// 10 MiB live, 10 + 48 MiB + 117.1875 MiB.
func TestMemoryLimit(t *testing.T) {
	for _, c := range []struct {
		live uint64
		conc int
		want int64
	}{
		{0, 1, 50343936},                       // 48 MiB + 12 KiB
		{10 << 20, 10000, 183697408},           // 10485760 + 50331648 + 122880000
		{2 << 30, 256, 2*2147483648 + 3145728}, // headroom: the live heap again
	} {
		if got := memoryLimit(c.live, c.conc); got != c.want {
			t.Errorf("memoryLimit(%d, %d) = %d, want %d", c.live, c.conc, got, c.want)
		}
	}
}

// noLimit makes the test start, and end, with no limit set.
func noLimit(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	prev := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(prev) })
}

func limitNow() int64 { return debug.SetMemoryLimit(-1) }

// A MemoryLimit counts the requests in flight of every shard holding it,
// keeps the limit while any holds it, and restores the earlier setting
// (none) when the last lets go.
func TestMemoryLimitShared(t *testing.T) {
	noLimit(t)
	var m MemoryLimit
	a := m.hold(1000)
	one := limitNow()
	if one < memoryLimit(0, 1000) || one == math.MaxInt64 || one != m.Limit() {
		t.Fatalf("one shard of 1000: limit %d (Limit() %d), want at least %d", one, m.Limit(), memoryLimit(0, 1000))
	}
	b := m.hold(3000)
	if two := limitNow(); two-one != 3000*limitPerInFlight {
		t.Errorf("two shards: limit %d, want the first's %d + 3000 × %d", two, one, limitPerInFlight)
	}
	a()
	a() // a release is once
	if got := limitNow(); got-one != 2000*limitPerInFlight {
		t.Errorf("after the first ends: limit %d, want %d (the second's 3000 requests)", got, one+2000*limitPerInFlight)
	}
	b()
	if got := limitNow(); got != math.MaxInt64 || m.Limit() != 0 {
		t.Errorf("after the last ends: limit %d (Limit() %d), want none", got, m.Limit())
	}
}

// A limit set before (by the program, or GOMEMLIMIT in the environment)
// is the user's: a MemoryLimit leaves it as it is.
func TestMemoryLimitLeavesAUsersLimit(t *testing.T) {
	noLimit(t)
	var m MemoryLimit
	debug.SetMemoryLimit(1 << 30)
	release := m.hold(10000)
	if got := limitNow(); got != 1<<30 || m.Limit() != 0 {
		t.Errorf("a limit already set: %d while held (Limit() %d), want %d", got, m.Limit(), 1<<30)
	}
	release()
	if got := limitNow(); got != 1<<30 {
		t.Errorf("a limit already set: %d after, want %d", got, 1<<30)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "1GiB")
	release = m.hold(10000)
	if got := limitNow(); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT in the environment: limit %d, want none set", got)
	}
	release()
}

// The watcher raises the limit by what the GC lacked of its headroom when
// cycles ran with less garbage between them than half of it.
func TestShortfall(t *testing.T) {
	const mib = 1 << 20
	stats := func(gcs uint32, alloc, heap uint64) runtime.MemStats {
		return runtime.MemStats{NumGC: gcs, TotalAlloc: alloc, HeapAlloc: heap}
	}
	for _, c := range []struct {
		name      string
		last, now runtime.MemStats
		want      int64
	}{
		{"one cycle a second", stats(10, 0, 0), stats(11, 500*mib, 100*mib), 0},
		// 10 cycles, 4 MiB each over a heap of 40 MiB (36 live): 48 − 4.
		{"back to back", stats(10, 0, 0), stats(20, 40*mib, 40*mib), 44 * mib},
		// 25 MiB a cycle is more than half of 48.
		{"room enough", stats(10, 0, 0), stats(14, 100*mib, 40*mib), 0},
		// 300 MiB live: the headroom is the live heap, 300 − 50.
		{"a large live heap", stats(0, 0, 0), stats(4, 200*mib, 350*mib), 250 * mib},
	} {
		if got := shortfall(c.last, c.now); got != c.want {
			t.Errorf("%s: shortfall %d MiB, want %d MiB", c.name, got/mib, c.want/mib)
		}
	}
}
