package shard

import "testing"

// TestCheckItemEnv: what a record may make of image_template, worked out
// from the rule: one image reference for a container, a folder inside the
// recipe's for the local sandbox.
func TestCheckItemEnv(t *testing.T) {
	for _, c := range []struct {
		typ, env string
		ok       bool
	}{
		{"docker", "swebench/sweb.eval.x86_64.django_1776_django-11099:latest", true},
		{"apptainer", "ghcr.io/org/img@sha256:abc", true},
		{"docker", "--privileged", false},
		{"docker", "img --rm", false},
		{"docker", "", false},
		{"local", "repos/calc-1", true},
		{"local", "repos/../repos/calc-1", true},
		{"local", "../outside", false},
		{"local", "repos/../../outside", false},
		{"local", "/etc", false},
		{"local", "", false},
	} {
		err := checkItemEnv(c.typ, c.env)
		if (err == nil) != c.ok {
			t.Errorf("%s %q: error %v, want ok=%v", c.typ, c.env, err, c.ok)
		}
	}
}
