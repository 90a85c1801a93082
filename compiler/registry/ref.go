// Package registry resolves container image references, as recipes write
// them for Pyxis/enroot or docker, to the manifest digest a registry serves,
// through the OCI distribution (Docker Registry HTTP API v2) protocol and the
// registries' token authentication. It never downloads layers.
package registry

import (
	"fmt"
	"regexp"
	"strings"
)

// DockerHub is the host Docker Hub's registry API answers on; references
// that name no registry (and docker.io, index.docker.io) mean it.
const DockerHub = "registry-1.docker.io"

// Ref is one parsed image reference.
type Ref struct {
	Original   string // as written
	Registry   string // host[:port], e.g. "nvcr.io", "registry-1.docker.io"
	Repository string // "nvidia/vllm", "library/ubuntu"
	Tag        string // "" when only a digest was given; "latest" when neither
	Digest     string // "sha256:<hex>" when the reference pins one
	Path       string // for squashfs paths
	Enroot     bool   // written in the '#' form
	// User is enroot's "user@" prefix. It is not part of the image's
	// identity, but it selects which login enroot uses, so Pinned keeps it.
	User string
}

var (
	// The grammar of github.com/distribution/reference, restated.
	pathComponent = `[a-z0-9]+(?:(?:[._]|__|-+)[a-z0-9]+)*`
	repositoryRE  = regexp.MustCompile(`^` + pathComponent + `(?:/` + pathComponent + `)*$`)
	tagRE         = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	digestRE      = regexp.MustCompile(`^(?:sha256:[0-9a-f]{64}|sha512:[0-9a-f]{128})$`)
	hostLabel     = `[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?`
	hostRE        = regexp.MustCompile(`^(?:` + hostLabel + `(?:\.` + hostLabel + `)*|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?$`)
)

// Parse parses an image reference in any of the forms recipes use:
//
//	nvcr.io#nvidia/vllm:25.01-py3          enroot/Pyxis, '#' after the registry
//	docker://user@nvcr.io#nvidia/x:1        the same with enroot's scheme and login
//	vllm/vllm-openai:v0.6.3, ubuntu         docker, Docker Hub implied
//	ghcr.io/org/img:tag, localhost:5000/x   docker, registry named
//	img@sha256:…, img:tag@sha256:…          already pinned
//	/shared/img.sqsh, ./img.sqsh            a squashfs file (Path set)
//
// Local daemon images (dockerd://, podman://) have no registry digest and
// are refused.
func Parse(s string) (Ref, error) {
	r := Ref{Original: s}
	if s == "" {
		return r, fmt.Errorf("empty image reference")
	}
	if strings.ContainsFunc(s, func(c rune) bool { return c <= ' ' || c == 0x7f }) {
		return r, fmt.Errorf("image %q: contains spaces or control characters", s)
	}
	if strings.HasPrefix(s, "/") || strings.HasPrefix(s, ".") {
		r.Path = s
		return r, nil
	}
	for _, scheme := range []string{"dockerd://", "podman://"} {
		if strings.HasPrefix(s, scheme) {
			return r, fmt.Errorf("image %q cannot be locked: a local daemon image has no registry digest; push it to a registry or use a .sqsh path", s)
		}
	}
	rest, enrootScheme := strings.CutPrefix(s, "docker://")
	if i := strings.Index(rest, "://"); i >= 0 {
		return r, fmt.Errorf("image %q: unknown scheme %q (want docker://, or none)", s, rest[:i+3])
	}

	var name string
	if i := strings.Index(rest, "#"); i >= 0 {
		host := rest[:i]
		name = rest[i+1:]
		r.Enroot = true
		if j := strings.LastIndex(host, "@"); j >= 0 {
			r.User, host = host[:j], host[j+1:]
			if r.User == "" {
				return r, fmt.Errorf("image %q: empty user before '@'", s)
			}
		}
		if !hostRE.MatchString(host) {
			return r, fmt.Errorf("image %q: invalid registry host %q", s, host)
		}
		r.Registry = host
	} else {
		name = rest
		// enroot allows "user@image" without a registry; tell it from a
		// digest by what follows the '@'.
		if enrootScheme {
			if j := strings.Index(name, "@"); j >= 0 && !looksLikeDigest(name[j+1:]) {
				r.User, name = name[:j], name[j+1:]
				if r.User == "" {
					return r, fmt.Errorf("image %q: empty user before '@'", s)
				}
			}
		}
	}

	name, tag, digest, err := splitTagDigest(s, name)
	if err != nil {
		return r, err
	}
	r.Tag, r.Digest = tag, digest
	if r.Tag == "" && r.Digest == "" {
		r.Tag = "latest"
	}

	if !r.Enroot {
		if i := strings.Index(name, "/"); i >= 0 && looksLikeHost(name[:i]) {
			if !hostRE.MatchString(name[:i]) {
				return r, fmt.Errorf("image %q: invalid registry host %q", s, name[:i])
			}
			r.Registry, name = name[:i], name[i+1:]
		}
	}
	switch r.Registry {
	case "", "docker.io", "index.docker.io":
		r.Registry = DockerHub
	}
	if r.Registry == DockerHub && !strings.Contains(name, "/") {
		name = "library/" + name
	}
	if name == "" {
		return r, fmt.Errorf("image %q: no repository name", s)
	}
	if len(name) > 255 || !repositoryRE.MatchString(name) {
		return r, fmt.Errorf("image %q: invalid repository %q (lowercase letters, digits and . _ - separators, components joined by /)", s, name)
	}
	r.Repository = name
	return r, nil
}

// splitTagDigest splits "name[:tag][@digest]".
func splitTagDigest(orig, s string) (name, tag, digest string, err error) {
	if i := strings.Index(s, "@"); i >= 0 {
		s, digest = s[:i], s[i+1:]
		if !digestRE.MatchString(digest) {
			return "", "", "", fmt.Errorf("image %q: invalid digest %q (want sha256:<64 lowercase hex>)", orig, digest)
		}
	}
	if i := strings.LastIndex(s, ":"); i > strings.LastIndex(s, "/") {
		s, tag = s[:i], s[i+1:]
		if !tagRE.MatchString(tag) {
			return "", "", "", fmt.Errorf("image %q: invalid tag %q", orig, tag)
		}
	}
	return s, tag, digest, nil
}

// looksLikeHost reports whether the first component of a docker-form name
// is a registry host rather than a Docker Hub namespace (docker's rule).
func looksLikeHost(s string) bool {
	return strings.ContainsAny(s, ".:") || s == "localhost" || strings.ToLower(s) != s
}

func looksLikeDigest(s string) bool {
	return strings.HasPrefix(s, "sha256:") || strings.HasPrefix(s, "sha512:")
}

// IsPath reports whether the reference is a squashfs file, not a registry image.
func (r Ref) IsPath() bool { return r.Path != "" }

// Floating reports whether the reference names no digest and its tag is
// "latest", written or implied: what it means changes with every push.
func (r Ref) Floating() bool {
	return !r.IsPath() && r.Digest == "" && r.Tag == "latest"
}

// Name is the registry and repository, without tag or digest, in docker's
// form ("nvcr.io/nvidia/vllm", "registry-1.docker.io/library/ubuntu").
func (r Ref) Name() string { return r.Registry + "/" + r.Repository }

// Pinned renders the reference pinned to digest in the style it was
// written: enroot form → "nvcr.io#nvidia/vllm@sha256:…", docker form →
// "vllm/vllm-openai@sha256:…" (Docker Hub references keep their short form).
// The tag is dropped: the digest decides. A path is returned unchanged.
func (r Ref) Pinned(digest string) string {
	if r.IsPath() {
		return r.Path
	}
	if r.Enroot || r.User != "" {
		p := r.Registry + "#" + r.Repository + "@" + digest
		if r.User != "" {
			p = r.User + "@" + p
		}
		return p
	}
	if r.Registry == DockerHub {
		short := strings.TrimPrefix(r.Repository, "library/")
		first, _, _ := strings.Cut(short, "/")
		// A namespace such as "my.org" would read back as a registry host.
		if !(strings.Contains(short, "/") && looksLikeHost(first)) {
			return short + "@" + digest
		}
		return "docker.io/" + r.Repository + "@" + digest
	}
	return r.Registry + "/" + r.Repository + "@" + digest
}

// String is the reference as written.
func (r Ref) String() string { return r.Original }
