package export

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/nel-eval/nel/internal/sharedtest"
	"github.com/nel-eval/nel/runtime/results"
)

// inspectSchema compiles Inspect's published EvalLog schema (draft
// 2020-12) at ref: "" for the log, "#/$defs/EvalSample" for one sample.
func inspectSchema(t *testing.T, ref string) *jsonschema.Schema {
	t.Helper()
	path := sharedtest.Reference(t, "inspect", "log-schema.json")
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat() // formats too, as ajv-formats checks them (../shared/reference/inspect/README.md)
	if err := c.AddResource("log-schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("log-schema.json" + ref)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, name string, data []byte) {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if err := s.Validate(inst); err != nil {
		t.Errorf("%s does not validate against Inspect's schema: %v", name, err)
	}
}

func exportInspect(t *testing.T, run, format string) []byte {
	t.Helper()
	out := t.TempDir()
	files, err := Export(context.Background(), Options{Run: run, Dest: "inspect", Out: out, Format: format})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{filepath.Join(out, "gsm8k."+format)}; !slices.Equal(files, want) {
		t.Fatalf("wrote %v, want %v", files, want)
	}
	data, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	return data
}

func TestInspectLogValidatesAndSaysWhatRan(t *testing.T) {
	run, bundle := fixtureRun(t, 0.02)
	data := exportInspect(t, run, "json")
	validate(t, inspectSchema(t, ""), "gsm8k.json", data)

	var log map[string]any
	if err := json.Unmarshal(data, &log); err != nil {
		t.Fatal(err)
	}
	eval := log["eval"].(map[string]any)
	if log["status"] != "success" || log["error"] != nil {
		t.Errorf("status %v, error %v: want success for a valid benchmark", log["status"], log["error"])
	}
	if eval["task"] != "gsm8k" || eval["model"] != "nel-sim" || eval["revision"].(map[string]any)["commit"] != "sha256:"+strings.Repeat("ab", 32) {
		t.Errorf("eval: task %v, model %v, revision %v", eval["task"], eval["model"], eval["revision"])
	}
	if ds := eval["dataset"].(map[string]any); ds["samples"] != 40.0 || len(ds["sample_ids"].([]any)) != 40 {
		t.Errorf("dataset %v: want 40 samples", ds)
	}
	if eval["config"].(map[string]any)["epochs"] != 2.0 {
		t.Errorf("config.epochs %v, want the 2 repeats", eval["config"].(map[string]any)["epochs"])
	}

	// accuracy is nel's headline, ci_low/ci_high its interval.
	score := log["results"].(map[string]any)["scores"].([]any)[0].(map[string]any)
	ms := score["metrics"].(map[string]any)
	value := func(name string) float64 { return ms[name].(map[string]any)["value"].(float64) }
	if value("accuracy") != *bundle.Headline.Value || value("ci_low") != bundle.Headline.CLT.Lo || value("ci_high") != bundle.Headline.CLT.Hi {
		t.Errorf("metrics %v, want the bundle's headline %v [%v, %v]", ms, *bundle.Headline.Value, bundle.Headline.CLT.Lo, bundle.Headline.CLT.Hi)
	}
	if score["scored_samples"] != float64(bundle.ScoredSamples) || score["unscored_samples"] != float64(bundle.Samples-bundle.ScoredSamples) {
		t.Errorf("scored %v / unscored %v, bundle %d of %d", score["scored_samples"], score["unscored_samples"], bundle.ScoredSamples, bundle.Samples)
	}

	// One sample per item × repeat, epochs 1 and 2, scores = the rewards.
	rows, _, err := results.ReadRows(filepath.Join(run, "gsm8k", "results.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	samples := log["samples"].([]any)
	if len(samples) != 80 || len(rows) != 80 {
		t.Fatalf("%d samples, %d rows: want 80 (40 items × 2 repeats)", len(samples), len(rows))
	}
	infra := 0
	for i, s := range samples {
		s := s.(map[string]any)
		r := rows[i]
		if s["id"] != r.ItemID || s["epoch"] != float64(r.Repeat+1) || s["target"] != r.Expected {
			t.Errorf("sample %d: id %v epoch %v target %v, row %s/%d/%s", i, s["id"], s["epoch"], s["target"], r.ItemID, r.Repeat, r.Expected)
		}
		if r.Outcome == "infra_error" {
			infra++
			if s["scores"] != nil || !strings.HasPrefix(s["error"].(map[string]any)["message"].(string), r.ErrorCategory+": ") {
				t.Errorf("infra_error sample %d: scores %v, error %v", i, s["scores"], s["error"])
			}
			continue
		}
		got := s["scores"].(map[string]any)["nel"].(map[string]any)
		if got["value"] != r.Reward || got["answer"] != r.Extracted {
			t.Errorf("sample %d: score %v, row reward %v extracted %q", i, got, r.Reward, r.Extracted)
		}
	}
	if infra != bundle.Validity.InfraErrors {
		t.Errorf("%d samples with errors, bundle counts %d infrastructure failures", infra, bundle.Validity.InfraErrors)
	}
}

// TestInspectLogShape checks that an export has every field the real logs
// Inspect wrote have, at every level a viewer reads.
func TestInspectLogShape(t *testing.T) {
	run, _ := fixtureRun(t, 0.02)
	var ours, real map[string]any
	if err := json.Unmarshal(exportInspect(t, run, "json"), &ours); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(sharedtest.Reference(t, "inspect", "log_read_sample.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &real); err != nil {
		t.Fatal(err)
	}
	paths := []string{"", "eval", "eval.dataset", "plan", "results", "results.scores.0", "results.scores.0.metrics.accuracy",
		"stats", "samples.0", "samples.0.output", "samples.0.output.choices.0", "samples.0.output.choices.0.message", "reductions.0"}
	for _, p := range paths {
		r, o := at(real, p), at(ours, p)
		for _, k := range sortedKeys(r) {
			if _, ok := o[k]; !ok {
				t.Errorf("%s.%s: in Inspect's log, not in nel's", p, k)
			}
		}
	}
}

// at walks a dotted path (object keys, array indexes) of a decoded log.
func at(v any, path string) map[string]any {
	for _, k := range strings.Split(path, ".") {
		switch x := v.(type) {
		case map[string]any:
			if k != "" {
				v = x[k]
			}
		case []any:
			v = x[0]
		}
	}
	m, _ := v.(map[string]any)
	return m
}

func TestInspectInvalidBenchmarkIsAnError(t *testing.T) {
	run, bundle := fixtureRun(t, 0.4)
	if !bundle.Validity.Invalid {
		t.Fatalf("fixture: %d of %d samples infra errors is not INVALID", bundle.Validity.InfraErrors, bundle.Samples)
	}
	data := exportInspect(t, run, "json")
	validate(t, inspectSchema(t, ""), "gsm8k.json", data)
	var log struct {
		Status string `json:"status"`
		Error  struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(data, &log); err != nil {
		t.Fatal(err)
	}
	if log.Status != "error" || log.Error.Message != "INVALID: "+bundle.Validity.Reason || bundle.Validity.Reason == "" {
		t.Errorf("status %q, error %q: want error with the reason %q", log.Status, log.Error.Message, bundle.Validity.Reason)
	}
}

func TestInspectEvalZip(t *testing.T) {
	run, _ := fixtureRun(t, 0.02)
	data := exportInspect(t, run, "eval")
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	logSchema, sampleSchema := inspectSchema(t, ""), inspectSchema(t, "#/$defs/EvalSample")
	var samples int
	names := map[string]bool{}
	for _, f := range zr.File {
		names[f.Name] = true
		rc, err := f.Open()
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			t.Fatal(err)
		}
		switch {
		case f.Name == "header.json":
			validate(t, logSchema, f.Name, body)
		case strings.HasPrefix(f.Name, "samples/"):
			samples++
			validate(t, sampleSchema, f.Name, body)
		}
	}
	// The entries Inspect's own .eval log has (its _journal/summaries/N
	// are the per-flush copies of summaries.json, which nel writes once).
	for _, want := range []string{"header.json", "summaries.json", "reductions.json", "_journal/start.json"} {
		if !names[want] {
			t.Errorf("no %s in the .eval zip (entries %v)", want, sortedKeys(names))
		}
	}
	if samples != 80 {
		t.Errorf("%d samples/ entries, want 80", samples)
	}
}

// TestStderr: Inspect's stderr over item means, by hand. Items a (1, 0),
// b (1, 1), c (0, 0; plus an infra_error sample, not scored): means 0.5,
// 1, 0; their mean 0.5, sample variance (0 + 0.25 + 0.25)/2 = 0.25, so
// stderr = 0.5/√3.
func TestStderr(t *testing.T) {
	rows := []results.Row{
		{ItemID: "a", Reward: 1}, {ItemID: "a", Reward: 0},
		{ItemID: "b", Reward: 1}, {ItemID: "b", Reward: 1},
		{ItemID: "c", Reward: 0}, {ItemID: "c", Reward: 0}, {ItemID: "c", Reward: 1, Outcome: "infra_error"},
	}
	if got, want := stderrOf(rows), 0.5/math.Sqrt(3); math.Abs(got-want) > 1e-12 {
		t.Errorf("stderr %v, want %v", got, want)
	}
	if got := stderrOf(rows[:2]); got != 0 {
		t.Errorf("stderr of one item %v, want 0", got)
	}
}

func TestRequestMessages(t *testing.T) {
	chat := requestMessages(`[{"role":"system","content":"Be brief."},{"role":"user","content":"2+2?"}]`)
	if len(chat) != 2 || chat[0].Role != "system" || chat[1].Content != "2+2?" {
		t.Errorf("chat request read as %+v", chat)
	}
	if in := inputOf(chat); len(in.([]inspectMessage)) != 2 {
		t.Errorf("input of a two-message request %v, want the messages", in)
	}
	prompt := requestMessages(`{"prompt":"Q: 2+2?\nA:"}`)
	if len(prompt) != 1 || prompt[0].Role != "user" || inputOf(prompt) != "Q: 2+2?\nA:" {
		t.Errorf("completions prompt read as %+v", prompt)
	}
}

// An agentic sample's turns become its messages: the assistant's tool
// calls (arguments that are no JSON object as Inspect's parse error), the
// tools' answers (a failed one with its error), and the log still
// validates.
func TestInspectAgentTurns(t *testing.T) {
	run, _ := fixtureRun(t, 0.02)
	// A copy: the shared fixture is only read.
	dir := filepath.Join(t.TempDir(), "run")
	if err := os.CopyFS(dir, os.DirFS(run)); err != nil {
		t.Fatal(err)
	}
	rows, meta, err := results.ReadRows(filepath.Join(dir, "gsm8k", "results.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	r := rows[0]
	turn := func(i int64, role, content string) results.Turn {
		return results.Turn{RecipeHash: r.RecipeHash, Benchmark: r.Benchmark, ItemID: r.ItemID, ItemIdx: r.ItemIdx, Repeat: r.Repeat,
			TurnIndex: i, Role: role, Content: content, ContentBytes: int64(len(content)), Outcome: "submitted"}
	}
	turns := []results.Turn{
		turn(0, "assistant", "Let me look."), turn(1, "tool", "no such file"), turn(2, "assistant", "Retrying."),
		turn(3, "assistant", "The answer is 7."),
		{ItemID: rows[2].ItemID, Repeat: rows[2].Repeat, Role: results.RoleNone, Outcome: "endpoint_error"},
	}
	turns[0].ToolCalls = `[{"id":"c1","name":"bash","arguments":"{\"cmd\":\"cat x\"}"}]`
	turns[1].ToolCallID, turns[1].ToolName, turns[1].IsError = "c1", "bash", true
	turns[2].ToolCalls = `[{"id":"c2","name":"bash","arguments":"cat x"}]`
	if err := results.WriteTurns(filepath.Join(dir, "gsm8k", "turns.parquet"), turns, meta); err != nil {
		t.Fatal(err)
	}
	data := exportInspect(t, dir, "json")
	validate(t, inspectSchema(t, ""), "gsm8k.json", data)
	var log struct {
		Samples []struct {
			Messages []map[string]any `json:"messages"`
		} `json:"samples"`
	}
	if err := json.Unmarshal(data, &log); err != nil {
		t.Fatal(err)
	}
	msgs := log.Samples[0].Messages
	roles := []string{}
	for _, m := range msgs {
		roles = append(roles, m["role"].(string))
	}
	if !slices.Equal(roles, []string{"user", "assistant", "tool", "assistant", "assistant"}) {
		t.Fatalf("roles %v: want the prompt, then the 4 turns", roles)
	}
	call := msgs[1]["tool_calls"].([]any)[0].(map[string]any)
	if call["id"] != "c1" || call["function"] != "bash" || call["arguments"].(map[string]any)["cmd"] != "cat x" || call["parse_error"] != nil {
		t.Errorf("first call %v", call)
	}
	if msgs[2]["tool_call_id"] != "c1" || msgs[2]["function"] != "bash" || msgs[2]["error"].(map[string]any)["message"] != "no such file" {
		t.Errorf("tool message %v", msgs[2])
	}
	bad := msgs[3]["tool_calls"].([]any)[0].(map[string]any)
	if pe, _ := bad["parse_error"].(string); !strings.Contains(pe, "not a JSON object: cat x") || len(bad["arguments"].(map[string]any)) != 0 {
		t.Errorf("call with bad arguments %v", bad)
	}
	if msgs[4]["content"] != "The answer is 7." {
		t.Errorf("last message %v", msgs[4])
	}
	// A sample without turns (rows[1]) and one that ended before its first
	// (rows[2], RoleNone) keep the prompt and the response.
	for _, i := range []int{1, 2} {
		if n := len(log.Samples[i].Messages); n != 2 {
			t.Errorf("sample %d: %d messages, want the prompt and the response", i, n)
		}
	}
}
