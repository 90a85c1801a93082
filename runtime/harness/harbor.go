package harness

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/nel-eval/nel/runtime/failure"
)

// Harbor is the Harbor CLI (`harbor run`) running a whole dataset with one
// of its agents (the recipe's harbor solver); its task is the dataset.
const Harbor = "harbor"

// HarborJob is the job folder, under the harness's folder (the CLI's jobs
// dir), that the compiled step names in the CLI's job config.
const HarborJob = "nel"

// harborTrial is the part of a trial's result.json that nel reads.
type harborTrial struct {
	TaskName       string `json:"task_name"`
	TrialName      string `json:"trial_name"`
	VerifierResult *struct {
		Rewards map[string]any `json:"rewards"`
	} `json:"verifier_result"`
	ExceptionInfo *struct {
		ExceptionType    string `json:"exception_type"`
		ExceptionMessage string `json:"exception_message"`
	} `json:"exception_info"`
	AgentResult *struct {
		InputTokens  int64 `json:"n_input_tokens"`
		OutputTokens int64 `json:"n_output_tokens"`
	} `json:"agent_result"`
	StartedAt  time.Time `json:"started_at"`
	FinishedAt time.Time `json:"finished_at"`
}

// ReadHarbor reads the trials of the job the Harbor CLI wrote under dir:
// one sample per trial folder (HarborJob/TRIAL/result.json), the item
// being the task, its attempts the repeats. The reward is what the task's
// verifier wrote ("reward", or the one number there is when it wrote
// another name); its other numbers are kept as scores. A trial with no verifier result is a
// failure, never a wrong answer: its exception says which (failure
// categories, harborFailure).
func ReadHarbor(dir string) (*Output, error) {
	job := filepath.Join(dir, HarborJob)
	ents, err := os.ReadDir(job)
	if err != nil {
		return nil, fmt.Errorf("the Harbor job folder: %w", err)
	}
	o := &Output{}
	for _, e := range ents {
		if !e.IsDir() {
			continue // the job's own config.json, result.json and log
		}
		rel := filepath.ToSlash(filepath.Join(HarborJob, e.Name(), "result.json"))
		s, err := readHarborTrial(filepath.Join(dir, rel))
		if errors.Is(err, fs.ErrNotExist) {
			// A trial the CLI did not finish (the job was killed): the
			// item has no row, and merge finds it missing.
			continue
		}
		if err != nil {
			return nil, err
		}
		o.Samples = append(o.Samples, s)
		o.Files = append(o.Files, rel)
	}
	if len(o.Samples) == 0 {
		return nil, fmt.Errorf("no trial result in %s", job)
	}
	harborRepeats(o.Samples)
	sortSamples(o.Samples)
	return o, nil
}

// harborRepeats numbers each task's trials (Harbor's attempts, the
// recipe's repeats) in the order of their folders' names, which Harbor
// makes unique per trial, and each task by its name's order: stable for
// the same files, whatever order the directory lists them in.
func harborRepeats(samples []Sample) {
	sort.SliceStable(samples, func(i, j int) bool { return samples[i].trial < samples[j].trial })
	ids := map[string]int64{}
	for _, s := range samples {
		ids[s.ItemID] = 0
	}
	for i, id := range slices.Sorted(maps.Keys(ids)) {
		ids[id] = int64(i)
	}
	next := map[string]int64{}
	for i := range samples {
		s := &samples[i]
		s.ItemIdx, s.Repeat = ids[s.ItemID], next[s.ItemID]
		next[s.ItemID]++
	}
}

func readHarborTrial(path string) (Sample, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Sample{}, err
	}
	var tr harborTrial
	if err := json.Unmarshal(raw, &tr); err != nil {
		return Sample{}, fmt.Errorf("%s: %w", path, err)
	}
	if tr.TaskName == "" {
		return Sample{}, fmt.Errorf("%s: no task_name", path)
	}
	// The whole result is the sample's record (timings, tokens, the
	// agent's and the environment's details).
	s := Sample{Task: "Agentic", ItemID: tr.TaskName, Scores: map[string]float64{}, Record: string(raw), trial: filepath.Base(filepath.Dir(path))}
	if a := tr.AgentResult; a != nil {
		s.PromptTokens, s.CompletionTokens = a.InputTokens, a.OutputTokens
	}
	if !tr.StartedAt.IsZero() && tr.FinishedAt.After(tr.StartedAt) {
		s.LatencyMS = float64(tr.FinishedAt.Sub(tr.StartedAt).Milliseconds())
	}
	if s.Turns, err = readATIF(filepath.Join(filepath.Dir(path), "agent", "trajectory.json")); err != nil {
		return Sample{}, err
	}
	if x := tr.ExceptionInfo; x != nil {
		// Why the trial failed, or what cut the agent short before the
		// verifier ran on what it left (e.g. the agent timed out).
		s.Response = x.ExceptionType + ": " + x.ExceptionMessage
	}
	if tr.VerifierResult == nil || len(tr.VerifierResult.Rewards) == 0 {
		s.Error = failure.SandboxError
		if tr.ExceptionInfo != nil {
			s.Error = harborFailure(tr.ExceptionInfo.ExceptionType)
		}
		return s, nil
	}
	reward, err := harborReward(tr.VerifierResult.Rewards)
	if err != nil {
		return Sample{}, fmt.Errorf("%s: verifier_result.rewards: %w", path, err)
	}
	s.Reward, s.Correct = reward, binary(reward)
	for k, v := range tr.VerifierResult.Rewards {
		if x, ok := number(v); ok {
			s.Scores[k] = x
		}
	}
	return s, nil
}

// harborReward is the verifier's reward: its "reward", or its only
// number.
func harborReward(rewards map[string]any) (float64, error) {
	if v, ok := rewards["reward"]; ok {
		x, ok := number(v)
		if !ok {
			return 0, fmt.Errorf("reward is %v, not a number", v)
		}
		return x, nil
	}
	if len(rewards) == 1 {
		for k, v := range rewards {
			if x, ok := number(v); ok {
				return x, nil
			}
			return 0, fmt.Errorf("%s is %v, not a number", k, v)
		}
	}
	return 0, fmt.Errorf("no \"reward\" among %s", strings.Join(slices.Sorted(maps.Keys(rewards)), ", "))
}

// harborFailure is the category of a trial that ended without a verifier
// result, by the exception Harbor recorded: the verifier's own failures
// (no reward file, an empty or unreadable one) are scorer errors, as
// when nel-run runs a task's verifier (runtime/harbor); timeouts are
// timeouts; the model's context and rate limits are theirs; anything
// else (the environment did not build or start, the agent crashed) is
// the sandbox's. None of them is a wrong answer.
func harborFailure(exception string) failure.Category {
	switch {
	case strings.HasPrefix(exception, "RewardFile"), exception == "VerifierOutputParseError":
		return failure.ScorerError
	case strings.Contains(exception, "Timeout"):
		return failure.Timeout
	case strings.Contains(exception, "ContextLength") || strings.Contains(exception, "ContextWindow"):
		return failure.ContextLength
	case strings.Contains(exception, "RateLimit"):
		return failure.RateLimit
	}
	return failure.SandboxError
}
