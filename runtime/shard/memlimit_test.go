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
		if got := memoryLimit(c.live, int64(c.conc)*limitPerInFlight); got != c.want {
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
	a := m.hold(1000, limitPerInFlight)
	one := limitNow()
	if min := memoryLimit(0, 1000*limitPerInFlight); one < min || one == math.MaxInt64 || one != m.Limit() {
		t.Fatalf("one shard of 1000: limit %d (Limit() %d), want at least %d", one, m.Limit(), min)
	}
	b := m.hold(3000, limitPerIntercepted) // through interceptors
	if two := limitNow(); two-one != 3000*limitPerIntercepted {
		t.Errorf("two shards: limit %d, want the first's %d + 3000 × %d", two, one, limitPerIntercepted)
	}
	a()
	a() // a release is once
	if got, want := limitNow(), one+3000*limitPerIntercepted-1000*limitPerInFlight; got != want {
		t.Errorf("after the first ends: limit %d, want %d (the second's 3000 requests)", got, want)
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
	release := m.hold(10000, limitPerInFlight)
	if got := limitNow(); got != 1<<30 || m.Limit() != 0 {
		t.Errorf("a limit already set: %d while held (Limit() %d), want %d", got, m.Limit(), 1<<30)
	}
	release()
	if got := limitNow(); got != 1<<30 {
		t.Errorf("a limit already set: %d after, want %d", got, 1<<30)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "1GiB")
	release = m.hold(10000, limitPerInFlight)
	if got := limitNow(); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT in the environment: limit %d, want none set", got)
	}
	release()
}

// The watcher raises the limit by what the GC lacked of half its
// headroom (24 MiB) when cycles ran with less garbage between them than a
// quarter of it (12 MiB).
func TestShortfall(t *testing.T) {
	const mib = 1 << 20
	stats := func(gcs uint32, alloc uint64) runtime.MemStats {
		return runtime.MemStats{NumGC: gcs, TotalAlloc: alloc, HeapAlloc: 100 * mib}
	}
	for _, c := range []struct {
		name      string
		last, now runtime.MemStats
		want      int64
	}{
		{"one cycle a second", stats(10, 0), stats(11, 5*mib), 0},
		// 10 cycles, 4 MiB each: 24 − 4.
		{"back to back", stats(10, 0), stats(20, 40*mib), 20 * mib},
		// 22 MiB a cycle is less than 48, but more than a quarter of it.
		{"room enough", stats(10, 100*mib), stats(14, 188*mib), 0},
		{"just short", stats(0, 0), stats(2, 2*(12*mib-1)), 12*mib + 1},
	} {
		if got := shortfall(c.last, c.now); got != c.want {
			t.Errorf("%s: shortfall %d, want %d", c.name, got, c.want)
		}
	}
}

// The watcher raises the limit on the third short interval in a row, by
// that interval's shortfall, and not on one or two.
func TestGCWatch(t *testing.T) {
	const mib = 1 << 20
	short := func(gcs uint32) runtime.MemStats { // 10 MiB a cycle: 14 short
		return runtime.MemStats{NumGC: gcs, TotalAlloc: uint64(gcs) * 10 * mib, HeapAlloc: 40 * mib}
	}
	g := gcWatch{last: short(0)}
	for i, c := range []struct {
		now  runtime.MemStats
		want int64
	}{
		{short(4), 0}, // the first short interval
		{runtime.MemStats{NumGC: 4, TotalAlloc: 40 * mib}, 0}, // no cycle
		{short(8), 0},  // short again, but not three times in a row
		{short(12), 0}, // twice
		{short(16), 14 * mib},
		{short(20), 14 * mib},
	} {
		if got := g.next(c.now); got != c.want {
			t.Errorf("reading %d: raise %d MiB, want %d MiB", i, got/mib, c.want/mib)
		}
	}
}
