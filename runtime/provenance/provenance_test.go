package provenance_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/nel-eval/nel/runtime/provenance"
)

// vllm imitates vLLM 0.6.3's OpenAI server: /v1/models with root and
// max_model_len behind an API key, /version open, uvicorn's Server header.
func vllm(t *testing.T, version string) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer sk-secret" {
			http.Error(w, `{"error":"Unauthorized"}`, http.StatusUnauthorized)
			return
		}
		w.Header().Set("Server", "uvicorn")
		w.Header().Set("Set-Cookie", "session=abc")
		w.Header().Set("Date", "Mon, 01 Jan 2024 00:00:00 GMT")
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"object":"list","data":[
			{"id":"llama-8b","object":"model","created":1718000000,"owned_by":"vllm","root":"/models/Meta-Llama-3.1-8B-Instruct","parent":null,"max_model_len":131072},
			{"id":"llama-8b-lora","object":"model","owned_by":"vllm","root":"/loras/x","parent":"llama-8b"}]}`))
	})
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Server", "uvicorn")
		w.Write([]byte(`{"version":"` + version + `"}`))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestProbeVLLM(t *testing.T) {
	srv := vllm(t, "0.6.3")
	s := provenance.Serving{Service: "m", Role: "model", Model: "llama-8b", Engine: "vllm"}
	provenance.Probe(context.Background(), srv.Client(), srv.URL+"/v1/", "sk-secret", &s)
	if s.ProbeError != "" {
		t.Fatalf("ProbeError = %q", s.ProbeError)
	}
	want := provenance.ServedModel{ID: "llama-8b", OwnedBy: "vllm", Root: "/models/Meta-Llama-3.1-8B-Instruct", MaxModelLen: 131072}
	if len(s.Models) != 1 || s.Models[0] != want {
		t.Errorf("Models = %+v, want only the asked-for %+v", s.Models, want)
	}
	if s.ServerVersion != "0.6.3" {
		t.Errorf("ServerVersion = %q, want 0.6.3", s.ServerVersion)
	}
	if len(s.Headers) != 1 || s.Headers["server"] != "uvicorn" {
		t.Errorf("Headers = %v, want only server: uvicorn", s.Headers)
	}
	b, _ := json.Marshal(s)
	if strings.Contains(string(b), "sk-secret") || strings.Contains(string(b), "session") {
		t.Errorf("the record carries a credential: %s", b)
	}
}

func TestProbeWrongKeySaysSo(t *testing.T) {
	srv := vllm(t, "0.6.3")
	s := provenance.Serving{Model: "llama-8b"}
	provenance.Probe(context.Background(), srv.Client(), srv.URL+"/v1", "sk-wrong", &s)
	if !strings.Contains(s.ProbeError, "HTTP 401") || strings.Contains(s.ProbeError, "sk-wrong") {
		t.Errorf("ProbeError = %q, want the 401 and no key", s.ProbeError)
	}
	if s.ServerVersion != "0.6.3" { // /version is open on vLLM
		t.Errorf("ServerVersion = %q", s.ServerVersion)
	}
}

// An OpenAI-like hosted API: many models, no /version (404), version
// headers.
func TestProbeHostedAPI(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Openai-Version", "2020-10-01")
		w.Header().Set("X-Request-Id", "req_123")
		w.Header().Set("Server", "cloudflare")
		w.Header().Set("X-Api-Key-Version", "k1") // names a key: never kept
		w.Write([]byte(`{"object":"list","data":[{"id":"gpt-b","object":"model","owned_by":"system"},{"id":"gpt-a","object":"model","owned_by":"openai"}]}`))
	})
	srv := httptest.NewServer(mux) // /version: the mux's 404
	defer srv.Close()
	s := provenance.Serving{Model: "gpt-c"} // not listed: all are kept
	provenance.Probe(context.Background(), srv.Client(), srv.URL+"/v1", "", &s)
	if s.ProbeError != "" {
		t.Errorf("ProbeError = %q, want none (a 404 on /version is normal)", s.ProbeError)
	}
	if len(s.Models) != 2 || s.Models[0].ID != "gpt-a" || s.Models[1].ID != "gpt-b" || s.Models[0].OwnedBy != "openai" {
		t.Errorf("Models = %+v, want gpt-a, gpt-b sorted", s.Models)
	}
	want := map[string]string{"openai-version": "2020-10-01", "server": "cloudflare"}
	if len(s.Headers) != len(want) || s.Headers["openai-version"] != want["openai-version"] || s.Headers["server"] != want["server"] {
		t.Errorf("Headers = %v, want %v", s.Headers, want)
	}
	if s.ServerVersion != "2020-10-01" {
		t.Errorf("ServerVersion = %q, want the openai-version header's", s.ServerVersion)
	}
}

func TestProbeHangingServerTimesOut(t *testing.T) {
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	start := time.Now()
	s := provenance.Serving{Model: "m"}
	provenance.Probe(context.Background(), srv.Client(), srv.URL+"/v1", "", &s)
	if d := time.Since(start); d > provenance.ProbeTimeout+2*time.Second {
		t.Errorf("Probe took %v, want about %v", d, provenance.ProbeTimeout)
	}
	if !strings.Contains(s.ProbeError, "no answer within") {
		t.Errorf("ProbeError = %q, want a timeout", s.ProbeError)
	}
}

func TestProbeUnreachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	u := srv.URL
	srv.Close()
	s := provenance.Serving{Model: "m"}
	provenance.Probe(context.Background(), nil, "http://user:pw@"+strings.TrimPrefix(u, "http://")+"/v1", "", &s)
	if s.ProbeError == "" || strings.Contains(s.ProbeError, "pw") {
		t.Errorf("ProbeError = %q, want an error without the URL's password", s.ProbeError)
	}
}

func TestFingerprint(t *testing.T) {
	srv := vllm(t, "0.6.3")
	probe := func(base string) provenance.Serving {
		s := provenance.Serving{Service: "m", Role: "model", Model: "llama-8b", Engine: "vllm", TP: 2,
			Image: "vllm/vllm-openai@sha256:abcd", Command: []string{"vllm", "serve"}}
		provenance.Probe(context.Background(), nil, base, "sk-secret", &s)
		s.Fingerprint = provenance.Fingerprint(&s)
		return s
	}
	a, b := probe(srv.URL+"/v1"), probe(srv.URL+"/v1")
	if !strings.HasPrefix(a.Fingerprint, "sha256:") || len(a.Fingerprint) != len("sha256:")+64 {
		t.Fatalf("Fingerprint = %q", a.Fingerprint)
	}
	if a.Fingerprint != b.Fingerprint {
		t.Errorf("two probes of one server differ: %s, %s", a.Fingerprint, b.Fingerprint)
	}
	// The service's name is not the server's identity.
	c := a
	c.Service, c.Role, c.ProbeError = "other", "judge", "x"
	if provenance.Fingerprint(&c) != a.Fingerprint {
		t.Error("the fingerprint depends on the service name, role or probe error")
	}
	newer := probe(vllm(t, "0.6.4").URL + "/v1")
	if newer.Fingerprint == a.Fingerprint {
		t.Error("servers of different versions have the same fingerprint")
	}
	for name, change := range map[string]func(*provenance.Serving){
		"tp":                 func(s *provenance.Serving) { s.TP = 4 },
		"image":              func(s *provenance.Serving) { s.Image = "vllm/vllm-openai@sha256:ef01" },
		"system_fingerprint": func(s *provenance.Serving) { s.SystemFingerprint = "fp_1" },
		"root":               func(s *provenance.Serving) { s.Models = []provenance.ServedModel{{ID: "llama-8b", Root: "/other"}} },
	} {
		d := a
		change(&d)
		if provenance.Fingerprint(&d) == a.Fingerprint {
			t.Errorf("changing %s leaves the fingerprint", name)
		}
	}
}

func TestHostGPUs(t *testing.T) {
	root := t.TempDir()
	write := func(rel, text string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// As the NVIDIA driver writes them (535.x).
	info := func(model string) string {
		return "Model: \t\t " + model + "\nIRQ:   \t\t 0\nGPU UUID: \t GPU-0b3f\nVideo BIOS: \t 96.00.89.00.01\nBus Type: \t PCIe\nDMA Size: \t 52 bits\nDevice Minor: \t 0\nGPU Excluded:\t No\n"
	}
	write("proc/driver/nvidia/gpus/0000:18:00.0/information", info("NVIDIA H100 80GB HBM3"))
	write("proc/driver/nvidia/gpus/0000:2a:00.0/information", info("NVIDIA H100 80GB HBM3"))
	write("proc/driver/nvidia/gpus/0000:3a:00.0/information", info("NVIDIA A100-SXM4-80GB"))
	write("proc/cpuinfo", "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel\t\t: 143\nmodel name\t: Intel(R) Xeon(R) Platinum 8480CL\n\nprocessor\t: 1\nmodel name\t: Intel(R) Xeon(R) Platinum 8480CL\n")
	env := map[string]string{"SLURM_JOB_ID": "4242", "SLURM_CLUSTER_NAME": "eos"}
	h := provenance.HostFrom(root, func(k string) string { return env[k] })
	want := []string{"NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3", "NVIDIA A100-SXM4-80GB"}
	if strings.Join(h.GPUs, "|") != strings.Join(want, "|") {
		t.Errorf("GPUs = %q, want %q", h.GPUs, want)
	}
	if h.CPUModel != "Intel(R) Xeon(R) Platinum 8480CL" {
		t.Errorf("CPUModel = %q", h.CPUModel)
	}
	if h.SlurmJobID != "4242" || h.SlurmCluster != "eos" || h.OS != runtime.GOOS || h.CPUs < 1 || h.Hostname == "" {
		t.Errorf("Host = %+v", h)
	}
	if got := provenance.GPUSummary([]provenance.Host{h, h}); got != "2× NVIDIA A100-SXM4-80GB, 4× NVIDIA H100 80GB HBM3" {
		t.Errorf("GPUSummary = %q", got)
	}

	bare := provenance.HostFrom(t.TempDir(), func(string) string { return "" })
	if bare.GPUs != nil || bare.CPUModel != "" || bare.SlurmJobID != "" {
		t.Errorf("a host without /proc: %+v", bare)
	}
}

func TestBuild(t *testing.T) {
	b := provenance.CollectBuild("v1.2.3")
	if b.NelVersion != "v1.2.3" || !strings.HasPrefix(b.GoVersion, "go") {
		t.Errorf("Build = %+v", b)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Skip(err)
	}
	want, err := provenance.FileSHA256(exe)
	if err != nil {
		t.Fatal(err)
	}
	if b.SHA256 != want || !strings.HasPrefix(want, "sha256:") {
		t.Errorf("SHA256 = %q, want %q", b.SHA256, want)
	}
}

func TestFileSHA256(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("abc"), 0o644)
	got, err := provenance.FileSHA256(p)
	// sha256("abc") from FIPS 180-2, appendix B.1.
	if err != nil || got != "sha256:ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" {
		t.Errorf("FileSHA256 = %q, %v", got, err)
	}
}

func TestJoinParse(t *testing.T) {
	a := provenance.Record{Version: 1, Host: provenance.Host{Hostname: "node2"}}
	b := provenance.Record{Version: 1, Host: provenance.Host{Hostname: "node1", GPUs: []string{"G"}}}
	c := provenance.Record{Version: 1, Host: provenance.Host{Hostname: "node1"}}
	s, err := provenance.Join([]provenance.Record{a, b, a, c})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := provenance.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	// node1 twice, then node2 once. Of the node1 records, b's JSON goes on
	// with ',"gpus"' where c's ends with '}', and ',' < '}': b first.
	var got []string
	for _, r := range recs {
		got = append(got, r.Host.Hostname+"/"+strings.Join(r.Host.GPUs, ","))
	}
	if strings.Join(got, " ") != "node1/G node1/ node2/" {
		t.Errorf("joined = %v (%s)", got, s)
	}
	one, _ := json.Marshal(a)
	recs, err = provenance.Parse(string(one))
	if err != nil || len(recs) != 1 || recs[0].Host.Hostname != "node2" {
		t.Errorf("Parse(object) = %+v, %v", recs, err)
	}
	if recs, err := provenance.Parse(""); recs != nil || err != nil {
		t.Errorf("Parse(\"\") = %v, %v", recs, err)
	}
	if _, err := provenance.Parse("{"); err == nil {
		t.Error("Parse of broken JSON: no error")
	}
}
