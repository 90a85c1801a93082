package harbor

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/sandbox"
	"github.com/nel-eval/nel/runtime/shellquote"
)

// Where the verifier writes its reward, in the sandbox.
const (
	rewardDir  = "/logs/verifier"
	rewardTxt  = rewardDir + "/reward.txt"
	rewardJSON = rewardDir + "/reward.json"
)

// ErrVerifier is wrapped by the errors of a verifier that ran and gave no
// usable reward: no reward file, an empty or unparsable one, a timeout.
// Such a sample is not the model's wrong answer — the task's tests failed
// to say anything — so Verify reports it as a failure.Error of category
// scorer_error, an infrastructure outcome, as Harbor reports it as an
// exception rather than a zero reward. (NeMo Evaluator falls back to the
// test's exit status; nel does not guess a reward the tests did not
// write.)
var ErrVerifier = errors.New("the verifier gave no reward")

// Details is what the verifier said besides the reward.
type Details struct {
	// Source is the file the reward was read from: "reward.json" or
	// "reward.txt".
	Source string `json:"source"`
	// Rewards are reward.json's named numbers ({"reward": r} for
	// reward.txt).
	Rewards map[string]float64 `json:"rewards"`
	// ExitCode is tests/test.sh's exit status.
	ExitCode int `json:"exit_code"`
	// Output is the end of the verifier's stdout and stderr.
	Output   string        `json:"output,omitempty"`
	Duration time.Duration `json:"duration_ns"`
}

// outputTail bounds the verifier output Details keeps.
const outputTail = 4096

// verifierPath is the PATH the verifier runs with: the sandbox's
// environment is empty, and Harbor's tests call bash, python3, uv… by name.
const verifierPath = "/root/.local/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// Verify runs the task's verifier in the session the agent worked in,
// after the agent stopped: tests/test.sh, with /tests mounted for it
// alone, within the task's verifier timeout, then reads the reward it
// wrote. A reward file the agent left is removed first, so that only the
// tests can write the reward.
//
// The error is a *failure.Error: scorer_error (wrapping ErrVerifier) when
// the verifier gave no usable reward, sandbox_error when the session could
// not run it. Either way the sample is an infrastructure failure, never a
// wrong answer.
func (t *Task) Verify(ctx context.Context, s sandbox.Session) (float64, Details, error) {
	var d Details
	prep := sandbox.Command{Argv: []string{"sh", "-c", "rm -rf " + rewardDir + " && mkdir -p " + rewardDir}, Timeout: time.Minute}
	if err := t.run(ctx, s, prep, "prepare "+rewardDir); err != nil {
		return 0, d, err
	}
	script := "bash /tests/test.sh"
	if t.Config.VerifierSetup != "" {
		script = "bash " + shellquote.Quote(t.Config.VerifierSetup) + " && " + script
	}
	env := map[string]string{"PATH": verifierPath, "HOME": "/tmp"}
	for k, v := range t.Config.VerifierEnv {
		env[k] = v
	}
	c := sandbox.Command{Argv: []string{"bash", "-c", script}, Env: env, Timeout: t.Config.VerifierTimeout, WithTests: true}
	what := "tests/test.sh"
	if t.Verifier != nil {
		c.Argv, c.WithTests, what = t.Verifier, false, "the verifier command"
	}
	res, err := s.Exec(ctx, c)
	if err != nil {
		return 0, d, t.sandboxErr("run "+what, err)
	}
	d.ExitCode, d.Duration = res.ExitCode, res.Duration
	d.Output = tail(string(res.Stdout)+string(res.Stderr), outputTail)
	if res.Limit == sandbox.LimitTimeout {
		return 0, d, t.verifierErr("%s did not finish within the task's verifier timeout (%s)", what, t.Config.VerifierTimeout)
	}
	reward, err := t.readReward(ctx, s, &d)
	switch {
	case err != errNoRewardFile:
	case t.Verifier == nil:
		err = t.verifierErr("tests/test.sh (exit status %d) wrote neither %s nor %s", d.ExitCode, rewardTxt, rewardJSON)
	default:
		d.Source, reward, err = "exit_status", 0, nil
		if res.ExitCode == 0 {
			reward = 1
		}
		d.Rewards = map[string]float64{"reward": reward}
	}
	return reward, d, err
}

// errNoRewardFile is readReward's error when the verifier wrote neither
// reward file: Verify says what that means for the task.
var errNoRewardFile = errors.New("no reward file")

// readReward reads reward.json (which wins, as in Harbor) or reward.txt;
// errNoRewardFile when there is neither.
func (t *Task) readReward(ctx context.Context, s sandbox.Session, d *Details) (float64, error) {
	for _, file := range []string{rewardJSON, rewardTxt} {
		res, err := s.Exec(ctx, sandbox.Command{Argv: []string{"cat", file}, Timeout: time.Minute})
		if err != nil {
			return 0, t.sandboxErr("read "+file, err)
		}
		if res.ExitCode != 0 {
			continue
		}
		text := strings.TrimSpace(string(res.Stdout))
		if text == "" {
			return 0, t.verifierErr("%s is empty", file)
		}
		d.Source = file[len(rewardDir)+1:]
		if file == rewardJSON {
			return t.jsonReward(text, d)
		}
		r, err := strconv.ParseFloat(text, 64)
		if err != nil || math.IsNaN(r) || math.IsInf(r, 0) {
			return 0, t.verifierErr("%s holds %q, not a number", file, clip(text, 80))
		}
		d.Rewards = map[string]float64{"reward": r}
		return r, nil
	}
	return 0, errNoRewardFile
}

// jsonReward reads reward.json: an object of named numbers, whose
// "reward" is the reward (or its one number, whatever its name).
func (t *Task) jsonReward(text string, d *Details) (float64, error) {
	dec := json.NewDecoder(bytes.NewReader([]byte(text)))
	var m map[string]float64
	if err := dec.Decode(&m); err != nil || dec.More() {
		return 0, t.verifierErr("%s is not an object of named numbers: %q", rewardJSON, clip(text, 80))
	}
	d.Rewards = m
	if r, ok := m["reward"]; ok {
		return r, nil
	}
	if len(m) == 1 {
		for _, r := range m {
			return r, nil
		}
	}
	names := make([]string, 0, len(m))
	for k := range m {
		names = append(names, k)
	}
	sort.Strings(names)
	return 0, t.verifierErr("%s has no \"reward\" among its numbers (%s)", rewardJSON, strings.Join(names, ", "))
}

// run runs a housekeeping command; a non-zero exit is the sandbox's
// failure, not the verifier's.
func (t *Task) run(ctx context.Context, s sandbox.Session, c sandbox.Command, what string) error {
	res, err := s.Exec(ctx, c)
	if err == nil && res.ExitCode != 0 {
		err = fmt.Errorf("exit status %d: %s", res.ExitCode, clip(strings.TrimSpace(string(res.Stderr)), 200))
	}
	if err != nil {
		return t.sandboxErr(what, err)
	}
	return nil
}

func (t *Task) sandboxErr(what string, err error) error {
	return &failure.Error{Category: failure.SandboxError, Err: fmt.Errorf("task %s: verifier: %s: %w", t.Name, what, err)}
}

func (t *Task) verifierErr(format string, args ...any) error {
	return &failure.Error{Category: failure.ScorerError, Err: fmt.Errorf("task %s: %w: %s", t.Name, ErrVerifier, fmt.Sprintf(format, args...))}
}

// tail is the last n bytes of s or fewer: a cut never splits a UTF-8
// character (the text goes into Parquet strings and messages).
func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := len(s) - n
	for i < len(s) && !utf8.RuneStart(s[i]) {
		i++
	}
	return "…" + s[i:]
}

// clip is the first n bytes of s or fewer, cut at a character boundary.
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
