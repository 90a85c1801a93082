package compiler

import (
	"strings"
	"testing"
)

// TestBenchmarkNames: what a benchmark's name says nel runs is checked when
// the recipe loads, at the name's position.
func TestBenchmarkNames(t *testing.T) {
	const head = "services: m: {type: \"api\", url: \"https://h/v1/chat/completions\", model: \"m\"}\n"
	bench := func(fields string) string {
		return head + "benchmarks: [{" + fields + ", solver: {type: \"simple\", service: \"m\"}}]\n"
	}
	cases := []struct {
		name, src, want string
	}{
		{"built-in", bench(`name: "gsm8k"`), ""},
		{"misspelt", bench(`name: "gsm8kk"`),
			`r.cue:2:21: benchmarks[0].name: unknown benchmark "gsm8kk" (did you mean "gsm8k"?); built in: drop, gpqa, gsm8k, humaneval, ifeval, math500, mgsm, mmlu, mmlu_pro, simpleqa, triviaqa, xstest (nel list), or declare a benchmark of your own with byob (docs/byob.md)`},
		{"nothing close", bench(`name: "arena_hard"`), `benchmarks[0].name: unknown benchmark "arena_hard"; built in: drop,`},
		// data_path gives a built-in other data; it makes no benchmark of
		// a name nel does not know.
		{"name with data_path", bench(`name: "my_eval", params: data_path: "hf://org/mine"`),
			`benchmarks[0].name: unknown benchmark "my_eval"; built in: drop, gpqa, gsm8k, humaneval, ifeval, math500, mgsm, mmlu, mmlu_pro, simpleqa, triviaqa, xstest (nel list); params.data_path replaces a built-in benchmark's data, and a benchmark of your own is declared with byob: {dataset, prompt, target, scorer} (docs/byob.md)`},
		{"byob names its own", bench(`name: "my_eval", byob: {dataset: "hf://org/mine", prompt: "{q}", target: "a"}`), ""},
		// Every solver's benchmark name is resolved, as NeMo's
		// get_environment does: its configs' swebench-verified and
		// research-bench name no environment there either (KeyError at
		// run time), and the SWE-bench tasks are a playbook's harbor://
		// dataset. NeMo's own benchmarks nel lacks are left to the
		// solver's refusal (support.go).
		{"agentic name", head + "benchmarks: [{name: \"swebench-verified\", sandbox: {type: \"docker\"}, solver: {type: \"harbor\", service: \"m\", agent: \"terminus-2\"}}]\n",
			`r.cue:2:21: benchmarks[0].name: unknown benchmark "swebench-verified"; built in: drop, gpqa, gsm8k, humaneval, ifeval, math500, mgsm, mmlu, mmlu_pro, simpleqa, triviaqa, xstest (nel list), or declare a benchmark of your own with byob (docs/byob.md); NeMo Evaluator has no environment "swebench-verified" either (its get_environment raises KeyError "Unknown environment" when the job starts); its tasks are the Harbor dataset harbor://swebench-verified@1.0: write playbook: swebench_verified, or name: "harbor://swebench-verified@1.0"`},
		{"agentic name, underscores", head + "benchmarks: [{name: \"swebench_multilingual\", sandbox: {type: \"local\"}, solver: {type: \"tool_calling\", service: \"m\", sandbox_tools: true}}]\n",
			`benchmarks[0].name: unknown benchmark "swebench_multilingual"; built in: drop,`},
		{"agentic name, its playbook", head + "benchmarks: [{name: \"swebench_multilingual\", sandbox: {type: \"local\"}, solver: {type: \"tool_calling\", service: \"m\", sandbox_tools: true}}]\n",
			`; its tasks are the Harbor dataset harbor://swebench_multilingual@1.0: write playbook: swebench_multilingual, or name: "harbor://swebench_multilingual@1.0"`},
		{"name no one has", head + "benchmarks: [{name: \"research-bench\", sandbox: {type: \"docker\"}, solver: {type: \"tool_calling\", service: \"m\", sandbox_tools: true, response_mode: \"sandbox_artifact\"}}]\n",
			`r.cue:2:21: benchmarks[0].name: unknown benchmark "research-bench"; built in: drop, gpqa, gsm8k, humaneval, ifeval, math500, mgsm, mmlu, mmlu_pro, simpleqa, triviaqa, xstest (nel list), or declare a benchmark of your own with byob (docs/byob.md); NeMo Evaluator has no environment "research-bench" either (its get_environment raises KeyError "Unknown environment" when the job starts)`},
		{"NeMo's own, another solver", head + "benchmarks: [{name: \"terminal-bench-hard\", sandbox: {type: \"docker\"}, solver: {type: \"harbor\", service: \"m\", agent: \"terminus-2\"}}]\n", ""},
		{"tool_calling on a built-in", head + "benchmarks: [{name: \"gsm8k\", sandbox: {type: \"local\"}, solver: {type: \"tool_calling\", service: \"m\", sandbox_tools: true}}]\n", ""},
		{"python file", bench(`name: "benches/mine.py:qa"`), ""},
		{"unknown scheme", bench(`name: "lmeval://arc"`),
			`benchmarks[0].name: unknown benchmark source "lmeval://" (did you mean "lm-eval://"?); expected a built-in name (nel list) or one of lm-eval://TASK, skills://BENCHMARK, vlmevalkit://BENCHMARK, gym://HOST:PORT, harbor://DATASET, container://IMAGE#TASK, hf://ORG/NAME, file://PATH`},
		{"no task", bench(`name: "lm-eval://"`), `benchmarks[0].name: expected lm-eval://TASK, found "lm-eval://"`},
		{"vlmevalkit no task", bench(`name: "vlmevalkit://"`), `benchmarks[0].name: expected vlmevalkit://BENCHMARK, found "vlmevalkit://"`},
		{"container no task", bench(`name: "container://nvcr.io/x/y:1"`),
			`benchmarks[0].name: expected container://IMAGE#TASK (an image, then # and the harness's task), found "container://nvcr.io/x/y:1"`},
		{"container no image", bench(`name: "container://#ns_ifeval"`), `expected container://IMAGE#TASK (an image, then # and the harness's task), found "container://#ns_ifeval"`},
		{"harness task", bench(`name: "lm-eval://arc_challenge"`), ""},
		// Dataset specs are parsed as nel-run will parse them.
		{"hf spec", bench(`name: "gsm8k", params: data_path: "hf://openai/gsm8k?config=main&split=test"`), ""},
		{"hf spec unknown parameter", bench(`name: "gsm8k", params: data_path: "hf://openai/gsm8k?splt=test"`),
			`r.cue:2:49: benchmarks[0].params.data_path: dataset hf://openai/gsm8k?splt=test: unknown parameter "splt" (known: config, split, revision)`},
		{"hf spec without a name", bench(`name: "gsm8k", params: data_path: "hf://gsm8k"`),
			`benchmarks[0].params.data_path: dataset hf://gsm8k: want hf://org/name?config=&split=&revision=`},
		{"url without a file type", bench(`name: "gsm8k", params: data_path: "https://example.org/data"`),
			`benchmarks[0].params.data_path: dataset https://example.org/data: unknown file type "data"`},
		{"unknown data scheme", bench(`name: "gsm8k", params: data_path: "s3://bucket/gsm8k.jsonl"`),
			`benchmarks[0].params.data_path: dataset s3://bucket/gsm8k.jsonl: unknown scheme "s3://": expected a local file or folder, hf://ORG/NAME?config=&split=&revision=, or an https:// file URL`},
		{"byob dataset scheme", bench(`name: "mine", byob: {dataset: "gs://b/x.jsonl", prompt: "{q}", target: "a"}`),
			`benchmarks[0].byob.dataset: dataset gs://b/x.jsonl: unknown scheme "gs://"`},
	}
	l := newTestLoader(t)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := l.Load("r.cue", []byte(c.src), nil)
			switch {
			case c.want == "" && err != nil:
				t.Fatalf("unexpected error: %v", err)
			case c.want == "":
			case err == nil:
				t.Fatalf("no error, want %q", c.want)
			case !strings.Contains(err.Error(), c.want) || strings.Count(err.Error(), "\n") > 0:
				t.Errorf("error:\n%v\nwant one error containing\n%s", err, c.want)
			}
		})
	}
}

// TestPythonBenchmarkRefused: NeMo's path/file.py[:bench] loads (its
// configs validate) and compile refuses it with the reason.
func TestPythonBenchmarkRefused(t *testing.T) {
	src := "services: m: {type: \"api\", url: \"https://h/v1/chat/completions\", model: \"m\"}\n" +
		"benchmarks: [{name: \"benches/mine.py:qa\", solver: {type: \"simple\", service: \"m\"}}]\n"
	s, err := newTestLoader(t).Load("r.cue", []byte(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := Unsupported(s).Error()
	if want := "r.cue:2:21: benchmarks[0].name: not supported yet: a Python benchmark file"; !strings.Contains(got, want) {
		t.Errorf("Unsupported = %q, want %q", got, want)
	}
}
