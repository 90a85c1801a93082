// Package interrupt turns every signal that asks nel to end into the
// cancellation of one context, so that each way of ending takes the same
// road out: the servers nel started are stopped (their whole process
// group), shards keep what they finished, and the exit status says which
// signal it was (128 + its number, as a shell reports a command a signal
// killed).
//
// The signals are SIGINT (Ctrl-C), SIGTERM (nel stop, kill), SIGHUP (the
// terminal or SSH session went away), SIGQUIT (Ctrl-\) and SIGPIPE (the
// reader of stdout or stderr went away: nel run … | head -1). Left to Go's
// defaults, SIGHUP, SIGQUIT and a SIGPIPE on stdout or stderr end the
// process on the spot, and a server's children (a wrapper's, vLLM's
// workers) could outlive it. SIGKILL cannot be caught: what it leaves is
// for the parent-death signal (runtime/serve.StartTied, and the supervisor
// a server runs under, which passes it to the server's group) and the
// next run's reaping.
package interrupt

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"syscall"
)

// named is a caught signal with its name as kill -l spells it, with SIG.
type named struct {
	sig  syscall.Signal
	name string
}

// caught are the signals Context catches, in the order of the exit-code
// table (internal/exitcode).
func caught() []named {
	return []named{
		{syscall.SIGHUP, "SIGHUP"}, {syscall.SIGINT, "SIGINT"}, {syscall.SIGQUIT, "SIGQUIT"},
		{syscall.SIGPIPE, "SIGPIPE"}, {syscall.SIGTERM, "SIGTERM"},
	}
}

// Signals are the signals Context catches.
func Signals() []syscall.Signal {
	var sigs []syscall.Signal
	for _, n := range caught() {
		sigs = append(sigs, n.sig)
	}
	return sigs
}

// Signal is the cause of a context Context canceled: the signal received.
type Signal struct {
	Sig syscall.Signal
}

func (s *Signal) Error() string { return Name(s.Sig) + " received" }

// Status is the exit status of a command the signal ended: 128 + its
// number (130 for SIGINT, 143 for SIGTERM, 129 for SIGHUP).
func (s *Signal) Status() int { return 128 + int(s.Sig) }

// Name is a caught signal's name ("SIGHUP"); another's is Go's.
func Name(sig syscall.Signal) string {
	for _, n := range caught() {
		if n.sig == sig {
			return n.name
		}
	}
	return sig.String()
}

// Context returns a context that is canceled, with a [*Signal] as its
// cause, when the process receives one of [Signals]. Until stop is called
// every later signal is caught too: a second Ctrl-C, or the SIGPIPE of
// each write to a closed stdout while nel stops its servers, must not end
// the process before they are stopped. (A user in a hurry has SIGKILL,
// which the parent-death signal covers.)
func Context(parent context.Context) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	var sigs []os.Signal
	for _, s := range Signals() {
		sigs = append(sigs, s)
	}
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	go func() {
		select {
		case s := <-ch:
			sig, _ := s.(syscall.Signal)
			cancel(&Signal{Sig: sig})
		case <-done:
		}
	}()
	return ctx, func() {
		close(done)
		cancel(nil)
		signal.Stop(ch)
	}
}

// Received is the signal that canceled ctx (made by Context, or derived
// from it), or nil.
func Received(ctx context.Context) *Signal {
	var s *Signal
	if errors.As(context.Cause(ctx), &s) {
		return s
	}
	return nil
}
