package registry

import (
	"strings"
	"testing"
)

const (
	hexA = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
	dA   = "sha256:" + hexA
	dB   = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
)

func TestParse(t *testing.T) {
	tests := []struct {
		in       string
		want     Ref // Original is filled from in
		floating bool
		pinned   string // Pinned(dB)
	}{
		{"nvcr.io#nvidia/vllm:25.01-py3",
			Ref{Registry: "nvcr.io", Repository: "nvidia/vllm", Tag: "25.01-py3", Enroot: true},
			false, "nvcr.io#nvidia/vllm@" + dB},
		{"docker://nvcr.io#nvidia/pytorch:24.05-py3",
			Ref{Registry: "nvcr.io", Repository: "nvidia/pytorch", Tag: "24.05-py3", Enroot: true},
			false, "nvcr.io#nvidia/pytorch@" + dB},
		{"user@nvcr.io#nvidia/x:1",
			Ref{Registry: "nvcr.io", Repository: "nvidia/x", Tag: "1", Enroot: true, User: "user"},
			false, "user@nvcr.io#nvidia/x@" + dB},
		{"docker://$oauthtoken@nvcr.io#nvidia/x",
			Ref{Registry: "nvcr.io", Repository: "nvidia/x", Tag: "latest", Enroot: true, User: "$oauthtoken"},
			true, "$oauthtoken@nvcr.io#nvidia/x@" + dB},
		{"nvcr.io#nvidia/vllm@" + dA,
			Ref{Registry: "nvcr.io", Repository: "nvidia/vllm", Digest: dA, Enroot: true},
			false, "nvcr.io#nvidia/vllm@" + dB},
		{"vllm/vllm-openai:v0.6.3",
			Ref{Registry: "registry-1.docker.io", Repository: "vllm/vllm-openai", Tag: "v0.6.3"},
			false, "vllm/vllm-openai@" + dB},
		{"ubuntu",
			Ref{Registry: "registry-1.docker.io", Repository: "library/ubuntu", Tag: "latest"},
			true, "ubuntu@" + dB},
		{"ubuntu:latest",
			Ref{Registry: "registry-1.docker.io", Repository: "library/ubuntu", Tag: "latest"},
			true, "ubuntu@" + dB},
		{"docker.io/library/ubuntu:22.04",
			Ref{Registry: "registry-1.docker.io", Repository: "library/ubuntu", Tag: "22.04"},
			false, "ubuntu@" + dB},
		{"index.docker.io/ubuntu",
			Ref{Registry: "registry-1.docker.io", Repository: "library/ubuntu", Tag: "latest"},
			true, "ubuntu@" + dB},
		{"docker.io/my.org/img:1",
			Ref{Registry: "registry-1.docker.io", Repository: "my.org/img", Tag: "1"},
			false, "docker.io/my.org/img@" + dB},
		{"docker://ubuntu:22.04",
			Ref{Registry: "registry-1.docker.io", Repository: "library/ubuntu", Tag: "22.04"},
			false, "ubuntu@" + dB},
		{"docker://bob@ubuntu",
			Ref{Registry: "registry-1.docker.io", Repository: "library/ubuntu", Tag: "latest", User: "bob"},
			true, "bob@registry-1.docker.io#library/ubuntu@" + dB},
		{"ghcr.io/org/img:tag",
			Ref{Registry: "ghcr.io", Repository: "org/img", Tag: "tag"},
			false, "ghcr.io/org/img@" + dB},
		{"localhost:5000/x/y:1",
			Ref{Registry: "localhost:5000", Repository: "x/y", Tag: "1"},
			false, "localhost:5000/x/y@" + dB},
		{"localhost:5000/x/y",
			Ref{Registry: "localhost:5000", Repository: "x/y", Tag: "latest"},
			true, "localhost:5000/x/y@" + dB},
		{"localhost/x",
			Ref{Registry: "localhost", Repository: "x", Tag: "latest"},
			true, "localhost/x@" + dB},
		{"127.0.0.1:5000/x:1",
			Ref{Registry: "127.0.0.1:5000", Repository: "x", Tag: "1"},
			false, "127.0.0.1:5000/x@" + dB},
		{"[::1]:5000/x:1",
			Ref{Registry: "[::1]:5000", Repository: "x", Tag: "1"},
			false, "[::1]:5000/x@" + dB},
		{"img@" + dA,
			Ref{Registry: "registry-1.docker.io", Repository: "library/img", Digest: dA},
			false, "img@" + dB},
		{"img:tag@" + dA,
			Ref{Registry: "registry-1.docker.io", Repository: "library/img", Tag: "tag", Digest: dA},
			false, "img@" + dB},
		{"img:latest@" + dA,
			Ref{Registry: "registry-1.docker.io", Repository: "library/img", Tag: "latest", Digest: dA},
			false, "img@" + dB},
		{"nvcr.io/nvidia/nemo__x-y.z:24.07.01",
			Ref{Registry: "nvcr.io", Repository: "nvidia/nemo__x-y.z", Tag: "24.07.01"},
			false, "nvcr.io/nvidia/nemo__x-y.z@" + dB},
		{"/shared/img.sqsh", Ref{Path: "/shared/img.sqsh"}, false, "/shared/img.sqsh"},
		{"./img.sqsh", Ref{Path: "./img.sqsh"}, false, "./img.sqsh"},
		{"../imgs/vllm.sqsh", Ref{Path: "../imgs/vllm.sqsh"}, false, "../imgs/vllm.sqsh"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := Parse(tt.in)
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.in, err)
			}
			want := tt.want
			want.Original = tt.in
			if got != want {
				t.Errorf("Parse(%q)\n got %+v\nwant %+v", tt.in, got, want)
			}
			if got.IsPath() != (want.Path != "") {
				t.Errorf("IsPath = %v", got.IsPath())
			}
			if got.Floating() != tt.floating {
				t.Errorf("Floating = %v, want %v", got.Floating(), tt.floating)
			}
			if p := got.Pinned(dB); p != tt.pinned {
				t.Errorf("Pinned = %q, want %q", p, tt.pinned)
			}
			// A pinned reference reads back as the same image at that digest.
			if !got.IsPath() {
				back, err := Parse(got.Pinned(dB))
				if err != nil {
					t.Fatalf("Parse(Pinned): %v", err)
				}
				if back.Registry != got.Registry || back.Repository != got.Repository || back.Digest != dB || back.Tag != "" {
					t.Errorf("Parse(Pinned) = %+v; lost the image identity", back)
				}
			}
		})
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "empty image reference"},
		{"ubuntu latest", `"ubuntu latest"`},
		{" ubuntu", "spaces"},
		{"nvcr.io#nvidia/vllm:25.01 py3", "spaces"},
		{"nvcr.io/nvidia/VLLM:1", `invalid repository "nvidia/VLLM"`},
		{"library/Ubuntu", `invalid repository`},
		{"ubuntu@sha256:abc", `invalid digest "sha256:abc"`},
		{"ubuntu@sha256:" + strings.ToUpper(hexA), "invalid digest"},
		{"ubuntu@md5:" + hexA[:32], "invalid digest"},
		{"ubuntu:", `invalid tag ""`},
		{"ubuntu:-x", `invalid tag "-x"`},
		{"ubuntu:bad:tag", "invalid repository"},
		{"nvcr.io#", "no repository"},
		{"nvcr.io#/x", "invalid repository"},
		{"@nvcr.io#x", "empty user"},
		{"bad_host#x", `invalid registry host "bad_host"`},
		{"ftp://x/y", `unknown scheme "ftp://"`},
		{"dockerd://myimg:latest", "cannot be locked: a local daemon image has no registry digest; push it to a registry or use a .sqsh path"},
		{"podman://localhost/myimg", "cannot be locked: a local daemon image has no registry digest"},
		{"x//y", "invalid repository"},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := Parse(tt.in)
			if err == nil {
				t.Fatalf("Parse(%q) succeeded", tt.in)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Parse(%q) = %q, want it to contain %q", tt.in, err, tt.want)
			}
			if tt.in != "" && !strings.Contains(err.Error(), tt.in) && !strings.Contains(err.Error(), strings.TrimSpace(tt.in)) {
				t.Errorf("error %q does not name the reference", err)
			}
		})
	}
}
