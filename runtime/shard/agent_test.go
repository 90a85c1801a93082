package shard_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/nel-eval/nel/internal/testenv"
	"github.com/nel-eval/nel/runtime/harbor"
	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/results"
	"github.com/nel-eval/nel/runtime/rundir"
	"github.com/nel-eval/nel/runtime/sandbox"
	"github.com/nel-eval/nel/runtime/shard"
	"github.com/nel-eval/nel/runtime/sim"
)

// agentTasks are four Harbor tasks, one per way a sample ends: "solve"
// is solved by a bash call, "miss" gets a wrong file (its verifier writes
// 0), "loop" never stops calling tools, and "silent" has a verifier that
// writes no reward. Each task's instruction holds its name, which the
// simulator's scripts match.
var agentTasks = map[string]string{
	"solve":  `echo 1 > /logs/verifier/reward.txt`,
	"miss":   `if [ "$(cat /app/out.txt)" = yes ]; then echo 1; else echo 0; fi > /logs/verifier/reward.txt`,
	"loop":   `echo 1 > /logs/verifier/reward.txt`,
	"silent": `exit 0`,
}

// writeAgentTasks writes agentTasks as a dataset under dir/harbor_datasets
// and returns the plan's pin of it.
func writeAgentTasks(t *testing.T, dir string) plan.HarborTasks {
	t.Helper()
	root := filepath.Join(dir, harbor.DefaultDatasetsDir, "mini")
	for name, verifier := range agentTasks {
		files := map[string]string{
			"instruction.md":       "Task " + name + ": write /app/out.txt.",
			"tests/test.sh":        "#!/bin/bash\nmkdir -p /logs/verifier\n" + verifier + "\n",
			"environment/seed.txt": "seed\n",
		}
		for f, text := range files {
			p := filepath.Join(root, name, f)
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(p, []byte(text), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	ds, err := harbor.Load(context.Background(), "mini", root)
	if err != nil {
		t.Fatal(err)
	}
	return plan.HarborTasks{Dataset: "mini", Dir: "harbor_datasets/mini", Digest: ds.Digest, Tasks: len(ds.Tasks)}
}

// agentScripts: "solve" and "silent" write yes, "miss" writes no, "loop"
// alternates two reads for ever.
func agentScripts() []sim.Script {
	write := func(s string) sim.ScriptCall {
		return sim.ScriptCall{Name: "bash", Arguments: json.RawMessage(fmt.Sprintf(`{"command": "echo %s > out.txt"}`, s))}
	}
	done := "done"
	answer := func(match, out string) sim.Script {
		return sim.Script{Match: "Task " + match + ":", Turns: []sim.ScriptTurn{{Calls: []sim.ScriptCall{write(out)}}, {Answer: &done}}}
	}
	return []sim.Script{
		answer("solve", "yes"), answer("miss", "no"), answer("silent", "yes"),
		{Match: "Task loop:", Endless: []sim.ScriptCall{
			{Name: "file_read", Arguments: json.RawMessage(`{"path": "/app/seed.txt"}`)},
			{Name: "bash", Arguments: json.RawMessage(`{"command": "ls"}`)},
		}},
	}
}

// agentPlan is a plan whose one benchmark is the tasks in recipeDir,
// solved by tool_calling against url in sandbox sb.
func agentPlan(url, recipeDir string, tasks plan.HarborTasks, sb *plan.Sandbox) *plan.Plan {
	zero := 0.0
	return &plan.Plan{
		PlanVersion: plan.Version, NelVersion: "test", ScoringVersion: "1",
		RecipeHash: "sha256:recipe", PlanHash: "sha256:agent", RecipeDir: recipeDir,
		OutputDir: "unused", Shards: 1,
		Services: []plan.Service{{Name: "sim", Type: "api", Protocol: "chat_completions", Model: "nel-sim", URL: url + "/v1/chat/completions"}},
		Benchmarks: []plan.Benchmark{{
			Key: "harbor://mini", Name: "harbor://mini", Dir: "harbor_mini", Hash: "sha256:bench",
			Solver: plan.Solver{Type: "tool_calling", Service: "sim", Generation: plan.Generation{Temperature: &zero},
				SandboxTools: true, MaxTurns: 4, ToolTimeout: 30},
			Repeats: 1, MaxConcurrent: 1, Timeout: 120,
			Sandbox: sb, Harbor: &tasks,
		}},
	}
}

// agentSim serves agentScripts and counts the chat requests.
func agentSim(t *testing.T) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	s, err := sim.New(sim.Config{Accuracy: 1, Scripts: agentScripts()})
	if err != nil {
		t.Fatal(err)
	}
	var n atomic.Int64
	h := s.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/chat/completions" {
			n.Add(1)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

// taskOf is the task a trajectory's request is of, by its instruction.
func taskOf(t results.Trajectory) string {
	for name := range agentTasks {
		if strings.Contains(t.Request, "Task "+name+":") {
			return name
		}
	}
	return ""
}

// readAgentShard reads shard 0's rows, trajectories and turns, the first
// two by task name, the turns by item.
func readAgentShard(t *testing.T, out string) (map[string]results.Row, map[string]results.Trajectory, map[string][]results.Turn) {
	t.Helper()
	s := rundir.Dir(out).Benchmark("harbor_mini").Shard(0, 1)
	rows, _, err := results.ReadRows(string(s))
	if err != nil {
		t.Fatal(err)
	}
	trajs, _, err := results.ReadTrajectories(s.Trajectories())
	if err != nil {
		t.Fatal(err)
	}
	turns, _, err := results.ReadTurns(s.Turns())
	if err != nil {
		t.Fatal(err)
	}
	byRow, byTraj, byTurn := map[string]results.Row{}, map[string]results.Trajectory{}, map[string][]results.Turn{}
	for i := range rows {
		name := taskOf(trajs[i])
		byRow[name], byTraj[name] = rows[i], trajs[i]
	}
	for _, tu := range turns {
		byTurn[tu.ItemID] = append(byTurn[tu.ItemID], tu)
	}
	return byRow, byTraj, byTurn
}

// Each task ends its own way, and the row, the outcome in turns.parquet
// and the failure category agree: solved and failed by its verifier are
// scored (1 and 0), the turn budget is the model's error (0), and a
// verifier that wrote no reward is an infrastructure failure, not a
// wrong answer.
func TestAgentOutcomes(t *testing.T) {
	o, _ := localAgent(t)
	runAgent(t, o)
	out := o.OutDir
	rows, trajs, turns := readAgentShard(t, out)
	want := map[string]struct {
		reward        float64
		category      string
		outcome       string
		agentOutcome  string
		modelTurns    int
		scoringMethod bool
	}{
		"solve":  {1, "", "scored", "solved", 2, true},
		"miss":   {0, "", "scored", "failed_verifier", 2, true},
		"loop":   {0, "turn_budget", "model_error", "turn_budget", 4, false},
		"silent": {0, "scorer_error", "infra_error", "infra_error", 2, true},
	}
	for name, w := range want {
		r := rows[name]
		if r.Reward != w.reward || r.ErrorCategory != w.category || r.Outcome != w.outcome {
			t.Errorf("%s: reward %v category %q outcome %q, want %v %q %q", name, r.Reward, r.ErrorCategory, r.Outcome, w.reward, w.category, w.outcome)
		}
		ts := turns[r.ItemID]
		assistant := 0
		for _, tu := range ts {
			if tu.Outcome != w.agentOutcome {
				t.Errorf("%s: turn %d outcome %q, want %q", name, tu.TurnIndex, tu.Outcome, w.agentOutcome)
			}
			if tu.Role == "assistant" {
				assistant++
			}
		}
		if assistant != w.modelTurns {
			t.Errorf("%s: %d model turns, want %d", name, assistant, w.modelTurns)
		}
		if got := strings.Contains(trajs[name].ScoringDetails, `"method":"harbor_verifier"`); got != w.scoringMethod {
			t.Errorf("%s: scoring details %q: verifier ran %v, want %v", name, trajs[name].ScoringDetails, got, w.scoringMethod)
		}
	}
	if msg := rows["silent"].ErrorMessage; !strings.Contains(msg, "wrote neither /logs/verifier/reward.txt nor /logs/verifier/reward.json") {
		t.Errorf("silent: error message %q", msg)
	}
	if msg := rows["loop"].ErrorMessage; !strings.Contains(msg, "max_turns (4) reached") {
		t.Errorf("loop: error message %q", msg)
	}
}

// A sandbox engine that cannot run here (docker without a daemon) makes
// every sample an infrastructure failure with one "none" turn row, and
// asks the model nothing.
func TestAgentSandboxUnavailable(t *testing.T) {
	t.Setenv("DOCKER_HOST", "unix://"+filepath.Join(t.TempDir(), "no-docker.sock"))
	dir := t.TempDir()
	srv, n := agentSim(t)
	p := agentPlan(srv.URL, dir, writeAgentTasks(t, dir), &plan.Sandbox{Type: "docker", Image: "python:3.12-slim", Timeout: 30})
	out := filepath.Join(dir, "out")
	if _, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "harbor://mini", Shard: 0, Of: 1, OutDir: out}); err != nil {
		t.Fatal(err)
	}
	rows, _, turns := readAgentShard(t, out)
	for name, r := range rows {
		if r.ErrorCategory != "sandbox_error" || r.Outcome != "infra_error" || r.Correct != nil || !strings.Contains(r.ErrorMessage, "sandbox") {
			t.Errorf("%s: category %q outcome %q correct %v message %q", name, r.ErrorCategory, r.Outcome, r.Correct, r.ErrorMessage)
		}
		ts := turns[r.ItemID]
		if len(ts) != 1 || ts[0].Role != results.RoleNone || ts[0].Outcome != "infra_error" {
			t.Errorf("%s: turns %+v, want one none row of outcome infra_error", name, ts)
		}
	}
	if len(rows) != len(agentTasks) {
		t.Errorf("%d rows, want %d", len(rows), len(agentTasks))
	}
	// The endpoint check (GET /v1/models) is all the model saw.
	if got := n.Load(); got != 0 {
		t.Errorf("%d chat requests, want none", got)
	}
}

// A shard stopped after two samples resumes from its journal: the two are
// not run again, and its turns file is the one an uninterrupted run
// writes (latencies aside).
func TestAgentResume(t *testing.T) {
	o, _ := localAgent(t)
	whole := o.OutDir
	runAgent(t, o)

	cut := whole + "-cut"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := o
	stopped.OutDir = cut
	stopped.Progress = func(pr shard.Progress) {
		if pr.Done == 2 {
			cancel()
		}
	}
	if _, err := shard.Run(ctx, stopped); err == nil || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("stopped shard: %v, want it interrupted", err)
	}
	o.OutDir = cut
	res := runAgent(t, o)
	if res.Resumed != 2 {
		t.Errorf("resumed %d samples, want 2", res.Resumed)
	}
	s := rundir.Shard.Turns
	a, _, err := results.ReadTurns(s(rundir.Dir(whole).Benchmark("harbor_mini").Shard(0, 1)))
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := results.ReadTurns(s(rundir.Dir(cut).Benchmark("harbor_mini").Shard(0, 1)))
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range [][]results.Turn{a, b} {
		for i := range ts {
			ts[i].LatencyMS = 0
		}
	}
	if !slices.Equal(a, b) {
		t.Errorf("resumed turns differ from an uninterrupted run's:\n%+v\n%+v", b, a)
	}
}

// localAgent is a shard of agentPlan in the local sandbox, writing under
// a folder of its own, and the simulator's chat request count.
func localAgent(t *testing.T) (shard.Options, *atomic.Int64) {
	t.Helper()
	needLocalSandbox(t)
	dir := t.TempDir()
	srv, n := agentSim(t)
	p := agentPlan(srv.URL, dir, writeAgentTasks(t, dir), &plan.Sandbox{Type: "local", Timeout: 30})
	return shard.Options{Plan: p, Benchmark: "harbor://mini", Shard: 0, Of: 1, OutDir: filepath.Join(dir, "out")}, n
}

// runAgent runs the shard o to completion.
func runAgent(t *testing.T, o shard.Options) *shard.Result {
	t.Helper()
	res, err := shard.Run(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func needLocalSandbox(t *testing.T) {
	t.Helper()
	sb, err := sandbox.Open(context.Background(), sandbox.Config{Type: "local"})
	if err != nil {
		testenv.Missing(t, testenv.LocalSandbox, err.Error())
	}
	sb.Close()
}

// --resume (RetryInfra) runs the infrastructure failure ("silent", whose
// verifier wrote no reward) again and keeps every other sample's turns as
// they were, read back from the shard's turns file.
func TestAgentRetryInfra(t *testing.T) {
	o, n := localAgent(t)
	runAgent(t, o)
	_, _, before := readAgentShard(t, o.OutDir)
	first := n.Load()
	o.RetryInfra = true
	res := runAgent(t, o)
	rows, _, after := readAgentShard(t, o.OutDir)
	// silent's two requests again, nothing else.
	if got := n.Load() - first; got != 2 || res.Resumed != 3 {
		t.Errorf("%d chat requests and %d samples kept, want 2 and 3", got, res.Resumed)
	}
	for name, r := range rows {
		if name == "silent" {
			if r.Attempts != 2 || r.Outcome != "infra_error" {
				t.Errorf("silent: attempts %d outcome %q, want 2 infra_error", r.Attempts, r.Outcome)
			}
			continue
		}
		if !slices.Equal(before[r.ItemID], after[r.ItemID]) || len(after[r.ItemID]) == 0 {
			t.Errorf("%s: turns changed by --resume:\n%+v\n%+v", name, after[r.ItemID], before[r.ItemID])
		}
	}
}

// gymServer is a resource server with one tool, lookup, answering
// {"found": "yes"}; it records the session ids its calls carry.
func gymServer(t *testing.T) (*httptest.Server, *[]string) {
	t.Helper()
	var sessions []string
	var mu sync.Mutex
	mux := http.NewServeMux()
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `{"openapi": "3.1.0", "paths": {"/lookup": {"post": {"summary": "Look a key up",
			"requestBody": {"content": {"application/json": {"schema": {"type": "object", "properties": {"key": {"type": "string"}}}}}}}}}}`)
	})
	mux.HandleFunc("POST /lookup", func(w http.ResponseWriter, r *http.Request) {
		var body struct {
			SessionID string `json:"session_id"`
		}
		json.NewDecoder(r.Body).Decode(&body)
		mu.Lock()
		sessions = append(sessions, body.SessionID)
		mu.Unlock()
		fmt.Fprint(w, `{"found": "yes"}`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv, &sessions
}

// resource_service offers the resource server's tools beside the sandbox
// tools: the model's lookup call reaches the server with the sample's
// session id, and its answer is the tool turn's content. A server that
// cannot be read is an infrastructure failure of every sample.
func TestAgentResourceTools(t *testing.T) {
	needLocalSandbox(t)
	dir := t.TempDir()
	tasks := writeAgentTasks(t, dir)
	done := "done"
	s, err := sim.New(sim.Config{Accuracy: 1, Scripts: []sim.Script{{Match: "Task ", Turns: []sim.ScriptTurn{
		{Calls: []sim.ScriptCall{{Name: "lookup", Arguments: json.RawMessage(`{"key": "k"}`)}}},
		{Answer: &done},
	}}}})
	if err != nil {
		t.Fatal(err)
	}
	model := httptest.NewServer(s.Handler())
	t.Cleanup(model.Close)
	gym, sessions := gymServer(t)
	for _, tc := range []struct{ name, url string }{{"up", gym.URL}, {"down", "http://127.0.0.1:1"}} {
		p := agentPlan(model.URL, dir, tasks, &plan.Sandbox{Type: "local", Timeout: 30})
		p.Services = append(p.Services, plan.Service{Name: "tools", Type: "gym", URL: tc.url})
		p.Benchmarks[0].Solver.ResourceService = "tools"
		out := filepath.Join(dir, tc.name)
		if _, err := shard.Run(context.Background(), shard.Options{Plan: p, Benchmark: "harbor://mini", Shard: 0, Of: 1, OutDir: out}); err != nil {
			t.Fatal(err)
		}
		rows, _, turns := readAgentShard(t, out)
		r := rows["solve"]
		if tc.name == "down" {
			if r.Outcome != "infra_error" || r.ErrorCategory != "api_error" || !strings.Contains(r.ErrorMessage, "resource_service tools: gym tools") {
				t.Errorf("down: outcome %q category %q message %q", r.Outcome, r.ErrorCategory, r.ErrorMessage)
			}
			continue
		}
		if r.Reward != 1 || r.Outcome != "scored" {
			t.Errorf("up: solve: reward %v outcome %q", r.Reward, r.Outcome)
		}
		ts := turns[r.ItemID]
		if len(ts) != 3 || ts[1].ToolName != "lookup" || ts[1].IsError || !strings.Contains(ts[1].Content, `"found": "yes"`) {
			t.Errorf("up: turns %+v, want the lookup call answered by the server", ts)
		}
		if !slices.Contains(*sessions, r.ItemID) || len(*sessions) != len(agentTasks) {
			t.Errorf("up: session ids %q, want each task's item id", *sessions)
		}
	}
}
