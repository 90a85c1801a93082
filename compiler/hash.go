package compiler

import (
	"encoding/json"
	"fmt"

	"cuelang.org/go/cue"
)

// ScoringVersion names the behaviour of nel's prompts, extractors and
// scorers. It is part of every recipe and benchmark hash: bump it whenever a
// change to the runtime can change a score, so that old and new numbers are
// never taken for the same methodology. 2: math500 by equivalence, mcq_robust
// for mmlu/gpqa/mmlu_pro, per-item GPQA shuffles, humaneval, ifeval, judges.
// 3: infrastructure failures are never scored (outcomes), math graders that
// agree with Math-Verify, NeMo-Skills and Minerva (inequalities, equations,
// lists, the last math segment, plain-text math), IFEval's language
// identification by whatlanggo.
const ScoringVersion = "3"

// Hashes are the three identities of a recipe (DESIGN §4).
type Hashes struct {
	Recipe     string            // methodology, model identity included
	Plan       string            // recipe hash + deployment
	Benchmarks map[string]string // per benchmark (by its index key), model identity excluded
	benchKeys  []string
}

// Explained is the canonical JSON each hash covers, for `nel hash --explain`.
type Explained struct {
	Recipe     []byte
	Plan       []byte
	Benchmarks [][]byte
}

// ComputeHashes derives the hashes of a validated recipe.
func ComputeHashes(s *Source) (Hashes, Explained, error) {
	var h Hashes
	var ex Explained
	r := s.Recipe

	benches := make([]any, len(r.Benchmarks))
	h.Benchmarks = map[string]string{}
	for i, b := range r.Benchmarks {
		m := benchmarkMethod(s, i)
		if s.Lock != nil {
			m["data"] = pinsMethod(s.dataPins[i])
		}
		c, err := Canonical(map[string]any{"nel_scoring_version": ScoringVersion, "benchmark": m})
		if err != nil {
			return h, ex, fmt.Errorf("hash benchmarks[%d]: %w", i, err)
		}
		key := BenchmarkKey(r, i)
		h.Benchmarks[key] = HashOf(c)
		h.benchKeys = append(h.benchKeys, key)
		ex.Benchmarks = append(ex.Benchmarks, c)

		withModel := map[string]any{}
		for k, v := range m {
			withModel[k] = v
		}
		withModel["model"] = modelIdentity(r.Services[b.Solver.Service])
		benches[i] = withModel
	}
	method := map[string]any{"nel_scoring_version": ScoringVersion, "benchmarks": benches}
	if s.Lock != nil {
		// Only a locked recipe has the key: an unlocked recipe's hash is
		// what it was before locks existed.
		method["lock"] = lockMethod(s.Lock)
	}
	rc, err := Canonical(method)
	if err != nil {
		return h, ex, fmt.Errorf("hash recipe: %w", err)
	}
	h.Recipe, ex.Recipe = HashOf(rc), rc

	full, err := Canonical(s.Value)
	if err != nil {
		return h, ex, fmt.Errorf("hash plan: %w", err)
	}
	deploy := map[string]any{
		"recipe_hash": h.Recipe,
		"recipe":      rawJSON(full),
		"pool_order":  poolOrder(s.Value),
	}
	if len(s.endpoints) > 0 {
		deploy["endpoints"] = s.endpoints
	}
	if dirs := harborDirs(s); dirs != nil {
		// Where the tasks are read is deployment (their content is in the
		// recipe hash); only a recipe with harbor:// benchmarks has the key.
		deploy["harbor_dirs"] = dirs
	}
	pc, err := Canonical(deploy)
	if err != nil {
		return h, ex, fmt.Errorf("hash plan: %w", err)
	}
	h.Plan, ex.Plan = HashOf(pc), pc
	return h, ex, nil
}

// BenchmarkKeys lists the benchmark keys in recipe order.
func (h Hashes) BenchmarkKeys() []string { return h.benchKeys }

type rawJSON []byte

func (r rawJSON) MarshalJSON() ([]byte, error) { return r, nil }

// modelIdentity is what says which model answered: the id sent in requests
// for an API, the weights (HF id or path) for a server nel starts. Served
// names, URLs and ports are deployment and stay out.
func modelIdentity(s *Service) map[string]any {
	if s == nil {
		return nil
	}
	model := s.Model
	if s.identity != "" {
		model = s.identity
	}
	return map[string]any{"model": model, "protocol": s.Protocol}
}

// judgeIdentity is a judge's model and how it samples.
func judgeIdentity(s *Service) map[string]any {
	m := modelIdentity(s)
	if m != nil {
		m["generation"] = s.Generation
		if ic := interceptorMethod(s); ic != nil {
			m["interceptors"] = ic
		}
	}
	return m
}

// benchmarkMethod is everything about one benchmark that can change its
// score except the evaluated model: what `nel compare` requires to match.
// Local data counts by its content digest, never by its path.
func benchmarkMethod(s *Source, i int) map[string]any {
	r, b := s.Recipe, s.Recipe.Benchmarks[i]
	m := map[string]any{
		"name":                 b.Name,
		"params":               dataHashParams(s, i),
		"repeats":              b.Repeats,
		"max_problems":         b.MaxProblems,
		"shuffle_seed":         b.ShuffleSeed,
		"fewshot":              b.Fewshot,
		"context_window":       b.ContextWindow,
		"timeout":              b.Timeout,
		"instruction_template": instructionMethod(s, i),
		"system_prompt":        effectiveSystemPrompt(b),
		"generation":           EffectiveGeneration(r, b),
		"solver":               solverMethod(r, b.Solver),
		"scoring":              scoringMethod(r, b),
		"sandbox":              sandboxMethod(r, b),
	}
	if b.Verifier != "" {
		m["verifier"] = judgeIdentity(r.Services[b.Verifier])
	}
	if ic := interceptorMethod(r.Services[b.Solver.Service]); ic != nil {
		// Only a benchmark whose solver's chain changes requests has the
		// key (ARCHITECTURE.md, "What the hashes cover").
		m["interceptors"] = ic
	}
	if g := gymServiceRef(r, b.Name); g != "" {
		// gym://SERVICE: the name says only which service; what it serves
		// is the methodology.
		m["gym_service"] = servedMethod(s, g)
	}
	if b.BYOB != nil {
		// Only a byob benchmark has the key, so the built-ins' hashes
		// are what they were before byob existed.
		m["byob"] = byobMethod(s, i)
	}
	if h := harnessMethod(r, b); h != nil {
		m["harness"] = h
	}
	if h := harborMethod(s, i); h != nil {
		// Only a harbor:// benchmark has the key (as byob above).
		m["harbor"] = h
	}
	return m
}

func effectiveSystemPrompt(b *Benchmark) *string {
	if b.Solver.SystemPrompt != nil {
		return b.Solver.SystemPrompt
	}
	return b.SystemPrompt
}

// EffectiveGeneration is what a benchmark's requests carry: the solver's
// service generation, overridden field by field by the benchmark's or the
// solver's own.
func EffectiveGeneration(r *Recipe, b *Benchmark) Generation {
	var g Generation
	if s := r.Services[b.Solver.Service]; s != nil && s.Generation != nil {
		g = *s.Generation
	}
	over := b.Solver.Generation
	if over == nil {
		over = b.Generation
	}
	if over == nil {
		return g
	}
	if over.Temperature != nil {
		g.Temperature = over.Temperature
	}
	if over.TopP != nil {
		g.TopP = over.TopP
	}
	if over.TopK != nil {
		g.TopK = over.TopK
	}
	if over.MaxTokens != nil {
		g.MaxTokens = over.MaxTokens
	}
	if over.Seed != nil {
		g.Seed = over.Seed
	}
	if over.Stop != nil {
		g.Stop = over.Stop
	}
	if over.FrequencyPenalty != nil {
		g.FrequencyPenalty = over.FrequencyPenalty
	}
	if over.PresencePenalty != nil {
		g.PresencePenalty = over.PresencePenalty
	}
	if over.ExtraBody != nil {
		merged := map[string]any{}
		for k, v := range g.ExtraBody {
			merged[k] = v
		}
		for k, v := range over.ExtraBody {
			merged[k] = v
		}
		g.ExtraBody = merged
	}
	return g
}

func solverMethod(r *Recipe, s Solver) map[string]any {
	m := map[string]any{
		"type":          s.Type,
		"image_detail":  s.ImageDetail,
		"sandbox_tools": s.SandboxTools,
	}
	if s.Type == "tool_calling" {
		// Only a tool_calling solver has these keys, so that the other
		// solvers' hashes are what they were before it existed. The
		// budgets and the response decide the score; so do the tools
		// offered: the sandbox's (sandbox_tools above) and the gym
		// environment's, known by its image or its URL (the tools are
		// what that server lists).
		m["max_turns"] = s.MaxTurns
		m["tool_timeout"] = s.ToolTimeout
		m["max_output_chars"] = s.MaxOutputChars
		m["response_mode"] = s.ResponseMode
		m["resource_service"] = nil
		if g := r.Services[s.ResourceService]; g != nil {
			m["resource_service"] = map[string]any{"type": g.Type, "image": g.Image, "url": g.URL}
		}
	}
	if s.Type == "openclaw" {
		openClawMethod(m, s)
	}
	return m
}

func scoringMethod(r *Recipe, b *Benchmark) map[string]any {
	metrics := make([]any, len(b.Scoring.Metrics))
	for i, m := range b.Scoring.Metrics {
		x := map[string]any{
			"type": m.Type, "name": m.Name,
		}
		if m.Type == "judge" {
			x["judge"] = judgeIdentity(r.Services[m.Service])
			x["rubric"] = m.Rubric
			// rubric_file counts by its content, never by its path.
			if m.RubricText != "" {
				x["rubric_file_content"] = m.RubricText
			}
			x["system_prompt"] = m.SystemPrompt
			x["max_score"] = m.MaxScore
			x["swap_check"] = m.SwapCheck
			x["reference_free"] = m.ReferenceFree
			x["temperature"] = m.Temperature
			x["max_tokens"] = m.MaxTokens
		}
		if m.Command != "" {
			x["command"] = m.Command
		}
		metrics[i] = x
	}
	return map[string]any{
		"include_defaults": b.Scoring.IncludeDefaults,
		"primary":          b.Scoring.Primary,
		"metrics":          metrics,
	}
}

// sandboxMethod keeps what changes how code runs (image, limits) and drops
// where it runs (node pool, slots, concurrency).
func sandboxMethod(r *Recipe, b *Benchmark) map[string]any {
	sb := resolveSandbox(r, b)
	if sb == nil || sb.Type == "none" {
		return nil
	}
	m := map[string]any{
		"image":   sb.Image,
		"memory":  sb.Memory,
		"cpus":    sb.Cpus,
		"timeout": sb.Timeout,
		"network": sb.Network,
	}
	if sb.ImageTemplate != "" {
		// Each task's environment; only a sandbox with one has the key.
		m["image_template"] = sb.ImageTemplate
	}
	return m
}

// resolveSandbox returns a benchmark's sandbox, named or inline; nil for none.
func resolveSandbox(r *Recipe, b *Benchmark) *Sandbox {
	switch sb := b.Sandbox.(type) {
	case string:
		return r.Sandboxes[sb]
	case map[string]any:
		// An inline sandbox was validated as a struct; re-decode it.
		var out Sandbox
		if b, err := json.Marshal(sb); err == nil {
			_ = json.Unmarshal(b, &out)
		}
		return &out
	}
	return nil
}

// poolOrder lists node pools in the order the recipe declares them: it
// decides het-job component numbering, so the plan hash covers it.
func poolOrder(v cue.Value) []string {
	it, err := v.LookupPath(cue.ParsePath("cluster.node_pools")).Fields()
	if err != nil {
		return nil
	}
	var out []string
	for it.Next() {
		out = append(out, it.Selector().Unquoted())
	}
	return out
}

// BenchmarkKey names a benchmark uniquely within a recipe: its name, with
// "#2", "#3" … for later repeats of the same name.
func BenchmarkKey(r *Recipe, i int) string {
	n := 1
	for _, b := range r.Benchmarks[:i] {
		if b.Name == r.Benchmarks[i].Name {
			n++
		}
	}
	if n == 1 {
		return r.Benchmarks[i].Name
	}
	return fmt.Sprintf("%s#%d", r.Benchmarks[i].Name, n)
}
