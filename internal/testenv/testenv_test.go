package testenv

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

func TestStrict(t *testing.T) {
	for _, c := range []struct {
		ci, all string
		want    bool
	}{
		{"", "", false},
		{"true", "", true},
		{"1", "", true},
		{"false", "", false},
		{"0", "", false},
		{"FALSE", "", false},
		{"", "1", true},
		{"false", "1", true},
		{"", "0", false},
	} {
		t.Setenv("CI", c.ci)
		t.Setenv("NEL_REQUIRE_ALL", c.all)
		if got := Strict(); got != c.want {
			t.Errorf("CI=%q NEL_REQUIRE_ALL=%q: Strict() = %v, want %v", c.ci, c.all, got, c.want)
		}
	}
}

// .ci/testdeps on a machine where nothing can be installed (no apt-get on
// PATH, none of the parts either): outside CI it says what is missing and
// that those tests will skip, and exits 0 so the suite runs; under CI it
// refuses.
func TestTestdepsCannotInstall(t *testing.T) {
	bin := t.TempDir()
	// Only what the script itself runs; none of the parts.
	for _, tool := range []string{"bash", "dirname", "sort", "id"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join(Root(t), ".ci", "testdeps")
	run := func(env ...string) (string, error) {
		cmd := exec.Command(filepath.Join(bin, "bash"), script)
		cmd.Env = append([]string{"PATH=" + bin, "HOME=" + t.TempDir()}, env...)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}

	out, err := run()
	if err != nil {
		t.Fatalf("outside CI: %v\n%s", err, out)
	}
	for _, want := range []string{
		"testdeps: cannot install bash-static bubblewrap busybox-static chromium coreutils docker.io git haproxy make nodejs npm python3 shellcheck squashfs-tools texlive-latex-base util-linux (no apt-get).",
		"the tests that need them will skip, listed at the end of the run",
		"chromium    MISSING",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("outside CI the output lacks %q:\n%s", want, out)
		}
	}

	for _, env := range []string{"CI=true", "NEL_REQUIRE_ALL=1"} {
		out, err := run(env)
		if err == nil {
			t.Errorf("%s: exit 0, want a failure\n%s", env, out)
		}
		if !strings.Contains(out, "every part is required") {
			t.Errorf("%s: the output does not say why:\n%s", env, out)
		}
	}
}
