package tbench

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Terminal-Bench's own defaults in a task's main service: its log volumes
// and its TEST_DIR, which Harbor sets itself.
var (
	defaultVolumes = []string{
		"${T_BENCH_TASK_LOGS_PATH}:${T_BENCH_CONTAINER_LOGS_PATH}",
		"${T_BENCH_TASK_AGENT_LOGS_PATH}:${T_BENCH_CONTAINER_AGENT_LOGS_PATH}",
	}
	defaultEnv = "TEST_DIR=${T_BENCH_TEST_DIR}"
)

// serviceKeys are the keys of a main service that a lone Dockerfile can
// hold (environment, working_dir, expose, entrypoint, platform) or that
// Harbor sets itself (the rest).
var serviceKeys = map[string]bool{
	"environment": true, "working_dir": true, "expose": true, "entrypoint": true, "platform": true,
	"build": true, "image": true, "container_name": true, "command": true, "volumes": true,
}

// compose is what the conversion reads of docker-compose.yaml: the
// services in file order (the main one is "client", else the first).
type compose struct {
	keys     []string
	services []string
	main     map[string]any
}

func readCompose(path string) (*compose, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		return nil, fmt.Errorf("docker-compose.yaml: %w", err)
	}
	c := &compose{}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return c, nil
	}
	top := doc.Content[0]
	for i := 0; i+1 < len(top.Content); i += 2 {
		c.keys = append(c.keys, top.Content[i].Value)
		if top.Content[i].Value != "services" || top.Content[i+1].Kind != yaml.MappingNode {
			continue
		}
		svcs := top.Content[i+1]
		var mainNode *yaml.Node
		for j := 0; j+1 < len(svcs.Content); j += 2 {
			c.services = append(c.services, svcs.Content[j].Value)
			if mainNode == nil || svcs.Content[j].Value == "client" {
				mainNode = svcs.Content[j+1]
			}
		}
		if mainNode != nil {
			if err := mainNode.Decode(&c.main); err != nil {
				return nil, fmt.Errorf("docker-compose.yaml: services: %w", err)
			}
		}
	}
	return c, nil
}

// oneContainer says why the task needs more than one container, or
// more than a Dockerfile says ("" when it does not): Harbor then keeps a
// compose file of its own, which nel's sessions cannot run.
func (c *compose) oneContainer() string {
	if len(c.services) != 1 {
		return fmt.Sprintf("%d services", len(c.services))
	}
	for _, k := range c.keys {
		if k != "services" && k != "version" {
			return "top-level " + k
		}
	}
	for k, v := range c.main {
		if !serviceKeys[k] {
			return "service key " + k
		}
		if k == "volumes" {
			for _, vol := range asList(v) {
				if !slices.Contains(defaultVolumes, vol) {
					return "volume " + vol
				}
			}
		}
	}
	return ""
}

// buildContext is the main service's build context: build.context, the
// short form build: DIR, or the task's own folder.
func (c *compose) buildContext() string {
	switch b := c.main["build"].(type) {
	case string:
		return b
	case map[string]any:
		if s, ok := b["context"].(string); ok {
			return s
		}
	}
	return "."
}

// environment makes environment/ of the task in src: its Dockerfile
// (from the main service's build context), with what the compose file
// said of the container appended as Dockerfile lines, and tests/ or
// solution.sh when the Dockerfile copies them. It returns the task's
// top-level names it has dealt with.
func environment(src, env string) (map[string]bool, error) {
	c, err := readCompose(filepath.Join(src, "docker-compose.yaml"))
	if err != nil {
		return nil, err
	}
	handled := map[string]bool{"docker-compose.yaml": true}
	if len(c.services) == 0 {
		return handled, nil
	}
	if why := c.oneContainer(); why != "" {
		return nil, fmt.Errorf("docker-compose.yaml: not supported yet: a task of several containers or compose settings (%s); nel's sandbox sessions run one container", why)
	}
	dockerfile := filepath.Join(env, "Dockerfile")
	ctx := c.buildContext()
	if ctx == "." {
		handled["Dockerfile"] = true
		if err := copyFile(filepath.Join(src, "Dockerfile"), dockerfile); errors.Is(err, os.ErrNotExist) {
			return handled, nil
		} else if err != nil {
			return nil, err
		}
	} else {
		first, _, _ := strings.Cut(filepath.ToSlash(filepath.Clean(ctx)), "/")
		handled[first] = true
		if err := copyTree(filepath.Join(src, ctx), env); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, err
		}
		if _, err := os.Stat(dockerfile); err != nil {
			return handled, nil
		}
	}
	b, err := os.ReadFile(dockerfile)
	if err != nil {
		return nil, err
	}
	text := string(b)
	for _, ref := range []struct{ name, copy string }{{"tests", "tests"}, {"solution.sh", "solution.sh"}} {
		if copiesFile(text, ref.name) {
			if err := copyTree(filepath.Join(src, ref.copy), filepath.Join(env, ref.copy)); err != nil && !errors.Is(err, os.ErrNotExist) {
				return nil, err
			}
		}
	}
	text, err = appendService(text, c.main)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(src, "docker-compose.yaml"), err)
	}
	return handled, os.WriteFile(dockerfile, []byte(text), 0o644)
}

// copiesFile says whether a Dockerfile COPYs or ADDs name from its build
// context (so the conversion must put it there).
func copiesFile(dockerfile, name string) bool {
	for _, verb := range []string{"COPY ", "ADD "} {
		for _, prefix := range []string{"", "./"} {
			if strings.Contains(dockerfile, verb+prefix+name) {
				return true
			}
		}
	}
	return false
}

// appendService appends to a Dockerfile what the main service set of the
// container: TEST_DIR=/tests (always, as Harbor does), its environment,
// working_dir, ports and entrypoint; its platform goes on the FROM lines.
func appendService(dockerfile string, svc map[string]any) (string, error) {
	lines := []string{"ENV TEST_DIR=/tests"}
	for _, kv := range envList(svc["environment"]) {
		if kv == defaultEnv {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if strings.ContainsAny(v, "\n\r") {
			return "", fmt.Errorf("environment %s: a value with a line break cannot be an ENV line of a Dockerfile", k)
		}
		if !ok {
			// A bare KEY (or KEY: with no value) passes the variable
			// through from the shell that runs compose; no image can hold
			// that, and "ENV KEY" alone does not parse.
			continue
		}
		lines = append(lines, "ENV "+k+"="+dockerfileWord(v))
	}
	if wd, ok := svc["working_dir"].(string); ok && !strings.Contains(wd, "${") {
		lines = append(lines, "WORKDIR "+wd)
	}
	for _, p := range asList(svc["expose"]) {
		lines = append(lines, "EXPOSE "+p)
	}
	if ep, ok := svc["entrypoint"]; ok {
		var argv []string
		if s, ok := ep.(string); ok {
			argv = []string{s}
		} else {
			argv = asList(ep)
		}
		j, _ := json.Marshal(argv)
		lines = append(lines, "ENTRYPOINT "+string(j))
	}
	if p, ok := svc["platform"].(string); ok && p != "" {
		dockerfile = withPlatform(dockerfile, p)
	}
	if !strings.HasSuffix(dockerfile, "\n") {
		dockerfile += "\n"
	}
	return dockerfile + "\n# Mapped from docker-compose.yaml\n" + strings.Join(lines, "\n") + "\n", nil
}

var (
	fromPlatform = regexp.MustCompile(`(?m)^(FROM\s+)--platform=\S+\s+(.+)$`)
	fromPlain    = regexp.MustCompile(`(?m)^FROM\s+(.+)$`)
)

// withPlatform sets --platform=p on the Dockerfile's FROM lines: in place
// of the one they have, or on every FROM line when none has one.
func withPlatform(dockerfile, p string) string {
	if fromPlatform.MatchString(dockerfile) {
		return fromPlatform.ReplaceAllString(dockerfile, "${1}--platform="+p+" ${2}")
	}
	return fromPlain.ReplaceAllStringFunc(dockerfile, func(line string) string {
		if strings.Contains(line, "--platform") {
			return line
		}
		return "FROM --platform=" + p + " " + strings.TrimSpace(strings.TrimPrefix(line, "FROM"))
	})
}

// envList is a service's environment as KEY=VALUE lines, in either form
// compose allows: a list in its order, or a map by key (Harbor keeps the
// map's file order; the lines set distinct variables, so order does not
// change the image).
func envList(v any) []string {
	switch e := v.(type) {
	case []any:
		return asList(e)
	case map[string]any:
		var out []string
		for _, k := range slices.Sorted(maps.Keys(e)) {
			if e[k] == nil {
				out = append(out, k) // passed through: see appendService
				continue
			}
			out = append(out, fmt.Sprintf("%s=%v", k, e[k]))
		}
		return out
	}
	return nil
}

// dockerfileWord is v as one word of a Dockerfile ENV line: as it is when
// it needs no quoting (what Harbor's adapter writes), else in double quotes
// with the characters a Dockerfile reads inside them escaped. A $ stays
// literal: compose would have interpolated it from the shell that ran
// compose, which a converted task does not have, and the image build must
// not expand it from its own variables instead.
func dockerfileWord(v string) string {
	if v != "" && !strings.ContainsAny(v, " \t\"'\\$`") {
		return v
	}
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, `$`, `\$`)
	return `"` + r.Replace(v) + `"`
}

func asList(v any) []string {
	switch l := v.(type) {
	case []any:
		out := make([]string, 0, len(l))
		for _, x := range l {
			out = append(out, fmt.Sprint(x))
		}
		return out
	case nil:
		return nil
	default:
		return []string{fmt.Sprint(l)}
	}
}
