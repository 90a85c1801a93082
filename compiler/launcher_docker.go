package compiler

import (
	"strconv"

	"cuelang.org/go/cue/ast"
	"cuelang.org/go/cue/token"
)

// A deployment under execution: local runs in its image on this machine,
// as the launcher's local executor runs it: docker run --gpus all with the
// port published, the deployment's variables passed by name (-e NAME, so a
// secret stays a reference the process service resolves), its mounts, and
// the server's own command line. nel's local cluster starts servers as
// processes, so the translation is a process service whose command is
// that docker run: the same server, in the same image, as the launcher
// would start.

// localDocker is the deployment's service svc (as it is on SLURM, checked
// there: a managed server, or generic's process) as a process service
// that runs it in docker.
func (t *v1) localDocker(kind string, svc *ast.StructLit) ast.Expr {
	image, _ := stringOf(valueAt(svc, "image"))
	s := &Service{Type: kind, Port: 8000, TensorParallelSize: 1, PipelineParallelSize: 1, DataParallelSize: 1}
	s.Model, _ = stringOf(valueAt(svc, "model"))
	s.ServedModelName, _ = stringOf(valueAt(svc, "served_model_name"))
	for name, dst := range map[string]*int{"port": &s.Port, "tensor_parallel_size": &s.TensorParallelSize,
		"pipeline_parallel_size": &s.PipelineParallelSize, "data_parallel_size": &s.DataParallelSize} {
		if v := valueAt(svc, name); v != nil {
			n, ok := intOf(v)
			if !ok {
				t.refuse(v, []any{"deployment", name}, "expected a whole number")
			}
			*dst = n
		}
	}
	args := []string{"docker", "run", "--rm", "--shm-size=100g", "--gpus", "all", "--entrypoint=",
		"-p", strconv.Itoa(s.Port) + ":" + strconv.Itoa(s.Port)}
	env, _ := valueAt(svc, "extra_env").(*ast.StructLit)
	for f := range fields(structOr(env)) {
		args = append(args, "-e", labelOf(f))
	}
	if mounts, ok := valueAt(svc, "container_mounts").(*ast.ListLit); ok {
		for _, m := range mounts.Elts {
			v, _ := stringOf(m)
			args = append(args, "-v", v)
		}
	}
	if kind == "nim" {
		// A NIM reads its settings from NIM_* variables (as nel's SLURM
		// step gives them) and starts with the script the launcher names.
		args = append(args, "-e", "NIM_SERVED_MODEL_NAME="+servedName(s.Model, s), "-e", "NIM_SERVER_PORT="+strconv.Itoa(s.Port))
	}
	args = append(args, image)
	switch cmd, _ := stringOf(valueAt(svc, "pre_cmd")); {
	case kind == "process":
		// deployment: generic, its command already split into words.
		list, _ := valueAt(svc, "command").(*ast.ListLit)
		for _, e := range list.Elts {
			w, _ := stringOf(e)
			args = append(args, w)
		}
	case cmd != "":
		args = append(args, "bash", "-c", cmd)
	case kind == "nim":
		args = append(args, "/opt/nvidia/nvidia_entrypoint.sh", nimStart)
	default:
		if list, ok := valueAt(svc, "extra_args").(*ast.ListLit); ok {
			for _, e := range list.Elts {
				a, _ := stringOf(e)
				s.ExtraArgs = append(s.ExtraArgs, a)
			}
		}
		args = append(args, engineCommand(v1Service, s)...)
	}
	argv := &ast.ListLit{}
	pos := valueAt(svc, "image").Pos()
	for _, a := range args {
		argv.Elts = append(argv.Elts, stringAt(a, pos))
	}
	model := valueAt(svc, "model")
	if kind != "process" {
		model = stringAt(servedName(s.Model, s), model.Pos())
	}
	// The service keeps its image field, which the local cluster does not
	// read: nel lock pins it like any image, and the pin rewrites the
	// command's image word with it (pinCommandImage).
	out := obj(fld("type", ast.NewString("process")), fld("command", argv), fld("model", model),
		fld("port", ast.NewLit(token.INT, strconv.Itoa(s.Port))), fld("image", valueAt(svc, "image")))
	for _, k := range []string{"health_path", "startup_timeout", "extra_env"} {
		appendField(out, k, valueAt(svc, k))
	}
	return out
}

// dockerLocal reports whether the deployment runs in docker here: a
// server in an image under execution: local.
func (t *v1) dockerLocal(svc *ast.StructLit) bool {
	return t.str("execution.type") == "local" && valueAt(svc, "image") != nil
}

// pinCommandImage rewrites the words of a process service's command that
// are its image (the image docker run starts, as localDocker writes it)
// to pinned, the reference nel lock resolved it to.
func pinCommandImage(s *Service, pinned string) {
	if s.Type != "process" || s.Image == "" {
		return
	}
	for i, w := range s.Command {
		if w == s.Image {
			s.Command[i] = pinned
		}
	}
}
