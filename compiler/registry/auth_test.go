package registry

import (
	"bytes"
	"encoding/base64"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestParseChallenges(t *testing.T) {
	tests := []struct {
		name   string
		values []string
		want   []challenge
	}{
		{"docker hub",
			[]string{`Bearer realm="https://auth.docker.io/token",service="registry.docker.io",scope="repository:library/ubuntu:pull"`},
			[]challenge{{"bearer", map[string]string{"realm": "https://auth.docker.io/token", "service": "registry.docker.io", "scope": "repository:library/ubuntu:pull"}}}},
		{"comma inside quoted scope, spaces around separators",
			[]string{`Bearer realm="https://r.example/token" , scope="repository:samalba/my-app:pull,push", service="r.example"`},
			[]challenge{{"bearer", map[string]string{"realm": "https://r.example/token", "scope": "repository:samalba/my-app:pull,push", "service": "r.example"}}}},
		{"escaped quote and unquoted token value",
			[]string{`Bearer realm="https://x/t?a=1,b=2", error=invalid_token, error_description="say \"hi\", twice"`},
			[]challenge{{"bearer", map[string]string{"realm": "https://x/t?a=1,b=2", "error": "invalid_token", "error_description": `say "hi", twice`}}}},
		{"two challenges in one value, scheme case",
			[]string{`basic realm="Registry Realm", BEARER realm="https://t/token",service="s"`},
			[]challenge{
				{"basic", map[string]string{"realm": "Registry Realm"}},
				{"bearer", map[string]string{"realm": "https://t/token", "service": "s"}}}},
		{"two header values, param keys case-folded",
			[]string{`Basic Realm="a"`, `Bearer Realm="b"`},
			[]challenge{{"basic", map[string]string{"realm": "a"}}, {"bearer", map[string]string{"realm": "b"}}}},
		{"scheme alone", []string{`Negotiate`}, []challenge{{"negotiate", map[string]string{}}}},
		{"garbage does not panic", []string{`="x", ,,= "unterminated`}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := parseChallenges(tt.values)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("parseChallenges(%q)\n got %#v\nwant %#v", tt.values, got, tt.want)
			}
		})
	}
}

// isolate points every credential location at empty temp directories.
func isolate(t *testing.T) (home string) {
	t.Helper()
	home = t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("DOCKER_CONFIG", "")
	t.Setenv("ENROOT_CONFIG_PATH", "")
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("NEL_REGISTRY_INSECURE", "")
	return home
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

func TestDockerConfigCredentials(t *testing.T) {
	home := isolate(t)
	// Default location: ~/.docker/config.json.
	writeFile(t, filepath.Join(home, ".docker", "config.json"), `{
  "auths": {
    "nvcr.io": {"auth": "`+b64("$oauthtoken:nvapi-secret:with:colons")+`"},
    "https://ghcr.io/v2/": {"username": "octo", "password": "ghp_x"},
    "https://index.docker.io/v1/": {"auth": "`+b64("hubuser:hubpass")+`"},
    "broken.example": {"auth": "!!!not base64"}
  },
  "credHelpers": {"gcr.io": "gcloud"}
}`)
	tests := []struct {
		host, user, pass string
		ok               bool
	}{
		{"nvcr.io", "$oauthtoken", "nvapi-secret:with:colons", true},
		{"ghcr.io", "octo", "ghp_x", true},
		{"registry-1.docker.io", "hubuser", "hubpass", true},
		{"docker.io", "hubuser", "hubpass", true},
		{"broken.example", "", "", false},
		{"gcr.io", "", "", false},
		{"quay.io", "", "", false},
	}
	for _, tt := range tests {
		u, p, ok := DefaultCredentials(tt.host)
		if u != tt.user || p != tt.pass || ok != tt.ok {
			t.Errorf("DefaultCredentials(%q) = %q, %q, %v; want %q, %q, %v", tt.host, u, p, ok, tt.user, tt.pass, tt.ok)
		}
	}

	// $DOCKER_CONFIG moves the file.
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "config.json"), `{"auths":{"nvcr.io":{"auth":"`+b64("other:pw2")+`"}}}`)
	t.Setenv("DOCKER_CONFIG", dir)
	if u, p, ok := DefaultCredentials("nvcr.io"); u != "other" || p != "pw2" || !ok {
		t.Errorf("with DOCKER_CONFIG: %q, %q, %v", u, p, ok)
	}
}

func TestEnrootCredentials(t *testing.T) {
	home := isolate(t)
	t.Setenv("NGC_KEY", "from-env-1")
	t.Setenv("GH_TOKEN", "from-env-2")
	t.Setenv("EMPTY_VAR", "")
	creds := `# enroot credentials
machine nvcr.io login $oauthtoken password ${NGC_KEY}
machine authn.nvidia.com login $oauthtoken password $NGC_KEY
machine ghcr.io login octo password $GH_TOKEN
machine cmd.example login u password $(cat /etc/hostname) machine after.example login a password literal-pw
machine unset.example login u password $EMPTY_VAR
machine tick.example login u password ` + "`cat /x`" + `
machine
  multi.example
  login m
  password mpw
`
	// Default location: $XDG_CONFIG_HOME/enroot/.credentials, ~/.config when unset.
	writeFile(t, filepath.Join(home, ".config", "enroot", ".credentials"), creds)

	var logBuf bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logBuf, nil))
	tests := []struct {
		host, user, pass string
		ok               bool
	}{
		{"nvcr.io", "$oauthtoken", "from-env-1", true},
		{"authn.nvidia.com", "$oauthtoken", "from-env-1", true},
		{"ghcr.io", "octo", "from-env-2", true},
		{"cmd.example", "", "", false},
		{"after.example", "", "", false}, // on a command's line: part of the command
		{"unset.example", "", "", false},
		{"tick.example", "", "", false},
		{"multi.example", "m", "mpw", true},
		{"quay.io", "", "", false},
	}
	for _, tt := range tests {
		u, p, src, ok := lookupCredentials(tt.host, log)
		if u != tt.user || p != tt.pass || ok != tt.ok {
			t.Errorf("lookupCredentials(%q) = %q, %q, %v; want %q, %q, %v", tt.host, u, p, ok, tt.user, tt.pass, tt.ok)
		}
		if ok && src != filepath.Join(home, ".config", "enroot", ".credentials") {
			t.Errorf("source = %q", src)
		}
	}
	logs := logBuf.String()
	for _, want := range []string{"machine=cmd.example", "is a command", "machine=tick.example", "var=EMPTY_VAR"} {
		if !strings.Contains(logs, want) {
			t.Errorf("log lacks %q:\n%s", want, logs)
		}
	}
	for _, secret := range []string{"from-env-1", "from-env-2", "mpw", "literal-pw"} {
		if strings.Contains(logs, secret) {
			t.Errorf("log contains secret %q", secret)
		}
	}

	// $ENROOT_CONFIG_PATH wins over XDG; docker config wins over enroot.
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, ".credentials"), "machine nvcr.io login $oauthtoken password plain-key\n")
	t.Setenv("ENROOT_CONFIG_PATH", dir)
	if u, p, ok := DefaultCredentials("nvcr.io"); u != "$oauthtoken" || p != "plain-key" || !ok {
		t.Errorf("with ENROOT_CONFIG_PATH: %q, %q, %v", u, p, ok)
	}
	writeFile(t, filepath.Join(home, ".docker", "config.json"), `{"auths":{"nvcr.io":{"auth":"`+b64("dock:er")+`"}}}`)
	if u, p, ok := DefaultCredentials("nvcr.io"); u != "dock" || p != "er" || !ok {
		t.Errorf("docker config first: %q, %q, %v", u, p, ok)
	}
}

func TestDefaultPlainHTTP(t *testing.T) {
	t.Setenv("NEL_REGISTRY_INSECURE", "reg.internal:5000, lab-registry")
	tests := map[string]bool{
		"localhost":         true,
		"localhost:5000":    true,
		"127.0.0.1:5000":    true,
		"127.9.8.7":         true,
		"[::1]:5000":        true,
		"nvcr.io":           false,
		"10.0.0.1:5000":     false,
		"reg.internal:5000": true,
		"reg.internal":      false,
		"lab-registry:443":  true,
		"lab-registry":      true,
		"localhost.evil.io": false,
	}
	for host, want := range tests {
		if got := DefaultPlainHTTP(host); got != want {
			t.Errorf("DefaultPlainHTTP(%q) = %v, want %v", host, got, want)
		}
	}
}
