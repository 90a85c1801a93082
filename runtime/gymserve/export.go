package gymserve

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"

	"github.com/nel-eval/nel/runtime/atomicfile"
	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/shard"
)

// GymRow is one line of the Gym JSONL export (what ng_collect_rollouts
// reads): the request the policy model is given, and the fields a
// resource server's /verify gets back with its answer.
type GymRow struct {
	ResponsesCreateParams CreateParams   `json:"responses_create_params"`
	ExpectedAnswer        string         `json:"expected_answer"`
	UUID                  string         `json:"uuid"`
	Metadata              map[string]any `json:"metadata"`
}

// CreateParams is the Responses API request of a row: the input messages
// (the system message first when the benchmark has one).
type CreateParams struct {
	Input []bench.Message `json:"input"`
}

// Export writes every served item of s as Gym JSONL to
// DIR/<benchmark>.jsonl (the benchmark's folder name: a key such as
// gsm8k#2 is gsm8k_2), whole or not at all, and returns the path.
func Export(s *shard.Scorer, dir string) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("export: %w", err)
	}
	path := filepath.Join(dir, s.Dir()+".jsonl")
	err := atomicfile.Write(path, func(f io.Writer) error {
		w := bufio.NewWriter(f)
		enc := json.NewEncoder(w)
		for i := range s.Len() {
			seed := Seed(s.Item(i), i)
			row := GymRow{
				ResponsesCreateParams: CreateParams{Input: seed.Messages},
				ExpectedAnswer:        seed.ExpectedAnswer,
				UUID:                  s.Benchmark() + "-" + strconv.Itoa(i),
				Metadata:              seed.Metadata,
			}
			if err := enc.Encode(row); err != nil {
				return err
			}
		}
		return w.Flush()
	})
	if err != nil {
		return "", fmt.Errorf("export %s: %w", path, err)
	}
	return path, nil
}
