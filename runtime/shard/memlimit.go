package shard

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
)

// A shard's soft memory limit (runtime/debug.SetMemoryLimit) while its
// samples run. What a shard holds is what it held when the samples start
// (the dataset, the spool's parts) plus what each request in flight holds:
// its goroutine's stack, its request, connection and context (measured at
// 10,000 in flight: about 45 MB of stacks and 75 MB of heap, 12 KB a
// request). Left to GOGC=100 alone, the heap then peaks at about twice
// its live size, and the garbage of each answer (its body, its decoding,
// its record) is what fills the difference: 10,000 in flight took 350 to
// 400 MB RSS, where the live memory was about 125 MB (issue 23). The limit
// makes the GC run more often near it instead. It is set above the live
// memory with headroom (limitBase), so that the GC never runs back to
// back. Measured on 2 cores (make bench, the same run): 10,000 in flight
// 212 MB RSS instead of 363, for more GC work (client CPU per sample 228
// instead of 132 us); a shard of 10,000 and one of 80,000 samples at 256
// in flight 87 and 91 MB instead of 91 and 109 (other runs without the
// limit: up to 120 at 80,000; a base of 64 MiB: 81 and 104). At 64 in
// flight the limit is above GOGC's own goal and changes nothing; if the estimate is short, Go bounds the GC's share of the CPU
// (about half), the run is slower and its results the same. A limit set
// in the environment (GOMEMLIMIT) is left alone.
const (
	limitBase        = 48 << 20 // the spool's parts, the Parquet writer, headroom for garbage
	limitPerInFlight = 12 << 10 // a request in flight: stack, request, connection
)

// memoryLimit is the limit for a shard holding live bytes of heap before
// conc requests are in flight. The headroom is at least the live heap, as
// GOGC=100 gives: a shard holding a large dataset would otherwise run a GC
// cycle, marking all of it, for every limitBase of garbage (a shard of a
// 1M-item dataset took 15% more CPU).
func memoryLimit(live uint64, conc int) int64 {
	return int64(live) + max(limitBase, int64(live)) + int64(conc)*limitPerInFlight
}

// limitMemory sets the limit for conc requests in flight and returns a
// function that restores the previous one.
func limitMemory(conc int) (restore func()) {
	if os.Getenv("GOMEMLIMIT") != "" || debug.SetMemoryLimit(-1) != math.MaxInt64 {
		return func() {}
	}
	prev := debug.SetMemoryLimit(memoryLimit(heapNow(), conc))
	return func() { debug.SetMemoryLimit(prev) }
}

// heapNow is the heap in use now: what is live and the garbage not yet
// collected (at most about the live heap again). Over-estimating the live
// heap only raises the limit. (runtime/metrics' /gc/heap/live:bytes would
// be exact, but adds 29 KB to nel-run, which is over its size budget.)
func heapNow() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
