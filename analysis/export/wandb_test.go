package export

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
)

// fakeWandb records what a W&B server is sent: the GraphQL requests and
// the file-stream requests, each checked for the shape the SDK sends.
type fakeWandb struct {
	t       *testing.T
	mu      sync.Mutex
	gql     []map[string]any
	streams map[string]map[string]any // path → body
}

func (f *fakeWandb) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if u, p, ok := r.BasicAuth(); !ok || u != "api" || p != "key" {
		w.WriteHeader(401)
		w.Write([]byte(`{"errors":[{"message":"user is not logged in"}]}`))
		return
	}
	var body map[string]any
	data, _ := io.ReadAll(r.Body)
	if r.Method != "POST" || r.Header.Get("Content-Type") != "application/json" || json.Unmarshal(data, &body) != nil {
		f.t.Errorf("%s %s: body %q, want a JSON POST", r.Method, r.URL.Path, data)
	}
	switch {
	case r.URL.Path == "/graphql":
		f.gql = append(f.gql, body)
		vars := body["variables"].(map[string]any)
		if !strings.Contains(body["query"].(string), "upsertBucket(input: {") {
			f.t.Errorf("query %q is not upsertBucket", body["query"])
		}
		for _, k := range []string{"config", "summaryMetrics"} {
			var v map[string]any
			if s, ok := vars[k].(string); !ok || json.Unmarshal([]byte(s), &v) != nil {
				f.t.Errorf("variable %s = %v, want a JSON string of an object", k, vars[k])
			}
		}
		json.NewEncoder(w).Encode(map[string]any{"data": map[string]any{"upsertBucket": map[string]any{
			"bucket":   map[string]any{"id": "UnVuOjE=", "name": vars["name"], "project": map[string]any{"name": vars["project"], "entity": map[string]any{"name": "team"}}},
			"inserted": len(f.gql) == 1,
		}}})
	case strings.HasSuffix(r.URL.Path, "/file_stream"):
		f.streams[r.URL.Path] = body
		w.Write([]byte(`{"exitcode": null, "limits": {}}`))
	default:
		f.t.Errorf("unexpected %s %s", r.Method, r.URL.Path)
		w.WriteHeader(404)
	}
}

func TestWandb(t *testing.T) {
	run, bundle := fixtureRun(t, 0.02)
	f := &fakeWandb{t: t, streams: map[string]map[string]any{}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	o := Options{Run: run, Dest: "wandb", Out: t.TempDir(), TrackingURI: srv.URL, Token: "key", Experiment: "evals"}
	ids, err := Export(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if len(ids) != 1 || !strings.HasPrefix(ids[0], "team/evals/") || len(ids[0]) != len("team/evals/")+32 {
		t.Fatalf("exported as %v, want team/evals/<32 hex>", ids)
	}
	vars := f.gql[0]["variables"].(map[string]any)
	if vars["project"] != "evals" || vars["displayName"] != "run" || "team/evals/"+vars["name"].(string) != ids[0] {
		t.Errorf("variables %v", vars)
	}
	if _, ok := vars["entity"]; ok {
		t.Errorf("entity sent without --entity: %v", vars["entity"])
	}
	var summary map[string]float64
	json.Unmarshal([]byte(vars["summaryMetrics"].(string)), &summary)
	if summary["gsm8k/pass@1"] != *bundle.Headline.Value || summary["gsm8k/ci_high"] != bundle.Headline.CLT.Hi || summary["gsm8k/n_items"] != 40 {
		t.Errorf("summary %v", summary)
	}
	var config map[string]map[string]any
	json.Unmarshal([]byte(vars["config"].(string)), &config)
	if config["nel.recipe_hash"]["value"] != "sha256:"+strings.Repeat("ab", 32) || config["gsm8k/repeats"]["value"] != "2" {
		t.Errorf("config %v", config)
	}
	stream := f.streams["/files/team/evals/"+vars["name"].(string)+"/file_stream"]
	if stream["complete"] != true || stream["exitcode"] != 0.0 {
		t.Errorf("file stream %v: want complete with exit code 0", stream)
	}
	// Again: the same run id, upserted; from inside the run folder too
	// (-o defaults to ., and a server export writes no file).
	o.Out = run
	again, err := Export(context.Background(), o)
	if err != nil || again[0] != ids[0] || f.gql[1]["variables"].(map[string]any)["name"] != vars["name"] {
		t.Errorf("second export %v, %v: want the same run %s", again, err, ids[0])
	}
	o.Token = "wrong"
	if _, err := Export(context.Background(), o); err == nil || !strings.Contains(err.Error(), "wandb upsertBucket: HTTP 401") || !strings.Contains(err.Error(), "user is not logged in") {
		t.Errorf("wrong key: %v", err)
	}
}
