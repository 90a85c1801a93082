package main

import (
	"bytes"
	"os"
	"testing"
	"time"

	"github.com/nel-eval/nel/internal/cli"
	"github.com/nel-eval/nel/runtime/shard"
)

// TestProgressTerminal: on a terminal the line is redrawn in place (carriage
// return, erase to the end of the line) and ended by stop; in a log file
// each tick is a line of its own.
func TestProgressTerminal(t *testing.T) {
	s := shard.Progress{Benchmark: "gsm8k", Shard: 0, Total: 4, Done: 1, Failed: 1}
	const line = "nel-run shard: gsm8k 0: 1/4 (25.0%) · 1 failed"
	for _, tty := range []bool{true, false} {
		var buf bytes.Buffer
		p := newProgressLog(&env{stderr: &buf}, time.Hour) // no tick during the test
		p.tty = tty
		p.update(s)
		p.print()
		p.print()
		p.stop()
		p.stop() // a second stop draws nothing more
		want := line + "\n" + line + "\n"
		if tty {
			want = "\r\x1b[K" + line + "\r\x1b[K" + line + "\r\x1b[K" + line + "\n"
		}
		if buf.String() != want {
			t.Errorf("tty %v: got %q, want %q", tty, buf.String(), want)
		}
	}
}

// A pipe or a buffer is not a terminal: SLURM and Kubernetes logs get
// plain lines.
func TestProgressNotTerminal(t *testing.T) {
	if cli.IsTerminal(&bytes.Buffer{}) {
		t.Error("a buffer is a terminal")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	if cli.IsTerminal(w) {
		t.Error("a pipe is a terminal")
	}
}
