package htmlreport

import (
	"bytes"
	"context"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nel-eval/nel/analysis/report"
	"github.com/nel-eval/nel/internal/testenv"
)

// The HTML report is checked in a real browser: headless Chromium from
// Debian (make testdeps installs it) loads it from a file, takes a
// screenshot and dumps the DOM. NEL_CHROMIUM names another binary; where
// none can be had the tests skip, or fail under CI (internal/testenv).
// NEL_ARTIFACTS, when set, receives the screenshot.

// chromiumNoise matches the source locations of ERROR lines that headless
// Chromium prints in a container whatever the page is, and that say
// nothing about it:
//   - dbus/bus.cc, dbus/object_proxy.cc: no D-Bus system or session bus;
//   - gpu, gl, angle, viz, vaapi, command_buffer: no GPU (--disable-gpu);
//   - sandbox: running as root with --no-sandbox;
//   - idle_linux, ozone: no display server or screensaver service;
//   - gcm, registration_request, bluetooth: Google services and devices
//     that are unreachable offline.
//
// WARNING and INFO lines are ignored, except console messages. The Debian
// wrapper script's own complaint ("/usr/bin/chromium: 9: [: …: unexpected
// operator", a shell test on the memory size) is ignored too.
var chromiumNoise = regexp.MustCompile(`(?i)dbus|bus\.cc|object_proxy|gpu|gl_|/gl/|angle|viz|vaapi|command_buffer|sandbox|idle_linux|ozone|gcm|registration_request|bluetooth`)

// chromiumLog matches Chromium's log prefix: [pid:tid:time:LEVEL:file(line)].
var chromiumLog = regexp.MustCompile(`^\[[0-9:./]+:(INFO|WARNING|ERROR|FATAL|VERBOSE\d*):([^\]]*)\]`)

// pageErrors returns the lines of Chromium's stderr that report a problem
// with the page: any console message (the report has no script, so
// there should be none; a resource that failed to load is one too), an
// uncaught exception, or an ERROR not on the noise list.
func pageErrors(stderr string) []string {
	var bad []string
	for _, line := range strings.Split(stderr, "\n") {
		line = strings.TrimSpace(line)
		m := chromiumLog.FindStringSubmatch(line)
		switch {
		case line == "" || strings.HasPrefix(line, "/usr/bin/chromium:"):
		case strings.Contains(line, "Uncaught"), strings.Contains(line, ":CONSOLE"):
			bad = append(bad, line)
		case m != nil && (m[1] == "ERROR" || m[1] == "FATAL") && !chromiumNoise.MatchString(m[2]):
			bad = append(bad, line)
		}
	}
	return bad
}

// runChromium runs headless Chromium on a file with extra flags and
// returns its stdout and stderr; it fails the test unless Chromium exits 0.
func runChromium(t *testing.T, bin, page string, flags ...string) (stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{
		"--headless", "--no-sandbox", "--disable-gpu",
		"--enable-logging=stderr", "--v=0", // console messages go to stderr as INFO:CONSOLE
		"--no-first-run", "--no-default-browser-check", "--disable-extensions",
		// A machine with no network: no background fetches to time out on.
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--user-data-dir=" + t.TempDir(),
	}, flags...)
	args = append(args, "file://"+page)
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\nstderr:\n%s", bin, strings.Join(args, " "), err, errb.String())
	}
	return out.String(), errb.String()
}

func TestHTMLInChromium(t *testing.T) {
	bin := testenv.Chromium(t)
	dir := t.TempDir()
	page := filepath.Join(dir, "report.html")
	var buf bytes.Buffer
	if err := Render(&buf, testSuite(), report.Options{Source: "out/run-1"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	t.Run("screenshot", func(t *testing.T) {
		shot := filepath.Join(dir, "report.png")
		_, stderr := runChromium(t, bin, page, "--screenshot="+shot, "--window-size=1200,3000", "--hide-scrollbars")
		if bad := pageErrors(stderr); len(bad) > 0 {
			t.Errorf("the page logged errors:\n%s", strings.Join(bad, "\n"))
		}
		data, err := os.ReadFile(shot)
		if err != nil {
			t.Fatalf("no screenshot: %v\nstderr:\n%s", err, stderr)
		}
		if a := os.Getenv("NEL_ARTIFACTS"); a != "" {
			if err := os.MkdirAll(a, 0o755); err == nil {
				os.WriteFile(filepath.Join(a, "report-chromium.png"), data, 0o644)
			}
		}
		if len(data) < 20_000 {
			t.Errorf("screenshot is only %d bytes", len(data))
		}
		img, err := png.Decode(bytes.NewReader(data))
		if err != nil {
			t.Fatalf("screenshot is not a PNG: %v", err)
		}
		if b := img.Bounds(); b.Dx() != 1200 || b.Dy() != 3000 {
			t.Errorf("screenshot is %dx%d, want 1200x3000", b.Dx(), b.Dy())
		}
		colours, dark, chart := imageStats(img)
		t.Logf("screenshot %s: %d bytes, %d colours, %.1f%% dark pixels, %.2f%% chart-blue pixels", shot, len(data), colours, 100*dark, 100*chart)
		if colours < 64 {
			t.Errorf("screenshot has %d colours: blank or nearly", colours)
		}
		if dark < 0.002 {
			t.Errorf("screenshot has %.3f%% dark pixels: no text rendered?", 100*dark)
		}
		if chart < 0.001 {
			t.Errorf("screenshot has %.3f%% pixels of the charts' bar colour: no chart rendered?", 100*chart)
		}
	})

	t.Run("dump-dom", func(t *testing.T) {
		dom, stderr := runChromium(t, bin, page, "--dump-dom")
		if bad := pageErrors(stderr); len(bad) > 0 {
			t.Errorf("the page logged errors:\n%s", strings.Join(bad, "\n"))
		}
		mustContain(t, "DOM", dom,
			"<title>nel evaluation report</title>",
			">gsm8k</a>", ">humaneval</a>", ">math#cot</a>", ">mmlu_pro</a>",
			"<h2>math (math#cot)", "[95% CI clt 0.7911–0.8329] (NeMo's bootstrap, parity only: 0.7905–0.8324)",
			"&lt;script&gt;alert(\"x\")&lt;/script&gt;", // the hostile category stayed text
			"SIMULATED endpoint",
		)
		mustNotContain(t, "DOM", dom, "<script", "NaN")
		if n := strings.Count(dom, "<svg"); n != 8 {
			t.Errorf("DOM has %d <svg> elements, want 8", n)
		}
		if n := strings.Count(dom, "<text"); n < 50 {
			t.Errorf("DOM has %d SVG <text> elements; the charts lost their labels?", n)
		}
	})

	// The check itself: a page with a script error and a missing resource
	// must be caught, or a clean run proves nothing.
	t.Run("detects page errors", func(t *testing.T) {
		bad := filepath.Join(dir, "bad.html")
		os.WriteFile(bad, []byte(`<!DOCTYPE html><html><body><p>x</p><script>throw new Error("boom")</script></body></html>`), 0o644)
		_, stderr := runChromium(t, bin, bad, "--dump-dom")
		if errs := pageErrors(stderr); len(errs) == 0 || !strings.Contains(strings.Join(errs, "\n"), "Uncaught Error: boom") {
			t.Errorf("an uncaught error was not detected; stderr:\n%s", stderr)
		}
	})
}

// imageStats counts an image's distinct colours (up to 4096), the share of
// dark pixels (text) and the share of pixels of the charts' bar colour.
func imageStats(img image.Image) (colours int, dark, chart float64) {
	b := img.Bounds()
	seen := map[uint32]bool{}
	var nDark, nChart, n int
	for y := b.Min.Y; y < b.Max.Y; y++ {
		for x := b.Min.X; x < b.Max.X; x++ {
			r, g, bl, _ := img.At(x, y).RGBA()
			r, g, bl = r>>8, g>>8, bl>>8
			if len(seen) < 4096 {
				seen[r<<16|g<<8|bl] = true
			}
			if r+g+bl < 3*90 {
				nDark++
			}
			if near(r, 0x56) && near(g, 0xb4) && near(bl, 0xe9) {
				nChart++
			}
			n++
		}
	}
	return len(seen), float64(nDark) / float64(n), float64(nChart) / float64(n)
}

func near(a, b uint32) bool { return a+6 >= b && a <= b+6 }

func TestPageErrors(t *testing.T) {
	stderr := `/usr/bin/chromium: 9: [: 25276510208: unexpected operator
[1:2:1121/073826.488951:ERROR:dbus/bus.cc:405] Failed to connect to the bus
[1:2:1121/073826.488951:ERROR:bus.cc(407)] Failed to connect to the bus
[3:3:1121/073844.634175:WARNING:media/gpu/vaapi/vaapi_wrapper.cc:1655] drmGetDevices2() has not found any devices
[3:3:1121/073844.634175:ERROR:gpu/ipc/service/gpu_init.cc:1] Passthrough is not supported
[4:4:1121/073845.581829:INFO:CONSOLE:1] "Failed to load resource: net::ERR_FILE_NOT_FOUND", source: file:///x.png (0)
[4:4:1121/073845.585031:INFO:CONSOLE:1] "Uncaught Error: boom", source: file:///tmp/bad.html (1)
[4:4:1121/073845.585031:ERROR:third_party/blink/renderer/core/frame/x.cc:1] something about the page
`
	got := pageErrors(stderr)
	want := []string{"Failed to load resource", "Uncaught Error: boom", "something about the page"}
	if len(got) != len(want) {
		t.Fatalf("pageErrors = %q", got)
	}
	for i, w := range want {
		if !strings.Contains(got[i], w) {
			t.Errorf("line %d = %q, want %q", i, got[i], w)
		}
	}
}
