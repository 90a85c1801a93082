package compiler

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/nel-eval/nel/runtime/plan"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// k8sGPU is the extended resource the NVIDIA device plugin offers.
const k8sGPU corev1.ResourceName = "nvidia.com/gpu"

// k8sShardRetries is how often a shard's pod may fail before its Job
// gives the shard up: a shard resumes from its journal, so a retry costs
// only the samples in flight.
const k8sShardRetries = 3

// k8sMetricsPort is where a shard serves its Prometheus metrics in its
// pod (nel-run shard --metrics-addr).
const k8sMetricsPort = 9400

// k8sImageGID is the group of the Dockerfile's images' user.
const k8sImageGID = 65532

// completionIndexAnnotation is where the Job controller writes a pod's
// index; the shards read it through the downward API (the value the
// controller also puts in JOB_COMPLETION_INDEX), so that the shard flag
// does not depend on an injected variable.
const completionIndexAnnotation = "batch.kubernetes.io/job-completion-index"

// deployment runs managed server sv: its engine's command in its image,
// bound to every address of its pod, keyed from the Secret, with its GPUs.
func (k *k8sJob) deployment(sv plan.Service) *appsv1.Deployment {
	sel := map[string]string{k8sRunLabel: k.id, k8sServiceLabel: dnsLabel(sv.Name)}
	one := int32(1)
	c := corev1.Container{
		Name:    "server",
		Image:   k.s.Recipe.Services[sv.Name].Image,
		Command: k8sCommand(sv),
		Env:     k.serverEnv(sv),
		Ports:   []corev1.ContainerPort{{Name: "http", ContainerPort: int32(sv.Port)}},
		Resources: corev1.ResourceRequirements{
			Limits: corev1.ResourceList{k8sGPU: quantity(serverGPUs(sv))},
		},
		ReadinessProbe: httpProbe(sv, 3),
		// The engine loads the model before its health endpoint answers:
		// the startup probe gives it the service's startup_timeout.
		StartupProbe: httpProbe(sv, k8sSeconds(sv.StartupTimeout)),
		// Tensor-parallel workers share tensors through /dev/shm, which a
		// container gets only 64 MiB of by default.
		VolumeMounts: []corev1.VolumeMount{{Name: "shm", MountPath: "/dev/shm"}},
	}
	if a := access(sv.Type); a.keyFlag != "" && sv.APIKey != nil {
		c.Command = append(c.Command, a.keyFlag, "$("+sv.APIKey.Name+")")
	}
	return &appsv1.Deployment{
		TypeMeta:   metav1.TypeMeta{APIVersion: "apps/v1", Kind: "Deployment"},
		ObjectMeta: k.meta(k.name(sv.Name), sel),
		Spec: appsv1.DeploymentSpec{
			Replicas: &one,
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{
					Containers: []corev1.Container{c},
					Volumes: []corev1.Volume{{Name: "shm", VolumeSource: corev1.VolumeSource{
						EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory},
					}}},
				},
			},
		},
	}
}

// serverEnv is the server container's environment: its address (every
// address of the pod: the Service routes to it), its recipe environment,
// and its key from the Secret where the engine reads one.
func (k *k8sJob) serverEnv(sv plan.Service) []corev1.EnvVar {
	env := []corev1.EnvVar{{Name: serverHostEnv(sv.Name), Value: "0.0.0.0"}}
	for _, e := range serverEnvVars(k.s.Recipe.Cluster, sv) {
		if e.From != nil {
			env = append(env, k.secretEnv(e.Name, e.From.Name))
		} else {
			env = append(env, corev1.EnvVar{Name: e.Name, Value: k8sLiteral(e.Value)})
		}
	}
	if sv.APIKey == nil {
		return env
	}
	a := access(sv.Type)
	if a.keyEnv != "" {
		env = append(env, k.secretEnv(a.keyEnv, sv.APIKey.Name))
	}
	if a.keyFlag != "" {
		env = append(env, k.secretEnv(sv.APIKey.Name, sv.APIKey.Name))
	}
	return env
}

// k8sCommand is the server's argv as Kubernetes expands it: the address
// reference guardServers wrote becomes $(VAR), and any other "$(" is
// escaped, since Kubernetes would expand it too.
func k8sCommand(sv plan.Service) []string {
	ref := "${" + serverHostEnv(sv.Name) + "}"
	words := make([]string, len(sv.Command))
	for i, w := range sv.Command {
		words[i] = k8sLiteral(w)
		if w == ref {
			words[i] = "$(" + serverHostEnv(sv.Name) + ")"
		}
	}
	return words
}

// k8sLiteral escapes s from Kubernetes' $(VAR) expansion, which also
// turns every $$ into one $: each $ is doubled, so "a$$b" stays "a$$b".
func k8sLiteral(s string) string { return strings.ReplaceAll(s, "$", "$$") }

// serverGPUs is what the server's parallel layout needs on its one node.
func serverGPUs(sv plan.Service) int {
	if p := sv.Parallelism; p != nil {
		return max(1, p.TP) * max(1, p.PP) * max(1, p.DP)
	}
	return 1
}

func httpProbe(sv plan.Service, failures int32) *corev1.Probe {
	return &corev1.Probe{
		ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{
			Path: sv.HealthPath, Port: intstr.FromString("http"),
		}},
		PeriodSeconds:    10,
		FailureThreshold: failures,
	}
}

// service gives the server a stable name in the namespace for the shards.
func (k *k8sJob) service(sv plan.Service) *corev1.Service {
	sel := map[string]string{k8sRunLabel: k.id, k8sServiceLabel: dnsLabel(sv.Name)}
	return &corev1.Service{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Service"},
		ObjectMeta: k.meta(k.name(sv.Name), sel),
		Spec: corev1.ServiceSpec{
			Selector: sel,
			Ports: []corev1.ServicePort{{
				Name: "http", Port: int32(sv.Port), TargetPort: intstr.FromString("http"),
			}},
		},
	}
}

// shardJob runs benchmark b's shards as an Indexed Job: pod i waits for
// the managed servers, runs shard i (an init container, so that it must
// succeed first), then merges if every shard of the plan is done. The last
// shard to finish merges, as in the SLURM job array: no pod polls, and the
// run is complete when its Jobs are.
func (k *k8sJob) shardJob(b plan.Benchmark) *batchv1.Job {
	n := int32(k.p.Shards)
	retries := int32(k8sShardRetries)
	labels := map[string]string{k8sBenchmarkLabel: dnsLabel(b.Key)}
	var inits []corev1.Container
	for _, sv := range k.p.Services {
		if sv.Managed {
			inits = append(inits, k.waitReady(sv))
		}
	}
	sh := k.nelRun("shard", "shard", "--plan", k8sPlanFile, "--benchmark", b.Key,
		"--shard", "$(NEL_SHARD)", "--of", strconv.Itoa(k.p.Shards), "--out", k.outDir(),
		"--metrics-addr", ":"+strconv.Itoa(k8sMetricsPort))
	sh.Ports = []corev1.ContainerPort{{Name: "metrics", ContainerPort: k8sMetricsPort}}
	sh.Resources.Requests = memoryRequest(k8sNelRunMemory)
	inits = append(inits, sh)
	merge := k.nelRun("merge", "merge", "--plan", k8sPlanFile, "--out", k.outDir(), "--if-complete")
	merge.Resources.Requests = memoryRequest(k8sNelRunMemory)
	podLabels := map[string]string{k8sRunLabel: k.id, k8sBenchmarkLabel: dnsLabel(b.Key)}
	return &batchv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: k.meta(k.name(b.Key), labels),
		Spec: batchv1.JobSpec{
			CompletionMode:       ptr(batchv1.IndexedCompletion),
			Completions:          &n,
			Parallelism:          &n,
			BackoffLimitPerIndex: &retries,
			Template: corev1.PodTemplateSpec{
				// The annotations most Prometheus setups scrape pods by.
				ObjectMeta: metav1.ObjectMeta{Labels: podLabels, Annotations: map[string]string{
					"prometheus.io/scrape": "true",
					"prometheus.io/port":   strconv.Itoa(k8sMetricsPort),
					"prometheus.io/path":   "/metrics",
				}},
				Spec: corev1.PodSpec{
					// The image's user (distroless nonroot, uid and gid 65532)
					// writes the volume: one that honours fsGroup is made
					// writable to that group.
					SecurityContext: &corev1.PodSecurityContext{FSGroup: ptr(int64(k8sImageGID))},
					RestartPolicy:   corev1.RestartPolicyNever,
					InitContainers:  inits,
					Containers:      []corev1.Container{merge},
					Volumes:         k.volumes(),
				},
			},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// k8sNelRunMemory is the memory a shard or merge container requests: above
// what make bench measures (a shard's peak RSS 90–135 MB from 10k samples
// to a 1M-item dataset, 219 MB with 10,000 requests in flight; a merge of
// 1M rows from 1,000 shards up to 258 MB, docs/scaling.md t_M1k). A pod
// that requests nothing is BestEffort, the first a node evicts under
// memory pressure. No limit: a larger run than measured must not be
// killed for it.
const k8sNelRunMemory = "256Mi"

func memoryRequest(q string) corev1.ResourceList {
	return corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(q)}
}

// waitReady holds a shard until managed server sv answers its health
// check, as the SLURM job's wait-ready does.
func (k *k8sJob) waitReady(sv plan.Service) corev1.Container {
	args := []string{"wait-ready", "--name", sv.Name, "--url", k.serviceURL(sv) + sv.HealthPath,
		"--timeout", strconv.FormatFloat(sv.StartupTimeout, 'f', -1, 64) + "s"}
	if sv.APIKey != nil {
		args = append(args, "--api-key-env", sv.APIKey.Name)
	}
	return k.nelRun("wait-"+dnsLabel(sv.Name), args...)
}

// nelRun is a container running nel-run with args, its environment being
// the one a SLURM job gives it: the plan's sha256, the servers' URLs and
// the Secret's variables.
func (k *k8sJob) nelRun(name string, args ...string) corev1.Container {
	env := []corev1.EnvVar{
		{Name: "NEL_PLAN_SHA256", Value: k.planSum},
		{Name: "NEL_SHARD", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: "metadata.annotations['" + completionIndexAnnotation + "']",
		}}},
		// Datasets downloaded once for all the shards, on the volume.
		{Name: "XDG_CACHE_HOME", Value: k8sWorkspace + "/.cache"},
	}
	for _, sv := range k.p.Services {
		if sv.Managed {
			env = append(env, corev1.EnvVar{Name: sv.URLEnv, Value: k.serviceURL(sv) + "/v1"})
		}
	}
	for _, sc := range k.secrets {
		env = append(env, k.secretEnv(sc.Name, sc.Name))
	}
	for i, a := range args {
		if a != "$(NEL_SHARD)" {
			args[i] = k8sLiteral(a)
		}
	}
	return corev1.Container{
		Name: name, Image: k.opts.Image, Command: []string{"nel-run"}, Args: args,
		Env: env, WorkingDir: k8sWorkspace,
		VolumeMounts: []corev1.VolumeMount{
			{Name: "plan", MountPath: k8sPlanDir, ReadOnly: true},
			{Name: "work", MountPath: k8sWorkspace},
		},
	}
}

func (k *k8sJob) volumes() []corev1.Volume {
	return []corev1.Volume{
		{Name: "plan", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: k.name("plan")},
		}}},
		{Name: "work", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{
			ClaimName: k.opts.PVC,
		}}},
	}
}

// k8sUnsupported refuses what -t k8s cannot run yet, where the recipe
// says it.
func k8sUnsupported(s *Source, p *plan.Plan) error {
	if err := harnessOffSLURM(s, "Kubernetes (-t k8s)"); err != nil {
		return err
	}
	c := &ruleChecker{s: s, r: s.Recipe}
	r := s.Recipe
	// An ecs_fargate sandbox runs its programs in Fargate tasks, not in
	// the pod: the pod needs only AWS credentials (the SDK's chain: a
	// service account's role) and a route to the tasks' private IPs.
	const noSandbox = "not supported yet: %s sandboxes on Kubernetes (a pod cannot nest bubblewrap or docker without privileges; an ecs_fargate sandbox runs from a pod): compile with -t slurm or run with nel run"
	for _, name := range sortedKeys(r.Sandboxes) {
		if t := r.Sandboxes[name].Type; t != "ecs_fargate" && t != "none" {
			c.at(fmt.Sprintf(noSandbox, t), "sandboxes", name)
		}
	}
	for i := range r.Benchmarks {
		if m, ok := r.Benchmarks[i].Sandbox.(map[string]any); ok && m["type"] != "ecs_fargate" && m["type"] != "none" {
			c.at(fmt.Sprintf(noSandbox, m["type"]), "benchmarks", i, "sandbox")
		}
	}
	for _, name := range sortedKeys(r.Services) {
		rs := r.Services[name]
		switch {
		case !rs.Managed():
			if rs.Type != "api" {
				c.at("not supported yet: a "+rs.Type+" service on Kubernetes", "services", name, "type")
			}
		case rs.Type != "vllm" && rs.Type != "sglang":
			c.at("not supported yet: a "+rs.Type+" server on Kubernetes (vllm and sglang run as Deployments; serve it yourself and give its url in an api service)", "services", name, "type")
		case rs.Image == "":
			c.at("a managed server on Kubernetes runs in a container image: set image (e.g. vllm/vllm-openai or lmsysorg/sglang with a tag)", "services", name)
		case rs.NumNodes > 1:
			c.at("not supported yet: multi-node servers on Kubernetes", "services", name, "num_nodes")
		case rs.PreCmd != "" || len(rs.SetupCommands) > 0:
			c.at("not supported yet: pre_cmd and setup_commands on Kubernetes (the server's image runs its command as is)", "services", name)
		}
	}
	for _, sv := range p.Services {
		for _, e := range sv.Env {
			if e.From != nil && e.From.Default != nil {
				c.at("not supported yet: ${VAR:-default} in a managed server's environment on Kubernetes (a Secret's key has no default)", "services", sv.Name, "extra_env", e.Name)
			}
		}
	}
	if len(c.errs) == 0 {
		return nil
	}
	return c.errs.sorted()
}
