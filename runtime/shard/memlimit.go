package shard

import (
	"math"
	"os"
	"runtime"
	"runtime/debug"
	"sync"
	"time"
)

// A process's soft memory limit (runtime/debug.SetMemoryLimit) while its
// shards' samples run. The limit is the process's, not a shard's: one
// process may run several shards at once (nel run runs every shard of
// every benchmark in one), and a limit one shard set for its own requests
// would govern the others' too, and be lifted under them when it ended.
// So a shard takes part in a limit only when its caller gives it one
// (Options.Memory), and all the shards of a process share it: the limit
// counts the requests every running shard may have in flight.
//
// What the process holds is what it held when the first shard's samples
// start (the datasets, the spools' parts) plus what each request in
// flight holds: its goroutine's stack, its request, connection and
// context (measured at 10,000 in flight: about 45 MB of stacks and 75 MB
// of heap, 12 KB a request). Left to GOGC=100 alone, the heap then peaks
// at about twice its live size, and the garbage of each answer (its body,
// its decoding, its record) is what fills the difference: 10,000 in
// flight took 350 to 400 MB RSS, where the live memory was about 125 MB
// (issue 23). The limit makes the GC run more often near it instead. It
// is set above the live memory with headroom (limitBase), so that the GC
// never runs back to back. Measured on 2 cores (make bench, the same
// run): 10,000 in flight 212 MB RSS instead of 363, for more GC work
// (client CPU per sample 228 instead of 132 us); a shard of 10,000 and
// one of 80,000 samples at 256 in flight 87 and 91 MB instead of 91 and
// 109. At 64 in flight the limit is above GOGC's own goal and changes
// nothing. A limit set in the environment (GOMEMLIMIT), or by the
// program before, is left alone.
//
// The estimate can be short: a request through an interceptor chain, a
// judge's, an agent's conversation hold more than 12 KB, and a heap that
// outgrows the limit leaves the GC running back to back at its cap (half
// the CPU: 2,000 in flight through NeMo's interceptors took 7.7 s of CPU
// instead of 3.1 s without the limit; their stacks alone were 17 KB a
// request). So a watcher raises the limit while it runs (see watch).
//
// A request through an interceptor chain (or a traffic log) is counted
// at 24 KiB: measured at 2,000 in flight through NeMo's chain, its
// goroutine's stack was 16 KiB instead of 8 (the chain's frames, waiting
// on the model, take it past a quarter of 8 KiB, below which a stack is
// shrunk), and its heap 1 KiB more (TestInflightRetention).
const (
	limitBase           = 48 << 20 // the spool's parts, the Parquet writer, headroom for garbage
	limitPerInFlight    = 12 << 10 // a request in flight: stack, request, connection
	limitPerIntercepted = 24 << 10 // the same through an interceptor chain
)

// memoryLimit is the limit for a process holding live bytes of heap before
// requests that hold inflight bytes are in flight. The headroom is at least the live heap, as
// GOGC=100 gives: a shard holding a large dataset would otherwise run a GC
// cycle, marking all of it, for every limitBase of garbage (a shard of a
// 1M-item dataset took 15% more CPU).
func memoryLimit(live uint64, inflight int64) int64 {
	return int64(live) + max(limitBase, int64(live)) + inflight
}

// MemoryLimit is a process's soft memory limit for the shards it runs,
// shared by all of them (Options.Memory). The zero value is ready; it sets
// nothing until a shard's samples start, and restores the process's
// earlier setting when the last running shard's samples end.
type MemoryLimit struct {
	mu       sync.Mutex
	users    int   // shards whose samples run
	off      bool  // a limit was set before the first: left alone
	inflight int64 // what the requests the running shards allow in flight hold
	live     uint64
	raise    int64 // what watch added to the estimate
	prev     int64
	stop     chan struct{} // the running watcher's; nil when none runs
}

// hold counts conc more requests in flight, each holding per bytes, toward
// the limit until release.
func (m *MemoryLimit) hold(conc int, per int64) (release func()) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.users == 0 {
		m.off = os.Getenv("GOMEMLIMIT") != "" || debug.SetMemoryLimit(-1) != math.MaxInt64
		if !m.off {
			m.live, m.raise = heapNow(), 0
			m.prev = debug.SetMemoryLimit(-1)
			m.stop = make(chan struct{})
			go m.watch(m.stop, time.Second)
		}
	}
	m.users++
	m.inflight += int64(conc) * per
	m.apply()
	return sync.OnceFunc(func() { m.release(int64(conc) * per) })
}

func (m *MemoryLimit) release(inflight int64) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.users--
	m.inflight -= inflight
	if m.users > 0 || m.off {
		m.apply()
		return
	}
	// Under m.mu, as the watcher's raises are: none comes after this.
	close(m.stop)
	m.stop = nil
	debug.SetMemoryLimit(m.prev)
}

// apply sets the limit for what is held now. m.mu is held.
func (m *MemoryLimit) apply() {
	if m.off || m.users == 0 {
		return
	}
	debug.SetMemoryLimit(memoryLimit(m.live, m.inflight) + m.raise)
}

// Limit is the limit in force while shards run (0 when none is set by m):
// for tests and logs.
func (m *MemoryLimit) Limit() int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.off || m.users == 0 {
		return 0
	}
	return memoryLimit(m.live, m.inflight) + m.raise
}

// watch raises the limit, every interval until stop, when the GC has had
// less room than the limit meant to leave it for three intervals in a row
// (at 10,000 in flight, the first wave's stacks growing took two: the
// limit's trade at its peak; three is a heap that outgrew the estimate). It never comes down: the GC's cost stays
// bounded, and the memory is what the work holds. runtime.ReadMemStats
// stops the world for microseconds, once a second (runtime/metrics would
// not, but adds 29 KB to nel-run, which is near its size budget).
func (m *MemoryLimit) watch(stop chan struct{}, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	var g gcWatch
	runtime.ReadMemStats(&g.last)
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		var now runtime.MemStats
		runtime.ReadMemStats(&now)
		if up := g.next(now); up > 0 {
			m.mu.Lock()
			if m.stop == stop { // not released since the reading
				m.raise += up
				m.apply()
			}
			m.mu.Unlock()
		}
	}
}

// gcWatch follows the GC from one reading of the memory statistics to the
// next.
type gcWatch struct {
	last  runtime.MemStats
	short int // how many intervals in a row lacked headroom
}

// next is how much to raise the limit after the interval ending at now:
// the shortfall when the two intervals before were short too, else 0.
func (g *gcWatch) next(now runtime.MemStats) int64 {
	up := shortfall(g.last, now)
	g.last = now
	if up == 0 {
		g.short = 0
		return 0
	}
	if g.short++; g.short < 3 {
		return 0
	}
	return up
}

// shortfall is what the GC lacked of half the limit's headroom in the cycles
// between two readings of the memory statistics: 0 unless it ran back to
// back, at least twice with less than a quarter of limitBase of garbage
// between two cycles (what the process allocated from one to the next).
// A quarter: at 10,000 in flight without interceptors a cycle had 22 to
// 35 MiB of garbage (the trade of GC work for memory the limit makes,
// 8 to 14 cycles a second), at 2,000 in flight through NeMo's interceptors
// 5 to 7 MiB (20 to 150 cycles a second, the GC at its cap).
func shortfall(last, now runtime.MemStats) int64 {
	cycles := now.NumGC - last.NumGC
	if cycles < 2 {
		return 0
	}
	garbage := int64(now.TotalAlloc-last.TotalAlloc) / int64(cycles)
	if garbage >= limitBase/4 {
		return 0
	}
	// Enough for half of limitBase between cycles, not all of it: at
	// 10,000 in flight the first wave's peak is short of the limit for
	// three seconds, and a raise to a full limitBase took the RSS to 260
	// MB; if half is still short, the watcher raises again.
	return limitBase/2 - garbage
}

// heapNow is the heap in use now: what is live and the garbage not yet
// collected (at most about the live heap again). Over-estimating the live
// heap only raises the limit. (runtime/metrics' /gc/heap/live:bytes would
// be exact, but adds 29 KB to nel-run, which is near its size budget.)
func heapNow() uint64 {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}
