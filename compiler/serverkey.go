package compiler

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/nel-eval/nel/runtime/plan"
	"github.com/nel-eval/nel/runtime/shellquote"
	"github.com/nel-eval/nel/templates"
)

// On a shared cluster any user can reach a node's ports, so a managed
// server the job starts listens on its node's own address (the one its
// clients are given) rather than on every interface, and answers only
// requests that carry a key made for this job. The job makes the key on
// the node when it starts (from /dev/urandom) and passes it by
// environment: to the server, to wait-ready and to nel-run, which reads
// it by name as it reads any service's api_key. It is never written into
// the script, the plan, a file or a bundle.

// serverAccess says how one engine takes the address and the key.
type serverAccess struct {
	bind bool // the engine's argv has --host, which the job sets
	// keyEnv is the engine's own variable for an API key (vLLM reads
	// VLLM_API_KEY), which keeps the key off its command line.
	keyEnv string
	// keyFlag is the engine's command-line flag for the key, when it
	// reads none from the environment (SGLang).
	keyFlag string
	// keyed says the job makes a key for the server: an engine that
	// takes one, or a process service's own command, which may check it
	// ($NEL_SERVICE_<NAME>_API_KEY; nel-run sim-server --api-key-env).
	keyed bool
	// note is the script's comment for what the engine cannot do.
	note string
}

// access is what the job can do for a managed service of type typ.
func access(typ string) serverAccess {
	switch typ {
	case "vllm":
		return serverAccess{bind: true, keyEnv: "VLLM_API_KEY", keyed: true}
	case "sglang":
		return serverAccess{bind: true, keyFlag: "--api-key", keyed: true,
			note: "SGLang takes its key on its command line (--api-key), which users of this node can see in its process list."}
	case "trt_llm":
		return serverAccess{bind: true, note: "trtllm-serve takes no API key: any user who can reach this node's address can use it."}
	case "process":
		return serverAccess{keyed: true, note: "A process service is your command: nel gives it its node's address and the job's key in the two variables below; binding and checking them are up to it (nel-run sim-server --api-key-env checks the key)."}
	case "gym":
		return serverAccess{note: "A gym service's server_cmd is your command: nel gives it its port in $PORT and its node's address in the variable below; binding is up to it, and a Gym server takes no API key."}
	case "nim":
		return serverAccess{note: "A NIM takes no API key and no bind address from nel: it listens on every interface of its node."}
	case "dynamo":
		return serverAccess{note: "Dynamo's frontend, NATS and etcd take no API key from nel and listen on every interface of their nodes."}
	}
	return serverAccess{}
}

// binds says whether the job binds service rs to its node's address: an
// engine whose --host it sets, unless a pre_cmd starts the server instead.
func (a serverAccess) binds(rs *Service) bool { return a.bind && rs.PreCmd == "" }

// serverHostEnv and serverKeyEnv name the variables that carry managed
// service name's address and key in the job.
func serverHostEnv(name string) string { return "NEL_SERVICE_" + templates.EnvName(name) + "_HOST" }
func serverKeyEnv(name string) string  { return "NEL_SERVICE_" + templates.EnvName(name) + "_API_KEY" }

// guardServers makes plan p's managed services bound and keyed as a SLURM
// job starts them: a keyed service's api_key is the job's key (by name),
// and a bound engine's --host is its node's address. It refuses extra_args
// that would undo either, where nel could not honour both.
func guardServers(s *Source, p *plan.Plan) error {
	c := &ruleChecker{s: s, r: s.Recipe}
	for i := range p.Services {
		sv := &p.Services[i]
		rs := s.Recipe.Services[sv.Name]
		if !sv.Managed || rs == nil {
			continue
		}
		a := access(sv.Type)
		var own []string // the flags the job sets itself
		if a.bind {
			own = append(own, "--host")
		}
		if a.keyEnv != "" || a.keyFlag != "" {
			own = append(own, "--api-key")
		}
		for j, arg := range rs.ExtraArgs {
			for _, flag := range own {
				if arg == flag || strings.HasPrefix(arg, flag+"=") {
					// The value is not repeated: it may be a key.
					c.at("nel binds a managed server to its node's address and gives it a key of its own for each job (README: Security on shared clusters); drop "+flag, "services", sv.Name, "extra_args", j)
				}
			}
		}
		if a.keyed {
			sv.APIKey = &plan.EnvRef{Name: serverKeyEnv(sv.Name)}
		}
		if a.binds(rs) {
			for k := 0; k+1 < len(sv.Command); k++ {
				if sv.Command[k] == "--host" && sv.Command[k+1] == "0.0.0.0" {
					sv.Command[k+1] = "${" + serverHostEnv(sv.Name) + "}"
					break
				}
			}
		}
	}
	if len(c.errs) > 0 {
		return c.errs.sorted()
	}
	return keyContainerHarnesses(p)
}

// keyContainerHarnesses names the key in the run_config of each
// container:// benchmark whose service is now keyed: an eval-factory
// image sends $NEMO_API_KEY (the job exports it from the service's key)
// only when the config names it, and fails when it names an unset one,
// which is why a nel run, whose servers have no key, leaves it out.
func keyContainerHarnesses(p *plan.Plan) error {
	keyed := map[string]bool{}
	for _, sv := range p.Services {
		keyed[sv.Name] = sv.Managed && sv.APIKey != nil
	}
	for _, b := range p.Benchmarks {
		h := b.Harness
		if h == nil || h.Kind != "container" || !keyed[b.Solver.Service] {
			continue
		}
		var cfg map[string]any
		if err := json.Unmarshal([]byte(h.Config), &cfg); err != nil {
			return fmt.Errorf("benchmark %s: run_config: %w", b.Key, err)
		}
		target, _ := cfg["target"].(map[string]any)
		ep, _ := target["api_endpoint"].(map[string]any)
		if ep == nil {
			return fmt.Errorf("benchmark %s: run_config has no target.api_endpoint", b.Key)
		}
		ep["api_key_name"] = containerKeyEnv
		out, err := json.MarshalIndent(cfg, "", "  ")
		if err != nil {
			return fmt.Errorf("benchmark %s: run_config: %w", b.Key, err)
		}
		h.Config = string(out)
	}
	return nil
}

// serverCmd quotes a guarded server's argv for the job's shell: every
// word as written, but its address, the ${NEL_SERVICE_<NAME>_HOST} that
// guardServers put there, which the shell expands.
func serverCmd(sv plan.Service) string {
	ref := "${" + serverHostEnv(sv.Name) + "}"
	words := make([]string, len(sv.Command))
	for i, w := range sv.Command {
		words[i] = shellquote.Quote(w)
		if w == ref && sv.Type != "process" {
			words[i] = `"` + ref + `"`
		}
	}
	return strings.Join(words, " ")
}
