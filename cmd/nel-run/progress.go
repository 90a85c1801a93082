package main

import (
	"fmt"
	"sync"
	"time"

	"github.com/nel-eval/nel/internal/cli"
	"github.com/nel-eval/nel/runtime/shard"
)

// progressLog prints one status line every interval: the form that reads
// well in a SLURM log file. On a terminal it redraws one line in place
// instead, a few times a second.
type progressLog struct {
	e        *env
	tty      bool
	drawMu   sync.Mutex // one line written at a time (the ticks, stop)
	drawn    bool       // a line is on the terminal, not yet ended; under drawMu
	mu       sync.Mutex
	last     shard.Progress
	started  time.Time
	base     int // samples done when the run started (resumed)
	ticker   *time.Ticker
	quit     chan struct{}
	stopOnce sync.Once
}

// ttyRedraw is how often the terminal's line is redrawn.
const ttyRedraw = 250 * time.Millisecond

func newProgressLog(e *env, every time.Duration) *progressLog {
	tty := cli.IsTerminal(e.stderr)
	if tty {
		every = ttyRedraw
	}
	p := &progressLog{e: e, tty: tty, started: time.Now(), ticker: time.NewTicker(every), quit: make(chan struct{}), base: -1}
	go func() {
		for {
			select {
			case <-p.ticker.C:
				p.print()
			case <-p.quit:
				return
			}
		}
	}()
	return p
}

func (p *progressLog) update(s shard.Progress) {
	p.mu.Lock()
	if p.base < 0 {
		p.base = s.Done
	}
	p.last = s
	p.mu.Unlock()
}

func (p *progressLog) print() {
	p.mu.Lock()
	s, base := p.last, max(p.base, 0)
	p.mu.Unlock()
	if s.Total == 0 {
		return
	}
	line := formatProgress(s, base, time.Since(p.started))
	p.drawMu.Lock()
	defer p.drawMu.Unlock()
	if p.tty {
		// Back to the line's start, then clear it: the new line may be
		// shorter than the last.
		fmt.Fprintf(p.e.stderr, "\r\x1b[Knel-run shard: %s", line)
		p.drawn = true
		return
	}
	fmt.Fprintf(p.e.stderr, "nel-run shard: %s\n", line)
}

// formatProgress renders "gsm8k 0/4: 1200/1319 (91.0%) · 35.2/s · ETA 3s · 2 failed".
func formatProgress(s shard.Progress, base int, elapsed time.Duration) string {
	line := fmt.Sprintf("%s %d: %d/%d (%.1f%%)", s.Benchmark, s.Shard, s.Done, s.Total, 100*float64(s.Done)/float64(max(s.Total, 1)))
	if rate, eta, ok := shard.Rate(s.Done, base, s.Total, elapsed); ok {
		line += fmt.Sprintf(" · %.1f/s · ETA %s", rate, eta)
	}
	if s.Failed > 0 {
		line += fmt.Sprintf(" · %d failed", s.Failed)
	}
	if s.Resumed > 0 {
		line += fmt.Sprintf(" · %d resumed", s.Resumed)
	}
	return line
}

// stop ends the ticks; on a terminal it draws the last state and ends
// the line, so that what is printed next starts on a line of its own.
func (p *progressLog) stop() {
	p.stopOnce.Do(func() {
		p.ticker.Stop()
		close(p.quit)
		if p.tty {
			p.print()
			p.drawMu.Lock()
			if p.drawn {
				fmt.Fprintln(p.e.stderr)
			}
			p.drawMu.Unlock()
		}
	})
}
