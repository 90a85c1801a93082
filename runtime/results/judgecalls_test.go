package results

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestReadTrajectoriesWithoutJudgeCalls reads a trajectories file written
// before the judge_calls column existed: it reads, with JudgeCalls empty.
func TestReadTrajectoriesWithoutJudgeCalls(t *testing.T) {
	var old []field[Trajectory]
	for _, f := range trajectoryFields() {
		if f.name != "judge_calls" {
			old = append(old, f)
		}
	}
	if len(old) != len(trajectoryFields())-1 {
		t.Fatal("no judge_calls column in the schema")
	}
	ts := sampleTrajectories(50)
	path := filepath.Join(t.TempDir(), "old.trajectories.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := encode(f, old, ts, nil); err != nil {
		t.Fatal(err)
	}
	f.Close() // encode closes it; a second close only reports that
	got, _, err := ReadTrajectories(path)
	if err != nil {
		t.Fatalf("reading a file without judge_calls: %v", err)
	}
	want := append([]Trajectory(nil), ts...)
	for i := range want {
		want[i].JudgeCalls = ""
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("read back %d trajectories that differ from the %d written", len(got), len(want))
	}
	// A required column is still required.
	var noErr []field[Trajectory]
	for _, f := range trajectoryFields() {
		if f.name != "error" {
			noErr = append(noErr, f)
		}
	}
	path2 := filepath.Join(t.TempDir(), "bad.parquet")
	f2, _ := os.Create(path2)
	if err := encode(f2, noErr, ts, nil); err != nil {
		t.Fatal(err)
	}
	f2.Close()
	if _, _, err := ReadTrajectories(path2); err == nil {
		t.Error("a file without the required error column was read")
	}
}
