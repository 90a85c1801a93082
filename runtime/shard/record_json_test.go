package shard

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"

	"github.com/nel-eval/nel/runtime/results"
)

// fillRandom sets every field of the struct v points to a random value
// (or its zero value, now and then), so that a field added to
// results.Row or results.Trajectory and missing from AppendJSON makes
// TestRecordAppendJSON fail.
func fillRandom(t *testing.T, rng *rand.Rand, v reflect.Value) {
	pieces := []string{"", "a", "<&>", "\n\t\"\\", "é😀", "\u2028", "\xff", "{\"k\":1}"}
	for i := range v.NumField() {
		f := v.Field(i)
		if rng.IntN(5) == 0 {
			f.SetZero()
			continue
		}
		switch f.Interface().(type) {
		case string:
			f.SetString(pieces[rng.IntN(len(pieces))] + pieces[rng.IntN(len(pieces))])
		case int64:
			f.SetInt(rng.Int64N(1<<40) - 1<<39)
		case int:
			f.SetInt(int64(rng.IntN(600)))
		case bool:
			f.SetBool(true)
		case float64:
			f.SetFloat([]float64{0, 1, 0.5, 123.456, 1e-7, 3e21, rng.Float64() * 1e4}[rng.IntN(7)])
		case *bool:
			b := rng.IntN(2) == 0
			f.Set(reflect.ValueOf(&b))
		case map[string]float64:
			m := map[string]float64{}
			for range rng.IntN(4) {
				m[pieces[rng.IntN(len(pieces))]] = rng.Float64()
			}
			f.Set(reflect.ValueOf(m))
		case results.Row, results.Trajectory:
			fillRandom(t, rng, f)
		case []results.Turn:
			f.SetZero() // left to json.Marshal: checked below
		default:
			t.Fatalf("field %s of %s: a type AppendJSON does not write", v.Type().Field(i).Name, v.Type())
		}
	}
}

// TestRecordAppendJSON holds sampleRecord.AppendJSON to json.Marshal,
// byte for byte, on random records, and checks that what it leaves to
// json.Marshal is what it cannot write.
func TestRecordAppendJSON(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for range 20000 {
		var rec sampleRecord
		fillRandom(t, rng, reflect.ValueOf(&rec).Elem())
		want, err := json.Marshal(&rec)
		if err != nil {
			t.Fatal(err)
		}
		got, ok := rec.AppendJSON([]byte("x"))
		if !ok || string(got) != "x"+string(want) {
			t.Fatalf("AppendJSON = %s, %v\njson.Marshal %s", got, ok, want)
		}
	}
	for _, rec := range []sampleRecord{
		{Turns: []results.Turn{{}}},
		{Row: results.Row{Reward: math.NaN()}},
		{Traj: results.Trajectory{LatencyMS: math.Inf(1)}},
		{Row: results.Row{Scores: map[string]float64{"x": math.NaN()}}},
	} {
		if b, ok := rec.AppendJSON(nil); ok {
			t.Fatalf("AppendJSON(%+v) = %s, ok", rec, b)
		}
	}
	if !strings.Contains(string(must(json.Marshal(&sampleRecord{Simulated: true, Status: 503}))), `"sim":true,"status":503}`) {
		t.Fatal("sampleRecord's JSON tags changed: AppendJSON writes sim and status")
	}
}

func must(b []byte, err error) []byte {
	if err != nil {
		panic(err)
	}
	return b
}

// SizeJSON is a good guess: a realistic record's JSON fits the buffer it
// sizes, without much to spare.
func TestRecordSizeJSON(t *testing.T) {
	c := true
	rec := sampleRecord{
		Row: results.Row{RecipeHash: "sha256:" + strings.Repeat("a", 64), Benchmark: "gsm8k", ItemID: "0123456789abcdef",
			ItemIdx: 1234, Repeat: 3, Reward: 1, Correct: &c, Extracted: "18", Expected: "18", FinishReason: "stop",
			PromptTokens: 120, CompletionTokens: 80, LatencyMS: 12.345, Attempts: 1, Seed: 1 << 40, Outcome: "scored",
			Scores: map[string]float64{}, Model: "nel-sim"},
		Traj: results.Trajectory{RecipeHash: "sha256:" + strings.Repeat("a", 64), Benchmark: "gsm8k", ItemID: "0123456789abcdef",
			Request:  `[{"role":"user","content":"Solve the following math problem step by step. ` + strings.Repeat("x", 300) + `"}]`,
			Response: strings.Repeat("Step.\n", 40) + "The answer is 18.", ScoringDetails: `{"extracted":"18","method":"answer_line"}`,
			Model: "nel-sim", LatencyMS: 12.345},
	}
	b, ok := rec.AppendJSON(nil)
	if n := rec.SizeJSON(); !ok || len(b) > n || n > 2*len(b) {
		t.Fatalf("SizeJSON %d for %d bytes of JSON", n, len(b))
	}
}
