package provenance

import (
	"bufio"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"time"
)

// CollectBuild describes the running binary: nelVersion (what the build
// calls itself), the Go version and VCS stamp from its build info, and the
// sha256 of its executable file.
func CollectBuild(nelVersion string) Build {
	b := Build{NelVersion: nelVersion, GoVersion: runtime.Version()}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.GoVersion != "" {
			b.GoVersion = bi.GoVersion
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	b.SHA256, _ = executableSHA256()
	return b
}

// executableSHA256 hashes the running binary once per process: it does not
// change while the process runs, and nel-run may run many shards (reading
// ~30 MB each time would be waste). The value is a constant once computed;
// across processes, the cache of exehash.go keeps it.
var executableSHA256 = sync.OnceValues(func() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", err
	}
	return cachedFileSHA256(exe, exeCacheDir(), time.Now())
})

// FileSHA256 is "sha256:<hex>" of the file at path.
func FileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", fmt.Errorf("hash %s: %w", path, err)
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// CollectHost describes this machine. getenv reads the SLURM variables (nil
// means os.Getenv).
func CollectHost(getenv func(string) string) Host {
	return HostFrom("/", getenv)
}

// HostFrom is CollectHost with /proc read under root (tests pass a fake
// tree). What cannot be read is left empty: a host without /proc (macOS)
// or without NVIDIA's driver is described by what it has.
func HostFrom(root string, getenv func(string) string) Host {
	if getenv == nil {
		getenv = os.Getenv
	}
	h := Host{
		OS:           runtime.GOOS,
		Arch:         runtime.GOARCH,
		CPUs:         runtime.NumCPU(),
		SlurmJobID:   getenv("SLURM_JOB_ID"),
		SlurmCluster: getenv("SLURM_CLUSTER_NAME"),
	}
	h.Hostname, _ = os.Hostname()
	if f, err := os.Open(filepath.Join(root, "proc", "cpuinfo")); err == nil {
		h.CPUModel = firstField(f, "model name")
		f.Close()
	}
	h.GPUs = nvidiaGPUs(filepath.Join(root, "proc", "driver", "nvidia", "gpus"))
	return h
}

// nvidiaGPUs reads the "Model:" line of every <dir>/<pci-bus-id>/information
// file the NVIDIA driver exposes, in bus-id order (the directory order),
// which is the order nvidia-smi lists them in. No exec: nvidia-smi may be
// missing from the container, and reading is cheaper.
func nvidiaGPUs(dir string) []string {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var gpus []string
	for _, e := range ents {
		f, err := os.Open(filepath.Join(dir, e.Name(), "information"))
		if err != nil {
			continue
		}
		if m := firstField(f, "Model"); m != "" {
			gpus = append(gpus, m)
		}
		f.Close()
	}
	return gpus
}

// firstField is the value of the first "key: value" line of r whose key
// (trimmed of spaces and tabs) is key.
func firstField(r io.Reader, key string) string {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == key {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// fingerprinted is what Fingerprint hashes, in a fixed order: encoding/json
// writes struct fields in declaration order and map keys sorted, so the
// encoding is canonical.
type fingerprinted struct {
	Model             string            `json:"model"`
	Engine            string            `json:"engine"`
	Image             string            `json:"image"`
	Command           []string          `json:"command"`
	Parallelism       [4]int            `json:"parallelism"` // tp, pp, dp, nodes
	Models            []ServedModel     `json:"models"`
	ServerVersion     string            `json:"server_version"`
	Headers           map[string]string `json:"headers"`
	SystemFingerprint string            `json:"system_fingerprint"`
}

// Fingerprint is "sha256:<hex>" over the canonical JSON of what identifies
// s's server: model, engine, image, command, parallelism, the served
// models, server version, identifying headers and system_fingerprint. Not
// the service's name or role (two recipes may name the same server
// differently), nor ProbeError.
func Fingerprint(s *Serving) string {
	f := fingerprinted{
		Model: s.Model, Engine: s.Engine, Image: s.Image, Command: s.Command,
		Parallelism:   [4]int{s.TP, s.PP, s.DP, s.NumNodes},
		Models:        s.Models,
		ServerVersion: s.ServerVersion, Headers: s.Headers,
		SystemFingerprint: s.SystemFingerprint,
	}
	b, err := json.Marshal(f)
	if err != nil {
		// Strings, ints and a map of strings always marshal.
		panic(err)
	}
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Short is a fingerprint or hash for people: "sha256:" dropped, 12 hex
// digits kept.
func Short(h string) string {
	h = strings.TrimPrefix(h, "sha256:")
	if len(h) > 12 {
		h = h[:12]
	}
	return h
}

// GPUSummary counts a host list's GPUs by model, e.g. "8× NVIDIA H100 80GB
// HBM3" or "2× A, 1× B" (models sorted); "" when no host shows a GPU.
func GPUSummary(hosts []Host) string {
	count := map[string]int{}
	for _, h := range hosts {
		for _, g := range h.GPUs {
			count[g]++
		}
	}
	names := make([]string, 0, len(count))
	for n := range count {
		names = append(names, n)
	}
	slices.Sort(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = fmt.Sprintf("%d× %s", count[n], n)
	}
	return strings.Join(parts, ", ")
}
