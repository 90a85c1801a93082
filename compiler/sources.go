package compiler

import "strings"

// SourceKind is one form of where a benchmark or its data comes from, and
// whether this nel runs it: nel list --sources prints these, and the
// compiler refuses the unsupported ones (Unsupported) from the same list.
type SourceKind struct {
	// Form is how it is written, e.g. "lm-eval://TASK".
	Form string `json:"form"`
	// Field is where a recipe writes it: "benchmarks[].name" or
	// "benchmarks[].params.data_path".
	Field     string `json:"field"`
	Supported bool   `json:"supported"`
	About     string `json:"about"`
	scheme    string // the URI scheme, "" for a name or a path
}

// Sources lists every benchmark and dataset source nel knows, NeMo
// Evaluator's included, supported or not.
func Sources() []SourceKind {
	const name, data = "benchmarks[].name", "benchmarks[].params.data_path"
	return []SourceKind{
		{Form: "NAME", Field: name, Supported: true, About: "a built-in benchmark (nel list)"},
		{Form: "lm-eval://TASK", Field: name, scheme: "lm-eval", Supported: true, About: "an lm-evaluation-harness task, run by lm_eval in its image; its samples become rows"},
		{Form: "skills://BENCHMARK", Field: name, scheme: "skills", Supported: true, About: "a NeMo Skills benchmark, run by ns eval in its image; its outputs become rows"},
		{Form: "vlmevalkit://BENCHMARK", Field: name, scheme: "vlmevalkit", Supported: true, About: "a VLMEvalKit dataset, run by its run.py in its image through its OpenAI-compatible API model (image_detail as img_detail, answers matched by rules); per-item rows where it writes a hit per item, else aggregate-only"},
		{Form: "gym://HOST:PORT", Field: name, scheme: "gym", Supported: true, About: "a running NeMo Gym resource server (nel serve, or Gym's own), or gym://cmd:COMMAND, one nel starts for the run: items from its /seed_session, nel calls the model, rewards from its /verify; gym://NAME, gym://module: and Gym's native protocol are refused"},
		{Form: "harbor://DATASET", Field: name, scheme: "harbor", Supported: true, About: "Harbor agentic tasks in $HARBOR_DATASETS_DIR/DATASET, by default harbor_datasets/DATASET beside the recipe, solved by the tool_calling solver"},
		{Form: "container://IMAGE#TASK", Field: name, scheme: "container", Supported: true, About: "a legacy eval-factory container, running its own loop; per-sample rows where it writes samples, else aggregate-only"},
		{Form: "hf://ORG/NAME", Field: name, scheme: "hf", About: "a Hub dataset as a benchmark of its own; give it to a built-in benchmark as params.data_path instead"},
		{Form: "file://PATH", Field: name, scheme: "file", About: "a local file as a benchmark of its own; give it to a built-in benchmark as params.data_path instead"},
		{Form: "byob: {dataset, prompt, target, scorer}", Field: "benchmarks[].byob", Supported: true, About: "a benchmark declared in the recipe (docs/byob.md)"},
		{Form: "PATH", Field: data, Supported: true, About: "a local file or folder, relative to the recipe: .jsonl, .ndjson, .json, .csv, .tsv, .tab, .parquet, each optionally .gz"},
		{Form: "hf://ORG/NAME?config=C&split=S&revision=R", Field: data, Supported: true, About: "a Hugging Face Hub dataset (nel lock pins its revision and digest)"},
		{Form: "https://URL", Field: data, Supported: true, About: "one data file downloaded over HTTPS"},
	}
}

// benchmarkSource is the SourceKind of a benchmark name written as a URI
// (scheme://…); ok is false for a plain name.
func benchmarkSource(benchName string) (k SourceKind, ok bool) {
	scheme, _, isURI := strings.Cut(benchName, "://")
	if !isURI {
		return SourceKind{}, false
	}
	for _, k := range Sources() {
		if k.scheme == scheme && k.Field == "benchmarks[].name" {
			return k, true
		}
	}
	return SourceKind{Form: scheme + "://", About: "a source nel does not know"}, true
}
