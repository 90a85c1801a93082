package local

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/nel-eval/nel/internal/cli"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/shard"
)

// progressUI shows a running local evaluation: on a terminal one live bar
// per benchmark, redrawn in place; elsewhere (a log file, CI, SLURM) one
// status line per benchmark every interval.
type progressUI struct {
	w        io.Writer
	tty      bool
	keys     []string
	start    time.Time
	interval time.Duration

	mu     sync.Mutex
	shards map[string]map[int]shard.Progress
	base   map[string]int // samples already done (resumed) when first seen
	drawn  int            // lines drawn last time (tty)
	quit   chan struct{}
	done   chan struct{}
	once   sync.Once
}

func newProgressUI(w io.Writer, p *plan.Plan, interval time.Duration) *progressUI {
	u := &progressUI{
		w: w, tty: cli.IsTerminal(w), start: time.Now(),
		shards: map[string]map[int]shard.Progress{}, base: map[string]int{},
		quit: make(chan struct{}), done: make(chan struct{}),
	}
	for _, b := range p.Benchmarks {
		u.keys = append(u.keys, b.Key)
		u.shards[b.Key] = map[int]shard.Progress{}
	}
	u.interval = interval
	if u.tty {
		u.interval = 200 * time.Millisecond
	} else if u.interval <= 0 {
		u.interval = 30 * time.Second
	}
	go u.loop()
	return u
}

func (u *progressUI) update(s shard.Progress) {
	u.mu.Lock()
	m := u.shards[s.Benchmark]
	if _, seen := m[s.Shard]; !seen {
		u.base[s.Benchmark] += s.Done
	}
	m[s.Shard] = s
	u.mu.Unlock()
}

func (u *progressUI) loop() {
	defer close(u.done)
	t := time.NewTicker(u.interval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			u.draw(false)
		case <-u.quit:
			u.draw(true)
			return
		}
	}
}

// line renders one benchmark: "gsm8k  [#####-----]  650/1319  49%  812.4/s  ETA 1s  3 errors".
func (u *progressUI) line(key string, elapsed time.Duration) (string, bool) {
	var done, total, failed int
	for _, s := range u.shards[key] {
		done += s.Done
		total += s.Total
		failed += s.Failed
	}
	if len(u.shards[key]) == 0 {
		return fmt.Sprintf("%-12s loading data…", key), false
	}
	frac := float64(done) / float64(max(total, 1))
	var b strings.Builder
	fmt.Fprintf(&b, "%-12s", key)
	if u.tty {
		const width = 24
		n := int(frac * width)
		fmt.Fprintf(&b, " [%s%s]", strings.Repeat("#", n), strings.Repeat("-", width-n))
	}
	fmt.Fprintf(&b, " %d/%d %5.1f%%", done, total, 100*frac)
	if rate, eta, ok := shard.Rate(done, u.base[key], total, elapsed); ok && done < total {
		fmt.Fprintf(&b, " %.1f/s ETA %s", rate, eta)
	}
	if failed > 0 {
		fmt.Fprintf(&b, " %d errors", failed)
	}
	return b.String(), done == total && total > 0
}

func (u *progressUI) draw(final bool) {
	u.mu.Lock()
	defer u.mu.Unlock()
	elapsed := time.Since(u.start)
	if !u.tty {
		if final {
			return // the headlines follow
		}
		for _, k := range u.keys {
			l, _ := u.line(k, elapsed)
			fmt.Fprintf(u.w, "nel: %s\n", l)
		}
		return
	}
	var b strings.Builder
	if u.drawn > 0 {
		fmt.Fprintf(&b, "\033[%dA", u.drawn)
	}
	for _, k := range u.keys {
		l, _ := u.line(k, elapsed)
		b.WriteString("\r\033[K" + l + "\n")
	}
	u.drawn = len(u.keys)
	io.WriteString(u.w, b.String())
}

func (u *progressUI) stop() {
	u.once.Do(func() {
		close(u.quit)
		<-u.done
	})
}
