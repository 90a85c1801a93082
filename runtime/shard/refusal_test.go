package shard

import (
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/nel-eval/nel/internal/sharedtest"
)

// refusalRE is refusalPattern as the regexp engine runs it: isRefusal
// must agree with it.
var refusalRE = regexp.MustCompile(refusalPattern)

func checkRefusal(t *testing.T, s string) {
	t.Helper()
	if got, want := isRefusal(s), refusalRE.MatchString(s); got != want {
		t.Fatalf("isRefusal(%q) = %v, the regexp %v", s, got, want)
	}
}

func TestIsRefusalCases(t *testing.T) {
	for _, s := range []string{
		"", "I cannot help", "i CANNOT", "I'm unable to", "I can’t", "I can't", "As an AI model",
		"aſ an ai", "has an aim", "I don't have the ability", "I apologize", "I apologise",
		"Icannot", "I  cannot", "\xffI apologize", "the answer is 4",
	} {
		checkRefusal(t, s)
	}
	if !isRefusal("Sorry, as an AI I cannot") || isRefusal("The answer is 42.") {
		t.Fatal("isRefusal misreads plain cases")
	}
}

// TestIsRefusalRealText holds isRefusal to the regexp on XSTest's
// prompts (each also with a refusal spliced in) and on random strings of
// the alternatives' pieces.
func TestIsRefusalRealText(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(sharedtest.Datasets(t), "xstest", "xstest_prompts.csv"))
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(5, 6))
	lines := strings.Split(string(data), "\n")
	if len(lines) < 400 {
		t.Fatalf("%d lines", len(lines))
	}
	for _, l := range lines {
		checkRefusal(t, l)
		at := rng.IntN(len(l) + 1)
		checkRefusal(t, l[:at]+refusalLits[rng.IntN(len(refusalLits))]+l[at:])
	}
	pieces := []string{"I", "i", " ", "can", "CAN", "not", "'", "m", "unable", "'t", "as", "aſ", "an", "AI",
		"don", "have the", "ability", "apolog", "ize", "\xff", "é", "x"}
	for range 200000 {
		var b strings.Builder
		for range rng.IntN(10) {
			b.WriteString(pieces[rng.IntN(len(pieces))])
		}
		checkRefusal(t, b.String())
	}
}
