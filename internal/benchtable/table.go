package main

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Verdicts besides a value's PASS and FAIL: each says why there is none.
const (
	pass       = "PASS"
	fail       = "FAIL"
	notRun     = "not run"     // the benchmark printed no result line (failed, skipped, filtered out)
	noFigure   = "no figure"   // it ran but did not report this unit
	peerAbsent = "peer absent" // the target is on nel ÷ peer and the peer did not run
)

// A Line is a Row filled from one run: what the table prints and
// bench.json holds. A figure that was not measured is nil, never zero.
type Line struct {
	Figure    string `json:"figure"`
	Benchmark string `json:"benchmark"`
	Unit      string `json:"unit"`
	// Shown is the unit of Nel and Peer: Unit's, scaled (Row.Scale).
	Shown    string   `json:"shown_unit,omitempty"`
	Nel      *float64 `json:"nel"`
	PeerName string   `json:"peer_name,omitempty"`
	PeerUnit string   `json:"peer_unit,omitempty"`
	Peer     *float64 `json:"peer,omitempty"`
	// PeerState is "peer absent" when the row has a peer that did not
	// report (the benchmark skips it with a log line when the program is
	// not on the machine).
	PeerState string   `json:"peer_state,omitempty"`
	Ratio     *float64 `json:"ratio,omitempty"`
	Target    string   `json:"target,omitempty"`
	Verdict   string   `json:"verdict"`
}

// Table is bench.json: the run's figures row by row.
type Table struct {
	Version    string `json:"version,omitempty"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	CPU        string `json:"cpu,omitempty"`
	Lines      []Line `json:"rows"`
}

// Evaluate fills rows from res.
func Evaluate(rows []Row, res *Results) Table {
	t := Table{GOMAXPROCS: res.Procs, CPU: res.CPU}
	for _, r := range rows {
		t.Lines = append(t.Lines, evaluate(r, res))
	}
	return t
}

func evaluate(r Row, res *Results) Line {
	l := Line{Figure: strings.TrimSpace(r.Label), Benchmark: r.Bench, Unit: r.Unit, Shown: r.Shown, PeerName: r.Peer, PeerUnit: r.PeerUnit, Target: target(r)}
	scale := 1.0
	if r.Scale != 0 {
		scale = r.Scale
	}
	figs, ran := res.Figures[r.Bench]
	if !ran {
		l.Verdict = notRun
		return l
	}
	v, ok := figs[r.Unit]
	if !ok {
		l.Verdict = noFigure
		return l
	}
	v *= scale
	l.Nel = &v
	if r.PeerUnit != "" {
		if p, ok := figs[r.PeerUnit]; ok {
			p *= scale
			l.Peer = &p
			if p != 0 {
				ratio := v / p
				l.Ratio = &ratio
			}
		} else {
			l.PeerState = peerAbsent
		}
	}
	switch {
	case r.Op == "":
	case r.OnRatio && l.Ratio == nil:
		l.Verdict = peerAbsent
	case r.OnRatio:
		l.Verdict = verdict(*l.Ratio, r.Op, r.Target)
	default:
		l.Verdict = verdict(v, r.Op, r.Target)
	}
	return l
}

func verdict(v float64, op string, target float64) string {
	var ok bool
	switch op {
	case "<=":
		ok = v <= target
	case "<":
		ok = v < target
	case ">=":
		ok = v >= target
	case ">":
		ok = v > target
	default:
		panic("benchtable: unknown target operator " + op)
	}
	if ok {
		return pass
	}
	return fail
}

// target is a row's target as printed: "<= 256 MB", "ratio <= 2".
func target(r Row) string {
	switch {
	case r.Op == "":
		return ""
	case r.OnRatio:
		return fmt.Sprintf("ratio %s %s", r.Op, num(r.Target))
	}
	return strings.TrimSpace(fmt.Sprintf("%s %s %s", r.Op, num(r.Target), r.Shown))
}

// num prints a figure with four significant digits, without an exponent
// for the sizes a table holds (10788, 807.3, 0.05806).
func num(v float64) string {
	if math.Abs(v) >= 1e4 {
		return strconv.FormatFloat(math.Round(v), 'f', -1, 64)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// WriteText prints the table for a person.
func (t Table) WriteText(w io.Writer, rows []Row) {
	fmt.Fprintf(w, "\nnel's figures (GOMAXPROCS %d, %s; other load on the machine lowers the wall-clock figures)\n", t.GOMAXPROCS, orUnknown(t.CPU))
	const format = "%-50s %-20s %-22s %-8s %-18s %s"
	line := func(cols ...any) { // no trailing blanks where the last columns are empty
		fmt.Fprintln(w, strings.TrimRight(fmt.Sprintf(format, cols...), " "))
	}
	line("figure", "nel", "peer", "ratio", "target", "verdict")
	for i, l := range t.Lines {
		r := rows[i]
		nel, peer, ratio := "", "", ""
		if l.Nel != nil {
			nel = strings.TrimSpace(num(*l.Nel) + " " + r.Shown)
		}
		switch {
		case l.Peer != nil:
			peer = strings.TrimSpace(num(*l.Peer)+" "+r.Shown) + " " + r.Peer
		case l.PeerState != "":
			peer = l.PeerState
		}
		if l.Ratio != nil {
			ratio = num(*l.Ratio) + "x"
		}
		verdict := l.Verdict
		if l.Nel == nil { // why there is no figure, in its place
			nel, verdict = l.Verdict, ""
		}
		line(r.Label, nel, peer, ratio, l.Target, verdict)
	}
}

// WriteJSON writes bench.json.
func (t Table) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // targets read "<= 256 MB", not "\u003c= 256 MB"
	return enc.Encode(t)
}

func orUnknown(s string) string {
	if s == "" {
		return "cpu unknown"
	}
	return s
}
