package export

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
)

func TestMLflowFileStore(t *testing.T) {
	run, bundle := fixtureRun(t, 0.02)
	out := t.TempDir()
	files, err := Export(context.Background(), Options{Run: run, Dest: "mlflow", Out: out})
	if err != nil {
		t.Fatal(err)
	}
	// mlruns/<experiment id>/<run id>, the experiment's meta beside it.
	runDir := files[0]
	expDir := filepath.Dir(runDir)
	if filepath.Dir(expDir) != filepath.Join(out, "mlruns") || !regexp.MustCompile(`^\d+$`).MatchString(filepath.Base(expDir)) ||
		!regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(filepath.Base(runDir)) {
		t.Fatalf("run at %s: want mlruns/<decimal experiment id>/<32 hex run id>", runDir)
	}
	expID, runID := filepath.Base(expDir), filepath.Base(runDir)
	read := func(rel ...string) string {
		data, err := os.ReadFile(filepath.Join(append([]string{runDir}, rel...)...))
		if err != nil {
			t.Fatal(err)
		}
		return string(data)
	}
	expMeta, err := os.ReadFile(filepath.Join(expDir, "meta.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"experiment_id: '" + expID + "'\n", "name: 'nel'\n", "lifecycle_stage: active\n", "artifact_location: 'file://" + expDir + "'\n"} {
		if !strings.Contains(string(expMeta), want) {
			t.Errorf("experiment meta.yaml lacks %q:\n%s", want, expMeta)
		}
	}
	meta := read("meta.yaml")
	for _, want := range []string{"run_id: " + runID + "\n", "run_uuid: " + runID + "\n", "experiment_id: '" + expID + "'\n",
		"status: 3\n", "lifecycle_stage: active\n", "artifact_uri: 'file://" + filepath.Join(runDir, "artifacts") + "'\n",
		"run_name: 'run'\n", "source_type: 4\n"} {
		if !strings.Contains(meta, want) {
			t.Errorf("run meta.yaml lacks %q:\n%s", want, meta)
		}
	}
	// A metric file is "timestamp value step" lines; the timestamp is the
	// run's end (the fixture's last shard ended 2026-01-01T01:01:00Z).
	const ended = 1767229260000
	line := func(v float64) string { return fmt.Sprintf("%d %s 0\n", ended, strconv.FormatFloat(v, 'g', -1, 64)) }
	metricWant := map[string]string{
		"pass_at_1": line(*bundle.Headline.Value), "ci_low": line(bundle.Headline.CLT.Lo), "ci_high": line(bundle.Headline.CLT.Hi),
		"n_items": line(40), "pass_at_2": line(*bundle.Metrics[1].Value),
	}
	if bundle.Metrics[1].Metric != "pass@2" {
		t.Fatalf("fixture's second metric is %s, want pass@2", bundle.Metrics[1].Metric)
	}
	for name, want := range metricWant {
		if got := read("metrics", "gsm8k", name); got != want {
			t.Errorf("metrics/gsm8k/%s = %q, want %q", name, got, want)
		}
	}
	if got := read("tags", "nel.recipe_hash"); got != "sha256:"+strings.Repeat("ab", 32) {
		t.Errorf("tags/nel.recipe_hash = %q", got)
	}
	if got := read("params", "model"); got != "nel-sim" {
		t.Errorf("params/model = %q", got)
	}
	if got := read("params", "gsm8k", "repeats"); got != "2" {
		t.Errorf("params/gsm8k/repeats = %q", got)
	}
	for _, a := range []string{"results.parquet", "eval.json"} {
		want, err := os.ReadFile(filepath.Join(run, "gsm8k", a))
		if err != nil {
			t.Fatal(err)
		}
		if got := read("artifacts", "gsm8k", a); got != string(want) {
			t.Errorf("artifacts/gsm8k/%s differs from the run's", a)
		}
	}
}

func TestMLflowInvalidBenchmarkHasNoScore(t *testing.T) {
	run, bundle := fixtureRun(t, 0.4)
	out := t.TempDir()
	files, err := Export(context.Background(), Options{Run: run, Dest: "mlflow", Out: out, Experiment: "evals"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(files[0], "metrics", "gsm8k", "pass_at_1")); err == nil {
		t.Error("an INVALID benchmark has a pass_at_1 metric")
	}
	tag, err := os.ReadFile(filepath.Join(files[0], "tags", "nel.invalid.gsm8k"))
	if err != nil || string(tag) != bundle.Validity.Reason {
		t.Errorf("tags/nel.invalid.gsm8k = %q (%v), want %q", tag, err, bundle.Validity.Reason)
	}
	meta, _ := os.ReadFile(filepath.Join(files[0], "meta.yaml"))
	if !strings.Contains(string(meta), "status: 4\n") {
		t.Errorf("run meta.yaml: want status 4 (FAILED)\n%s", meta)
	}
}

func TestMetricKey(t *testing.T) {
	for in, want := range map[string]string{"pass@1": "pass_at_1", "scorer:exact_match": "scorer_exact_match", "mean_reward": "mean_reward"} {
		if got := metricKey(in); got != want {
			t.Errorf("metricKey(%q) = %q, want %q", in, got, want)
		}
	}
}

// fakeMLflow is a tracking server that records each request and checks it
// against the shapes of MLflow's REST reference.
type fakeMLflow struct {
	t        *testing.T
	mu       sync.Mutex
	calls    []string
	runs     map[string]string // nel.export_id tag → run id
	batches  []map[string]any
	uploads  map[string][]byte
	updated  map[string]any
	nextRun  int
	expNames map[string]string
}

func newFakeMLflow(t *testing.T) (*fakeMLflow, *httptest.Server) {
	f := &fakeMLflow{t: t, runs: map[string]string{}, uploads: map[string][]byte{}, expNames: map[string]string{}}
	srv := httptest.NewServer(f)
	t.Cleanup(srv.Close)
	return f, srv
}

func (f *fakeMLflow) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, r.Method+" "+r.URL.Path)
	if r.Header.Get("Authorization") != "Bearer tok" {
		http.Error(w, `{"error_code":"UNAUTHENTICATED","message":"no token"}`, http.StatusUnauthorized)
		return
	}
	body, _ := io.ReadAll(r.Body)
	if strings.HasPrefix(r.URL.Path, "/api/2.0/mlflow-artifacts/artifacts/") && r.Method == "PUT" {
		f.uploads[strings.TrimPrefix(r.URL.Path, "/api/2.0/mlflow-artifacts/artifacts/")] = body
		w.Write([]byte("{}"))
		return
	}
	var req map[string]any
	if r.Method == "POST" {
		if r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(body, &req) != nil {
			f.t.Errorf("%s: body %q is not JSON", r.URL.Path, body)
		}
	}
	resp := f.answer(w, r, req)
	if resp != nil {
		json.NewEncoder(w).Encode(resp)
	}
}

// need fails the test unless req has each field with a value of the type
// MLflow's reference gives it.
func (f *fakeMLflow) need(endpoint string, req map[string]any, fields map[string]string) {
	for k, typ := range fields {
		v, ok := req[k]
		got := fmt.Sprintf("%T", v)
		if !ok || (typ == "string" && got != "string") || (typ == "number" && got != "float64") || (typ == "array" && got != "[]interface {}") {
			f.t.Errorf("%s: field %s = %v (%s), want a %s", endpoint, k, v, got, typ)
		}
	}
}

func (f *fakeMLflow) answer(w http.ResponseWriter, r *http.Request, req map[string]any) any {
	switch ep := strings.TrimPrefix(r.URL.Path, "/api/2.0/mlflow/"); ep {
	case "experiments/get-by-name":
		if id, ok := f.expNames[r.URL.Query().Get("experiment_name")]; ok {
			return map[string]any{"experiment": map[string]any{"experiment_id": id, "name": r.URL.Query().Get("experiment_name")}}
		}
		w.WriteHeader(404)
		return map[string]any{"error_code": "RESOURCE_DOES_NOT_EXIST", "message": "no such experiment"}
	case "experiments/create":
		f.need(ep, req, map[string]string{"name": "string"})
		f.expNames[req["name"].(string)] = "7"
		return map[string]any{"experiment_id": "7"}
	case "runs/search":
		f.need(ep, req, map[string]string{"experiment_ids": "array", "filter": "string"})
		m := regexp.MustCompile("^tags\\.`nel\\.export_id` = '([0-9a-f]{32})'$").FindStringSubmatch(req["filter"].(string))
		if m == nil {
			f.t.Errorf("runs/search filter %q", req["filter"])
			return map[string]any{}
		}
		if id, ok := f.runs[m[1]]; ok {
			return map[string]any{"runs": []any{map[string]any{"info": map[string]any{"run_id": id}}}}
		}
		return map[string]any{}
	case "runs/create":
		f.need(ep, req, map[string]string{"experiment_id": "string", "start_time": "number", "run_name": "string"})
		f.nextRun++
		id := fmt.Sprintf("run%d", f.nextRun)
		return map[string]any{"run": map[string]any{"info": map[string]any{"run_id": id, "artifact_uri": "mlflow-artifacts:/7/" + id + "/artifacts"}}}
	case "runs/log-batch":
		f.need(ep, req, map[string]string{"run_id": "string", "metrics": "array", "params": "array", "tags": "array"})
		f.batches = append(f.batches, req)
		for _, tg := range req["tags"].([]any) {
			if tg := tg.(map[string]any); tg["key"] == tagExportID {
				f.runs[tg["value"].(string)] = req["run_id"].(string)
			}
		}
		return map[string]any{}
	case "runs/update":
		f.need(ep, req, map[string]string{"run_id": "string", "status": "string", "end_time": "number"})
		f.updated = req
		return map[string]any{}
	}
	f.t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
	w.WriteHeader(404)
	return nil
}

func TestMLflowREST(t *testing.T) {
	run, bundle := fixtureRun(t, 0.02)
	f, srv := newFakeMLflow(t)
	o := Options{Run: run, Dest: "mlflow", Out: t.TempDir(), TrackingURI: srv.URL + "/", Token: "tok"}
	ids, err := Export(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || ids[0] != "run1" {
		t.Fatalf("exported as %v, want [run1]", ids)
	}
	wantCalls := []string{
		"GET /api/2.0/mlflow/experiments/get-by-name", "POST /api/2.0/mlflow/experiments/create",
		"POST /api/2.0/mlflow/runs/search", "POST /api/2.0/mlflow/runs/create", "POST /api/2.0/mlflow/runs/log-batch",
		"PUT /api/2.0/mlflow-artifacts/artifacts/7/run1/artifacts/gsm8k/eval.json",
		"PUT /api/2.0/mlflow-artifacts/artifacts/7/run1/artifacts/gsm8k/results.parquet",
		"POST /api/2.0/mlflow/runs/update",
	}
	if got := strings.Join(f.calls, "\n"); got != strings.Join(wantCalls, "\n") {
		t.Errorf("calls:\n%s\nwant:\n%s", got, strings.Join(wantCalls, "\n"))
	}
	// The metrics: key, value, timestamp and step each.
	metrics := map[string]float64{}
	for _, m := range f.batches[0]["metrics"].([]any) {
		m := m.(map[string]any)
		if _, ok := m["timestamp"].(float64); !ok || m["step"] != 0.0 {
			t.Errorf("metric %v: want a timestamp and step 0", m)
		}
		metrics[m["key"].(string)] = m["value"].(float64)
	}
	if metrics["gsm8k/pass_at_1"] != *bundle.Headline.Value || metrics["gsm8k/ci_low"] != bundle.Headline.CLT.Lo || metrics["gsm8k/n_items"] != 40 {
		t.Errorf("metrics %v", metrics)
	}
	parquet, _ := os.ReadFile(filepath.Join(run, "gsm8k", "results.parquet"))
	if !bytes.Equal(f.uploads["7/run1/artifacts/gsm8k/results.parquet"], parquet) {
		t.Error("the uploaded results.parquet differs from the run's")
	}
	if f.updated["status"] != "FINISHED" || f.updated["run_id"] != "run1" {
		t.Errorf("runs/update %v", f.updated)
	}

	// Again: the experiment and the run are found, nothing is logged twice.
	f.calls = nil
	ids, err = Export(context.Background(), o)
	if err != nil || len(ids) != 1 || ids[0] != "run1" {
		t.Fatalf("second export: %v, %v; want run1 again", ids, err)
	}
	if want := "GET /api/2.0/mlflow/experiments/get-by-name\nPOST /api/2.0/mlflow/runs/search"; strings.Join(f.calls, "\n") != want {
		t.Errorf("second export's calls:\n%s\nwant:\n%s", strings.Join(f.calls, "\n"), want)
	}
}

func TestMLflowRESTErrors(t *testing.T) {
	run, _ := fixtureRun(t, 0.02)
	_, srv := newFakeMLflow(t)
	_, err := Export(context.Background(), Options{Run: run, Dest: "mlflow", Out: t.TempDir(), TrackingURI: srv.URL, Token: "wrong"})
	if err == nil || !strings.Contains(err.Error(), "mlflow experiments/get-by-name: HTTP 401 UNAUTHENTICATED: no token") {
		t.Errorf("error %v, want the server's 401 named with its endpoint", err)
	}
}
