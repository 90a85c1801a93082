package dockerdef

import (
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
	"testing/fstest"
)

// ctx is a build context: a file, a folder, a script and a gzip.
var ctx = fstest.MapFS{
	"Dockerfile":        {Data: []byte("FROM x\n")},
	"solution.py":       {Data: []byte("print(1)\n")},
	"data/a.txt":        {Data: []byte("a\n")},
	"data/b.txt":        {Data: []byte("b\n")},
	"setup.sh":          {Data: []byte("#!/bin/sh\n"), Mode: 0o755},
	"deps.tar.gz":       {Data: []byte{0x1f, 0x8b, 8, 0, 0, 0}},
	"deps.tar.zst":      {Data: []byte{0x28, 0xb5, 0x2f, 0xfd, 0, 0}},
	"my file.txt":       {Data: []byte("spaces\n")},
	"conf/app.ini":      {Data: []byte("[x]\n")},
	"conf/extra/z.conf": {Data: []byte("z\n")},
}

func TestConvert(t *testing.T) {
	for _, c := range []struct {
		name, dockerfile string
		from             string
		post, env        []string
	}{{
		name:       "RUN in the shell form, then the exec form",
		dockerfile: "FROM ubuntu:22.04\nRUN apt-get update && apt-get install -y git\nRUN [\"python3\", \"-c\", \"print('hi')\"]\n",
		from:       "ubuntu:22.04",
		post:       []string{"set -e", "cd /", `/bin/sh -c 'apt-get update && apt-get install -y git'`, `python3 -c 'print('\''hi'\'')'`},
	}, {
		// A COPY after a RUN that makes its destination, then a RUN
		// that reads what was copied: %post keeps the Dockerfile's order.
		name: "COPY after RUN keeps its place",
		dockerfile: "FROM base:1\nWORKDIR /app\nRUN mkdir -p /opt/tool && echo 1 > /opt/tool/v\nCOPY setup.sh /opt/tool/\n" +
			"RUN sh /opt/tool/setup.sh\nCOPY . .\n",
		from: "base:1",
		post: []string{"set -e", "cd /", "mkdir -p /app", "cd /app",
			`/bin/sh -c 'mkdir -p /opt/tool && echo 1 > /opt/tool/v'`,
			"mkdir -p /opt/tool", "cp -a /.nel-build-context/setup.sh /opt/tool/",
			`/bin/sh -c 'sh /opt/tool/setup.sh'`,
			"mkdir -p /app", "cp -a /.nel-build-context/. /app/",
			"rm -rf /.nel-build-context"},
	}, {
		name:       "WORKDIR relative to the last, COPY relative to WORKDIR",
		dockerfile: "FROM b\nWORKDIR /srv\nWORKDIR api\nCOPY solution.py main.py\nCOPY data ./data\nCOPY data/a.txt data/b.txt out/\n",
		from:       "b",
		post: []string{"set -e", "cd /", "mkdir -p /srv", "cd /srv", "mkdir -p /srv/api", "cd /srv/api",
			"mkdir -p /srv/api", "cp -a /.nel-build-context/solution.py /srv/api/main.py",
			"mkdir -p /srv/api/data", "cp -a /.nel-build-context/data/. /srv/api/data/",
			"mkdir -p /srv/api/out", "cp -a /.nel-build-context/data/a.txt /srv/api/out/",
			"mkdir -p /srv/api/out", "cp -a /.nel-build-context/data/b.txt /srv/api/out/",
			"rm -rf /.nel-build-context"},
	}, {
		name:       "ENV in both forms, quoted; a reference to the base image's PATH is left to the shell",
		dockerfile: "FROM b\nENV A=1 B=\"two words\" C='it''s'\nENV PATH=/opt/bin:$PATH\nENV OLD a value with  spaces\nENV D=${A}x E=$NOPE\n",
		from:       "b",
		post: []string{"set -e", "cd /", "export A=1 B='two words' C=its",
			`export PATH=/opt/bin:"${PATH}"`, "export OLD='a value with  spaces'", `export D=1x E="${NOPE}"`},
		env: []string{"export A=1 B='two words' C=its",
			`export PATH=/opt/bin:"${PATH}"`, "export OLD='a value with  spaces'", `export D=1x E="${NOPE}"`},
	}, {
		// Docker reads every value of one ENV with the variables as they
		// were before it; the old form takes a tab after the name; HOME
		// stays the session's.
		name:       "ENV's values read the variables before it; the old form after a tab; HOME in %post only",
		dockerfile: "FROM b\nENV A=old\nENV A=new B=$A P=/x:$PATH PATH=/y Q=$PATH\nENV T\tx  y\nENV HOME=/root/h U=1\nENV HOME /root/i\n",
		from:       "b",
		post: []string{"set -e", "cd /", "export A=old", `export A=new B=old P=/x:"${PATH}" PATH=/y Q="${PATH}"`,
			"export T='x  y'", "export HOME=/root/h U=1", "export HOME=/root/i"},
		env: []string{"export A=old", `export A=new B=old P=/x:"${PATH}" PATH=/y Q="${PATH}"`, "export T='x  y'", "export U=1"},
	}, {
		name: "ARG before FROM names the image; ARG in the stage is exported to %post only",
		dockerfile: "ARG TAG=3.12\nARG REG\nFROM python:${TAG}-slim AS build\nARG TAG\nARG V=\"1.0 beta\"\nARG NODEF\n" +
			"RUN echo $V\nWORKDIR /opt/v$TAG\nENV VER=${V:-none} HAS=${NODEF:+yes}\n",
		from: "python:3.12-slim",
		post: []string{"set -e", "cd /", "export TAG=3.12", "export V='1.0 beta'", `/bin/sh -c 'echo $V'`,
			"mkdir -p /opt/v3.12", "cd /opt/v3.12", `export VER='1.0 beta' HAS="${NODEF:+yes}"`},
		env: []string{`export VER='1.0 beta' HAS="${NODEF:+yes}"`},
	}, {
		name: "continuations, comments inside them, tabs, SHELL, and what is ignored",
		dockerfile: "# syntax=docker/dockerfile:1\n# a comment\nFROM b\nLABEL maintainer=\"x\"\nEXPOSE 8080\n" +
			"RUN echo a \\\n    # a comment inside\n    && echo b\nSHELL [\"/bin/bash\", \"-o\", \"pipefail\", \"-c\"]\nRUN\techo $((1+1)) | cat\n" +
			"USER root\nCMD [\"python3\"]\nENTRYPOINT /bin/sh\nUSER nobody\n",
		from: "b",
		post: []string{"set -e", "cd /", `/bin/sh -c 'echo a     && echo b'`, `/bin/bash -o pipefail -c 'echo $((1+1)) | cat'`},
	}, {
		name:       "COPY of a name with spaces (JSON form), --chown ignored, a glob",
		dockerfile: "FROM b\nCOPY [\"my file.txt\", \"/app/\"]\nCOPY --chown=1000:1000 conf/*.ini /etc/app/\nADD setup.sh /usr/local/bin/setup\n",
		from:       "b",
		post: []string{"set -e", "cd /",
			"mkdir -p /app", "cp -a '/.nel-build-context/my file.txt' /app/",
			"mkdir -p /etc/app", "cp -a /.nel-build-context/conf/app.ini /etc/app/",
			"mkdir -p /usr/local/bin", "cp -a /.nel-build-context/setup.sh /usr/local/bin/setup",
			"rm -rf /.nel-build-context"},
	}, {
		name:       "COPY's JSON form expands variables as the shell form does",
		dockerfile: "FROM b\nENV APP=/opt/app\nARG SUB=conf\nCOPY [\"$SUB/app.ini\", \"${APP}/\"]\n",
		from:       "b",
		post: []string{"set -e", "cd /", "export APP=/opt/app", "export SUB=conf",
			"mkdir -p /opt/app", "cp -a /.nel-build-context/conf/app.ini /opt/app/",
			"rm -rf /.nel-build-context"},
		env: []string{"export APP=/opt/app"},
	}, {
		name: "BuildKit's platform ARGs are the build machine's, in FROM and once declared in the stage",
		dockerfile: "FROM tool:${TARGETARCH}\nARG TARGETARCH\nARG TARGETOS=windows\nARG BUILDPLATFORM\nARG TARGETVARIANT\n" +
			"RUN echo $TARGETPLATFORM\n",
		from: "tool:" + runtime.GOARCH,
		post: []string{"set -e", "cd /", "export TARGETARCH=" + runtime.GOARCH, "export TARGETOS=" + runtime.GOOS,
			"export BUILDPLATFORM=" + runtime.GOOS + "/" + runtime.GOARCH, "export TARGETVARIANT=''", "/bin/sh -c 'echo $TARGETPLATFORM'"},
	}} {
		t.Run(c.name, func(t *testing.T) {
			d, err := Convert(c.dockerfile, ctx)
			if err != nil {
				t.Fatal(err)
			}
			if d.From != c.from {
				t.Errorf("From %q, want %q", d.From, c.from)
			}
			if strings.Join(d.Post, "\n") != strings.Join(c.post, "\n") {
				t.Errorf("%%post\n got:\n%s\nwant:\n%s", strings.Join(d.Post, "\n"), strings.Join(c.post, "\n"))
			}
			if strings.Join(d.Env, "\n") != strings.Join(c.env, "\n") {
				t.Errorf("%%environment\n got:\n%s\nwant:\n%s", strings.Join(d.Env, "\n"), strings.Join(c.env, "\n"))
			}
		})
	}
}

// TestConvertRefuses: what cannot be converted faithfully is an *Error
// naming its line and instruction.
func TestConvertRefuses(t *testing.T) {
	for _, c := range []struct{ dockerfile, want string }{
		{"FROM a AS build\nRUN make\nFROM b\nCOPY --from=build /out /app\n", "Dockerfile:3: FROM b: not supported yet: a build of several stages"},
		{"FROM b\nCOPY --from=build /out /app\n", "Dockerfile:2: COPY --from=build /out /app: not supported yet: COPY --from=build (a build of several stages)"},
		{"FROM b\n\nADD https://example.com/x.tgz /opt/\n", "Dockerfile:3: ADD https://example.com/x.tgz /opt/: not supported yet: ADD of a URL"},
		{"FROM b\nADD deps.tar.gz /opt/\n", "Dockerfile:2: ADD deps.tar.gz /opt/: not supported yet: ADD of an archive (deps.tar.gz"},
		{"FROM b\nADD deps.tar.zst /opt/\n", "Dockerfile:2: ADD deps.tar.zst /opt/: not supported yet: ADD of an archive (deps.tar.zst"},
		{"FROM b\nCOPY . .\n", "Dockerfile:2: COPY . .: not supported yet: the relative path . before an absolute WORKDIR (it would be in the base image's working folder"},
		{"FROM b\nRUN apt-get update\nADD setup.sh bin/\n", "Dockerfile:3: ADD setup.sh bin/: not supported yet: the relative path bin/ before an absolute WORKDIR"},
		{"FROM b\nWORKDIR src\nWORKDIR /app\n", "Dockerfile:2: WORKDIR src: not supported yet: the relative path src before an absolute WORKDIR"},
		{"FROM b\nONBUILD RUN make\n", "Dockerfile:2: ONBUILD RUN make: not supported yet: ONBUILD"},
		{"FROM b\nVOLUME /data\n", "Dockerfile:2: VOLUME /data: not supported yet: VOLUME"},
		{"FROM b\nRUN <<EOF\necho hi\nEOF\n", "Dockerfile:2: RUN <<EOF: not supported yet: a heredoc"},
		{"FROM b\nRUN cat <<-'END' > /x\n", "Dockerfile:2: RUN cat <<-'END' > /x: not supported yet: a heredoc"},
		{"FROM b\nRUN --mount=type=cache,target=/root/.cache \\\n  pip install x\n", "Dockerfile:2: RUN --mount=type=cache,target=/root/.cache   pip install x: not supported yet: RUN --mount=type=cache"},
		{"FROM b\nCOPY missing.txt /app/\n", "Dockerfile:2: COPY missing.txt /app/: missing.txt: not in the build context"},
		{"FROM b\nCOPY ../secret /app/\n", "Dockerfile:2: COPY ../secret /app/: ../secret leaves the build context"},
		{"FROM b\nCOPY *.md /app/\n", "Dockerfile:2: COPY *.md /app/: *.md: no file of the build context matches"},
		{"FROM b\nCOPY --chmod=755 setup.sh /app/\n", "Dockerfile:2: COPY --chmod=755 setup.sh /app/: not supported yet: COPY --chmod=755"},
		{"FROM b\nWORKDIR $HOME/x\n", "Dockerfile:2: WORKDIR $HOME/x: not supported yet: $HOME here"},
		{"FROM b\nUSER 1000\nRUN make\n", "Dockerfile:3: RUN make: not supported yet: a step after USER 1000 (line 2)"},
		{"RUN make\nFROM b\n", "Dockerfile:1: RUN make: only ARG may come before FROM"},
		{"FROM scratch\n", `Dockerfile:1: FROM scratch: not supported yet: FROM "scratch"`},
		{"FROM --platform=linux/amd64 b\n", "Dockerfile:1: FROM --platform=linux/amd64 b: not supported yet: FROM --platform=linux/amd64"},
		{"# escape=`\nFROM b\n", "Dockerfile:1: # escape=`: not supported yet: an escape character other than \\"},
		{"FROM b\nENV A=${B/x/y}\n", "Dockerfile:2: ENV A=${B/x/y}: not supported yet: ${B/x/y}"},
		{"FROM oci-archive:///tmp/x.tar\n", `Dockerfile:1: FROM oci-archive:///tmp/x.tar: "oci-archive:///tmp/x.tar" names a transport (oci-archive://)`},
		{"FROM docker-archive:///tmp/x.tar\n", `Dockerfile:1: FROM docker-archive:///tmp/x.tar: "docker-archive:///tmp/x.tar" names a transport`},
		{"FROM oci:///tmp/layout\n", `Dockerfile:1: FROM oci:///tmp/layout: "oci:///tmp/layout" names a transport`},
		{"FROM docker-daemon://img\n", `Dockerfile:1: FROM docker-daemon://img: "docker-daemon://img" names a transport`},
		{"FROM docker-daemon:img:1\n", `Dockerfile:1: FROM docker-daemon:img:1: "docker-daemon:img:1" names a transport (docker-daemon:)`},
		{"FROM oci-archive:/tmp/x.tar\n", `Dockerfile:1: FROM oci-archive:/tmp/x.tar: "oci-archive:/tmp/x.tar" names a transport (oci-archive:)`},
		{"ARG B=oras://reg/x:1\nFROM ${B}\n", `Dockerfile:2: FROM ${B}: "oras://reg/x:1" names a transport`},
		{"FROM /tmp/x.sif\n", `Dockerfile:1: FROM /tmp/x.sif: "/tmp/x.sif" is not an image reference`},
		{"FROM Python:3\n", `Dockerfile:1: FROM Python:3: "Python:3" is not an image reference`},
		{"LABEL x=y\n", "Dockerfile:1: LABEL x=y: only ARG may come before FROM"},
		{"ARG X\n", "Dockerfile: no FROM line"},
	} {
		_, err := Convert(c.dockerfile, ctx)
		var de *Error
		if !errors.As(err, &de) {
			t.Errorf("%q: %v, want an *Error", c.dockerfile, err)
			continue
		}
		if !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q:\n got %s\nwant %s…", c.dockerfile, err, c.want)
		}
	}
	linked := fstest.MapFS{"Dockerfile": {}, "data/a.txt": {Data: []byte("a")}, "data/b": {Data: []byte("a.txt"), Mode: fs.ModeSymlink}}
	// A link anywhere in the context would be followed by %files, when
	// the build copies anything; a build that copies nothing stages none.
	for _, df := range []string{"FROM b\nCOPY . /app\n", "FROM b\nCOPY data/a.txt /app/\n"} {
		if _, err := Convert(df, linked); err == nil || err.Error() != "Dockerfile: not supported yet: a symbolic link in the build context (data/b): the build would copy what it points to" {
			t.Errorf("%q, a link in the context: %v", df, err)
		}
	}
	if _, err := Convert("FROM b\nRUN true\n", linked); err != nil {
		t.Errorf("a link in a context nothing copies: %v", err)
	}
	dockerignore := fstest.MapFS{"Dockerfile": {}, ".dockerignore": {Data: []byte("*.log\n")}}
	if _, err := Convert("FROM b\n", dockerignore); err == nil || !strings.Contains(err.Error(), ".dockerignore") {
		t.Errorf("a .dockerignore: %v", err)
	}
}

// TestShellText: what %post says runs in sh as the Dockerfile meant it:
// the values an ENV and ARG set reach a RUN byte for byte.
func TestShellText(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Fatal(err)
	}
	d, err := Convert("FROM b\nARG Q=\"it's $$ a \\\"test\\\"\"\nENV R='$HOME `x`' S=\"${Q}!\"\nENV PATH=/x:$PATH OLD=$PATH\nRUN printf '%s|%s|%s|%s|%s' \"$Q\" \"$R\" \"$S\" \"$OLD\" \"$(echo $PATH | cut -d: -f2-)\"\n", ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The staging folder is not there; set -e and cd / are harmless.
	cmd := exec.Command(sh, "-c", strings.Join(d.Post, "\n"))
	cmd.Env = []string{"PATH=/base:/bin"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	want := "it's $$ a \"test\"|$HOME `x`|it's $$ a \"test\"!|/base:/bin|/base:/bin"
	if string(out) != want {
		t.Errorf("got  %s\nwant %s", out, want)
	}
}

func TestText(t *testing.T) {
	d := &Def{From: "b", Copies: true, Post: []string{"set -e", "cd /"}, Env: []string{"export A=1"}}
	want := "Bootstrap: localimage\nFrom: base.sif\n\n%files\n    context /.nel-build-context\n\n%environment\n    export A=1\n\n%post\n    set -e\n    cd /\n"
	if got, err := d.Text("base.sif", "context"); err != nil || got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}

// TestConvertRefusesSections: nothing of a Dockerfile or of its build
// context's file names makes a line of the definition file, or a line
// whose first word starts with % (a section: %setup runs on the host).
func TestConvertRefusesSections(t *testing.T) {
	hostile := fstest.MapFS{
		"Dockerfile":                    {},
		"f":                             {Data: []byte("f\n")},
		"x\n%setup\ntouch /tmp/pwned #": {Data: []byte("x\n")},
	}
	for _, c := range []struct{ dockerfile, want string }{
		{"FROM b\nRUN [\"sh\",\"-c\",\"true\\n%setup\\ntouch /tmp/pwned #\"]\n", `Dockerfile:2: RUN ["sh","-c","true\n%setup\ntouch /tmp/pwned #"]: a control character ('\n')`},
		{"FROM b\nSHELL [\"/bin/sh\",\"-c\",\"x\\n%setup\\n\"]\nRUN true\n", `Dockerfile:2: SHELL ["/bin/sh","-c","x\n%setup\n"]: a control character ('\n')`},
		{"FROM b\nCOPY [\"f\",\"/x\\n%setup\\ntouch /tmp/pwned #\"]\n", `Dockerfile:2: COPY ["f","/x\n%setup\ntouch /tmp/pwned #"]: a control character ('\n')`},
		{"FROM b\nCOPY [\"f\",\"/x\\r%setup\"]\n", `Dockerfile:2: COPY ["f","/x\r%setup"]: a control character ('\r')`},
		{"FROM b\nCOPY [\"f\",\"/x\\u0000y\"]\n", `Dockerfile:2: COPY ["f","/x\u0000y"]: a control character ('\x00')`},
		{"FROM b\nCOPY * /app/\n", `Dockerfile:2: COPY * /app/: a control character ('\n') in "cp -a '/.nel-build-context/x\n%setup`},
		{"FROM b\nENV A=x\rB\n", `Dockerfile:2: "ENV A=x\rB": a control character ('\r')`},
		{"FROM b\nRUN true\r%setup\n", `Dockerfile:2: "RUN true\r%setup": a control character ('\r')`},
		{"FROM b\nRUN [\"%setup\"]\nRUN [\"touch\", \"/tmp/pwned\"]\n", `Dockerfile:2: RUN ["%setup"]: "%setup" would be a line of the definition file starting with %`},
	} {
		_, err := Convert(c.dockerfile, hostile)
		var de *Error
		if !errors.As(err, &de) || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%q:\n got %v\nwant %s…", c.dockerfile, err, c.want)
		}
	}
}

// TestTextRefusesSections: Text checks its own output, whatever a Def
// holds: a line nel does not write is an error, not a section.
func TestTextRefusesSections(t *testing.T) {
	for _, d := range []*Def{
		{Post: []string{"true\n%setup\ntouch /tmp/pwned"}},
		{Post: []string{"%setup"}},
		{Post: []string{"\t%setup"}},
		{Env: []string{"export A=1\n%post"}},
		{Post: []string{"echo \r%setup"}},
	} {
		if text, err := d.Text("base.sif", "context"); err == nil {
			t.Errorf("%q: a text of\n%s", d.Post, text)
		}
	}
	for _, n := range [][2]string{{"base.sif\n%setup", "context"}, {"base.sif", "a b"}, {"", "context"}} {
		if _, err := (&Def{Copies: true}).Text(n[0], n[1]); err == nil {
			t.Errorf("Text(%q, %q): no error", n[0], n[1])
		}
	}
}

func TestCheckText(t *testing.T) {
	good := "Bootstrap: localimage\nFrom: base.sif\n\n%files\n    context /.nel-build-context\n\n%environment\n    export A=1\n\n%post\n    set -e\n"
	if err := checkText(good); err != nil {
		t.Errorf("%s: %v", good, err)
	}
	for _, bad := range []string{
		strings.Replace(good, "export A=1", "export A=1\n%post", 1),
		strings.Replace(good, "export A=1", "export A=1\n\n%setup\n    touch /tmp/pwned", 1),
		strings.Replace(good, "    set -e", "    set -e\n\n%environment", 1),
		strings.Replace(good, "    set -e", "      %setup", 1),
		strings.Replace(good, "    set -e", "\t%setup", 1),
		strings.Replace(good, "    set -e", "set -e", 1),
		strings.Replace(good, "    set -e", "    set -e\r%setup", 1),
		strings.Replace(good, "From: base.sif", "From: base.sif\nStage: x", 1),
		strings.Replace(good, "From: base.sif", "From: a b", 1),
		strings.Replace(good, "Bootstrap: localimage", "Bootstrap: docker", 1),
		"%post\n    true\n", "    true\n", "",
	} {
		if err := checkText(bad); err == nil {
			t.Errorf("accepted:\n%s", bad)
		}
	}
}

func TestPlatformArgs(t *testing.T) {
	m := platformArgs("linux", "arm64")
	for name, want := range map[string]string{"TARGETPLATFORM": "linux/arm64", "TARGETOS": "linux", "TARGETARCH": "arm64",
		"TARGETVARIANT": "", "BUILDPLATFORM": "linux/arm64", "BUILDOS": "linux", "BUILDARCH": "arm64"} {
		if got, ok := m[name].val.literal(); !ok || got != want {
			t.Errorf("%s = %q, want %q", name, got, want)
		}
	}
}

// TestStepFails: a step whose folder cannot be made (a file is there)
// stops %post, as it fails Docker's build; nothing after it runs.
func TestStepFails(t *testing.T) {
	dir := t.TempDir()
	for _, step := range []string{"WORKDIR " + dir + "/f/sub", "COPY solution.py " + dir + "/f/sub/"} {
		d, err := Convert("FROM b\nRUN touch "+dir+"/f\n"+step+"\nRUN touch "+dir+"/after\n", ctx)
		if err != nil {
			t.Fatal(err)
		}
		out, err := exec.Command("sh", "-c", strings.Join(d.Post, "\n")).CombinedOutput()
		if err == nil {
			t.Errorf("%s over a file: %%post succeeded: %s", step, out)
		}
		if _, err := os.Stat(dir + "/after"); err == nil {
			t.Errorf("%s over a file: the next step ran", step)
			os.Remove(dir + "/after")
		}
	}
}
