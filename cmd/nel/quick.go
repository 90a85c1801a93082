package main

import (
	"os"

	"github.com/nel-eval/nel/compiler"
	"github.com/nel-eval/nel/internal/exitcode"
	"github.com/spf13/pflag"
)

// quickOptions are the flags of NeMo Evaluator's quick mode, shared by nel
// run and nel validate: one benchmark against one endpoint, no recipe.
type quickOptions struct {
	q      compiler.Quick
	apiKey string // NeMo's --api-key VALUE: refused, see resolve
}

func addQuickFlags(f *pflag.FlagSet, o *quickOptions) {
	f.StringVarP(&o.q.Bench, "bench", "b", "", "quick mode: the built-in benchmark `NAME` to run, no recipe file (nel list)")
	f.StringVar(&o.q.ModelURL, "model-url", "", "quick mode: the endpoint `URL` (default $NEMO_MODEL_URL); /chat/completions is appended unless it ends in /chat/completions, /completions or /responses")
	f.StringVar(&o.q.ModelID, "model-id", "", "quick mode: the model `ID` requests name (default $NEMO_MODEL_ID)")
	f.StringVar(&o.q.APIKeyEnv, "api-key-env", "", "quick mode: the environment variable `NAME` holding the API key (default NEMO_API_KEY, else NVIDIA_API_KEY, when set; '' for none)")
	f.StringVar(&o.apiKey, "api-key", "", "refused: a key on the command line is visible to every user of the machine; use --api-key-env")
	f.IntVarP(&o.q.Repeats, "repeats", "n", 1, "quick mode: repeats per problem")
	f.IntVar(&o.q.MaxProblems, "max-problems", 0, "quick mode: evaluate the first `N` problems only (0: all)")
	f.Float64Var(&o.q.Temperature, "temperature", 0, "quick mode: sampling temperature")
	f.IntVar(&o.q.MaxTokens, "max-tokens", 0, "quick mode: max tokens per answer (0: the server's default)")
	f.StringVar(&o.q.SystemPrompt, "system-prompt", "", "quick mode: a system `PROMPT` before every problem")
}

// resolve fills what the flags left to the environment, as NeMo does
// (NEMO_MODEL_URL, NEMO_MODEL_ID, and the key's variable), and refuses a
// key given on the command line.
func (o *quickOptions) resolve(f *pflag.FlagSet) (compiler.Quick, error) {
	if f.Changed("api-key") {
		return compiler.Quick{}, exitcode.Usagef("--api-key takes the key itself, which every user of this machine can read in the process list; " +
			"put the key in an environment variable and pass its name: --api-key-env NAME (default: NEMO_API_KEY, else NVIDIA_API_KEY, when set)")
	}
	q := o.q
	if q.ModelURL == "" {
		q.ModelURL = os.Getenv("NEMO_MODEL_URL")
	}
	if q.ModelID == "" {
		q.ModelID = os.Getenv("NEMO_MODEL_ID")
	}
	if !f.Changed("api-key-env") {
		for _, name := range []string{"NEMO_API_KEY", "NVIDIA_API_KEY"} {
			if os.Getenv(name) != "" {
				q.APIKeyEnv = name
				break
			}
		}
	}
	if _, err := compiler.QuickRecipe(q); err != nil {
		return compiler.Quick{}, exitcode.New(exitcode.Usage, err)
	}
	return q, nil
}

// quickFlagSet is the first quick-mode flag set on f, "" when none is:
// with a recipe file they would be ignored, so they are refused.
func quickFlagSet(f *pflag.FlagSet) string {
	for _, name := range []string{"model-url", "model-id", "api-key-env", "api-key", "repeats", "max-problems", "temperature", "max-tokens", "system-prompt"} {
		if f.Changed(name) {
			return "--" + name
		}
	}
	return ""
}

// loadQuick loads the recipe quick mode builds, with the overrides, as a
// file in the working directory.
func loadQuick(q compiler.Quick, ovs []compiler.Override) (*compiler.Source, []byte, error) {
	l, err := compiler.NewLoader()
	if err != nil {
		return nil, nil, err
	}
	return l.LoadQuick(q, ".", ovs)
}

// nemoRunFlags are NeMo's nel eval run flags that nel does another way:
// each is accepted so that it can be refused with what to do instead.
func nemoRunFlags() [][2]string {
	return [][2]string{
		{"submit", "nel compile FILE | sbatch, on the login node"},
		{"background", "run nel run under nohup, screen or tmux, or as a job (nel compile FILE | sbatch)"},
	}
}

func addNemoRunFlags(f *pflag.FlagSet) {
	for _, fl := range nemoRunFlags() {
		f.Bool(fl[0], false, "NeMo's; refused: "+fl[1])
	}
}

// refuseNemoRunFlags refuses the first of nemoRunFlags given.
func refuseNemoRunFlags(f *pflag.FlagSet) error {
	for _, fl := range nemoRunFlags() {
		if f.Changed(fl[0]) {
			return exitcode.Usagef("--%s is NeMo Evaluator's; in nel: %s", fl[0], fl[1])
		}
	}
	return nil
}
