package main

import (
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/sim"
)

// nel-run sim-server with a key (as a SLURM scenario's process service
// checks the job's key) answers /v1 only with it: wait-ready reads the key
// from the variable it is named by, and never prints it.
func TestWaitReadyAPIKeyEnv(t *testing.T) {
	const key = "9c1e5a0b7d3f"
	s, err := sim.New(sim.Config{APIKey: key, Model: "m"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(s.Handler())
	defer srv.Close()
	t.Setenv("NEL_TEST_SERVER_KEY", key)

	code, _, errs := execCLI(t, "wait-ready", "--url", srv.URL+"/v1", "--api-key-env", "NEL_TEST_SERVER_KEY")
	if code != 0 || !strings.Contains(errs, `msg="server ready"`) || strings.Contains(errs, key) {
		t.Errorf("with the key: exit %d, stderr %q; want 0, ready, and no key", code, errs)
	}
	code, _, errs = execCLI(t, "wait-ready", "--url", srv.URL+"/v1", "--timeout", "300ms", "--interval", "20ms")
	if code != 1 || !strings.Contains(errs, "401") {
		t.Errorf("without it: exit %d, stderr %q; want 1 naming the 401", code, errs)
	}
	code, _, errs = execCLI(t, "wait-ready", "--url", srv.URL+"/v1", "--api-key-env", "NEL_TEST_NO_SUCH_KEY")
	if code != 2 || !strings.Contains(errs, "--api-key-env: $NEL_TEST_NO_SUCH_KEY is not set or empty") {
		t.Errorf("an unset variable: exit %d, stderr %q; want 2 naming it", code, errs)
	}
}
