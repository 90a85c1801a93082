package shard

import (
	"math"
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

// limitMemory sets a limit at least the estimate for the requests in
// flight and restores the previous one; a limit already set (GOMEMLIMIT,
// or a caller's) is left alone.
func TestLimitMemory(t *testing.T) {
	t.Setenv("GOMEMLIMIT", "")
	prev := debug.SetMemoryLimit(math.MaxInt64)
	defer debug.SetMemoryLimit(prev)

	restore := limitMemory(10000)
	got := debug.SetMemoryLimit(-1)
	restore()
	if min := memoryLimit(0, 10000); got < min || got == math.MaxInt64 {
		t.Errorf("limit while running: %d, want at least %d and set", got, min)
	}
	if after := debug.SetMemoryLimit(-1); after != math.MaxInt64 {
		t.Errorf("limit after restore: %d, want none (%d)", after, int64(math.MaxInt64))
	}

	debug.SetMemoryLimit(1 << 30)
	limitMemory(10000)() // leaves the caller's limit
	if got := debug.SetMemoryLimit(-1); got != 1<<30 {
		t.Errorf("a limit already set: %d after, want %d", got, 1<<30)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "1GiB")
	restore = limitMemory(10000)
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT in the environment: limit %d, want none set", got)
	}
	restore()
}
