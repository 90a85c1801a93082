package registry

import (
	"bufio"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// challenge is one parsed WWW-Authenticate challenge (RFC 9110 §11.6.1).
type challenge struct {
	scheme string            // lowercased: "bearer", "basic"
	params map[string]string // keys lowercased
}

// parseChallenges parses WWW-Authenticate header values. One value may hold
// several challenges; quoted values may contain commas, spaces and
// backslash escapes ("repository:a/b:pull,push").
func parseChallenges(values []string) []challenge {
	var out []challenge
	for _, v := range values {
		i := 0
		skip := func(set string) {
			for i < len(v) && strings.IndexByte(set, v[i]) >= 0 {
				i++
			}
		}
		token := func() string {
			start := i
			for i < len(v) && strings.IndexByte(" \t,=\"", v[i]) < 0 {
				i++
			}
			return v[start:i]
		}
		quoted := func() string { // at the opening quote
			i++
			var b strings.Builder
			for i < len(v) && v[i] != '"' {
				if v[i] == '\\' && i+1 < len(v) {
					i++
				}
				b.WriteByte(v[i])
				i++
			}
			i++ // closing quote
			return b.String()
		}
		for i < len(v) {
			skip(" \t,")
			t := token()
			if t == "" {
				if i < len(v) && v[i] == '"' {
					quoted() // a stray quoted string: step over it whole
				} else if i < len(v) {
					i++ // a stray '='
				}
				continue
			}
			skip(" \t")
			if i >= len(v) || v[i] != '=' {
				out = append(out, challenge{scheme: strings.ToLower(t), params: map[string]string{}})
				continue
			}
			i++ // '='
			skip(" \t")
			var val string
			if i < len(v) && v[i] == '"' {
				val = quoted()
			} else {
				val = token()
			}
			if len(out) == 0 {
				continue // a parameter before any scheme: malformed, ignore
			}
			out[len(out)-1].params[strings.ToLower(t)] = val
		}
	}
	return out
}

// DefaultCredentials returns the username and password for a registry host
// from, in order, the docker config ($DOCKER_CONFIG/config.json, default
// ~/.docker/config.json) and enroot's credentials file
// ($ENROOT_CONFIG_PATH/.credentials, default
// $XDG_CONFIG_HOME/enroot/.credentials). It runs no commands: an enroot
// password "$NAME" or "${NAME}" is read from the environment, other
// command substitutions are skipped.
func DefaultCredentials(host string) (user, pass string, ok bool) {
	user, pass, _, ok = lookupCredentials(host, slog.New(slog.DiscardHandler))
	return user, pass, ok
}

// credentialFiles are the files DefaultCredentials reads, in order.
func credentialFiles() (docker, enroot string) {
	home, _ := os.UserHomeDir()
	dir := os.Getenv("DOCKER_CONFIG")
	if dir == "" {
		dir = filepath.Join(home, ".docker")
	}
	docker = filepath.Join(dir, "config.json")
	edir := os.Getenv("ENROOT_CONFIG_PATH")
	if edir == "" {
		xdg := os.Getenv("XDG_CONFIG_HOME")
		if xdg == "" {
			xdg = filepath.Join(home, ".config")
		}
		edir = filepath.Join(xdg, "enroot")
	}
	enroot = filepath.Join(edir, ".credentials")
	return docker, enroot
}

// lookupCredentials is DefaultCredentials that also says which file the
// credentials came from, for error messages, and logs what it skipped.
func lookupCredentials(host string, log *slog.Logger) (user, pass, source string, ok bool) {
	dockerFile, enrootFile := credentialFiles()
	names := hostAliases(host)
	if u, p, ok, err := dockerConfigCredentials(dockerFile, names, log); err != nil {
		log.Warn("registry: skipping unreadable docker config", "file", dockerFile, "err", err)
	} else if ok {
		return u, p, dockerFile, true
	}
	if u, p, ok, err := enrootCredentials(enrootFile, names, log); err != nil {
		log.Warn("registry: skipping unreadable enroot credentials", "file", enrootFile, "err", err)
	} else if ok {
		return u, p, enrootFile, true
	}
	return "", "", "", false
}

// hostAliases are the names a host's credentials may be filed under.
func hostAliases(host string) []string {
	switch host {
	case DockerHub, "docker.io", "index.docker.io":
		return []string{"https://index.docker.io/v1/", "index.docker.io", "docker.io", DockerHub}
	}
	return []string{host}
}

// dockerConfigCredentials reads auths[host] from a docker config.json.
// Keys may carry a scheme and path ("https://nvcr.io/v2/"); docker matches
// them by host, and so do we.
func dockerConfigCredentials(file string, hosts []string, log *slog.Logger) (user, pass string, ok bool, err error) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	var cfg struct {
		Auths map[string]struct {
			Auth     string `json:"auth"`
			Username string `json:"username"`
			Password string `json:"password"`
		} `json:"auths"`
		CredsStore  string            `json:"credsStore"`
		CredHelpers map[string]string `json:"credHelpers"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		return "", "", false, fmt.Errorf("parse %s: %w", file, err)
	}
	for _, want := range hosts {
		for key, a := range cfg.Auths {
			if key != want && normalizeAuthKey(key) != want {
				continue
			}
			if a.Auth != "" {
				raw, err := base64.StdEncoding.DecodeString(a.Auth)
				if err != nil {
					// Never log the value: it is the secret.
					log.Warn("registry: docker config auth entry is not base64; skipped", "file", file, "key", key)
					continue
				}
				u, p, found := strings.Cut(string(raw), ":")
				if found && u != "" {
					return u, p, true, nil
				}
				log.Warn("registry: docker config auth entry is not user:password; skipped", "file", file, "key", key)
				continue
			}
			if a.Username != "" {
				return a.Username, a.Password, true, nil
			}
		}
	}
	// Credential helpers are programs; nel runs none on its users' behalf.
	for _, want := range hosts {
		if h := cfg.CredHelpers[want]; h != "" {
			log.Warn("registry: docker credential helpers are not run; use `docker login` with a file store or enroot credentials", "host", want, "helper", h)
			return "", "", false, nil
		}
	}
	if cfg.CredsStore != "" {
		log.Debug("registry: docker credsStore is not consulted", "store", cfg.CredsStore)
	}
	return "", "", false, nil
}

// normalizeAuthKey turns "https://nvcr.io/v2/" into "nvcr.io". Docker Hub's
// canonical key keeps its full form.
func normalizeAuthKey(key string) string {
	if key == "https://index.docker.io/v1/" {
		return key
	}
	key = strings.TrimPrefix(key, "https://")
	key = strings.TrimPrefix(key, "http://")
	host, _, _ := strings.Cut(key, "/")
	return host
}

var envRefRE = regexp.MustCompile(`^\$(?:([A-Za-z_][A-Za-z0-9_]*)|\{([A-Za-z_][A-Za-z0-9_]*)\})$`)

// enrootCredentials reads enroot's netrc-format credentials file:
//
//	machine nvcr.io login $oauthtoken password <key>
//
// enroot runs the file's passwords through the shell; we do not. A password
// "$NAME" or "${NAME}" is taken from the environment, anything else that
// starts with '$' or '`' is a command and is skipped with a warning. Logins
// are literal ("$oauthtoken" is NGC's fixed user name).
func enrootCredentials(file string, hosts []string, log *slog.Logger) (user, pass string, ok bool, err error) {
	f, err := os.Open(file)
	if errors.Is(err, fs.ErrNotExist) {
		return "", "", false, nil
	}
	if err != nil {
		return "", "", false, err
	}
	defer f.Close()

	// netrc is a stream of tokens across lines; only a command password
	// is line-bound (it runs to the end of its line).
	type token struct {
		text string
		line int
	}
	var toks []token
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for lineNo := 1; sc.Scan(); lineNo++ {
		fields := strings.Fields(sc.Text())
		if len(fields) > 0 && strings.HasPrefix(fields[0], "#") {
			continue
		}
		for _, f := range fields {
			toks = append(toks, token{f, lineNo})
		}
	}
	if err := sc.Err(); err != nil {
		return "", "", false, fmt.Errorf("read %s: %w", file, err)
	}

	type entry struct {
		machine, login, password string
		line                     int
	}
	var entries []entry
	var cur *entry
	for i := 0; i < len(toks); i++ {
		key := toks[i].text
		if key == "default" {
			entries = append(entries, entry{line: toks[i].line})
			cur = &entries[len(entries)-1]
			continue
		}
		if i+1 >= len(toks) {
			break
		}
		i++
		val := toks[i]
		switch key {
		case "machine":
			entries = append(entries, entry{machine: val.text, line: toks[i-1].line})
			cur = &entries[len(entries)-1]
		case "login":
			if cur != nil {
				cur.login = val.text
			}
		case "password":
			if cur != nil {
				cur.password = val.text
			}
			if strings.HasPrefix(val.text, "$(") || strings.HasPrefix(val.text, "`") {
				for i+1 < len(toks) && toks[i+1].line == val.line {
					i++
				}
			}
		}
	}
	for _, want := range hosts {
		for _, e := range entries {
			if e.machine != want || e.login == "" {
				continue
			}
			p, ok := expandPassword(e.password, file, e.line, want, log)
			if !ok {
				continue
			}
			return e.login, p, true, nil
		}
	}
	return "", "", false, nil
}

// expandPassword resolves enroot's "$NAME" passwords without a shell.
func expandPassword(p, file string, line int, host string, log *slog.Logger) (string, bool) {
	if !strings.HasPrefix(p, "$") && !strings.HasPrefix(p, "`") {
		return p, p != ""
	}
	m := envRefRE.FindStringSubmatch(p)
	if m == nil {
		log.Warn("registry: enroot credentials password is a command; nel runs no commands, skipped (use $NAME to read it from the environment)",
			"file", file, "line", line, "machine", host)
		return "", false
	}
	name := m[1] + m[2]
	v := os.Getenv(name)
	if v == "" {
		log.Warn("registry: enroot credentials password names an unset environment variable; skipped",
			"file", file, "line", line, "machine", host, "var", name)
		return "", false
	}
	return v, true
}
