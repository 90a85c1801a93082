package compiler

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"
)

// Payloads that do something if a shell ever reads them as code, or end a
// heredoc or a comment early.
var injPayloads = []string{
	`'`, `"`, `$(touch PWNED)`, "`touch PWNED`", `; touch PWNED`, `&& touch PWNED`,
	`| touch PWNED`, "\ntouch PWNED\n", `#`, `\`, `${IFS}`, "\nNEL_PLAN_EOF\n", "NEL_PLAN_EOF",
	`'\''`, `*`, `~`, `!`, `{a,b}`, `%`, "ünïcødé ✓ 世界 \u202e",
}

// payloadSet renders payloads into field values; tag names the field a
// value was written to, so a value that lands in the wrong place is
// recognized.
type payloadSet []string

func (p payloadSet) hostile(tag string) string {
	return tag + ": " + strings.Join(p, " ") + " end"
}

// hostileLine is hostile without line breaks, for #SBATCH values, which
// cannot carry one (a newline is refused; see TestInjectSbatchNewline).
func (p payloadSet) hostileLine(tag string) string {
	return strings.NewReplacer("\n", " ", "\r", " ").Replace(p.hostile(tag))
}

// hostileNoRef is hostile without "${": extra_env and container_env values
// are either a whole ${VAR} reference or plain text (a partial ${VAR} is
// refused; see TestInjectExtraEnvPartialRef and TestUnsupportedEnvRefs).
func (p payloadSet) hostileNoRef(tag string) string {
	return strings.ReplaceAll(p.hostile(tag), "${", "$ {")
}

// injRecipe is the recipe of TestInjectScript: every string that reaches
// the script or the plan carries the payloads.
type injRecipe struct {
	procCommand, vllmExtraArgs, procMounts, vllmMounts, clusterMounts []string
	vllmModel, vllmServed, procImage, vllmImage, procModel, health    string
	account, partition, poolPartition, comment, constraint            string
	benchName, systemPrompt, outDir                                   string
	params                                                            map[string]string
	procEnv, vllmEnv, clusterEnv                                      map[string]string
}

func newInjRecipe(payloads []string) injRecipe {
	p := payloadSet(payloads)
	hostile, hostileLine, hostileNoRef := p.hostile, p.hostileLine, p.hostileNoRef
	injPayloads := payloads
	return injRecipe{
		procCommand:   append([]string{"fake server " + hostile("argv0"), hostile("argv1"), ""}, injPayloads...),
		vllmExtraArgs: append([]string{hostile("extra_args"), "--flag=" + hostile("flag")}, injPayloads...),
		procMounts:    []string{"/data:/data", hostile("proc_mount")},
		vllmMounts:    []string{hostile("vllm_mount")},
		clusterMounts: []string{hostile("cluster_mount")},
		vllmModel:     hostile("model"),
		vllmServed:    hostile("served"),
		procImage:     hostile("proc_image"),
		vllmImage:     hostile("vllm_image"),
		procModel:     hostile("proc_model"),
		health:        "/health" + hostile("health"),
		account:       hostileLine("account"),
		partition:     hostileLine("partition"),
		poolPartition: hostileLine("pool partition hetjob"),
		comment:       hostileLine("comment"),
		constraint:    hostileLine("constraint"),
		benchName:     hostile("bench"),
		systemPrompt:  hostile("system_prompt"),
		outDir:        "out/" + strings.ReplaceAll(hostile("dir"), "\n", "/"),
		// A dataset spec is parsed when the recipe is loaded (a hostile
		// one is refused there), so the hostile benchmark is a byob one:
		// its name is the recipe's own, and its params go to the plan.
		params: map[string]string{hostile("param key"): hostile("param value")},
		procEnv: map[string]string{
			"PROC_PLAIN":   hostileNoRef("proc_env"),
			"PROC_DEFAULT": "${NEL_INJ_UNSET:-" + strings.NewReplacer("}", ")", "${", "$ {").Replace(hostile("default")) + "}",
			"PROC_FROM":    "${NEL_INJ_SET}",
		},
		vllmEnv:    map[string]string{"VLLM_PLAIN": hostileNoRef("vllm_env")},
		clusterEnv: map[string]string{"CLUSTER_PLAIN": hostileNoRef("cluster_env")},
	}
}

// injSetEnv is the value of NEL_INJ_SET in the job's environment.
var injSetEnv = "set: $(touch PWNED) `touch PWNED` '\n; touch PWNED"

func (r injRecipe) cue() string {
	q := strconv.Quote
	list := func(xs []string) string {
		var qs []string
		for _, x := range xs {
			qs = append(qs, q(x))
		}
		return "[" + strings.Join(qs, ", ") + "]"
	}
	obj := func(m map[string]string) string {
		var kv []string
		for _, k := range sortedKeys(m) {
			kv = append(kv, q(k)+": "+q(m[k]))
		}
		return "{" + strings.Join(kv, ", ") + "}"
	}
	return `
services: {
	proc: {
		type: "process"
		command: ` + list(r.procCommand) + `
		port: 8123
		model: ` + q(r.procModel) + `
		health_path: ` + q(r.health) + `
		image: ` + q(r.procImage) + `
		extra_env: ` + obj(r.procEnv) + `
		container_mounts: ` + list(r.procMounts) + `
	}
	vllm: {
		type: "vllm"
		model: ` + q(r.vllmModel) + `
		served_model_name: ` + q(r.vllmServed) + `
		extra_args: ` + list(r.vllmExtraArgs) + `
		extra_env: ` + obj(r.vllmEnv) + `
		image: ` + q(r.vllmImage) + `
		container_mounts: ` + list(r.vllmMounts) + `
		depends_on: ["proc"]
	}
	api: {type: "api", url: "https://api.example.com/v1/chat/completions", model: "m", api_key: "${NEL_INJ_KEY}"}
}
benchmarks: [{
	name: ` + q(r.benchName) + `
	system_prompt: ` + q(r.systemPrompt) + `
	params: ` + obj(r.params) + `
	byob: {dataset: "hf://org/data", prompt: "{question}", target: "answer"}
	solver: {type: "simple", service: "vllm"}
}, {
	name: "gsm8k"
	solver: {type: "simple", service: "api"}
}]
cluster: {
	type: "slurm"
	account: ` + q(r.account) + `
	partition: ` + q(r.partition) + `
	sbatch_comment: ` + q(r.comment) + `
	sbatch_extra_flags: {constraint: ` + q(r.constraint) + `, exclusive: true}
	container_mounts: ` + list(r.clusterMounts) + `
	container_env: ` + obj(r.clusterEnv) + `
	node_pools: gpu: {partition: ` + q(r.poolPartition) + `}
}
output: dir: ` + q(r.outDir) + `
`
}

const injRecipePath = "rec $(touch PWNED)\ntouch PWNED\n'`x`.cue"

func loadCUE(t *testing.T, path, src string) (*Source, error) {
	t.Helper()
	l, err := NewLoader()
	if err != nil {
		t.Fatal(err)
	}
	// ${VAR} is expanded when a recipe loads (envexpand.go). The payload
	// ${IFS} is meant to reach the script as it is written, so here IFS
	// holds its own reference text (a value is never expanded again).
	l.LookupEnv = func(name string) (string, bool) {
		if name == "IFS" {
			return "${IFS}", true
		}
		return os.LookupEnv(name)
	}
	return l.Load(path, []byte(src), nil)
}

// writeExe writes an executable file.
func writeExe(t *testing.T, path, text string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(text), 0o755); err != nil {
		t.Fatal(err)
	}
}

func nulFields(b []byte) []string {
	b = bytes.TrimSuffix(b, []byte{0})
	if len(b) == 0 {
		return nil
	}
	return strings.Split(string(b), "\x00")
}

func TestInjectScript(t *testing.T) { checkInjectScript(t, injPayloads) }

// FuzzInjectScript feeds arbitrary strings, as payloads, into every field
// of the recipe that reaches the compiled script, runs the script with
// fake SLURM commands, and checks that nothing executes and every value
// arrives unchanged.
func FuzzInjectScript(f *testing.F) {
	for _, p := range injPayloads {
		f.Add(p)
	}
	f.Fuzz(func(t *testing.T, payload string) {
		// CUE strings are UTF-8 text; NUL cannot reach a shell at all.
		if !utf8.ValidString(payload) || strings.ContainsRune(payload, 0) {
			t.Skip()
		}
		// Other ${VAR} references are expanded at load time (and $${VAR}
		// kept for the node), which their own tests cover.
		if strings.Contains(strings.ReplaceAll(payload, "${IFS}", ""), "${") || strings.Contains(payload, "$${") {
			t.Skip()
		}
		checkInjectScript(t, []string{payload})
	})
}

func checkInjectScript(t *testing.T, payloads []string) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	for _, tool := range []string{"sha256sum", "mktemp", "mkdir", "cat", "mv", "head", "cp", "rm", "sleep"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("no %s", tool)
		}
	}
	r := newInjRecipe(payloads)
	s, err := loadCUE(t, injRecipePath, r.cue())
	if err != nil {
		t.Fatalf("load: %v\n%s", err, r.cue())
	}

	root := t.TempDir()
	bin := filepath.Join(root, "fake bin")
	rec := filepath.Join(root, "rec")
	work := filepath.Join(root, "work")
	nelDir := filepath.Join(root, "nel's $(dir)")
	for _, d := range []string{bin, rec, work, nelDir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	envNames := []string{"PROC_PLAIN", "PROC_DEFAULT", "PROC_FROM", "VLLM_PLAIN", "CLUSTER_PLAIN",
		"VLLM_API_KEY", "NEL_SERVICE_VLLM_API_KEY", "NEL_SERVICE_PROC_API_KEY", "NEL_SERVICE_PROC_HOST"}
	// The fake srun records its environment, then its argv (the argv file
	// marks a complete record); the fake wait-ready waits for that record,
	// so the script cannot end and kill a server before it is recorded.
	writeExe(t, filepath.Join(bin, "srun"), `#!/bin/bash
f="$NEL_TEST_REC/srun.$$"
for n in `+strings.Join(envNames, " ")+`; do
  if [ -n "${!n+x}" ]; then printf '%s=%s\0' "$n" "${!n}"; fi
done > "$f.env"
printf '%s\0' "$@" > "$f.argv.tmp" && mv "$f.argv.tmp" "$f.argv"
exec sleep 10
`)
	writeExe(t, filepath.Join(bin, "scontrol"), "#!/bin/bash\necho node1\n")
	// node1's address, as a site's resolver would give it (getent ahostsv4
	// prints a line per socket type).
	writeExe(t, filepath.Join(bin, "getent"), "#!/bin/bash\n[ \"$1 $2\" = \"ahostsv4 node1\" ] || exit 2\nprintf '10.9.8.7        STREAM node1\\n10.9.8.7        DGRAM\\n'\n")
	writeExe(t, filepath.Join(bin, "sbatch"), "#!/bin/bash\nprintf '%s\\0' \"$@\" > \"$NEL_TEST_REC/sbatch.$$\"\necho 123\n")
	writeExe(t, filepath.Join(bin, "scancel"), "#!/bin/bash\nprintf '%s\\0' \"$@\" > \"$NEL_TEST_REC/scancel.$$\"\n")
	nelRun := filepath.Join(nelDir, "nel-run")
	writeExe(t, nelRun, `#!/bin/bash
printf '%s\0' "$@" > "$NEL_TEST_REC/nel-run.$$.$1"
if [ "$1" = wait-ready ]; then
  pid=""
  while [ $# -gt 0 ]; do [ "$1" = --pid ] && pid=$2; shift; done
  for _ in $(seq 250); do [ -e "$NEL_TEST_REC/srun.$pid.argv" ] && break; sleep 0.02; done
fi
exit 0
`)
	nr, err := os.ReadFile(nelRun)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(nr)

	script, err := Compile(s, CompileOptions{
		NelVersion:   "test",
		NelRun:       nelRun,
		NelRunSHA256: hex.EncodeToString(sum[:]),
		Reproduce:    "nel compile " + strconv.Quote(injRecipePath) + "\ntouch PWNED",
	})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	scriptPath := filepath.Join(root, "job.sbatch")
	if err := os.WriteFile(scriptPath, script, 0o644); err != nil {
		t.Fatal(err)
	}

	// (a) bash parses it.
	if out, err := exec.Command(bash, "-n", scriptPath).CombinedOutput(); err != nil {
		t.Fatalf("bash -n: %v\n%s", err, out)
	}

	// #SBATCH lines: one line each, every # escaped, values as SbatchValue
	// writes them.
	checkSbatchLines(t, string(script), r)

	// (b) run it against fake SLURM tools.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, scriptPath)
	cmd.Dir = work
	cmd.Env = []string{
		"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin",
		"HOME=" + root,
		"SLURM_JOB_ID=1",
		"SLURM_JOB_NODELIST=node1",
		"NEL_INJ_KEY=sk-$(touch PWNED)",
		"NEL_INJ_SET=" + injSetEnv,
		"NEL_TEST_REC=" + rec,
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.WaitDelay = 2 * time.Second
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	runErr := cmd.Wait()
	_ = syscall.Kill(-pgid, syscall.SIGKILL) // whatever the trap left
	if ctx.Err() != nil {
		t.Fatalf("the script ran past 20s:\n%s", out.String())
	}
	// Nothing ran.
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "PWNED" {
			t.Errorf("injection ran: %s exists", p)
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(work, "PWNED")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("injection ran: PWNED in the job's directory (%v)", err)
	}

	if runErr != nil {
		t.Fatalf("script: %v\n%s", runErr, out.String())
	}

	// The servers got exactly the argv and the environment of the recipe.
	calls := readSrunCalls(t, rec)
	if len(calls) != 2 {
		t.Fatalf("expected 2 srun calls (one per server), got %d\n%s", len(calls), out.String())
	}
	wantVllm := append([]string{"vllm", "serve", r.vllmModel, "--host", "10.9.8.7", "--port", "8000",
		"--served-model-name", r.vllmServed, "--tensor-parallel-size", "1"}, r.vllmExtraArgs...)
	seen := map[string]bool{}
	var keys []string // the keys the job made for its servers
	for _, c := range calls {
		flags, argv := splitSrun(c.argv)
		switch {
		case slices.Equal(argv, r.procCommand):
			seen["proc"] = true
			wantFlag(t, flags, "--container-image="+r.procImage)
			wantFlag(t, flags, "--container-mounts="+strings.Join(append(slices.Clone(r.clusterMounts), r.procMounts...), ","))
			wantEnv(t, c.env, map[string]string{
				"PROC_PLAIN":    r.procEnv["PROC_PLAIN"],
				"PROC_DEFAULT":  strings.TrimSuffix(strings.TrimPrefix(r.procEnv["PROC_DEFAULT"], "${NEL_INJ_UNSET:-"), "}"),
				"PROC_FROM":     injSetEnv,
				"CLUSTER_PLAIN": r.clusterEnv["CLUSTER_PLAIN"],
				// A process service is told its node's address.
				"NEL_SERVICE_PROC_HOST": "10.9.8.7",
			})
			keys = append(keys, c.env["NEL_SERVICE_PROC_API_KEY"])
		case slices.Equal(argv, wantVllm):
			seen["vllm"] = true
			wantFlag(t, flags, "--container-image="+r.vllmImage)
			wantFlag(t, flags, "--container-mounts="+strings.Join(append(slices.Clone(r.clusterMounts), r.vllmMounts...), ","))
			wantEnv(t, c.env, map[string]string{"VLLM_PLAIN": r.vllmEnv["VLLM_PLAIN"], "CLUSTER_PLAIN": r.clusterEnv["CLUSTER_PLAIN"]})
			// The job's key reaches vLLM by its own variable, the same
			// key nel-run is told to read.
			keys = append(keys, c.env["VLLM_API_KEY"])
			if c.env["VLLM_API_KEY"] != c.env["NEL_SERVICE_VLLM_API_KEY"] {
				t.Errorf("vllm's VLLM_API_KEY %q is not the job's key %q", c.env["VLLM_API_KEY"], c.env["NEL_SERVICE_VLLM_API_KEY"])
			}
		default:
			t.Errorf("srun ran a server argv that is neither recipe's:\nflags %q\nargv  %q\nwant  %q\nor    %q", flags, argv, r.procCommand, wantVllm)
		}
	}
	if !seen["proc"] || !seen["vllm"] {
		t.Errorf("servers seen: %v", seen)
	}

	// nel-run was asked for what the recipe says.
	nel := readNelRunCalls(t, rec)
	if len(nel["wait-ready"]) != 2 || len(nel["shard"]) != 2 || len(nel["merge"]) != 1 {
		t.Fatalf("nel-run calls: %q\n%s", nel, out.String())
	}
	checkServerKeys(t, keys, root, rec)
	wantURL := "http://10.9.8.7:8123" + r.health
	if !slices.ContainsFunc(nel["wait-ready"], func(a []string) bool { return argAfter(a, "--url") == wantURL }) {
		t.Errorf("wait-ready --url: expected %q among %q", wantURL, nel["wait-ready"])
	}
	if !slices.ContainsFunc(nel["shard"], func(a []string) bool { return argAfter(a, "--benchmark") == r.benchName }) {
		t.Errorf("shard --benchmark: expected %q among %q", r.benchName, nel["shard"])
	}

	// The plan the script wrote holds the hostile text unchanged.
	nelOut := filepath.Join(work, filepath.Clean(r.outDir), ".nel")
	ents, err := os.ReadDir(nelOut)
	if err != nil {
		t.Fatalf("output dir: %v\n%s", err, out.String())
	}
	var planFile string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), "plan-") && strings.HasSuffix(e.Name(), ".json") {
			planFile = filepath.Join(nelOut, e.Name())
		}
	}
	if planFile == "" {
		t.Fatalf("no plan-*.json in %s: %v", nelOut, ents)
	}
	pj, err := os.ReadFile(planFile)
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		Recipe     string `json:"recipe"`
		OutputDir  string `json:"output_dir"`
		Benchmarks []struct {
			Name   string            `json:"name"`
			Params map[string]string `json:"params"`
			Solver struct {
				SystemPrompt string `json:"system_prompt"`
			} `json:"solver"`
		} `json:"benchmarks"`
	}
	if err := json.Unmarshal(pj, &p); err != nil {
		t.Fatalf("plan is not JSON: %v\n%s", err, pj)
	}
	if p.Recipe != injRecipePath {
		t.Errorf("plan recipe path %q, expected %q", p.Recipe, injRecipePath)
	}
	if p.OutputDir != filepath.Clean(r.outDir) {
		t.Errorf("plan output dir %q, expected %q", p.OutputDir, filepath.Clean(r.outDir))
	}
	if len(p.Benchmarks) != 2 {
		t.Fatalf("plan has %d benchmarks, expected 2", len(p.Benchmarks))
	}
	b := p.Benchmarks[0]
	if b.Name != r.benchName || b.Solver.SystemPrompt != r.systemPrompt {
		t.Errorf("plan benchmark name/system prompt changed:\n%q\n%q", b.Name, b.Solver.SystemPrompt)
	}
	for k, v := range r.params {
		if b.Params[k] != v {
			t.Errorf("plan params[%q] = %q, expected %q", k, b.Params[k], v)
		}
	}
	// The secret reached nothing but the environment.
	if bytes.Contains(script, []byte("sk-")) {
		t.Error("the api key's value is in the script")
	}
}

type srunCall struct {
	argv []string
	env  map[string]string
}

func readSrunCalls(t *testing.T, rec string) []srunCall {
	t.Helper()
	ents, err := os.ReadDir(rec)
	if err != nil {
		t.Fatal(err)
	}
	var calls []srunCall
	for _, e := range ents {
		base, ok := strings.CutSuffix(e.Name(), ".argv")
		if !ok || !strings.HasPrefix(base, "srun.") {
			continue
		}
		a, err := os.ReadFile(filepath.Join(rec, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		// The env dump may lag the argv by a moment.
		var ev []byte
		for range 50 {
			if ev, err = os.ReadFile(filepath.Join(rec, base+".env")); err == nil {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		env := map[string]string{}
		for _, kv := range nulFields(ev) {
			k, v, _ := strings.Cut(kv, "=")
			env[k] = v
		}
		calls = append(calls, srunCall{argv: nulFields(a), env: env})
	}
	return calls
}

// splitSrun separates srun's own --flags from the command it runs.
func splitSrun(argv []string) (flags, cmd []string) {
	for i, a := range argv {
		if !strings.HasPrefix(a, "--") {
			return argv[:i], argv[i:]
		}
	}
	return argv, nil
}

func wantFlag(t *testing.T, flags []string, want string) {
	t.Helper()
	if !slices.Contains(flags, want) {
		t.Errorf("srun flags: expected %q among %q", want, flags)
	}
}

var jobKeyRE = regexp.MustCompile(`^[0-9a-f]{64}$`)

// checkServerKeys checks the keys the job made: 32 random bytes in hex,
// one per server, and none of them written anywhere the job left files
// (the script, the plan, the run folder) but in the fake srun's records.
func checkServerKeys(t *testing.T, keys []string, root, rec string) {
	t.Helper()
	if len(keys) != 2 || keys[0] == keys[1] {
		t.Errorf("server keys %q: want two different keys", keys)
	}
	for _, k := range keys {
		if !jobKeyRE.MatchString(k) {
			t.Errorf("server key %q: want 64 hex digits", k)
			return
		}
	}
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(p, rec+string(filepath.Separator)) {
			return nil
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		for _, k := range keys {
			if bytes.Contains(b, []byte(k)) {
				t.Errorf("%s contains a server's key", p)
			}
		}
		return nil
	})
}

func wantEnv(t *testing.T, got, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if g, ok := got[k]; !ok || g != v {
			t.Errorf("server env %s = %q (set: %v), expected %q", k, g, ok, v)
		}
	}
}

func readNelRunCalls(t *testing.T, rec string) map[string][][]string {
	t.Helper()
	ents, err := os.ReadDir(rec)
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string][][]string{}
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), "nel-run.") {
			continue
		}
		a, err := os.ReadFile(filepath.Join(rec, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		argv := nulFields(a)
		if len(argv) > 0 {
			calls[argv[0]] = append(calls[argv[0]], argv)
		}
	}
	return calls
}

func argAfter(argv []string, flag string) string {
	if i := slices.Index(argv, flag); i >= 0 && i+1 < len(argv) {
		return argv[i+1]
	}
	return ""
}

// checkSbatchLines: the #SBATCH header is one directive per line, every #
// inside a value is written \#, and each hostile value appears as
// templates.SbatchValue encodes it.
func checkSbatchLines(t *testing.T, script string, r injRecipe) {
	t.Helper()
	var lines []string
	for line := range strings.SplitSeq(script, "\n") {
		if v, ok := strings.CutPrefix(line, "#SBATCH "); ok {
			lines = append(lines, v)
		}
	}
	for _, want := range []struct{ flag, val string }{
		{"account", r.account}, {"comment", r.comment}, {"constraint", r.constraint}, {"partition", r.poolPartition},
	} {
		found := ""
		for _, l := range lines {
			if v, ok := strings.CutPrefix(l, "--"+want.flag+"="); ok {
				found = v
			}
		}
		if found == "" {
			t.Errorf("no #SBATCH --%s line in\n%s", want.flag, strings.Join(lines, "\n"))
			continue
		}
		if got := unSbatch(found); got != want.val {
			t.Errorf("#SBATCH --%s=%s reads back as %q, expected %q", want.flag, found, got, want.val)
		}
	}
	for _, l := range lines {
		for i := 0; i < len(l); i++ {
			if l[i] == '\\' {
				i++ // an escaped byte
				continue
			}
			if l[i] == '#' {
				t.Errorf("#SBATCH %s: unescaped # at %d (sbatch would cut the line there)", l, i)
			}
		}
		if strings.Contains(strings.ToLower(l), "hetjob") {
			t.Errorf("#SBATCH %s: contains the het-job separator", l)
		}
	}
	if strings.Contains(script, "#SBATCH --partition="+r.partition) {
		t.Error("the raw cluster partition reached an #SBATCH line unescaped")
	}
}

// unSbatch reads an #SBATCH value back the way sbatch's tokenizer does:
// backslash escapes the next byte, double quotes group.
func unSbatch(v string) string {
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		switch v[i] {
		case '\\':
			if i+1 < len(v) {
				i++
				b.WriteByte(v[i])
			}
		case '"':
		default:
			b.WriteByte(v[i])
		}
	}
	return b.String()
}

// TestInjectSbatchNewline: a value that would end up on an #SBATCH line
// cannot carry a line break; compile refuses it rather than letting the rest
// of the value become a new directive or a command.
func TestInjectSbatchNewline(t *testing.T) {
	base := newInjRecipe(injPayloads)
	for _, c := range []struct {
		name string
		set  func(*injRecipe)
	}{
		{"account", func(r *injRecipe) { r.account = "acct\n#SBATCH --uid=0" }},
		{"cluster partition", func(r *injRecipe) { r.partition = "p\ntouch PWNED"; r.poolPartition = "" }},
		{"pool partition", func(r *injRecipe) { r.poolPartition = "p\rx" }},
		{"sbatch_comment", func(r *injRecipe) { r.comment = "c\n#SBATCH --dependency=x" }},
		{"sbatch_extra_flags value", func(r *injRecipe) { r.constraint = "a\nb" }},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := base
			c.set(&r)
			src := r.cue()
			if r.poolPartition == "" {
				src = strings.Replace(src, "node_pools: gpu: {partition: \"\"}", "node_pools: gpu: {}", 1)
			}
			s, err := loadCUE(t, "r.cue", src)
			if err != nil {
				t.Fatalf("load: %v", err)
			}
			_, err = Compile(s, CompileOptions{NelVersion: "test", NelRun: "/bin/nel-run", NelRunSHA256: strings.Repeat("0", 64)})
			if err == nil {
				t.Fatal("compile accepted an #SBATCH value with a line break")
			}
			if !strings.Contains(err.Error(), "newline") && !strings.Contains(err.Error(), "carriage return") {
				t.Errorf("error does not say why: %v", err)
			}
		})
	}
}

// TestInjectServiceNames: names become shell variables, file names and
// --name arguments, so anything but [A-Za-z0-9_.-] is refused at load.
func TestInjectServiceNames(t *testing.T) {
	for _, name := range []string{
		"a;b", "$(touch PWNED)", "`x`", "a b", "a\nb", "'", `"`, "-x", ".x", "a/b", "a#b", "${IFS}", "ü", "a&&b", "",
	} {
		t.Run(strconv.Quote(name), func(t *testing.T) {
			src := `services: ` + strconv.Quote(name) + `: {type: "process", command: ["x"], port: 8000, model: "m"}
benchmarks: [{name: "gsm8k", solver: {type: "simple", service: ` + strconv.Quote(name) + `}}]
cluster: {type: "slurm", node_pools: p: {}}
`
			_, err := loadCUE(t, "r.cue", src)
			if err == nil {
				t.Fatalf("service name %q accepted", name)
			}
			if !strings.Contains(err.Error(), "expected a service name") {
				t.Errorf("refused for another reason: %v", err)
			}
		})
	}
}

// TestInjectExtraEnvPartialRef: an extra_env value with ${VAR} inside
// longer text is refused at compile (it is neither a reference passed by
// name nor plain text).
func TestInjectExtraEnvPartialRef(t *testing.T) {
	src := `services: s: {type: "process", command: ["x"], port: 8000, model: "m", extra_env: {A: "pre ${IFS} $(touch PWNED)"}}
benchmarks: [{name: "gsm8k", solver: {type: "simple", service: "s"}}]
cluster: {type: "slurm", node_pools: p: {}}
`
	s, err := loadCUE(t, "r.cue", src)
	if err != nil {
		t.Fatalf("load: %v", err)
	}
	_, err = Compile(s, CompileOptions{NelVersion: "test", NelRun: "/bin/nel-run", NelRunSHA256: strings.Repeat("0", 64)})
	if err == nil || !strings.Contains(err.Error(), "extra_env") {
		t.Fatalf("expected a refusal naming extra_env, got %v", err)
	}
}
