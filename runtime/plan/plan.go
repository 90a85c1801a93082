// Package plan is the contract between nel (the compiler) and nel-run (the
// node runtime): the compiled plan, embedded as JSON in every job script.
// It is the only thing the two share, and it imports nothing else of nel's.
//
// It links no CUE: nel-run reads plans with encoding/json only. Everything a
// node needs to run a shard is here; nothing secret is (keys are named by
// the environment variable that holds them).
//
// # Compatibility
//
// The plan's shape changes only by adding fields; [Version] changes when a
// field changes meaning or goes away, and a plan of another version is
// refused. Within a version, [Parse] holds a plan to one meaning:
//
//   - A field this nel-run does not know is refused, with its name. Such a
//     plan was written by a newer nel and asks for something this nel-run
//     would silently not do, while its results would carry a plan hash that
//     claims it was done. The maps that are open by design (params,
//     generation.extra_body, sandbox env) take any key.
//   - A field an older plan leaves out reads as it meant before the field
//     existed: as its zero value where that is the old behaviour
//     (request_timeout 0 is the default timeout, no local_data checks
//     nothing), and as the default the compiler fills in where the zero
//     value would mean something else (max_error_rate: 0 would make every
//     infrastructure failure fatal, so it reads as [DefaultMaxErrorRate]).
//
// testdata/ holds plans of older shapes, written by earlier compilers, that
// must keep reading; a field added to Plan gets its absence rule here and a
// value in the round-trip test's plan.
package plan

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
)

// Version is the plan format version. nel-run refuses plans of another one.
const Version = 1

// Plan is one compiled recipe.
type Plan struct {
	PlanVersion    int    `json:"plan_version"`
	NelVersion     string `json:"nel_version"`
	ScoringVersion string `json:"scoring_version"`
	RecipeHash     string `json:"recipe_hash"`
	PlanHash       string `json:"plan_hash"`
	// Recipe is the recipe's path as given to nel compile; relative paths in
	// it (params.data_path) resolve against RecipeDir, itself relative to the
	// directory the job was submitted from.
	Recipe    string `json:"recipe"`
	RecipeDir string `json:"recipe_dir"`
	OutputDir string `json:"output_dir"`
	// Shards is how many shards every benchmark is split into (≥ 1).
	Shards           int         `json:"shards"`
	ProgressInterval float64     `json:"progress_interval"`
	Reports          []string    `json:"reports"`
	Services         []Service   `json:"services"`
	Benchmarks       []Benchmark `json:"benchmarks"`
}

// Service is a model endpoint the benchmarks talk to.
type Service struct {
	Name     string `json:"name"`
	Type     string `json:"type"` // api, vllm, sglang, trt_llm, process, dynamo, nim, gym
	Protocol string `json:"protocol"`
	// Model is the id sent in requests.
	Model string `json:"model"`
	// URL is an api service's endpoint as written; ${VAR} references in it
	// are expanded by nel-run from its environment, never at compile time.
	URL string `json:"url,omitempty"`
	// URLEnv names the variable holding a managed server's base URL
	// (http://host:port/v1; a gym server's http://host:port); the job
	// script sets it once the server is up.
	URLEnv string `json:"url_env,omitempty"`
	// APIKey is the ${VAR} reference to the key, never the key.
	APIKey     *EnvRef    `json:"api_key,omitempty"`
	Generation Generation `json:"generation"`
	Managed    bool       `json:"managed"`
	Port       int        `json:"port,omitempty"`
	HealthPath string     `json:"health_path,omitempty"`
	// StartupTimeout is in seconds.
	StartupTimeout float64 `json:"startup_timeout,omitempty"`
	// Command is the server's argv (managed services), run without a shell.
	Command []string `json:"command,omitempty"`
	Env     []EnvVar `json:"env,omitempty"`
	// Image is a managed server's container image as the recipe gives it;
	// Parallelism its parallel layout (vllm, sglang, trt_llm). Both are
	// what provenance records of the server.
	Image       string       `json:"image,omitempty"`
	Parallelism *Parallelism `json:"parallelism,omitempty"`
	// Serves is the benchmark a managed gym service with a benchmark:
	// serves (nel-run serve --service NAME): compiled as a recipe's
	// benchmark is, so that the server scores as that benchmark's shards
	// would. Absent for every other service.
	Serves *Benchmark `json:"serves,omitempty"`
	// Interceptors is the service's proxy.interceptors chain, in recipe
	// order, applied by nel-run's model client to every request
	// (runtime/intercept). Absent: no chain, as before the field.
	Interceptors []Interceptor `json:"interceptors,omitempty"`
	// ModelTraffic, when set, has nel-run log every model HTTP call of the
	// service (proxy.model_traffic). Absent: no log, as before the field.
	ModelTraffic *ModelTraffic `json:"model_traffic,omitempty"`
}

// ModelTraffic is what a model traffic log keeps of each call besides its
// timing, status and token counts (NeMo's proxy.model_traffic keys). The
// capture_* that are nil read as NeMo's defaults (true, but the request
// body: false); MaxContentChars 0 keeps texts whole.
type ModelTraffic struct {
	CaptureToolCalls   *bool `json:"capture_tool_calls,omitempty"`
	CaptureReasoning   *bool `json:"capture_reasoning,omitempty"`
	CaptureMessages    *bool `json:"capture_messages,omitempty"`
	CaptureRequestBody bool  `json:"capture_request_body,omitempty"`
	MaxContentChars    int   `json:"max_content_chars,omitempty"`
}

// Interceptor is one link of a service's interceptor chain: a NeMo
// Evaluator interceptor name and its config as the recipe wrote it (the
// schema validated it; runtime/intercept decodes it).
type Interceptor struct {
	Name   string         `json:"name"`
	Config map[string]any `json:"config,omitempty"`
}

// Parallelism is how a managed server spreads the model over GPUs and
// nodes.
type Parallelism struct {
	TP       int `json:"tensor_parallel_size"`
	PP       int `json:"pipeline_parallel_size"`
	DP       int `json:"data_parallel_size"`
	NumNodes int `json:"num_nodes"`
}

// EnvRefRE matches ${VAR} and ${VAR:-default} references, as the schema's
// #EnvRef does: group 1 is the name, group 3 the default (group 2 tells
// whether there is one). The compiler checks them; nel-run expands them.
var EnvRefRE = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)(:-([^}]*))?\}`)

// BaseURL turns an api service's URL as written into the base URL clients
// append paths to: NeMo Evaluator configs write the full endpoint
// (…/v1/chat/completions), others the base (…/v1).
func BaseURL(u string) string {
	u = strings.TrimRight(u, "/")
	for _, suffix := range []string{"/chat/completions", "/completions", "/responses"} {
		if strings.HasSuffix(u, suffix) {
			return strings.TrimSuffix(u, suffix)
		}
	}
	return u
}

// EnvRef is a ${VAR} or ${VAR:-default} reference to the environment.
type EnvRef struct {
	Name    string  `json:"name"`
	Default *string `json:"default,omitempty"`
}

// EnvVar is one variable a server is started with: a literal Value, or the
// value of another variable of the submitting environment (From).
type EnvVar struct {
	Name  string  `json:"name"`
	Value string  `json:"value,omitempty"`
	From  *EnvRef `json:"from,omitempty"`
}

// Generation holds sampling parameters; nil fields are not sent.
type Generation struct {
	Temperature      *float64       `json:"temperature,omitempty"`
	TopP             *float64       `json:"top_p,omitempty"`
	TopK             *int64         `json:"top_k,omitempty"`
	MaxTokens        *int64         `json:"max_tokens,omitempty"`
	Seed             *int64         `json:"seed,omitempty"`
	Stop             []string       `json:"stop,omitempty"`
	FrequencyPenalty *float64       `json:"frequency_penalty,omitempty"`
	PresencePenalty  *float64       `json:"presence_penalty,omitempty"`
	ExtraBody        map[string]any `json:"extra_body,omitempty"`
}

// Benchmark is one benchmark of the plan.
type Benchmark struct {
	// Key is unique in the plan (the name, or name#2 for a repeat); Dir is
	// the directory under OutputDir its results go to.
	Key  string `json:"key"`
	Name string `json:"name"`
	Dir  string `json:"dir"`
	// Hash is the benchmark hash: its methodology without the model.
	Hash          string  `json:"hash"`
	Solver        Solver  `json:"solver"`
	Repeats       int     `json:"repeats"`
	MaxProblems   *int    `json:"max_problems,omitempty"`
	MaxConcurrent int     `json:"max_concurrent"`
	Timeout       float64 `json:"timeout"` // seconds per sample
	// RequestTimeout is the seconds one model request may take before it
	// is retried (within Timeout).
	RequestTimeout float64 `json:"request_timeout"`
	// MaxErrorRate is the share of samples that may end in infra_error
	// before the benchmark is INVALID.
	MaxErrorRate     float64        `json:"max_error_rate"`
	ShuffleSeed      *int64         `json:"shuffle_seed"`
	Fewshot          *int           `json:"fewshot,omitempty"`
	Params           map[string]any `json:"params,omitempty"`
	Scoring          Scoring        `json:"scoring"`
	Sandbox          *Sandbox       `json:"sandbox,omitempty"`
	SkipFailed       bool           `json:"skip_failed"`
	MaxSystemRetries int            `json:"max_system_retries"`
	// Data is what the recipe's lock pinned for this benchmark: every
	// dataset spec it reads, with the revision and content digest nel-run
	// must find. Empty when the recipe is not locked.
	Data []DataPin `json:"data,omitempty"`
	// LocalData pins the local datasets (a path in params) to the content
	// the hashes covered when the recipe was compiled: nel-run refuses a
	// file that changed since. Other specs load unchecked unless locked.
	LocalData []DataPin `json:"local_data,omitempty"`
	// BYOB is set for a benchmark the recipe declares itself (its byob
	// section): nel-run builds its items and scorer from it instead of
	// looking Name up among the built-ins.
	BYOB *BYOB `json:"byob,omitempty"`
	// Harness is set when a peer harness runs the benchmark (lm-eval://,
	// skills://, container://, vlmevalkit://): the job runs it in its image against the
	// solver's service, and nel-run ingest reads its output into the
	// benchmark's one shard. An older plan has none.
	Harness *Harness `json:"harness,omitempty"`
	// Harbor is set for a harbor://DATASET benchmark: its items are the
	// dataset's tasks, pinned to the content the hashes covered. An older
	// plan has none.
	Harbor *HarborTasks `json:"harbor,omitempty"`
	// InstructionTemplate is the text of the benchmark's
	// instruction_template (NeMo Evaluator's Jinja2 subset,
	// runtime/harbor.ParseInstruction), for an agent's tasks (Harbor's, or
	// byob records with a verifier): each task's prompt is it rendered
	// with the task's variables. Empty: the prompt as the task has it (and
	// an older plan has none).
	InstructionTemplate string `json:"instruction_template,omitempty"`
	// GymServer names the managed gym service that a gym://cmd:
	// benchmark's items and rewards come from (the compiler made it from
	// the command); its address is the service's URLEnv at run time.
	// Absent: a gym:// name is the running server's HOST:PORT.
	GymServer string `json:"gym_server,omitempty"`
}

// HarborTasks is a Harbor dataset (runtime/harbor) as the compiler found
// it: nel-run loads Dir and refuses tasks whose Digest is not this one.
type HarborTasks struct {
	// Dataset is the name after harbor://.
	Dataset string `json:"dataset"`
	// Dir is the dataset's folder: relative to RecipeDir
	// (harbor_datasets/DATASET beside the recipe), or absolute (under
	// $HARBOR_DATASETS_DIR as nel compile saw it).
	Dir string `json:"dir"`
	// Digest is runtime/harbor's digest of every task file.
	Digest string `json:"digest"`
	// Tasks is how many tasks the dataset holds.
	Tasks int `json:"tasks"`
	// Git, when set, says the tasks are not on disk when nel compiles:
	// nel-run fetches a repository at a pinned commit and converts its
	// tasks into Harbor's format at the start of the shard (NeMo
	// Evaluator's terminal-bench-v1 and -hard). Dir and Digest are then
	// empty; the digest of what was converted is recorded with the rows.
	Git *HarborGit `json:"git,omitempty"`
}

// HarborGit is a repository of Terminal-Bench v1 tasks at one commit.
type HarborGit struct {
	// URL is where the repository is fetched from: upstream, or the
	// mirror the recipe names (params.git_url). The hashes leave it out:
	// the commit says what the files are, wherever they come from.
	URL string `json:"url"`
	// Revision is the commit, a full hash.
	Revision string `json:"revision"`
	// Tasks, when set, are the only tasks converted (the -hard subsets).
	Tasks []string `json:"tasks,omitempty"`
	// Unsolvable, when set, are the tasks that fail even for the oracle
	// (NeMo Evaluator's list for the AA split): their category is
	// "unsolvable", every other task's "solvable", so the report shows
	// the solvable subset's score beside the headline.
	Unsolvable []string `json:"unsolvable,omitempty"`
}

// BYOB is a benchmark declared in the recipe: a dataset, a prompt
// template, the field holding the reference answer and a scorer. Every
// text the hashes cover is here as content: a prompt read from a file is
// its text, a schema its JSON.
type BYOB struct {
	// Dataset is the dataset spec (local path relative to RecipeDir,
	// hf://, or URL).
	Dataset string `json:"dataset"`
	// Prompt is the user message template, Python str.format syntax over
	// the record's fields.
	Prompt string `json:"prompt"`
	// Target names the field holding the reference answer.
	Target       string  `json:"target"`
	SystemPrompt *string `json:"system_prompt,omitempty"`
	// Category is the model-card category ("Custom" when empty).
	Category string       `json:"category,omitempty"`
	Fewshot  *BYOBFewshot `json:"fewshot,omitempty"`
	Scorer   BYOBScorer   `json:"scorer"`
	// Verifier makes each record a task for the tool_calling solver: the
	// argv run in the sample's sandbox session after the agent stops, each
	// word a template like Prompt over the record's fields (no shell reads
	// it). Its reward file, else its exit status, is the sample's reward,
	// and Scorer and Target go unused. Empty for a benchmark scored from
	// the answer.
	Verifier []string `json:"verifier,omitempty"`
}

// BYOBFewshot puts the first N records of Dataset before every item, as
// user (Prompt applied to the record) and assistant (Answer applied to it)
// turns.
type BYOBFewshot struct {
	Dataset string `json:"dataset"`
	N       int    `json:"n"`
	// Answer is the assistant turn's template ("{<target>}" by default,
	// filled in by the compiler).
	Answer string `json:"answer"`
}

// BYOBScorer is a BYOB benchmark's scorer: a built-in (Name) with its
// settings, or an external Command.
type BYOBScorer struct {
	Name string `json:"name,omitempty"`
	// Pattern is regex's Python regular expression.
	Pattern string `json:"pattern,omitempty"`
	// Letters are multiple_choice's answer letters ("" for A–J).
	Letters string `json:"letters,omitempty"`
	// Test is code_execution's test code template, appended to the
	// model's code.
	Test string `json:"test,omitempty"`
	// Schema is json_schema's JSON Schema, as JSON text.
	Schema string `json:"schema,omitempty"`
	// Command is an external scorer's argv, run without a shell.
	Command []string `json:"command,omitempty"`
	// Timeout bounds one run of Command or of code_execution's program,
	// in seconds (0: the default).
	Timeout float64 `json:"timeout,omitempty"`
}

// Harness is a peer evaluation harness run in its own container image.
type Harness struct {
	// Kind is "lm-eval" (lm-evaluation-harness), "skills" (NeMo-Skills'
	// ns eval), "container" (an eval-factory image's run_eval) or
	// "vlmevalkit" (VLMEvalKit's run.py) or "harbor" (the Harbor CLI's
	// harbor run, for a harbor:// dataset with the harbor solver).
	Kind string `json:"kind"`
	// Task is the harness's task or benchmark name.
	Task  string `json:"task"`
	Image string `json:"image"`
	// Argv is the harness's command line as the job runs it, with the
	// endpoint's URL in $NEL_HARNESS_URL (known only once the job runs).
	Argv []string `json:"argv"`
	// Config is a file the harness reads (the run_config of a container
	// harness, the driver's config of a vlmevalkit one), written into its
	// folder before it starts; "" when none.
	Config string `json:"config,omitempty"`
}

// Defaults of the benchmark fields the compiler fills when a recipe
// leaves them out (compiler.EffectiveRequestTimeout, EffectiveMaxErrorRate).
const (
	// DefaultRequestTimeout (seconds) is long enough for a long reasoning
	// answer from a busy server, and well under the sample timeout's
	// default (1800 s), so that a hung connection is retried in time.
	DefaultRequestTimeout = 600
	// DefaultMaxErrorRate: one sample in twenty may fail for
	// infrastructure reasons before a benchmark is INVALID.
	DefaultMaxErrorRate = 0.05
)

// DataPin is one dataset spec as `nel lock` resolved it. nel-run loads the
// spec at Revision (for hf:// specs) and refuses data whose digest differs:
// what was locked is never silently re-resolved.
type DataPin struct {
	Spec string `json:"spec"`
	// Revision is the Hub commit ("" for local files and URLs).
	Revision string `json:"revision,omitempty"`
	// Digest is the dataset digest ("sha256:…" over its files' names and
	// sha256s, as runtime/dataset computes it).
	Digest string     `json:"digest"`
	Files  []DataFile `json:"files"`
}

// DataFile is one file of a pinned dataset.
type DataFile struct {
	Name   string `json:"name"`
	SHA256 string `json:"sha256"`
}

// Solver says how a benchmark talks to its model.
type Solver struct {
	Type         string     `json:"type"`
	Service      string     `json:"service"`
	SystemPrompt *string    `json:"system_prompt,omitempty"`
	Generation   Generation `json:"generation"` // merged: service ← benchmark/solver
	ImageDetail  string     `json:"image_detail,omitempty"`
	// The tool_calling solver's settings (nel's own agent loop); a simple
	// solver, the only kind an older plan has, leaves them zero.
	//
	// ResourceService names a gym service whose tools are offered;
	// SandboxTools offers bash, file_read, file_write and
	// str_replace_editor in the sample's sandbox.
	ResourceService string `json:"resource_service,omitempty"`
	SandboxTools    bool   `json:"sandbox_tools,omitempty"`
	MaxTurns        int    `json:"max_turns,omitempty"`
	// ToolTimeout is the seconds one tool call may take.
	ToolTimeout float64 `json:"tool_timeout,omitempty"`
	// MaxOutputChars is where a tool's output is cut, head and tail kept.
	MaxOutputChars int `json:"max_output_chars,omitempty"`
	// ResponseMode is what the sample's response is: "last_message" or
	// "sandbox_artifact".
	ResponseMode string `json:"response_mode,omitempty"`
	// The gym_delegation solver's: GymService names the gym service whose
	// agent runs each sample (POST /run), GymAgent the agent (NeMo's
	// gym_agent, which decides the request's form), and TrustReward takes
	// the agent's reward instead of scoring its answer.
	GymService  string `json:"gym_service,omitempty"`
	GymAgent    string `json:"gym_agent,omitempty"`
	TrustReward bool   `json:"trust_reward,omitempty"`
	// OpenClaw is the openclaw solver's (the OpenClaw agent CLI runs each
	// sample in its sandbox session); nil for every other solver.
	OpenClaw *OpenClaw `json:"openclaw,omitempty"`
}

// OpenClaw is the openclaw solver's settings, NeMo Evaluator's
// OpenClawSolverConfig fields with its defaults filled in.
type OpenClaw struct {
	// Bin is the OpenClaw executable, looked up in nel-run's PATH on the
	// node (openclaw_bin).
	Bin      string `json:"openclaw_bin"`
	Thinking string `json:"thinking"`
	// ContextWindow is the model's window in OpenClaw's config (0:
	// OpenClaw's default).
	ContextWindow      int `json:"context_window,omitempty"`
	MaxConcurrent      int `json:"max_concurrent"`
	IdleTimeoutSeconds int `json:"idle_timeout_seconds"`
	// RunTimeout is nel's agent timeout in seconds (0: the benchmark's
	// timeout); TimeoutStrategy resolves it against a task's own
	// ("task": the smaller, "override": nel's, "max": the larger), and
	// MaxAgentTimeout (0: none) caps the result.
	RunTimeout      float64 `json:"run_timeout,omitempty"`
	TimeoutStrategy string  `json:"timeout_strategy"`
	MaxAgentTimeout float64 `json:"max_agent_timeout,omitempty"`
	// SkipPreflight skips the check, when the shard opens, that the
	// executable is there.
	SkipPreflight bool `json:"skip_preflight,omitempty"`
}

// Scoring lists the metrics of a benchmark.
type Scoring struct {
	IncludeDefaults bool     `json:"include_defaults"`
	Primary         *string  `json:"primary,omitempty"`
	Metrics         []Metric `json:"metrics"`
}

// Metric is one scoring metric.
type Metric struct {
	Type           string  `json:"type"`
	Name           string  `json:"name"`
	Service        string  `json:"service,omitempty"`
	Rubric         *string `json:"rubric,omitempty"`
	RubricFile     *string `json:"rubric_file,omitempty"`
	SystemPrompt   *string `json:"system_prompt,omitempty"`
	MaxScore       float64 `json:"max_score,omitempty"`
	Temperature    float64 `json:"temperature,omitempty"`
	MaxTokens      int     `json:"max_tokens,omitempty"`
	Timeout        float64 `json:"timeout,omitempty"`
	MaxRetries     int     `json:"max_retries,omitempty"`
	AllowSelfJudge bool    `json:"allow_self_judge,omitempty"`
	// ReferenceFree leaves the gold answer out of the judge's prompt.
	ReferenceFree bool `json:"reference_free,omitempty"`
}

// Sandbox is where generated code runs.
type Sandbox struct {
	Name         string            `json:"name,omitempty"`
	Type         string            `json:"type"`
	Image        string            `json:"image,omitempty"`
	Memory       string            `json:"memory,omitempty"`
	Cpus         float64           `json:"cpus,omitempty"`
	Timeout      float64           `json:"timeout,omitempty"`
	Concurrency  int               `json:"concurrency,omitempty"`
	Network      string            `json:"network,omitempty"`
	MaxProcesses int               `json:"max_processes,omitempty"`
	MaxFileSize  string            `json:"max_file_size,omitempty"`
	SlotsPerNode int               `json:"slots_per_node,omitempty"`
	Env          map[string]string `json:"env,omitempty"`
	// ImageTemplate is, for a byob benchmark whose records are tasks
	// (BYOB.Verifier), each sample's environment: a template like
	// BYOB.Prompt over the record's fields (NeMo's {instance_id}) naming
	// the image of a docker or apptainer session, or for the local
	// sandbox a folder relative to RecipeDir copied into /app.
	ImageTemplate string `json:"image_template,omitempty"`
	// Pool is set for a sandbox of an engine (apptainer) that the job runs
	// as a pool of sandbox servers on a node pool, as it runs a slurm
	// sandbox: the shards reach it through the servers the job script
	// lists in NEL_SANDBOX_<NAME>_ENDPOINTS, and the servers run the
	// engine. A plan without it meant the engine on the shard's node.
	Pool bool `json:"pool,omitempty"`
	// SifCacheDir is, for an apptainer sandbox nel-run runs itself (no
	// Pool), the folder where it builds Harbor tasks' images from their
	// Dockerfiles and pulls the images they are built on; "" is the run
	// folder's (rundir.Dir.Images). A pool's is its servers'
	// APPTAINER_CACHEDIR, in the job script.
	SifCacheDir string `json:"sif_cache_dir,omitempty"`
	// ECS is an ecs_fargate sandbox's AWS side (its Memory is there, in
	// Fargate's MiB, not above).
	ECS *ECS `json:"ecs,omitempty"`
}

// ECS is where and how an ecs_fargate sandbox runs its tasks. It names
// AWS resources only: the credentials are nel-run's, from the AWS SDK's
// standard chain on the node.
type ECS struct {
	Region string `json:"region,omitempty"`
	// Cluster "" with Region set: nel-run reads the cluster, and what
	// else is unset here, from the SSM parameter
	// /<SSMProject>/ecs-sandbox/config of the region when the sandbox
	// opens.
	Cluster        string   `json:"cluster"`
	SSMProject     string   `json:"ssm_project,omitempty"`
	Subnets        []string `json:"subnets"`
	SecurityGroups []string `json:"security_groups,omitempty"`
	// AssignPublicIP nil is unset: SSM's, else true.
	AssignPublicIP      *bool  `json:"assign_public_ip,omitempty"`
	CPU                 string `json:"cpu"`
	Memory              string `json:"memory"`
	EphemeralStorageGiB int    `json:"ephemeral_storage_gib,omitempty"`
	ExecutionRoleARN    string `json:"execution_role_arn,omitempty"`
	TaskRoleARN         string `json:"task_role_arn,omitempty"`
	LogGroup            string `json:"log_group,omitempty"`
	LogStreamPrefix     string `json:"log_stream_prefix,omitempty"`
	MaxTaskLifetimeSec  int    `json:"max_task_lifetime_sec"`
	ExecServerPort      int    `json:"exec_server_port"`
	// NelRunImage is the image nel-run is copied into each task from.
	NelRunImage string `json:"nel_run_image"`
}

// Read loads and checks a plan file (see [Parse]).
func Read(path string) (*Plan, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read plan: %w", err)
	}
	p, err := Parse(b)
	if err != nil {
		return nil, fmt.Errorf("read plan %s: %w", path, err)
	}
	return p, nil
}

// Parse decodes a plan by the package's compatibility rules: a plan of
// another Version or with a field this package does not know is refused,
// and a field an older plan leaves out reads as it meant then.
func Parse(data []byte) (*Plan, error) {
	// The version first, so that a plan of another version is refused as
	// such rather than for a field it has or a type it changed.
	var head struct {
		PlanVersion int `json:"plan_version"`
	}
	if err := json.Unmarshal(data, &head); err != nil {
		return nil, err
	}
	if head.PlanVersion != Version {
		return nil, fmt.Errorf("plan version %d, this nel-run reads version %d", head.PlanVersion, Version)
	}
	var p Plan
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, err
	}
	if err := refuseUnknown(data); err != nil {
		return nil, err
	}
	fillOmitted(&p, data)
	return &p, nil
}

// refuseUnknown decodes data again, refusing fields Plan does not have.
// It runs once a lenient decode succeeded, so its only failure is such a
// field.
func refuseUnknown(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(new(Plan)); err != nil {
		return fmt.Errorf("%w: the plan was written by a newer nel than this nel-run; run it with the nel-run of the nel that compiled it", err)
	}
	return nil
}

// fillOmitted gives the fields an older plan leaves out the meaning they
// had before they existed, where their zero value would mean something
// else (the package's compatibility rules). data is p's JSON.
func fillOmitted(p *Plan, data []byte) {
	var present struct {
		Benchmarks []struct {
			MaxErrorRate *float64 `json:"max_error_rate"`
		} `json:"benchmarks"`
	}
	// data decoded as a Plan, so it decodes as this subset of one.
	_ = json.Unmarshal(data, &present)
	for i, b := range present.Benchmarks {
		if b.MaxErrorRate == nil {
			p.Benchmarks[i].MaxErrorRate = DefaultMaxErrorRate
		}
	}
}

// Benchmark returns the benchmark with the given key.
func (p *Plan) Benchmark(key string) (*Benchmark, bool) {
	for i := range p.Benchmarks {
		if p.Benchmarks[i].Key == key {
			return &p.Benchmarks[i], true
		}
	}
	return nil, false
}

// Service returns the service with the given name.
func (p *Plan) Service(name string) (*Service, bool) {
	for i := range p.Services {
		if p.Services[i].Name == name {
			return &p.Services[i], true
		}
	}
	return nil, false
}
