package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"
)

// kubelet runs a pod's containers on this machine as the kubelet would:
// the init containers in order, each to success, then the main one; $(VAR)
// expanded from the container's environment; the Secret's keys, the
// completion index and the ConfigMap's plan where the pod would see them,
// the pod's paths moved under local folders.
type kubelet struct {
	nelRun  string            // the nel-run binary
	secret  map[string]string // the Secret's keys
	paths   *strings.Replacer // pod path → local path
	planDir string
}

var k8sVarRE = regexp.MustCompile(`\$\$|\$\(([A-Za-z_][A-Za-z0-9_]*)\)`)

// expand is Kubernetes' $(VAR) expansion: $$ is a $, an unknown $(VAR)
// stays as written.
func expand(s string, env map[string]string) string {
	return k8sVarRE.ReplaceAllStringFunc(s, func(m string) string {
		if m == "$$" {
			return "$"
		}
		if v, ok := env[m[2:len(m)-1]]; ok {
			return v
		}
		return m
	})
}

// env is c's environment in pod index of a Job.
func (k *kubelet) env(t *testing.T, c corev1.Container, index int) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = k.paths.Replace(expand(e.Value, env))
		case e.ValueFrom.SecretKeyRef != nil:
			v, ok := k.secret[e.ValueFrom.SecretKeyRef.Key]
			if !ok {
				t.Fatalf("%s: the Secret has no key %s", c.Name, e.ValueFrom.SecretKeyRef.Key)
			}
			env[e.Name] = v
		case e.ValueFrom.FieldRef != nil && strings.Contains(e.ValueFrom.FieldRef.FieldPath, "job-completion-index"):
			env[e.Name] = strconv.Itoa(index)
		default:
			t.Fatalf("%s: env %s from %+v, which this kubelet does not know", c.Name, e.Name, e.ValueFrom)
		}
	}
	return env
}

// run runs container c of pod index and returns its stderr.
func (k *kubelet) run(t *testing.T, c corev1.Container, index int) string {
	t.Helper()
	if len(c.Command) != 1 || c.Command[0] != "nel-run" {
		t.Fatalf("%s: command %q, want nel-run", c.Name, c.Command)
	}
	env := k.env(t, c, index)
	args := make([]string, len(c.Args))
	for i, a := range c.Args {
		args[i] = k.paths.Replace(expand(a, env))
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, k.nelRun, args...)
	cmd.Dir = k.paths.Replace(c.WorkingDir)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir()}
	for name, v := range env {
		cmd.Env = append(cmd.Env, name+"="+v)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("pod %d, container %s (nel-run %s): %v\n%s", index, c.Name, strings.Join(args, " "), err, stderr.String())
	}
	return stderr.String()
}

// TestK8sPodsRun compiles a two-shard recipe with -t k8s and runs its
// Job's pods here, against nel-run sim-server that wants the key the
// Secret holds: each shard writes its file, the last pod merges.
func TestK8sPodsRun(t *testing.T) {
	bin := filepath.Join(realNelRun(t), "nel-run")
	ws := t.TempDir() // the volume
	var data strings.Builder
	for i := range 6 {
		fmt.Fprintf(&data, `{"question": "What is %d + 2?", "answer": "#### %d"}`+"\n", i, i+2)
	}
	if err := os.WriteFile(filepath.Join(ws, "data.jsonl"), []byte(data.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	port, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	sim := exec.Command(bin, "sim-server", "--addr", "127.0.0.1:"+strconv.Itoa(port), "--benchmark", "gsm8k="+filepath.Join(ws, "data.jsonl"), "--api-key-env", "SIM_KEY")
	sim.Env = append(os.Environ(), "SIM_KEY=s3cret")
	if err := sim.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = sim.Process.Kill(); _ = sim.Wait() })
	waitHealthy(t, fmt.Sprintf("http://127.0.0.1:%d/health", port))
	recipe := fmt.Sprintf(`services:
  sim: {type: api, url: "http://127.0.0.1:%d/v1/chat/completions", model: nel-sim, api_key: "${SIM_KEY}"}
benchmarks:
  - name: gsm8k
    params: {data_path: data.jsonl}
    solver: {type: simple, service: sim}
cluster: {type: local, shards: 2}
output: {dir: out}
`, port)
	if err := os.WriteFile(filepath.Join(ws, "r.yaml"), []byte(recipe), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(ws) // nel compile runs where the volume's root is
	var out, errb bytes.Buffer
	if code := run([]string{"compile", "-t", "k8s", "--image", "nel:test", "r.yaml"}, &out, &errb); code != 0 {
		t.Fatalf("compile: exit %d: %s", code, errb.String())
	}
	job, planJSON := k8sJobAndPlan(t, out.String())
	planDir := t.TempDir()
	if err := os.WriteFile(filepath.Join(planDir, "plan.json"), []byte(planJSON), 0o644); err != nil {
		t.Fatal(err)
	}
	k := &kubelet{nelRun: bin, secret: map[string]string{"SIM_KEY": "s3cret"},
		paths: strings.NewReplacer("/workspace", ws, "/etc/nel", planDir), planDir: planDir}
	pod := job.Spec.Template.Spec
	for index := range int(*job.Spec.Completions) {
		for _, c := range pod.InitContainers {
			k.run(t, c, index)
		}
		merge := k.run(t, pod.Containers[0], index)
		if last := index == int(*job.Spec.Completions)-1; strings.Contains(merge, "not merging yet") == last {
			t.Errorf("pod %d of %d: merge said %q", index, *job.Spec.Completions, merge)
		}
	}
	// The run folder keeps the plan, as a SLURM job's does, so nel status
	// reads it.
	var status bytes.Buffer
	if code := run([]string{"status", "out"}, &status, &status); code != 0 {
		t.Errorf("nel status out: exit %d\n%s", code, status.String())
	}
	for _, want := range []string{"state:  finished: every benchmark is merged\n", "gsm8k: 6 samples, merged, 0 failed"} {
		if !strings.Contains(status.String(), want) {
			t.Errorf("nel status out lacks %q:\n%s", want, status.String())
		}
	}
	for _, f := range []string{"out/gsm8k/shards/shard-00000-of-00002.parquet", "out/gsm8k/shards/shard-00001-of-00002.parquet", "out/gsm8k/results.parquet", "out/report.md"} {
		if _, err := os.Stat(filepath.Join(ws, f)); err != nil {
			t.Errorf("after the pods: %v", err)
		}
	}
}

// k8sJobAndPlan returns the one Job of a -t k8s stream and the plan in its
// ConfigMap.
func k8sJobAndPlan(t *testing.T, stream string) (batchv1.Job, string) {
	t.Helper()
	var job batchv1.Job
	var plan string
	for _, doc := range strings.Split(stream, "\n---\n")[1:] {
		switch {
		case strings.Contains(doc, "\nkind: Job\n"):
			if err := yaml.UnmarshalStrict([]byte(doc), &job); err != nil {
				t.Fatal(err)
			}
		case strings.Contains(doc, "\nkind: ConfigMap\n"):
			var cm corev1.ConfigMap
			if err := yaml.UnmarshalStrict([]byte(doc), &cm); err != nil {
				t.Fatal(err)
			}
			plan = cm.Data["plan.json"]
		}
	}
	if job.Spec.Completions == nil || *job.Spec.Completions != 2 || plan == "" {
		t.Fatalf("no Job of 2 completions and plan in:\n%s", stream)
	}
	return job, plan
}

func waitHealthy(t *testing.T, url string) {
	t.Helper()
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if resp, err := http.Get(url); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
	}
	t.Fatalf("%s did not answer", url)
}
