package serve

import (
	"bytes"
	"io"
	"os"
	"strings"
)

// tailMaxBytes bounds how much of a file TailFile reads: server logs can be
// large and a progress bar can make one "line" megabytes long.
const tailMaxBytes = 256 << 10

// TailFile returns the last n lines of the file at path, each ending in a
// newline. Within a line, carriage returns are rendered as a terminal would
// (only the text after the last \r is kept), so tqdm progress bars collapse
// to their final state. At most the last 256 KiB of the file are read; if
// that holds fewer than n lines, the first (partial) line is marked with
// "...". An empty file gives "".
func TailFile(path string, n int) (string, error) {
	if n <= 0 {
		return "", nil
	}
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	size, err := f.Seek(0, io.SeekEnd)
	if err != nil {
		return "", err
	}

	// Read backwards in chunks until we hold more than n newlines (so the
	// first of the last n lines is complete) or hit the start or the cap.
	const chunk = 32 << 10
	var buf []byte
	off := size
	for off > 0 && int64(len(buf)) < tailMaxBytes {
		// Newlines before the last byte: a trailing newline ends the last
		// line and does not start another one.
		if bytes.Count(trimLastNewline(buf), []byte{'\n'}) >= n {
			break
		}
		step := min(int64(chunk), off, tailMaxBytes-int64(len(buf)))
		off -= step
		b := make([]byte, step)
		if _, err := f.ReadAt(b, off); err != nil && err != io.EOF {
			return "", err
		}
		buf = append(b, buf...)
	}

	text := string(trimLastNewline(buf))
	if text == "" && len(buf) == 0 {
		return "", nil
	}
	lines := strings.Split(text, "\n")
	truncated := off > 0
	if len(lines) > n {
		lines = lines[len(lines)-n:]
		truncated = false
	}
	var out strings.Builder
	for i, line := range lines {
		line = strings.TrimSuffix(line, "\r")
		if j := strings.LastIndexByte(line, '\r'); j >= 0 {
			line = line[j+1:]
		}
		if i == 0 && truncated {
			out.WriteString("...")
		}
		out.WriteString(line)
		out.WriteByte('\n')
	}
	return out.String(), nil
}

func trimLastNewline(b []byte) []byte {
	if len(b) > 0 && b[len(b)-1] == '\n' {
		return b[:len(b)-1]
	}
	return b
}
