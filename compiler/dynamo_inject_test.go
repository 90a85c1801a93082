package compiler

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestInjectDynamo runs the job of a disaggregated dynamo service whose
// strings carry the injection payloads against fake SLURM tools: nothing
// executes, and each worker gets its argv and its role's environment
// unchanged.
func TestInjectDynamo(t *testing.T) {
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("no bash")
	}
	p := payloadSet(injPayloads)
	served, model, image := p.hostile("served"), p.hostileNoRef("model"), p.hostileNoRef("image")
	prefillArgs := append([]string{p.hostile("prefill_args")}, injPayloads...)
	decodeEnv := p.hostileNoRef("decode_env")
	q := strconv.Quote
	list := func(xs []string) string {
		var qs []string
		for _, x := range xs {
			qs = append(qs, q(x))
		}
		return "[" + strings.Join(qs, ", ") + "]"
	}
	src := `services: d: {
	type: "dynamo"
	model: ` + q(model) + `
	served_model_name: ` + q(served) + `
	image: ` + q(image) + `
	prefill: {node_pool: "p", extra_args: ` + list(prefillArgs) + `}
	decode: {node_pool: "q", extra_env: {DEC_PLAIN: ` + q(decodeEnv) + `, DEC_FROM: "${NEL_INJ_SET}"}}
}
benchmarks: [{name: "gsm8k", solver: {type: "simple", service: "d"}}]
cluster: {type: "slurm", node_pools: {p: {}, q: {}}}
`
	s, err := loadCUE(t, "dyn.cue", src)
	if err != nil {
		t.Fatalf("load: %v\n%s", err, src)
	}
	root := t.TempDir()
	bin, rec, work := filepath.Join(root, "bin"), filepath.Join(root, "rec"), filepath.Join(root, "work")
	for _, d := range []string{bin, rec, work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	// srun records its environment and argv and exits; scontrol names the
	// node list it is given as one host; nel-run succeeds at everything.
	writeExe(t, filepath.Join(bin, "srun"), `#!/bin/bash
f="$NEL_TEST_REC/srun.$$"
for n in DEC_PLAIN DEC_FROM NATS_SERVER; do
  if [ -n "${!n+x}" ]; then printf '%s=%s\0' "$n" "${!n}"; fi
done > "$f.env"
printf '%s\0' "$@" > "$f.argv.tmp" && mv "$f.argv.tmp" "$f.argv"
`)
	writeExe(t, filepath.Join(bin, "scontrol"), "#!/bin/bash\necho \"$3\"\n")
	writeExe(t, filepath.Join(bin, "sbatch"), "#!/bin/bash\necho 123\n")
	writeExe(t, filepath.Join(bin, "scancel"), "#!/bin/bash\n")
	nelRun := filepath.Join(root, "nel-run")
	// The job's background sruns are killed when it ends: the shard waits
	// (up to 10s) for the five to have recorded themselves, or on a loaded
	// machine one killed before it wrote would be missed.
	writeExe(t, nelRun, `#!/bin/bash
[ "$1" = shard ] || exit 0
for _ in $(seq 100); do
  n=0; for f in "$NEL_TEST_REC"/srun.*.argv; do [ -e "$f" ] && n=$((n+1)); done
  [ "$n" -ge 5 ] && exit 0
  sleep 0.1
done
exit 0
`)
	nr, err := os.ReadFile(nelRun)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(nr)
	script, err := Compile(s, CompileOptions{NelVersion: "test", NelRun: nelRun, NelRunSHA256: hex.EncodeToString(sum[:]), Reproduce: "nel compile dyn.cue"})
	if err != nil {
		t.Fatalf("compile: %v", err)
	}
	scriptPath := filepath.Join(root, "job.sbatch")
	if err := os.WriteFile(scriptPath, script, 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bash, scriptPath)
	cmd.Dir = work
	cmd.Env = []string{"PATH=" + bin + ":/usr/local/bin:/usr/bin:/bin", "HOME=" + root, "SLURM_JOB_ID=1",
		"SLURM_JOB_NODELIST=pnode,qnode", "SLURM_JOB_NODELIST_HET_GROUP_0=pnode", "SLURM_JOB_NODELIST_HET_GROUP_1=qnode",
		"NEL_INJ_SET=" + injSetEnv, "NEL_TEST_REC=" + rec}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("script: %v\n%s", err, out.String())
	}
	_ = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.Name() == "PWNED" {
			t.Errorf("injection ran: %s exists", p)
		}
		return nil
	})
	if _, err := os.Stat(filepath.Join(work, "PWNED")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("injection ran: PWNED in the job's directory (%v)", err)
	}

	base := []string{"python3", "-m", "dynamo.sglang", "--model-path", model, "--served-model-name", served, "--host", "0.0.0.0", "--port", "8001"}
	wantPrefill := append(append(slices.Clone(base), "--disaggregation-mode", "prefill", "--disaggregation-bootstrap-port", "8002"), prefillArgs...)
	wantDecode := append(slices.Clone(base), "--disaggregation-mode", "decode")
	seen := map[string]int{}
	for _, c := range readSrunCalls(t, rec) {
		flags, argv := splitSrun(c.argv)
		if len(argv) > 0 && argv[0] == nelRun {
			continue // the shard
		}
		wantFlag(t, flags, "--container-image="+image)
		wantEnv(t, c.env, map[string]string{"NATS_SERVER": "nats://pnode:4222"})
		switch {
		case slices.Equal(argv, wantPrefill):
			seen["prefill"]++
			wantFlag(t, flags, "--nodelist=pnode")
			if _, ok := c.env["DEC_PLAIN"]; ok {
				t.Errorf("the prefill worker got the decode role's DEC_PLAIN")
			}
		case slices.Equal(argv, wantDecode):
			seen["decode"]++
			wantFlag(t, flags, "--nodelist=qnode")
			wantEnv(t, c.env, map[string]string{"DEC_PLAIN": decodeEnv, "DEC_FROM": injSetEnv})
		case len(argv) > 0 && (argv[0] == "nats-server" || argv[0] == "etcd" || slices.Contains(argv, "dynamo.frontend")):
			seen[argv[0]]++
		default:
			t.Errorf("srun ran %q,\nwant prefill %q\nor decode %q", argv, wantPrefill, wantDecode)
		}
	}
	if want := map[string]int{"prefill": 1, "decode": 1, "nats-server": 1, "etcd": 1, "python3": 1}; !maps.Equal(seen, want) {
		t.Errorf("srun calls %v, want %v\n%s", seen, want, out.String())
	}
}
