package metrics

import (
	"cmp"
	"slices"
	"strconv"

	"github.com/nel-eval/nel/runtime/failure"
	"github.com/nel-eval/nel/runtime/results"
)

// Accumulator computes a bundle from rows given one at a time, keeping of
// them only what the statistics need: per-item aggregates (the scored
// rewards and scores of each item), each row's latency and decode rate
// (for exact percentiles), counters, and up to three exemplars per
// failure class. Merge streams a million rows through it without holding
// them; Compute is an Accumulator over a slice. Fed the same rows in the
// same order, both give the same bundle.
type Accumulator struct {
	rows int
	// Items: byID holds every distinct item, scored or not (nil when the
	// rows come sorted: see Sorted); distinct counts them; items are those
	// with a scored row, in the order of their first scored row.
	byID     map[string]*item
	distinct int
	last     *item
	items    []*item
	// scored counts the scored rows, correct those with reward 1;
	// nonBinary is set by a scored reward other than 0 or 1.
	scored, correct int
	nonBinary       bool
	rt              runtimeAcc
	infra, model    classAcc
	// agent is the turns' audit; want the samples its lists name, whose
	// rewards the rows give.
	agent *Agent
	want  map[RowKey]*float64
}

// NewAccumulator returns an Accumulator for rows of a benchmark whose
// turns (nil for one without) are given; rowsHint, when known, sizes the
// per-row buffers.
func NewAccumulator(turns []results.Turn, rowsHint int) *Accumulator {
	a := &Accumulator{
		byID:  map[string]*item{},
		rt:    runtimeAcc{lat: make([]float64, 0, rowsHint), rt: Runtime{FinishReasons: map[string]int{}, Attempts: map[string]int{}}},
		infra: classAcc{outcome: string(failure.InfraError)},
		model: classAcc{outcome: string(failure.ModelError)},
		agent: ComputeAgent(turns),
	}
	if a.agent != nil {
		a.want = map[RowKey]*float64{}
		for _, list := range [][]AgentSample{a.agent.Slowest, a.agent.Longest} {
			for _, s := range list {
				a.want[RowKey{s.ItemID, s.Repeat}] = nil
			}
		}
	}
	return a
}

// Sorted tells a that the rows will come with an item's rows adjacent
// (merge's order: by dataset index and item id), so that it tells items
// apart by their id changing from one row to the next, without an index
// of every item (~50 bytes an item). Call it before Add.
func (a *Accumulator) Sorted() { a.byID = nil }

// Add takes the next row. Rows are expected sorted by item then repeat,
// as merge writes them (rows of one item need not be adjacent, but the
// bundle's item order is that of their first scored rows). r is not
// retained: its strings are, where they are kept (an item's id and
// category, exemplars).
func (a *Accumulator) Add(r *results.Row) {
	a.rows++
	scored := Scored(r)
	a.addItem(r, scored)
	a.rt.add(r)
	if !scored {
		a.infra.add(r)
	} else if r.ErrorCategory != "" {
		a.model.add(r)
	}
	if !scored {
		return
	}
	a.scored++
	switch r.Reward {
	case 1:
		a.correct++
	case 0:
	default:
		a.nonBinary = true
	}
	if a.want != nil {
		k := RowKey{r.ItemID, r.Repeat}
		if _, ok := a.want[k]; ok {
			v := r.Reward
			a.want[k] = &v
		}
	}
}

// addItem adds r to its item's aggregates.
func (a *Accumulator) addItem(r *results.Row, scored bool) {
	it := a.last
	if it == nil || it.id != r.ItemID {
		var seen bool
		if a.byID != nil {
			it, seen = a.byID[r.ItemID]
		}
		if !seen {
			it = &item{id: r.ItemID, idx: r.ItemIdx, category: r.Category}
			a.distinct++
			if a.byID != nil {
				a.byID[r.ItemID] = it
			}
		}
		a.last = it
	}
	if !scored {
		return
	}
	if len(it.rewards) == 0 {
		a.items = append(a.items, it)
	}
	it.rewards = append(it.rewards, r.Reward)
	if r.Reward > 0 {
		it.correct++
	}
	for name, v := range r.Scores {
		if it.scores == nil {
			it.scores = map[string][]float64{}
		}
		it.scores[name] = append(it.scores[name], v)
	}
}

// ExemplarKeys are the samples the failure exemplars show whose message
// must come from the trajectories' error column (rows with an error
// category and no error_message): the keys Bundle looks up in
// Input.Errors. Merge reads only these.
func (a *Accumulator) ExemplarKeys() []RowKey {
	var keys []RowKey
	for _, c := range []*classAcc{&a.infra, &a.model} {
		for _, p := range c.byCat {
			for _, e := range p.exemplars {
				if e.Error == "" && e.failed {
					keys = append(keys, RowKey{e.ItemID, e.Repeat})
				}
			}
		}
	}
	return keys
}

// runtimeAcc gathers Runtime from every row.
type runtimeAcc struct {
	rt          Runtime
	lat, decode []float64
}

func (ra *runtimeAcc) add(r *results.Row) {
	rt := &ra.rt
	ra.lat = append(ra.lat, r.LatencyMS)
	rt.PromptTokens += r.PromptTokens
	rt.CompletionTokens += r.CompletionTokens
	rt.ReasoningTokens += r.ReasoningTokens
	fr := r.FinishReason
	if fr == "" {
		fr = "(none)"
	}
	rt.FinishReasons[fr]++
	rt.Attempts[strconv.FormatInt(r.Attempts, 10)]++
	if r.Attempts > 1 {
		rt.Interrupted++
	}
	if r.LatencyMS > 0 && r.CompletionTokens > 0 {
		ra.decode = append(ra.decode, float64(r.CompletionTokens)/(r.LatencyMS/1000))
	}
}

// classAcc groups the rows given by error_category ("unknown" when a row
// has none), keeping the first three of each as exemplars.
type classAcc struct {
	outcome string
	total   int
	byCat   map[string]*pendingClass
}

type pendingClass struct {
	count     int
	exemplars []pendingExemplar
}

// pendingExemplar is an Exemplar whose Error is the row's error_message
// until finish resolves it against the trajectories' error texts.
type pendingExemplar struct {
	Exemplar
	extracted string
	failed    bool // the row has an error category: Input.Errors may hold its text
}

func (c *classAcc) add(r *results.Row) {
	c.total++
	cat := cmp.Or(r.ErrorCategory, "unknown")
	p := c.byCat[cat]
	if p == nil {
		if c.byCat == nil {
			c.byCat = map[string]*pendingClass{}
		}
		p = &pendingClass{}
		c.byCat[cat] = p
	}
	p.count++
	if len(p.exemplars) < 3 {
		p.exemplars = append(p.exemplars, pendingExemplar{
			Exemplar:  Exemplar{ItemID: r.ItemID, ItemIdx: r.ItemIdx, Repeat: r.Repeat, Error: r.ErrorMessage},
			extracted: r.Extracted,
			failed:    r.ErrorCategory != "",
		})
	}
}

// finish returns how many rows were given and their classes, by count
// descending, with shares of n samples; an exemplar's message is the
// row's error_message, else its text in errs, else its extracted answer.
func (c *classAcc) finish(errs map[RowKey]string, n int) (int, []FailureCategory) {
	var out []FailureCategory
	for cat, p := range c.byCat {
		fc := FailureCategory{Category: cat, Outcome: c.outcome, Count: p.count, Share: share(p.count, n), Exemplars: []Exemplar{}}
		for _, e := range p.exemplars {
			msg := cmp.Or(e.Error, errs[RowKey{e.ItemID, e.Repeat}])
			if msg == "" && e.extracted != "" {
				msg = "extracted: " + e.extracted
			}
			ex := e.Exemplar
			ex.Error = msg
			fc.Exemplars = append(fc.Exemplars, ex)
		}
		out = append(out, fc)
	}
	slices.SortFunc(out, func(a, b FailureCategory) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), cmp.Compare(a.Category, b.Category))
	})
	return c.total, out
}
