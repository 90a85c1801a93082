package agent

import (
	"context"
	"fmt"
	"path"

	"github.com/nel-eval/nel/runtime/sandbox"
)

// ReadArtifact is a Config.Artifact for response_mode sandbox_artifact:
// the answer is the file at file (an absolute path inside the sandbox,
// e.g. /app/answer.txt) as the agent left it in s. A file that is not
// there is an empty answer, the agent's failure; a session that cannot
// run the read is an infrastructure one.
func ReadArtifact(s sandbox.Session, file string) (func(ctx context.Context) (string, error), error) {
	if !path.IsAbs(file) || path.Clean(file) != file {
		return nil, fmt.Errorf("artifact path %q: want a clean absolute path inside the sandbox", file)
	}
	return func(ctx context.Context) (string, error) {
		// test -f first: cat's failure alone would not tell a missing
		// file from a directory or an unreadable one.
		res, err := s.Exec(ctx, sandbox.Command{Argv: []string{"sh", "-c", `test -f "$1" || exit 3; cat -- "$1"`, "sh", file}})
		if err != nil {
			return "", fmt.Errorf("read %s: %w", file, err)
		}
		switch res.ExitCode {
		case 0:
			if res.Truncated {
				// A cut answer is not the one the agent left.
				return "", fmt.Errorf("read %s: larger than the sandbox's output limit", file)
			}
			return string(res.Stdout), nil
		case 3:
			return "", nil
		default:
			return "", fmt.Errorf("read %s: exit status %d: %s", file, res.ExitCode, res.Stderr)
		}
	}, nil
}
