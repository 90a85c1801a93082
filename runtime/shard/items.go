package shard

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/nel-eval/nel/runtime/bench"
	"github.com/nel-eval/nel/runtime/dataset"
	"github.com/nel-eval/nel/runtime/pyrand"
)

// windowRecords is how many records a streaming shard decodes and
// prepares at a time before it drops those of the other shards.
const windowRecords = 4096

// shardData is what a shard evaluates of its benchmark's data.
type shardData struct {
	// mine are the shard's items, in selection order.
	mine []*bench.Item
	// selected counts the items selected (max_problems, shuffle_seed) of
	// the whole dataset; total, the items of the whole dataset.
	selected, total int
	digest          string
	// streamed says the data was read a window at a time, not held whole.
	streamed bool
	// keyed counts the records numbered by the benchmark's Key alone,
	// neither decoded whole nor made items.
	keyed int
}

// shardItems loads the shard's items: streamed when the data allows it
// (one process per shard, a benchmark whose items are made record by
// record, local JSONL, CSV, TSV, JSON array or Parquet data), else by
// loading the whole set. Either way a
// shard gets the same items in the same order, the same digest and the
// same errors.
func (r *runner) shardItems(ctx context.Context) (*shardData, error) {
	if s, spec, ok := r.streamable(ctx); ok {
		return r.streamItems(ctx, s, spec)
	}
	set, err := r.load(ctx)
	if err != nil {
		return nil, err
	}
	selected := Select(set.Items, r.b.ShuffleSeed, r.b.MaxProblems)
	d := &shardData{selected: len(selected), total: len(set.Items), digest: datasetDigest(set.Datasets)}
	for i := range selected {
		if Of(selected[i].ID, r.o.Of) == r.o.Shard {
			d.mine = append(d.mine, &selected[i])
		}
	}
	return d, nil
}

// streamable returns the stream and spec of the benchmark's data (its
// data_path, else its Source) when the shard may stream it. Shards that
// share a process (nel run) share the whole loaded set instead: it is
// read once for all of them.
func (r *runner) streamable(ctx context.Context) (dataset.Stream, string, bool) {
	if r.b.Harbor != nil || r.o.Data != nil || r.def == nil || !r.def.RowWise {
		return nil, "", false
	}
	spec, ok, err := bench.DataPath(r.b.Params)
	if err != nil {
		return nil, "", false // the whole-set path reports a bad data_path
	}
	if !ok {
		spec = r.def.Source // what a RowWise Load reads (TestRowWiseSource)
	}
	if spec == "" {
		return nil, "", false
	}
	s, ok := r.loader().(dataset.Streamer)
	if !ok {
		return nil, "", false
	}
	st, ok := s.Stream(ctx, spec)
	return st, spec, ok
}

// selection says, for the item at a dataset index, its place in the
// selection Select makes (-1: not selected).
type selection struct {
	limit int   // max_problems; -1: all
	ranks []int // with shuffle_seed: the place of each index, -1 if none
}

func (r *runner) selection(ctx context.Context, s dataset.Stream) (*selection, error) {
	sel := &selection{limit: -1}
	if r.b.MaxProblems != nil {
		sel.limit = max(*r.b.MaxProblems, 0)
	}
	if r.b.ShuffleSeed == nil {
		return sel, nil
	}
	// The permutation is over the whole dataset: count it first.
	n, err := s.Count(ctx, dataset.LoadOptions{})
	if err != nil {
		return nil, err
	}
	limit := n
	if sel.limit >= 0 && sel.limit < n {
		limit = sel.limit
	}
	perm := pyrand.Perm(n, *r.b.ShuffleSeed)
	order := slices.Clone(perm[:limit])
	sel.ranks = perm // perm's memory, now that the order is copied out
	for i := range sel.ranks {
		sel.ranks[i] = -1
	}
	for k, i := range order {
		sel.ranks[i] = k
	}
	return sel, nil
}

// all says every record of the dataset is selected.
func (s *selection) all() bool {
	return s.limit < 0 || s.ranks != nil && s.limit >= len(s.ranks)
}

func (s *selection) rank(index int) int {
	switch {
	case s.ranks != nil && index < len(s.ranks):
		return s.ranks[index]
	case s.ranks != nil:
		return -1 // more items than counted: streamItems refuses it
	case s.limit >= 0 && index >= s.limit:
		return -1
	}
	return index
}

// origins names dataset records by index ("test.jsonl:12", "test.json
// record 3") for the duplicate warning, in 4 bytes a record: its line, or
// its number in its file where the file has no lines (JSON, Parquet), and
// where each file starts.
type origins struct {
	lines    []int32
	starts   []int // index of each file's first record
	names    []string
	numbered []bool // the file's records are numbered, not lined
}

func (o *origins) add(w *dataset.Dataset) {
	for _, p := range w.Parts {
		if k := len(o.names); k == 0 || o.names[k-1] != p.Name {
			o.starts = append(o.starts, len(o.lines))
			o.names = append(o.names, p.Name)
			o.numbered = append(o.numbered, len(p.Lines) < len(p.Records))
		}
		if len(p.Lines) < len(p.Records) {
			for i := range p.Records {
				o.lines = append(o.lines, int32(p.First+i+1))
			}
			continue
		}
		for _, l := range p.Lines {
			o.lines = append(o.lines, int32(l))
		}
	}
}

func (o *origins) at(index int) string {
	f, _ := slices.BinarySearch(o.starts, index+1)
	if o.numbered[f-1] {
		return o.names[f-1] + " record " + strconv.Itoa(int(o.lines[index]))
	}
	return o.names[f-1] + ":" + strconv.Itoa(int(o.lines[index]))
}

// windowLoader hands a RowWise benchmark's Load one window of its data,
// or the error reading the data gave, for Load to word as its own.
type windowLoader struct {
	spec string
	w    *dataset.Dataset
	err  error
}

func (l windowLoader) Load(_ context.Context, spec string, _ dataset.LoadOptions) (*dataset.Dataset, error) {
	if l.err != nil {
		return nil, l.err
	}
	if spec != l.spec {
		return nil, fmt.Errorf("dataset %s: read while streaming %s: the benchmark is not RowWise", spec, l.spec)
	}
	return l.w, nil
}

// wordLoadErr is err, an error of reading the data, as the benchmark's
// Load words it when its loader fails so.
func (r *runner) wordLoadErr(ctx context.Context, spec string, err error) error {
	if _, lerr := r.def.Load(ctx, windowLoader{spec: spec, err: err}, r.b.Params); lerr != nil {
		return lerr
	}
	return err
}
