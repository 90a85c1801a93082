package sandbox

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// The session protocol has no field for Command.Network or ReadOnly: a
// pool's session refuses such a command before any request, rather than
// running it without the network or the host paths it asked for.
func TestRemoteSessionRefusesHostAccess(t *testing.T) {
	var execs atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		execs.Add(1)
		writeJSON(w, http.StatusOK, wireResult{})
	}))
	defer srv.Close()
	r := &remote{name: "pool", client: srv.Client(), log: slog.New(slog.DiscardHandler)}
	s := &remoteSession{sessionConn: &sessionConn{r: r, addr: strings.TrimPrefix(srv.URL, "http://"), id: "id", token: "tok"}}
	for name, c := range map[string]Command{
		"network":   {Argv: []string{"true"}, Network: true},
		"read-only": {Argv: []string{"true"}, ReadOnly: []string{"/opt/x"}},
	} {
		if _, err := s.Exec(t.Context(), c); err == nil || !strings.Contains(err.Error(), "not supported yet") {
			t.Errorf("%s: %v, want a refusal", name, err)
		}
	}
	if n := execs.Load(); n != 0 {
		t.Errorf("%d requests sent for refused commands", n)
	}
	if _, err := s.Exec(t.Context(), Command{Argv: []string{"true"}}); err != nil || execs.Load() != 1 {
		t.Errorf("a plain command: %v, %d requests; want it sent", err, execs.Load())
	}
}
