package compiler

import (
	"encoding/json"
	"strconv"

	"github.com/nel-eval/nel/runtime/harness"
)

// vlmevalkit://DATASET runs VLMEvalKit's run.py in its image against the
// service's chat completions endpoint, through VLMEvalKit's own
// OpenAI-compatible API model (vlmeval.api.GPT4V: api_base, key,
// img_detail, system_prompt, temperature, max_tokens; other keyword
// arguments go into every request, which is how top_p reaches it). run.py
// takes a model by name only, from vlmeval.config.supported_VLM or from a
// --config file whose datasets must also name their class, so a short
// Python driver registers the model under vlmevalkitModel and runs run.py
// with --model and --data, as VLMEvalKit's own tools run it.
//
// What the driver adds, and why:
//   - the key comes from $NEL_HARNESS_API_KEY in memory, never from a file,
//     and is redacted from VLMEvalKit's log records (its API wrapper logs the
//     key it was given at INFO);
//   - max_problems keeps the first N rows of the dataset (NeMo Evaluator's
//     vlmevalkit environment does the same), since run.py has no limit;
//   - the judge is exact_matching: VLMEvalKit's default for MCQ datasets is
//     an OpenAI model that extracts answers, which would need a second
//     endpoint and key; nel refuses judges here rather than sending the
//     service's key to OpenAI.
//
// PRED_FORMAT=tsv makes predictions and per-item results TSV rather than
// .xlsx (vlmeval/smp/file.py); json is not used because VLMEvalKit's own
// evaluation reads a JSON prediction file back as a list, not a table.

// vlmevalkitModel is the name the model is registered under: VLMEvalKit
// names its output files <model>_<dataset>…, which nel-run ingest reads.
const vlmevalkitModel = harness.VLMEvalKitModel

// vlmevalkitJudge is run.py's --judge: answer extraction by rules only.
const vlmevalkitJudge = harness.VLMEvalKitJudge

// vlmevalkitScript runs the driver (the harness prelude has filled in
// nothing: the driver reads the URL and key from the environment itself).
// The prelude's exports of the key under OpenAI's names are undone: no
// VLMEvalKit judge may pick the service's key up.
const vlmevalkitScript = `unset OPENAI_API_KEY NVIDIA_API_KEY NEMO_API_KEY
export PRED_FORMAT=tsv EVAL_FORMAT=csv
exec python3 -c '` + vlmevalkitDriver + `' "${args[@]}"
`

// vlmevalkitDriver is the Python driver (no single quotes: it sits in
// single quotes in vlmevalkitScript).
const vlmevalkitDriver = `import functools, json, logging, os, runpy, sys
import vlmeval
root = os.path.dirname(os.path.dirname(os.path.abspath(vlmeval.__file__)))
run = os.path.join(root, "run.py")
if not os.path.isfile(run):
    sys.exit("nel: VLMEvalKit run.py is not beside the vlmeval package in " + root + ": use an image with a VLMEvalKit checkout installed by pip install -e (cluster.eval_image)")
c = json.load(open("` + harnessConfigFile + `"))
m = c["model"]
m["api_base"] = m["api_base"].replace("` + harnessURLRef + `", os.environ["NEL_HARNESS_URL"])
key = os.environ.get("NEL_HARNESS_API_KEY", "")
m["key"] = key
if key:
    make = logging.getLogRecordFactory()
    def redact(*a, **k):
        r = make(*a, **k)
        s = r.getMessage()
        if key in s:
            r.msg, r.args = s.replace(key, "***"), None
        return r
    logging.setLogRecordFactory(redact)
import vlmeval.api, vlmeval.config
vlmeval.config.supported_VLM[c["name"]] = functools.partial(vlmeval.api.GPT4V, **m)
if c.get("limit") is not None:
    import vlmeval.dataset.image_base as ib
    init = ib.ImageBaseDataset.__init__
    def limited(self, *a, **k):
        init(self, *a, **k)
        self.data = self.data.iloc[:c["limit"]]
    ib.ImageBaseDataset.__init__ = limited
sys.argv = [run] + sys.argv[1:]
runpy.run_path(run, run_name="__main__")`

// vlmevalkitArgv is run.py's command line (the driver puts run.py in
// front of it).
func vlmevalkitArgv(b *Benchmark, task string) []string {
	return []string{"--model", vlmevalkitModel, "--data", task, "--work-dir", harnessInside,
		"--judge", vlmevalkitJudge, "--api-nproc", strconv.Itoa(b.MaxConcurrent), "--retry", "3"}
}

// vlmevalkitConfig is the driver's config: the API model's keyword
// arguments (api_base with harnessURLRef; the key is added on the node)
// and the row limit.
func vlmevalkitConfig(r *Recipe, b *Benchmark, model string) (string, error) {
	m := vlmevalkitMethod(r, b)
	m["model"], m["retry"], m["verbose"] = model, 3, false
	m["api_base"] = harnessURLRef + "/chat/completions"
	cfg := map[string]any{"name": vlmevalkitModel, "model": m}
	if b.MaxProblems != nil {
		cfg["limit"] = *b.MaxProblems
	}
	out, err := json.MarshalIndent(cfg, "", "  ")
	return string(out), err
}

// vlmevalkitMethod are the API model's arguments that are methodology.
// image_detail auto is sent as "low": VLMEvalKit's wrapper accepts only
// low and high, and low is its default.
func vlmevalkitMethod(r *Recipe, b *Benchmark) map[string]any {
	detail := b.Solver.ImageDetail
	if detail == "" || detail == "auto" {
		detail = "low"
	}
	m := map[string]any{"img_detail": detail}
	if sp := effectiveSystemPrompt(b); sp != nil {
		m["system_prompt"] = *sp
	}
	g := EffectiveGeneration(r, b)
	if g.Temperature != nil {
		m["temperature"] = *g.Temperature
	}
	if g.TopP != nil {
		m["top_p"] = *g.TopP
	}
	if g.MaxTokens != nil {
		m["max_tokens"] = *g.MaxTokens
	}
	return m
}
