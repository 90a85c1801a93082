package serve

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

func TestDynamoReady(t *testing.T) {
	const (
		frontendOnly = `{"status":"healthy","instances":[{"component":"frontend","endpoint":"http"}]}`
		agg          = `{"instances":[{"component":"backend","endpoint":"generate"},{"component":"backend","endpoint":"clear_kv_blocks"}]}`
		onePrefill   = `{"instances":[{"component":"prefill","endpoint":"generate"}]}`
		disagg       = `{"instances":[{"component":"prefill","endpoint":"generate"},{"component":"prefill","endpoint":"generate"},{"component":"decode","endpoint":"generate"}]}`
	)
	tests := []struct {
		body            string
		prefill, decode int
		ok              bool
		why             string
	}{
		{frontendOnly, 0, 1, false, "0 of 0 prefill and 0 of 1 decode workers registered"},
		{agg, 0, 1, true, ""},
		// clear_kv_blocks is not a generate endpoint: one backend, not two.
		{agg, 0, 2, false, "0 of 0 prefill and 1 of 2 decode workers registered"},
		{onePrefill, 1, 1, false, "1 of 1 prefill and 0 of 1 decode workers registered"},
		{disagg, 2, 1, true, ""},
		{disagg, 3, 1, false, "2 of 3 prefill and 1 of 1 decode workers registered"},
		{"OK", 0, 1, false, "dynamo /health answered 200 without a JSON body: invalid character 'O' looking for beginning of value"},
	}
	for _, tt := range tests {
		ok, why := DynamoReady(tt.prefill, tt.decode)([]byte(tt.body))
		if ok != tt.ok || why != tt.why {
			t.Errorf("DynamoReady(%d, %d)(%s) = %v, %q; want %v, %q", tt.prefill, tt.decode, tt.body, ok, why, tt.ok, tt.why)
		}
	}
}

// TestWaitReadyBodyCheck: a 200 whose body Ready refuses is "not yet", and
// the refusal is what a timeout reports.
func TestWaitReadyBodyCheck(t *testing.T) {
	var polls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if polls.Add(1) < 4 {
			_, _ = w.Write([]byte(`{"instances":[]}`))
			return
		}
		_, _ = w.Write([]byte(`{"instances":[{"component":"backend","endpoint":"generate"}]}`))
	}))
	defer srv.Close()
	opts := fast(srv.URL + "/health")
	opts.Ready = DynamoReady(0, 1)
	if err := WaitReady(context.Background(), opts); err != nil {
		t.Fatal(err)
	}
	if n := polls.Load(); n != 4 {
		t.Errorf("ready after %d polls, want 4", n)
	}

	opts.Ready = DynamoReady(1, 1)
	opts.Timeout = 100 * time.Millisecond
	err := WaitReady(context.Background(), opts)
	if !errors.Is(err, ErrTimeout) || !strings.Contains(err.Error(), "last: 0 of 1 prefill and 1 of 1 decode workers registered") {
		t.Errorf("err = %v, want a timeout naming the missing prefill worker", err)
	}
}

// TestWaitReadyOtherPIDDead: any of the processes the server needs dying
// fails the wait at once, naming that process.
func TestWaitReadyOtherPIDDead(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "starting", http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	dead := deadPID(t)
	opts := fast(srv.URL + "/health")
	opts.PID = os.Getpid()
	opts.OtherPIDs = []int{os.Getpid(), dead}
	err := WaitReady(context.Background(), opts)
	var werr *WaitError
	if !errors.As(err, &werr) || !errors.Is(err, ErrExited) || werr.PID != dead {
		t.Fatalf("err = %#v, want ErrExited for pid %d", err, dead)
	}
}
