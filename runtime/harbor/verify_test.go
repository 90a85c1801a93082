package harbor

import (
	"context"
	"errors"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/nel-eval/nel/internal/testenv"
	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/sandbox"
)

// solutions solve each smoke task by hand, as an agent's bash tool would
// (in /app); wrong are plausible wrong answers.
var solutions = map[string]struct{ right, wrong string }{
	"fix-off-by-one": {`sed -i 's/range(n)/range(1, n + 1)/' sum.py`, `sed -i 's/range(n)/range(n + 1)/; s/s += i/s += i + 1/' sum.py`},
	"write-greeting": {`printf 'Hello, Harbor!\n' > hello.txt`, `echo 'Hello, Harbor' > hello.txt`},
	"count-lines":    {`wc -l < data.txt > count.txt`, `wc -c < data.txt > count.txt`},
	"edit-json": {
		`python3 -c 'import json; c = json.load(open("config.json")); c.update(port=8080, debug=False); json.dump(c, open("config.json", "w"))'`,
		`sed -i 's/80/8080/' config.json`,
	},
	"sort-names": {`LC_ALL=C sort names.txt > sorted.txt`, `sort -f names.txt > sorted.txt`},
}

// openTask opens a local sandbox session (bubblewrap) on the task, as the
// shard does, closed when the test ends.
func openTask(t *testing.T, task *Task) sandbox.Session {
	t.Helper()
	sb, err := sandbox.Open(context.Background(), sandbox.Config{Type: "local", Timeout: time.Minute})
	if err != nil {
		testenv.Missing(t, testenv.LocalSandbox, err.Error())
	}
	t.Cleanup(func() { sb.Close() })
	s, err := sandbox.OpenSession(context.Background(), sb, sandbox.SessionSpec{App: task.App(), Tests: task.Tests(), Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func agent(t *testing.T, s sandbox.Session, script string) {
	t.Helper()
	res, err := s.Exec(context.Background(), sandbox.Command{Argv: []string{"bash", "-c", script}, Env: map[string]string{"PATH": "/usr/bin:/bin"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("the agent's %q: %v, %+v", script, err, res)
	}
}

// TestVerifySmoke runs every smoke task's verifier on /app as the task
// ships it, on a hand-solved /app and on a wrongly solved one.
func TestVerifySmoke(t *testing.T) {
	ds := loadSmoke(t, smoke)
	for i := range ds.Tasks {
		task := &ds.Tasks[i]
		sol, ok := solutions[task.Name]
		if !ok {
			t.Fatalf("no solution written for %s", task.Name)
		}
		for _, c := range []struct {
			what, script string
			want         float64
		}{{"unsolved", "", 0}, {"solved", sol.right, 1}, {"wrongly solved", sol.wrong, 0}} {
			s := openTask(t, task)
			if c.script != "" {
				agent(t, s, c.script)
			}
			reward, d, err := task.Verify(context.Background(), s)
			if err != nil {
				t.Errorf("%s %s: %v", task.Name, c.what, err)
				continue
			}
			if reward != c.want || d.ExitCode != 0 {
				t.Errorf("%s %s: reward %v (exit %d, output %q), want %v", task.Name, c.what, reward, d.ExitCode, d.Output, c.want)
			}
			wantSource := "reward.txt"
			if task.Name == "edit-json" {
				wantSource = "reward.json"
			}
			if d.Source != wantSource || d.Rewards["reward"] != reward {
				t.Errorf("%s %s: details %+v", task.Name, c.what, d)
			}
		}
	}
}

// TestVerifyNamedRewards reads edit-json's reward.json: every number is
// kept, "reward" is the reward.
func TestVerifyNamedRewards(t *testing.T) {
	task := &loadSmoke(t, smoke).Tasks[1]
	s := openTask(t, task)
	agent(t, s, `sed -i 's/"port": 80/"port": 8080/' config.json`) // debug still true
	reward, d, err := task.Verify(context.Background(), s)
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]float64{"reward": 0, "valid_json": 1}; reward != 0 || !reflect.DeepEqual(d.Rewards, want) {
		t.Errorf("reward %v, rewards %v; want 0 and %v", reward, d.Rewards, want)
	}
}

// TestAgentCannotWriteItsReward: a reward file the agent wrote under
// /logs/verifier before the verifier ran is not the reward.
func TestAgentCannotWriteItsReward(t *testing.T) {
	task := &loadSmoke(t, smoke).Tasks[4] // write-greeting
	s := openTask(t, task)
	agent(t, s, `mkdir -p /logs/verifier && echo 1 > /logs/verifier/reward.txt && echo '{"reward": 1}' > /logs/verifier/reward.json`)
	reward, d, err := task.Verify(context.Background(), s)
	if err != nil || reward != 0 || d.Source != "reward.txt" {
		t.Errorf("reward %v from %q (%v), want 0 from the verifier's reward.txt", reward, d.Source, err)
	}
}

// TestVerifierSeesTestsAgentDoesNot: /tests exists for the verifier only
// (the session mounts it per command that asks; this checks that Verify
// asks for it).
func TestVerifierSeesTestsAgentDoesNot(t *testing.T) {
	task := &loadSmoke(t, smoke).Tasks[3] // sort-names reads /tests/expected.txt
	s := openTask(t, task)
	res, err := s.Exec(context.Background(), sandbox.Command{Argv: []string{"test", "-e", "/tests/expected.txt"}})
	if err != nil || res.ExitCode == 0 {
		t.Fatalf("the agent sees /tests: %v %+v", err, res)
	}
	agent(t, s, solutions["sort-names"].right)
	if reward, _, err := task.Verify(context.Background(), s); err != nil || reward != 1 {
		t.Errorf("reward %v, %v: the verifier did not see /tests/expected.txt", reward, err)
	}
}

// TestVerifierFailures: a verifier that gives no usable reward is a
// scorer_error wrapping ErrVerifier (infrastructure, never a wrong
// answer), and a session that cannot run it a sandbox_error.
func TestVerifierFailures(t *testing.T) {
	cases := []struct {
		name, test, toml, want string
	}{
		{"no reward", "exit 3", "", "tests/test.sh (exit status 3) wrote neither /logs/verifier/reward.txt nor /logs/verifier/reward.json"},
		{"empty", ": > /logs/verifier/reward.txt", "", "/logs/verifier/reward.txt is empty"},
		{"not a number", "echo passed > /logs/verifier/reward.txt", "", `/logs/verifier/reward.txt holds "passed", not a number`},
		{"nan", "echo nan > /logs/verifier/reward.txt", "", `holds "nan", not a number`},
		{"json without reward", `echo '{"a": 1, "b": 0}' > /logs/verifier/reward.json`, "", `has no "reward" among its numbers (a, b)`},
		{"json not numbers", `echo '{"reward": "yes"}' > /logs/verifier/reward.json`, "", "is not an object of named numbers"},
		{"timeout", "sleep 30; echo 1 > /logs/verifier/reward.txt", "[verifier]\ntimeout_sec = 1\n", "within the task's verifier timeout (1s)"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		writeTask(t, filepath.Join(dir, "t"), map[string]string{"instruction.md": "x", "tests/test.sh": c.test + "\n", "task.toml": c.toml, "environment/f": "x"})
		ds, err := Load(context.Background(), "d", dir)
		if err != nil {
			t.Fatal(err)
		}
		task := &ds.Tasks[0]
		_, _, err = task.Verify(context.Background(), openTask(t, task))
		var fe *failure.Error
		if !errors.As(err, &fe) || fe.Category != failure.ScorerError || !errors.Is(err, ErrVerifier) || fe.Category.Outcome() != failure.InfraError {
			t.Errorf("%s: error %v, want a scorer_error wrapping ErrVerifier", c.name, err)
			continue
		}
		if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "task t: ") {
			t.Errorf("%s: error %q, want it to say %q", c.name, err, c.want)
		}
	}
	// One number in reward.json, whatever its name, is the reward.
	dir := t.TempDir()
	writeTask(t, filepath.Join(dir, "t"), map[string]string{"instruction.md": "x", "tests/test.sh": `echo '{"pass_rate": 0.75}' > /logs/verifier/reward.json`})
	ds, err := Load(context.Background(), "d", dir)
	if err != nil {
		t.Fatal(err)
	}
	if r, _, err := ds.Tasks[0].Verify(context.Background(), openTask(t, &ds.Tasks[0])); r != 0.75 || err != nil {
		t.Errorf("a lone named number: reward %v, %v; want 0.75", r, err)
	}

	_, _, err = ds.Tasks[0].Verify(context.Background(), brokenSession{})
	var fe *failure.Error
	if !errors.As(err, &fe) || fe.Category != failure.SandboxError || errors.Is(err, ErrVerifier) || !strings.Contains(err.Error(), "the sandbox is gone") {
		t.Errorf("a dead session: error %v, want a sandbox_error", err)
	}
}

// TestVerifierSetupAndEnv: [verifier].setup_script runs first, and
// [verifier].env reaches the tests.
func TestVerifierSetupAndEnv(t *testing.T) {
	dir := t.TempDir()
	writeTask(t, filepath.Join(dir, "t"), map[string]string{
		"instruction.md":            "x",
		"task.toml":                 "[verifier]\nsetup_script = \"/app/pre verify.sh\"\nenv = { WANT = \"ready\" }\n",
		"environment/pre verify.sh": "echo ready > /tmp/state\n",
		"tests/test.sh":             `[ "$(cat /tmp/state)" = "$WANT" ] && echo 1 > /logs/verifier/reward.txt || echo 0 > /logs/verifier/reward.txt`,
	})
	ds, err := Load(context.Background(), "d", dir)
	if err != nil {
		t.Fatal(err)
	}
	if r, d, err := ds.Tasks[0].Verify(context.Background(), openTask(t, &ds.Tasks[0])); r != 1 || err != nil {
		t.Errorf("reward %v, %v (output %q); want 1", r, err, d.Output)
	}
}

// TestClipTailRunes: cutting verifier output never splits a character.
func TestClipTailRunes(t *testing.T) {
	s := "ab€cd" // € is 3 bytes: a b [e2 82 ac] c d
	for n := 0; n <= len(s); n++ {
		if c := clip(s, n); !utf8.ValidString(c) || len(c) > n+len("…") {
			t.Errorf("clip(%q, %d) = %q", s, n, c)
		}
		if c := tail(s, n); !utf8.ValidString(c) || len(c) > n+len("…") {
			t.Errorf("tail(%q, %d) = %q", s, n, c)
		}
	}
	if got := clip(s, 3); got != "ab…" {
		t.Errorf("clip at the middle of €: %q, want ab…", got)
	}
	if got := tail(s, 4); got != "…cd" {
		t.Errorf("tail into the middle of €: %q, want …cd", got)
	}
}
