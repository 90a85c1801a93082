package compiler

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/nel-eval/nel/runtime/harbor"
)

// nemoBuiltinTemplate is the instruction template NeMo Evaluator ships
// (its SWE-bench playbooks name it). nel does not ship NeMo's text; a
// file of that name beside the recipe is read like any other.
const nemoBuiltinTemplate = "swebench-instruction.md"

// instructionOff says whether an instruction_template value turns the
// template off: null, or "off", "none" or "" in any case (NeMo's words).
func instructionOff(v *string) bool {
	if v == nil {
		return true
	}
	switch strings.ToLower(strings.TrimSpace(*v)) {
	case "off", "none", "":
		return true
	}
	return false
}

// instructionTemplates reads each benchmark's instruction_template when
// the recipe is loaded (the hashes cover its text, not its path): a file
// beside the recipe, else in the working directory, where NeMo looks. A
// template that does not parse is an error at the field naming the
// template's line and column; NeMo's built-in name with no file behind
// it is left to compile, which refuses it (instructionUnsupported).
func (c *ruleChecker) instructionTemplates() {
	for i, b := range c.r.Benchmarks {
		if instructionOff(b.InstructionTemplate) {
			continue
		}
		name := *b.InstructionTemplate
		file := ""
		for _, d := range []string{c.s.Dir, "."} {
			p := name
			if !filepath.IsAbs(p) {
				p = filepath.Join(d, name)
			}
			if fi, err := os.Stat(p); err == nil && fi.Mode().IsRegular() {
				file = p
				break
			}
		}
		switch {
		case file == "" && name == nemoBuiltinTemplate:
			continue
		case file == "":
			c.at(fmt.Sprintf("no file %s beside the recipe or in the working directory (a template is a Jinja2 .md file; off or null for none)", name), "benchmarks", i, "instruction_template")
			continue
		}
		_, text, err := harbor.ReadInstruction(file)
		if err != nil {
			c.at(err.Error(), "benchmarks", i, "instruction_template")
			continue
		}
		if c.s.instruction == nil {
			c.s.instruction = map[int]string{}
		}
		c.s.instruction[i] = text
	}
}

// instructionUnsupported refuses an instruction_template nel cannot
// honour for benchmark i: it renders templates for its own agent loop on
// harbor:// tasks only.
func instructionUnsupported(no func(string, ...any), s *Source, i int, b *Benchmark) {
	if instructionOff(b.InstructionTemplate) {
		return
	}
	at := []any{"benchmarks", i, "instruction_template"}
	_, isHarbor := harborOf(b.Name)
	switch {
	case b.Solver.Type == "harbor":
		no("instruction_template with solver type harbor (the Harbor CLI gives its agent each task's instruction.md and takes no other prompt; drop it with instruction_template: null, or run the tasks with solver type tool_calling, which renders it)", at...)
	case (!isHarbor && !itemTasks(b)) || b.Solver.Type != "tool_calling" && b.Solver.Type != "openclaw":
		no("instruction_template on a benchmark other than tasks (harbor:// or byob with a verifier) run by solver type tool_calling or openclaw (nel renders it for an agent's task: its prompt, workspace_path, its metadata or record)", at...)
	case s.instruction[i] == "" && *b.InstructionTemplate == nemoBuiltinTemplate:
		no("NeMo Evaluator's built-in instruction template "+nemoBuiltinTemplate+" (nel does not ship NeMo's text: put a copy of it beside the recipe under that name, or name a template of your own)", at...)
	}
}

// instructionMethod is what the hashes cover of benchmark i's
// instruction_template: nil when there is none (so a recipe without one
// hashes as before templates were read), else the digest of its text, or
// the name as written when no file was read (compile refuses that).
func instructionMethod(s *Source, i int) any {
	b := s.Recipe.Benchmarks[i]
	if instructionOff(b.InstructionTemplate) {
		return nil
	}
	text, ok := s.instruction[i]
	if !ok {
		return *b.InstructionTemplate
	}
	sum := sha256.Sum256([]byte(text))
	return "sha256:" + hex.EncodeToString(sum[:])
}
