package interrupt_test

import (
	"context"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/nel-eval/nel/internal/interrupt"
)

// Each signal, really sent to this process, cancels the context with
// itself as the cause, and a second one (another Ctrl-C, the SIGPIPE of
// the next write to a closed stdout) does not end the process while it
// cleans up.
func TestContextCatchesEachSignal(t *testing.T) {
	for _, sig := range interrupt.Signals() {
		t.Run(interrupt.Name(sig), func(t *testing.T) {
			ctx, stop := interrupt.Context(context.Background())
			defer stop()
			if got := interrupt.Received(ctx); got != nil {
				t.Fatalf("before any signal: Received = %v", got)
			}
			if err := syscall.Kill(syscall.Getpid(), sig); err != nil {
				t.Fatal(err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(5 * time.Second):
				t.Fatalf("%s did not cancel the context", interrupt.Name(sig))
			}
			got := interrupt.Received(ctx)
			if got == nil || got.Sig != sig {
				t.Fatalf("Received = %v, want %s", got, interrupt.Name(sig))
			}
			if want := interrupt.Name(sig) + " received"; got.Error() != want {
				t.Errorf("cause %q, want %q", got.Error(), want)
			}
			// Still caught: were it not, this test binary would end here.
			if err := syscall.Kill(syscall.Getpid(), sig); err != nil {
				t.Fatal(err)
			}
			time.Sleep(50 * time.Millisecond)
		})
	}
}

// A context canceled otherwise received no signal.
func TestReceivedNone(t *testing.T) {
	ctx, stop := interrupt.Context(context.Background())
	stop()
	if got := interrupt.Received(ctx); got != nil {
		t.Errorf("canceled by stop: Received = %v", got)
	}
}

// The exit statuses are the exit-code table's: 128 + the signal's number,
// each its own row, and no other row of any command uses those statuses.
func TestStatusIsTheTables(t *testing.T) {
	want := map[syscall.Signal]int{syscall.SIGHUP: 129, syscall.SIGINT: 130, syscall.SIGQUIT: 131, syscall.SIGPIPE: 141, syscall.SIGTERM: 143}
	for _, sig := range interrupt.Signals() {
		s := &interrupt.Signal{Sig: sig}
		if s.Status() != want[sig] {
			t.Errorf("%s: status %d, want %d", interrupt.Name(sig), s.Status(), want[sig])
		}
		var rows []exitcode.Row
		for _, r := range exitcode.Table {
			if r.Code == s.Status() {
				rows = append(rows, r)
			}
		}
		if len(rows) != 1 || rows[0].Command != "" || !strings.Contains(rows[0].Outcome, "("+interrupt.Name(sig)+")") {
			t.Errorf("%s: the table's rows with status %d are %+v, want one for every command naming %s", interrupt.Name(sig), s.Status(), rows, interrupt.Name(sig))
		}
	}
}
