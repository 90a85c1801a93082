package compiler

import "testing"

func TestNodeLocalDir(t *testing.T) {
	t.Setenv("TMPDIR", "/scratch/local/tmp/")
	for _, c := range []struct {
		path, dir string
	}{
		{"/tmp/nel-run", "/tmp"},
		{"/tmp/x/y/nel-run", "/tmp"},
		{"/var/tmp/nel-run", "/var/tmp"},
		{"/dev/shm/bin/nel-run", "/dev/shm"},
		{"/scratch/local/tmp/nel-run", "/scratch/local/tmp"},
		{"/tmpfiles/nel-run", ""},
		{"/home/u/bin/nel-run", ""},
		{"/lustre/proj/nel/bin/nel-run", ""},
		{"/scratch/local/nel-run", ""},
	} {
		dir, ok := NodeLocalDir(c.path)
		if dir != c.dir || ok != (c.dir != "") {
			t.Errorf("NodeLocalDir(%q) = %q, %v; want %q", c.path, dir, ok, c.dir)
		}
	}
}
