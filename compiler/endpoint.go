package compiler

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
)

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// UseEndpoint points the recipe's service name at an OpenAI-compatible
// endpoint that is already running (nel reproduce --model-url): the
// service becomes an api service at baseURL answering to the model id
// the recipe's requests already carry. That id is part of the recipe hash
// and is kept, so the hash does not change; the plan hash does (it covers
// endpoints). keyEnv, when set, names the variable holding its API key
// (passed by name, as every key).
func UseEndpoint(s *Source, name, baseURL, keyEnv string) error {
	sv, ok := s.Recipe.Services[name]
	if !ok {
		return fmt.Errorf("no service %q in %s", name, s.Path)
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("endpoint %q: want an http(s) base URL such as http://host:8000/v1", baseURL)
	}
	model, identity := sv.Model, sv.identity
	if sv.Type != "api" && sv.Type != "process" {
		// Requests carry the name the server answers to; the hashes keep
		// naming the weights.
		model, identity = servedName(name, sv), sv.Model
	}
	key := sv.APIKey
	if keyEnv != "" {
		if !envNameRE.MatchString(keyEnv) {
			return fmt.Errorf("api key variable %q: want a name such as MY_API_KEY", keyEnv)
		}
		key = "${" + keyEnv + "}"
	}
	*sv = Service{Type: "api", Protocol: sv.Protocol, Generation: sv.Generation, URL: baseURL, Model: model, APIKey: key, identity: identity}
	if s.endpoints == nil {
		s.endpoints = map[string]string{}
	}
	s.endpoints[name] = baseURL
	return nil
}

// SolverServices lists the services benchmarks send their prompts to (not
// judges), sorted.
func SolverServices(s *Source) []string {
	var out []string
	for _, b := range s.Recipe.Benchmarks {
		if !slices.Contains(out, b.Solver.Service) {
			out = append(out, b.Solver.Service)
		}
	}
	slices.Sort(out)
	return out
}
