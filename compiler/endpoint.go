package compiler

import (
	"fmt"
	"net/url"
	"slices"
)

// UseEndpoint points the recipe's service name at an OpenAI-compatible
// endpoint that is already running (nel reproduce --model-url): the
// service becomes an api service at baseURL answering to the model id
// the recipe's requests already carry. That id is part of the recipe hash
// and is kept, so the hash does not change; the plan hash does (it covers
// endpoints).
func UseEndpoint(s *Source, name, baseURL string) error {
	sv, ok := s.Recipe.Services[name]
	if !ok {
		return fmt.Errorf("no service %q in %s", name, s.Path)
	}
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("endpoint %q: want an http(s) base URL such as http://host:8000/v1", baseURL)
	}
	model := sv.Model
	if sv.Type != "api" && sv.Type != "process" {
		model = servedName(name, sv) // what a managed server answers to
	}
	*sv = Service{Type: "api", Protocol: sv.Protocol, Generation: sv.Generation, URL: baseURL, Model: model, APIKey: sv.APIKey}
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
