package serve

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "server.log")
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestTailFile(t *testing.T) {
	tests := []struct {
		name    string
		content string
		n       int
		want    string
	}{
		{"empty", "", 5, ""},
		{"fewer lines than n", "a\nb\n", 5, "a\nb\n"},
		{"exactly n", "a\nb\nc\n", 3, "a\nb\nc\n"},
		{"more than n", "a\nb\nc\nd\n", 2, "c\nd\n"},
		{"no trailing newline", "a\nb\nc", 2, "b\nc\n"},
		{"blank lines kept", "a\n\n\nb\n", 3, "\n\nb\n"},
		{"crlf", "a\r\nb\r\n", 1, "b\n"},
		{"progress bar collapses", "load\r 10%\r 50%\r100%\ndone\n", 2, "100%\ndone\n"},
		{"n zero", "a\n", 0, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := TailFile(writeFile(t, tt.content), tt.n)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("TailFile(%q, %d) = %q, want %q", tt.content, tt.n, got, tt.want)
			}
		})
	}
}

func TestTailFileLarge(t *testing.T) {
	var b strings.Builder
	for i := range 100000 {
		fmt.Fprintf(&b, "line %d\n", i)
	}
	got, err := TailFile(writeFile(t, b.String()), 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := "line 99997\nline 99998\nline 99999\n"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}

	// Spanning several read chunks.
	got, err = TailFile(writeFile(t, b.String()), 5000)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(got, "\n"), "\n")
	if len(lines) != 5000 || lines[0] != "line 95000" || lines[4999] != "line 99999" {
		t.Errorf("got %d lines, first %q, last %q", len(lines), lines[0], lines[len(lines)-1])
	}
}

func TestTailFileHugeLine(t *testing.T) {
	content := "start\n" + strings.Repeat("x", 2*tailMaxBytes) + "\nend\n"
	got, err := TailFile(writeFile(t, content), 3)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got, "...xxx") || !strings.HasSuffix(got, "x\nend\n") {
		t.Errorf("got %.20q ... %q", got, got[len(got)-10:])
	}
	if len(got) > tailMaxBytes+10 {
		t.Errorf("got %d bytes, want at most about %d", len(got), tailMaxBytes)
	}
}

func TestTailFileMissing(t *testing.T) {
	_, err := TailFile(filepath.Join(t.TempDir(), "nope.log"), 5)
	if !os.IsNotExist(err) {
		t.Errorf("err = %v, want not-exist", err)
	}
}

func BenchmarkTailFile(b *testing.B) {
	var sb strings.Builder
	for i := range 200000 {
		fmt.Fprintf(&sb, "INFO 01-02 03:04:05 worker.py:123] loading shard %d of the model weights\n", i)
	}
	path := filepath.Join(b.TempDir(), "server.log")
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		if _, err := TailFile(path, DefaultLogLines); err != nil {
			b.Fatal(err)
		}
	}
}
