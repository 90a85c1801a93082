package sandbox

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nel-eval/nel/internal/testenv"
)

// TestApptainerBuildHostileReal: a Dockerfile, or a build context's file
// name, that would put a %setup section (which runs on the host) into the
// definition file is refused at its line before anything is built, and
// the real SingularityCE's parser never sees it: the host file %setup
// would touch is not there.
func TestApptainerBuildHostileReal(t *testing.T) {
	// Builds allowed: the converter alone must stop these.
	allowRootBuilds(t)
	_, sif := testenv.Apptainer(t)
	cache := t.TempDir()
	seedBase(t, cache, baseRef, sif)
	sb, err := Open(context.Background(), Config{Type: "apptainer", Name: "ap", BuildCache: cache})
	if err != nil {
		t.Fatal(err)
	}
	marker := filepath.Join(t.TempDir(), "pwned")
	// In a file name: the marker's path with no /.
	noSlash := `touch "$(printf %b '` + strings.ReplaceAll(marker, "/", `\057`) + `')" #`
	from := "FROM " + baseRef + "\n"
	for _, c := range []struct {
		files map[string]string
		want  string
	}{
		{map[string]string{"Dockerfile": from + `RUN ["sh","-c","true\n%setup\ntouch ` + marker + ` #"]` + "\n"}, "/Dockerfile:2: RUN "},
		{map[string]string{"Dockerfile": from + `SHELL ["/bin/sh","-c","true\n%setup\ntouch ` + marker + ` #"]` + "\nRUN true\n"}, "/Dockerfile:2: SHELL "},
		{map[string]string{"Dockerfile": from + `COPY ["f","/x\n%setup\ntouch ` + marker + ` #"]` + "\n", "f": "f"}, "/Dockerfile:2: COPY "},
		{map[string]string{"Dockerfile": from + "COPY * /app/\n", "x\n%setup\n" + noSlash: "x"}, "/Dockerfile:2: COPY * /app/: a control character"},
		{map[string]string{"Dockerfile": from + `RUN ["%setup"]` + "\nRUN [\"touch\", \"" + marker + "\"]\n"}, "/Dockerfile:2: RUN [\"%setup\"]: "},
		{map[string]string{"Dockerfile": from + `RUN ["  %setup"]` + "\nRUN [\"touch\", \"" + marker + "\"]\n"}, ""},
	} {
		dir := taskContext(t, c.files)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		s, err := OpenSession(ctx, sb, SessionSpec{Build: dir})
		cancel()
		if c.want == "" {
			// Quoted, the word is no section: the build runs it in %post
			// (where no such program is), not on the host.
			if err == nil {
				s.Close()
			}
			if err == nil || !strings.Contains(err.Error(), "apptainer build of") {
				t.Errorf("%q: %v, want the build's failure", c.files["Dockerfile"], err)
			}
		} else if err == nil || !strings.Contains(err.Error(), "sandbox ap: "+dir+c.want) {
			t.Errorf("%q: %v, want a refusal naming %s", c.files["Dockerfile"], err, c.want)
			if err == nil {
				s.Close()
			}
		}
		if _, err := os.Stat(marker); err == nil {
			t.Errorf("%q: the build ran %%setup on the host: %s is there", c.files["Dockerfile"], marker)
			os.Remove(marker)
		}
	}
	if m, _ := filepath.Glob(filepath.Join(cache, "task-*")); len(m) != 0 {
		t.Errorf("hostile Dockerfiles left %q in the cache", m)
	}
}
