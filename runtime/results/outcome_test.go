package results

import (
	"os"
	"path/filepath"
	"testing"
)

// A results file written before the outcome and error_message columns
// existed reads back with the outcome each row's error_category implies:
// an infrastructure failure in an old file is still not a wrong answer.
func TestReadRowsWithoutOutcome(t *testing.T) {
	var old []field[Row]
	for _, f := range rowFields() {
		if f.name != "outcome" && f.name != "error_message" {
			old = append(old, f)
		}
	}
	if len(old) != len(rowFields())-2 {
		t.Fatal("no outcome and error_message columns in the schema")
	}
	rows := []Row{
		{ItemID: "a", Reward: 1},
		{ItemID: "b", ErrorCategory: "format_error"},
		{ItemID: "c", ErrorCategory: "server_error"},
		{ItemID: "d", ErrorCategory: "sandbox_error"},
	}
	path := writeOld(t, old, rows)
	got, _, err := ReadRows(path)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"scored", "model_error", "infra_error", "infra_error"}
	for i, r := range got {
		if r.Outcome != want[i] || r.ErrorMessage != "" {
			t.Errorf("row %s: outcome %q, message %q; want %q and none", r.ItemID, r.Outcome, r.ErrorMessage, want[i])
		}
	}
	dst := make([]Row, len(rows))
	if _, err := ReadRowsInto(path, dst); err != nil {
		t.Fatal(err)
	}
	for i, r := range dst {
		if r.Outcome != want[i] {
			t.Errorf("ReadRowsInto: row %s: outcome %q, want %q", r.ItemID, r.Outcome, want[i])
		}
	}

	// Written with the columns, they are read as written.
	rows[2].Outcome, rows[2].ErrorMessage = "infra_error", "http://x/v1: connection refused"
	path = filepath.Join(t.TempDir(), "new.parquet")
	if err := WriteRows(path, rows, nil); err != nil {
		t.Fatal(err)
	}
	got, _, err = ReadRows(path)
	if err != nil {
		t.Fatal(err)
	}
	if got[2].Outcome != "infra_error" || got[2].ErrorMessage != "http://x/v1: connection refused" {
		t.Errorf("read back %q, %q", got[2].Outcome, got[2].ErrorMessage)
	}
}

// A results file written before the model column, with category a
// required column holding "" where an item has none, reads back as it was
// written: model empty, category "".
func TestReadRowsBeforeModelColumn(t *testing.T) {
	var old []field[Row]
	for _, f := range rowFields() {
		switch f.name {
		case "model":
		case "category":
			old = append(old, strField("category", func(r *Row) *string { return &r.Category }))
		default:
			old = append(old, f)
		}
	}
	if len(old) != len(rowFields())-1 {
		t.Fatal("no model column in the schema")
	}
	rows := []Row{{ItemID: "a", Category: "algebra", Outcome: "scored"}, {ItemID: "b", Outcome: "scored"}}
	path := writeOld(t, old, rows)
	got, _, err := ReadRows(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Category != "algebra" || got[1].Category != "" || got[0].Model != "" || got[1].Model != "" {
		t.Errorf("read back %+v", got)
	}
}

// writeOld writes rows with the columns of an older schema (fields) and
// returns the file's path.
func writeOld(t *testing.T, fields []field[Row], rows []Row) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "old.parquet")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := encode(f, fields, rows, nil); err != nil {
		t.Fatal(err)
	}
	return path
}
