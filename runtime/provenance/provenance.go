// Package provenance records where a number came from: the model server
// that answered (its fingerprint as data), the machine a shard ran on, and
// the nel build. Every shard collects it when it starts and writes it into
// its Parquet metadata (key results.MetaProvenance); merge joins the shards'
// records into the bundle, and reports and `nel reproduce` read it there.
package provenance

// Version is the format version of Record.
const Version = 1

// Record is what one shard saw.
type Record struct {
	Version int   `json:"provenance_version"`
	Build   Build `json:"build"`
	Host    Host  `json:"host"`
	// Serving has one entry per service the benchmark used (its solver's,
	// then its judges'), in that order.
	Serving []Serving `json:"serving,omitempty"`
}

// Build is the nel-run that ran the shard.
type Build struct {
	NelVersion string `json:"nel_version"`
	GoVersion  string `json:"go_version,omitempty"`
	// Revision is the VCS commit the binary was built from ("" when the
	// build did not record it); Modified says the tree had local changes.
	Revision string `json:"vcs_revision,omitempty"`
	Modified bool   `json:"vcs_modified,omitempty"`
	// SHA256 is the running binary's sha256 ("sha256:<hex>").
	SHA256 string `json:"sha256,omitempty"`
}

// Host is the machine a shard ran on, as far as it can be known without
// privileges. Empty fields are unknown.
type Host struct {
	Hostname string `json:"hostname"`
	OS       string `json:"os"`
	Arch     string `json:"arch"`
	CPUs     int    `json:"cpus"`
	CPUModel string `json:"cpu_model,omitempty"`
	// GPUs lists the GPUs this host shows (model names, e.g. "NVIDIA
	// H100 80GB HBM3"), one entry per device; nil when none or unknown.
	GPUs []string `json:"gpus,omitempty"`
	// SLURM job context, when the shard ran under SLURM.
	SlurmJobID   string `json:"slurm_job_id,omitempty"`
	SlurmCluster string `json:"slurm_cluster,omitempty"`
}

// Serving is the fingerprint of one model service, as data.
type Serving struct {
	// Service is the recipe's service name; Role is "model" or "judge".
	Service string `json:"service"`
	Role    string `json:"role"`
	// Model is the id nel sends in requests.
	Model string `json:"model"`
	// Engine is the service type from the recipe: api, process, vllm,
	// sglang, trt_llm.
	Engine string `json:"engine"`
	// For servers nel starts (from the recipe): the container image (by
	// digest when the recipe is locked), the server's argv, and its
	// parallelism. Empty for api services.
	Image    string   `json:"image,omitempty"`
	Command  []string `json:"command,omitempty"`
	TP       int      `json:"tensor_parallel_size,omitempty"`
	PP       int      `json:"pipeline_parallel_size,omitempty"`
	DP       int      `json:"data_parallel_size,omitempty"`
	NumNodes int      `json:"num_nodes,omitempty"`

	// What the server says about itself, probed when the shard starts.
	// Models is GET /v1/models: the ids served, with vLLM's root (the
	// weights path) and max_model_len when present.
	Models []ServedModel `json:"models,omitempty"`
	// ServerVersion is the version the server reports (vLLM and SGLang:
	// GET /version; others: a version response header), "" when unknown.
	ServerVersion string `json:"server_version,omitempty"`
	// Headers are the identifying response headers of /v1/models (Server,
	// and names containing "version", "model" or "fingerprint"),
	// lower-cased names, values as sent. Never cookies or auth headers.
	Headers map[string]string `json:"headers,omitempty"`
	// SystemFingerprint is the first system_fingerprint a completion
	// carried ("" when the server sends none).
	SystemFingerprint string `json:"system_fingerprint,omitempty"`
	// ProbeError says why the probe failed ("" when it worked): provenance
	// is best-effort and never fails a shard.
	ProbeError string `json:"probe_error,omitempty"`
	// Fingerprint is "sha256:<hex>" over the canonical JSON of the fields
	// above except ProbeError and Service/Role: two runs against the same
	// server build and model agree on it.
	Fingerprint string `json:"fingerprint"`
}

// ServedModel is one entry of GET /v1/models.
type ServedModel struct {
	ID          string `json:"id"`
	OwnedBy     string `json:"owned_by,omitempty"`
	Root        string `json:"root,omitempty"`
	MaxModelLen int    `json:"max_model_len,omitempty"`
}
