package compiler

import (
	"fmt"

	"github.com/nel-eval/nel/runtime/plan"

	"cuelang.org/go/cue"
)

// Recipe is the validated recipe, decoded from the CUE value. The schema in
// cue/schema.cue decides what is valid; these types only carry the result.
// Unions are flattened: the Type field says which fields mean something.
type Recipe struct {
	Services   map[string]*Service `json:"services"`
	Sandboxes  map[string]*Sandbox `json:"sandboxes"`
	Benchmarks []*Benchmark        `json:"benchmarks"`
	Cluster    Cluster             `json:"cluster"`
	Output     Output              `json:"output"`
}

// Generation holds sampling parameters; nil means "not set" so that a solver
// can override a service field by field. It is the plan's type: what the
// recipe says is what nel-run sends.
type Generation = plan.Generation

// Service is any entry of `services`.
type Service struct {
	Type         string         `json:"type"`
	Protocol     string         `json:"protocol"`
	Generation   *Generation    `json:"generation"`
	Interceptors []any          `json:"interceptors"`
	Proxy        map[string]any `json:"proxy"`
	ProxyVerbose *bool          `json:"proxy_verbose"`
	DependsOn    []string       `json:"depends_on"`

	// api
	URL        string `json:"url"`
	Model      string `json:"model"`
	APIKey     string `json:"api_key"`
	HealthPath string `json:"health_path"`

	// managed servers (vllm, sglang, trt_llm) and process
	ServedModelName      string            `json:"served_model_name"`
	Image                string            `json:"image"`
	TensorParallelSize   int               `json:"tensor_parallel_size"`
	PipelineParallelSize int               `json:"pipeline_parallel_size"`
	DataParallelSize     int               `json:"data_parallel_size"`
	NumNodes             int               `json:"num_nodes"`
	Port                 int               `json:"port"`
	StartupTimeout       float64           `json:"startup_timeout"`
	ExtraArgs            []string          `json:"extra_args"`
	ExtraEnv             map[string]string `json:"extra_env"`
	ContainerMounts      []string          `json:"container_mounts"`
	NodePool             string            `json:"node_pool"`
	Gpus                 any               `json:"gpus"`
	SetupCommands        []string          `json:"setup_commands"`
	PreCmd               string            `json:"pre_cmd"`
	EveryNode            bool              `json:"every_node"`
	Command              []string          `json:"command"` // process
	// Instances copies of the server behind Balancer (instances.go); 0
	// when unset, which means one and no balancer.
	Instances int       `json:"instances"`
	Balancer  *Balancer `json:"balancer"`

	// gym: a managed Gym server's command (gym.go), or the benchmark it
	// serves; an external one is its url.
	ServerCmd string `json:"server_cmd"`
	Benchmark string `json:"benchmark"`
	// Params are the served benchmark's params (data_path, …), as a
	// benchmark's are.
	Params map[string]any `json:"params"`

	// dynamo: disaggregated when Prefill and Decode are set (rules.go
	// refuses one without the other), aggregated otherwise. Engine is
	// sglang, the only one the schema allows.
	Engine  string        `json:"engine"`
	Prefill *DynamoWorker `json:"prefill"`
	Decode  *DynamoWorker `json:"decode"`

	// identity is the model identity the hashes use when it is not Model:
	// a managed server's weights, kept when UseEndpoint turns the service
	// into an api service that sends the served name.
	identity string
}

// DynamoWorker is a dynamo service's prefill or decode role: NumWorkers
// independent workers of NumNodes nodes each. Unset parallelism is 0.
type DynamoWorker struct {
	TensorParallelSize   int               `json:"tensor_parallel_size"`
	PipelineParallelSize int               `json:"pipeline_parallel_size"`
	DataParallelSize     int               `json:"data_parallel_size"`
	NumNodes             int               `json:"num_nodes"`
	NumWorkers           int               `json:"num_workers"`
	NodePool             string            `json:"node_pool"`
	ExtraArgs            []string          `json:"extra_args"`
	ExtraEnv             map[string]string `json:"extra_env"`
}

// Managed reports whether nel starts this service itself.
func (s *Service) Managed() bool {
	switch s.Type {
	case "vllm", "sglang", "trt_llm", "process", "dynamo", "nim":
		return true
	case "gym":
		return s.URL == "" // no url: NeMo's managed Gym server (gym.go)
	}
	return false
}

// Disaggregated reports whether s is a dynamo service with prefill and
// decode workers of their own.
func (s *Service) Disaggregated() bool {
	return s.Type == "dynamo" && s.Prefill != nil && s.Decode != nil
}

// role is a dynamo service's prefill or decode workers, nil when unset.
func (s *Service) role(name string) *DynamoWorker {
	if name == "prefill" {
		return s.Prefill
	}
	return s.Decode
}

// Sandbox is a named or inline sandbox.
type Sandbox struct {
	Type            string            `json:"type"`
	Image           string            `json:"image"`
	ImageTemplate   string            `json:"image_template"`
	Memory          string            `json:"memory"`
	Cpus            float64           `json:"cpus"`
	Timeout         float64           `json:"timeout"`
	VerifyTimeout   float64           `json:"verify_timeout"`
	Concurrency     int               `json:"concurrency"`
	Network         string            `json:"network"`
	NodePool        string            `json:"node_pool"`
	SlotsPerNode    int               `json:"slots_per_node"`
	ContainerEnv    map[string]string `json:"container_env"`
	SifCacheDir     string            `json:"sif_cache_dir"`
	MaxProcesses    int               `json:"max_processes"`
	MaxFileSize     string            `json:"max_file_size"`
	Stateful        bool              `json:"stateful"`
	CaptureCmd      string            `json:"capture_cmd"`
	ScrubGitHistory bool              `json:"scrub_git_history"`
	ECSFargate
}

// ECSFargate is an ecs_fargate sandbox's own fields (NeMo Evaluator's,
// with nel_run_image added); support.go refuses those nel-run cannot
// honour.
type ECSFargate struct {
	ContainerPort        *int        `json:"container_port"`
	Region               string      `json:"region"`
	Cluster              string      `json:"cluster"`
	Subnets              []string    `json:"subnets"`
	SecurityGroups       []string    `json:"security_groups"`
	AssignPublicIP       *bool       `json:"assign_public_ip"`
	CPU                  string      `json:"cpu"`
	EphemeralStorageGiB  int         `json:"ephemeral_storage_gib"`
	ExecutionRoleARN     string      `json:"execution_role_arn"`
	TaskRoleARN          string      `json:"task_role_arn"`
	LogGroup             string      `json:"log_group"`
	LogStreamPrefix      string      `json:"log_stream_prefix"`
	MaxTaskLifetimeSec   int         `json:"max_task_lifetime_sec"`
	SSHSidecar           *SSHSidecar `json:"ssh_sidecar"`
	S3Bucket             string      `json:"s3_bucket"`
	S3Prefix             string      `json:"s3_prefix"`
	ECRRepository        string      `json:"ecr_repository"`
	CodebuildProject     string      `json:"codebuild_project"`
	CodebuildServiceRole string      `json:"codebuild_service_role"`
	CodebuildTimeout     int         `json:"codebuild_build_timeout"`
	CodebuildCompute     string      `json:"codebuild_compute_type"`
	DockerhubSecretARN   string      `json:"dockerhub_secret_arn"`
	EFSFilesystemID      string      `json:"efs_filesystem_id"`
	EFSAccessPointID     string      `json:"efs_access_point_id"`
	SSMProject           string      `json:"ssm_project"`
	NelRunImage          string      `json:"nel_run_image"`
}

// SSHSidecar is NeMo Evaluator's ssh_sidecar of an ecs_fargate sandbox.
type SSHSidecar struct {
	SSHDPort            int     `json:"sshd_port"`
	SSHReadyTimeoutSec  float64 `json:"ssh_ready_timeout_sec"`
	PublicKeySecretARN  string  `json:"public_key_secret_arn"`
	PrivateKeySecretARN string  `json:"private_key_secret_arn"`
	Image               string  `json:"image"`
	ExecServerPort      *int    `json:"exec_server_port"`
}

// Benchmark is one entry of `benchmarks`.
type Benchmark struct {
	Name                string         `json:"name"`
	Solver              Solver         `json:"solver"`
	Repeats             int            `json:"repeats"`
	MaxProblems         *int           `json:"max_problems"`
	MaxConcurrent       int            `json:"max_concurrent"`
	Fewshot             *int           `json:"fewshot"`
	ContextWindow       *int           `json:"context_window"`
	Timeout             float64        `json:"timeout"`
	RequestTimeout      *float64       `json:"request_timeout"`
	MaxErrorRate        *float64       `json:"max_error_rate"`
	SkipFailed          bool           `json:"skip_failed"`
	MaxSystemRetries    int            `json:"max_system_retries"`
	InstructionTemplate *string        `json:"instruction_template"`
	Verifier            string         `json:"verifier"`
	ShuffleSeed         *int64         `json:"shuffle_seed"`
	Sandbox             any            `json:"sandbox"` // string name or inline
	Scoring             Scoring        `json:"scoring"`
	Params              map[string]any `json:"params"`
	SystemPrompt        *string        `json:"system_prompt"`
	Generation          *Generation    `json:"generation"`
	BYOB                *BYOB          `json:"byob"`
	// harnessImage is the harness's image as nel lock pinned it; "" until
	// a lock is applied (harnessImage gives the image the job uses).
	harnessImage string
	// harborDir is, for the harbor solver on a Harbor dataset that is on
	// this machine, its folder as the plan names it (relative to the
	// recipe's folder, or absolute): the CLI runs it with --path.
	harborDir string
	// harborGit is set for the harbor solver on tasks nel-run builds from
	// a git repository on the node (nel-run harbor-tasks): the CLI runs
	// the folder that prints.
	harborGit bool
}

// BYOB is a benchmark's byob section (a benchmark the recipe declares).
type BYOB struct {
	Dataset      string       `json:"dataset"`
	Prompt       string       `json:"prompt"`
	Target       string       `json:"target"`
	SystemPrompt *string      `json:"system_prompt"`
	Category     string       `json:"category"`
	Fewshot      *BYOBFewshot `json:"fewshot"`
	// Scorer is a scorer's name (string) or a map: {name, pattern, …} or
	// {command, timeout}.
	Scorer any `json:"scorer"`
	// Verifier makes the records tasks for the tool_calling solver
	// (byob_tasks.go).
	Verifier []string `json:"verifier"`

	// spec is the section as nel-run reads it, files read (the prompt,
	// the schema): filled by the byob rule (byob.go) when it is valid.
	spec *plan.BYOB
	// commandFiles are the digests of the files a scorer command names
	// (its script), by the argument that names them: the hashes cover
	// what the scorer runs, not only its command line.
	commandFiles map[string]string
}

// BYOBFewshot is byob.fewshot, as the plan has it (the compiler fills in
// the default answer).
type BYOBFewshot = plan.BYOBFewshot

// Solver is a benchmark's solver; only `simple` runs today.
type Solver struct {
	Type            string      `json:"type"`
	Service         string      `json:"service"`
	SystemPrompt    *string     `json:"system_prompt"`
	Generation      *Generation `json:"generation"`
	ImageDetail     string      `json:"image_detail"`
	ResourceService string      `json:"resource_service"`
	GymService      string      `json:"gym_service"`
	GymAgent        string      `json:"gym_agent"`
	TrustReward     bool        `json:"trust_reward"`
	SandboxTools    bool        `json:"sandbox_tools"`
	// The tool_calling solver's (nel's own agent loop).
	MaxTurns       int     `json:"max_turns"`
	ToolTimeout    float64 `json:"tool_timeout"`
	MaxOutputChars int     `json:"max_output_chars"`
	ResponseMode   string  `json:"response_mode"`
	// The container solver's (an eval-factory image, container://).
	EndpointType  string            `json:"endpoint_type"`
	AdapterConfig map[string]any    `json:"adapter_config"`
	EnvVars       map[string]string `json:"env_vars"`
	Mounts        map[string]string `json:"mounts"`
	// The harbor solver's (the Harbor CLI's own agents).
	Agent           string            `json:"agent"`
	AgentKwargs     map[string]any    `json:"agent_kwargs"`
	ContainerEnv    map[string]string `json:"container_env"`
	RunTimeout      *float64          `json:"run_timeout"`
	CmdTimeout      *float64          `json:"cmd_timeout"`
	TimeoutStrategy string            `json:"timeout_strategy"`
	MaxAgentTimeout *float64          `json:"max_agent_timeout"`
	Skill           string            `json:"skill"`
	SkillDir        string            `json:"skill_dir"`
	// The openclaw solver's (the OpenClaw agent CLI); run_timeout,
	// timeout_strategy and max_agent_timeout above are its too.
	Thinking           string  `json:"thinking"`
	ContextWindow      *int    `json:"context_window"`
	MaxConcurrent      int     `json:"max_concurrent"`
	IdleTimeoutSeconds int     `json:"idle_timeout_seconds"`
	WebSearchProvider  *string `json:"web_search_provider"`
	ConfigPath         *string `json:"config_path"`
	SkipPreflight      bool    `json:"skip_preflight"`
	OpenClawBin        string  `json:"openclaw_bin"`
}

// Scoring selects the metrics computed for each sample.
type Scoring struct {
	IncludeDefaults bool      `json:"include_defaults"`
	Metrics         []*Metric `json:"metrics"`
	Primary         *string   `json:"primary"`
}

// Metric is one scoring metric.
type Metric struct {
	Type            string   `json:"type"`
	Name            string   `json:"name"`
	Service         string   `json:"service"`
	Rubric          *string  `json:"rubric"`
	RubricFile      *string  `json:"rubric_file"`
	SystemPrompt    *string  `json:"system_prompt"`
	MaxScore        float64  `json:"max_score"`
	SwapCheck       bool     `json:"swap_check"`
	ReferenceFree   bool     `json:"reference_free"`
	Temperature     float64  `json:"temperature"`
	MaxTokens       int      `json:"max_tokens"`
	Timeout         float64  `json:"timeout"`
	MaxRetries      int      `json:"max_retries"`
	AllowSelfJudge  bool     `json:"allow_self_judge"`
	JudgeService    string   `json:"judge_service"`
	BaselineService string   `json:"baseline_service"`
	Services        []string `json:"services"`
	Command         string   `json:"command"`
	// RubricText is rubric_file's content, read when the recipe is
	// validated (rules.go): the plan carries it and the hashes cover it.
	RubricText string `json:"-"`
}

// Cluster says where the job runs.
type Cluster struct {
	Type             string               `json:"type"`
	Account          string               `json:"account"`
	Partition        string               `json:"partition"`
	Walltime         string               `json:"walltime"`
	NodePools        map[string]*NodePool `json:"node_pools"`
	ContainerMounts  []string             `json:"container_mounts"`
	ContainerEnv     map[string]string    `json:"container_env"`
	MountHome        bool                 `json:"mount_home"`
	AutoResume       bool                 `json:"auto_resume"`
	MaxRetries       int                  `json:"max_retries"`
	MaxWalltime      string               `json:"max_walltime"`
	Shards           *int                 `json:"shards"`
	SbatchComment    string               `json:"sbatch_comment"`
	SbatchExtraFlags map[string]any       `json:"sbatch_extra_flags"`
	CondaEnv         string               `json:"conda_env"`
	EvalImage        string               `json:"eval_image"`
	ShmSize          string               `json:"shm_size"`
	Hostname         string               `json:"hostname"`
	EvalPool         string               `json:"eval_pool"`
	Gpus             []int                `json:"gpus"`
	RemotePaths      bool                 `json:"remote_paths"`
}

// NodePool is a named group of SLURM resources.
type NodePool struct {
	Partition        string         `json:"partition"`
	Nodes            int            `json:"nodes"`
	NtasksPerNode    int            `json:"ntasks_per_node"`
	Gres             string         `json:"gres"`
	GpusPerNode      *int           `json:"gpus_per_node"`
	SbatchExtraFlags map[string]any `json:"sbatch_extra_flags"`
}

// Output says where results go.
type Output struct {
	Dir              string   `json:"dir"`
	Timestamped      bool     `json:"timestamped"`
	ProgressInterval float64  `json:"progress_interval"`
	Report           []string `json:"report"`
	Export           []string `json:"export"`
}

func decodeRecipe(v cue.Value) (*Recipe, error) {
	var r Recipe
	if err := v.Decode(&r); err != nil {
		return nil, fmt.Errorf("decode recipe: %w", err)
	}
	return &r, nil
}
