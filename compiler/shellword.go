package compiler

import (
	"strings"

	"github.com/nel-eval/nel/runtime/shellquote"
)

// shellWord renders s as one shell word whose ${VAR} references are left
// to the job's shell ("${VAR}"), the rest quoted: a model path such as
// ${SHARED_ROOT}/GLM-5.1-FP8 is resolved on the node from the environment
// sbatch was called in, never written into the script. The job checks
// such variables are set before it starts anything (job.Secrets);
// unsupported() refuses the ${…} forms this cannot carry (a default).
func shellWord(s string) string {
	if !strings.Contains(s, "${") {
		return shellquote.Quote(s)
	}
	var b strings.Builder
	for s != "" {
		loc := envRefRE.FindStringSubmatchIndex(s)
		if loc == nil || loc[4] >= 0 { // none left, or one with a default: literal text
			b.WriteString(shellquote.Quote(s))
			break
		}
		if loc[0] > 0 {
			b.WriteString(shellquote.Quote(s[:loc[0]]))
		}
		b.WriteString(`"${` + s[loc[2]:loc[3]] + `}"`)
		s = s[loc[1]:]
	}
	return b.String()
}

// refsInWords reports whether s's model and image are shellWord words.
// dynamo and nim services are new and take NeMo Evaluator's recipes as
// they come (${SHARED_ROOT}/model); the older types keep ${…} as text,
// as their tests pin, until they move over together.
func refsInWords(s *Service) bool { return s.Type == "dynamo" || s.Type == "nim" }
