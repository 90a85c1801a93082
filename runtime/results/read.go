package results

import (
	"cmp"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/nel-eval/nel/runtime/failure"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/metadata"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// ReadRows reads a file written by WriteRows (or any Parquet file with
// Row's columns and types; other columns are ignored) and returns its rows
// and key-value metadata. An empty scores map reads back as nil.
func ReadRows(path string) ([]Row, map[string]string, error) {
	rows, meta, err := readFile(path, rowFields(), nil, false)
	fillOutcomes(rows)
	return rows, meta, err
}

// fillOutcomes gives rows without an outcome (files written before the
// column existed, or by a writer that left it empty) the outcome their
// error_category implies.
func fillOutcomes(rows []Row) {
	for i := range rows {
		if rows[i].Outcome == "" {
			rows[i].Outcome = string(failure.Category(rows[i].ErrorCategory).Outcome())
		}
	}
}

// ReadRowsInto reads a results file like ReadRows, into dst, which must
// have exactly the file's row count (ReadMeta gives it), and returns the
// file's key-value metadata. Merge uses it to read every shard into one
// slice without copying.
func ReadRowsInto(path string, dst []Row) (map[string]string, error) {
	_, meta, err := readFile(path, rowFields(), dst, true)
	if err == nil {
		fillOutcomes(dst)
	}
	return meta, err
}

// ReadTrajectories reads a file written by WriteTrajectories.
func ReadTrajectories(path string) ([]Trajectory, map[string]string, error) {
	return readFile(path, trajectoryFields(), nil, false)
}

// ReadTrajectoryColumns reads only the named columns (e.g. "item_id",
// "repeat", "error") of a trajectories file, leaving the other fields
// empty: a fraction of the cost of ReadTrajectories when the text columns
// are not needed. The result reuses buf's array when it is large enough
// (pass the previous result to read many files with one allocation).
func ReadTrajectoryColumns(path string, buf []Trajectory, columns ...string) ([]Trajectory, map[string]string, error) {
	return readColumns(path, trajectoryFields(), buf, columns)
}

// readColumns reads only the named columns of path, as ReadTrajectoryColumns.
func readColumns[T any](path string, all []field[T], buf []T, columns []string) ([]T, map[string]string, error) {
	fields, err := selectFields(all, columns)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	return readFile(path, fields, buf, false)
}

// selectFields is the fields of all named in columns.
func selectFields[T any](all []field[T], columns []string) ([]field[T], error) {
	var fields []field[T]
	for _, f := range all {
		if slices.Contains(columns, f.name) {
			fields = append(fields, f)
		}
	}
	if len(fields) != len(columns) {
		return nil, fmt.Errorf("unknown column in %q", columns)
	}
	return fields, nil
}

// ReadMeta returns a Parquet file's key-value metadata and row count. It
// reads only the footer, so it is cheap even for large files.
func ReadMeta(path string) (map[string]string, int64, error) {
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, 0, fmt.Errorf("read %s: %w", path, err)
	}
	defer rdr.Close()
	md := rdr.MetaData()
	return kvMap(md.KeyValueMetadata()), md.NumRows, nil
}

func kvMap(kv metadata.KeyValueMetadata) map[string]string {
	m := make(map[string]string, len(kv))
	for _, e := range kv {
		v := ""
		if e.Value != nil {
			v = *e.Value
		}
		m[e.Key] = v
	}
	return m
}

// readFile reads fields of path's rows into dst: with exact, dst must hold
// exactly the file's rows; else dst's array is reused (cleared) when large
// enough, and a new slice allocated when not. Row groups are decoded
// concurrently, one per CPU.
func readFile[T any](path string, fields []field[T], dst []T, exact bool) (items []T, meta map[string]string, err error) {
	// arrow-go panics on some malformed input; a bad file must be an error.
	defer func() {
		if r := recover(); r != nil {
			items, meta, err = nil, nil, fmt.Errorf("read %s: parquet reader: %v", path, r)
		}
	}()
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	defer rdr.Close()
	md := rdr.MetaData()
	leaves, err := resolveColumns(md.Schema, fields)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", path, err)
	}
	fields, leaves = present(fields, leaves)
	switch {
	case exact && int64(len(dst)) != md.NumRows:
		return nil, nil, fmt.Errorf("read %s: %d rows, expected %d", path, md.NumRows, len(dst))
	case exact:
		items = dst
	case int64(cap(dst)) >= md.NumRows:
		items = dst[:md.NumRows]
		clear(items)
	default:
		items = make([]T, md.NumRows)
	}
	// Where each row group's rows go.
	groups := rdr.NumRowGroups()
	bases := make([]int, groups+1)
	for g := range groups {
		n := int(rdr.MetaData().RowGroup(g).NumRows())
		if n < 0 || bases[g]+n > len(items) {
			return nil, nil, fmt.Errorf("read %s: row group %d overruns the footer's %d rows", path, g, len(items))
		}
		bases[g+1] = bases[g] + n
	}
	if bases[groups] != len(items) {
		return nil, nil, fmt.Errorf("read %s: row groups hold %d rows, footer says %d", path, bases[groups], len(items))
	}
	errs := make([]error, groups)
	readGroup := func(g int) {
		defer func() {
			if r := recover(); r != nil {
				errs[g] = fmt.Errorf("read %s: row group %d: parquet reader: %v", path, g, r)
			}
		}()
		if err := readGroup(rdr.RowGroup(g), fields, leaves, items[bases[g]:bases[g+1]]); err != nil {
			errs[g] = fmt.Errorf("read %s: row group %d: %w", path, g, err)
		}
	}
	if workers := min(runtime.GOMAXPROCS(0), groups); workers > 1 {
		var wg sync.WaitGroup
		var next atomic.Int64
		for range workers {
			wg.Go(func() {
				for g := int(next.Add(1) - 1); g < groups; g = int(next.Add(1) - 1) {
					readGroup(g)
				}
			})
		}
		wg.Wait()
	} else {
		for g := range groups {
			readGroup(g)
		}
	}
	for _, err := range errs {
		if err != nil {
			return nil, nil, err
		}
	}
	return items, kvMap(md.KeyValueMetadata()), nil
}

// resolveColumns finds each field's leaf column indexes (two for a map:
// key, value) by name and checks their types, so that a file that is not
// one of ours fails with the column at fault rather than garbage.
func resolveColumns[T any](sc *schema.Schema, fields []field[T]) ([][]int, error) {
	byTop := map[string][]int{}
	for i := range sc.NumColumns() {
		p := sc.Column(i).ColumnPath()
		byTop[p[0]] = append(byTop[p[0]], i)
	}
	out := make([][]int, len(fields))
	for i, f := range fields {
		idx := byTop[f.name]
		if len(idx) == 0 && f.optional {
			continue // an older file: present drops the field
		}
		if len(idx) == 0 {
			return nil, fmt.Errorf("column %q missing (want %v)", f.name, f.kind)
		}
		if err := checkColumn(sc, f.kind, idx); err != nil {
			return nil, fmt.Errorf("column %q: %w (want %v)", f.name, err, f.kind)
		}
		out[i] = idx
	}
	return out, nil
}

// present drops the optional fields the file lacks (no leaves).
func present[T any](fields []field[T], leaves [][]int) ([]field[T], [][]int) {
	var fs []field[T]
	var ls [][]int
	for i := range fields {
		if leaves[i] != nil {
			fs, ls = append(fs, fields[i]), append(ls, leaves[i])
		}
	}
	return fs, ls
}

func checkColumn(sc *schema.Schema, k kind, idx []int) error {
	if k == kindScores {
		if len(idx) != 2 {
			return fmt.Errorf("%d leaf columns, not a key/value map", len(idx))
		}
		key, val := sc.Column(idx[0]), sc.Column(idx[1])
		if len(key.ColumnPath()) != 3 || key.MaxRepetitionLevel() != 1 || val.MaxRepetitionLevel() != 1 {
			return errors.New("not a map")
		}
		m := key.SchemaNode().Parent().Parent()
		if _, ok := m.LogicalType().(schema.MapLogicalType); !ok && m.ConvertedType() != schema.ConvertedTypes.Map {
			return fmt.Errorf("group without the MAP annotation")
		}
		if !isString(key) {
			return fmt.Errorf("key is %s", describe(key))
		}
		if val.PhysicalType() != parquet.Types.Double {
			return fmt.Errorf("value is %s", describe(val))
		}
		return nil
	}
	if len(idx) != 1 || len(sc.Column(idx[0]).ColumnPath()) != 1 {
		return errors.New("a nested column")
	}
	c := sc.Column(idx[0])
	if c.MaxRepetitionLevel() != 0 {
		return errors.New("a repeated column")
	}
	var ok bool
	switch k {
	case kindString, kindOptString:
		ok = isString(c)
	case kindInt64:
		ok = c.PhysicalType() == parquet.Types.Int64 && isPlainInt(c.LogicalType())
	case kindFloat64:
		ok = c.PhysicalType() == parquet.Types.Double
	case kindOptBool, kindBool:
		ok = c.PhysicalType() == parquet.Types.Boolean
	}
	if !ok {
		return fmt.Errorf("type %s", describe(c))
	}
	return nil
}

func isString(c *schema.Column) bool {
	if c.PhysicalType() != parquet.Types.ByteArray {
		return false
	}
	_, ok := c.LogicalType().(schema.StringLogicalType)
	return ok || c.ConvertedType() == schema.ConvertedTypes.UTF8
}

// isPlainInt accepts an unannotated INT64 or a signed 64-bit integer
// annotation, not timestamps, decimals and the like.
func isPlainInt(lt schema.LogicalType) bool {
	switch lt := lt.(type) {
	case nil, schema.NoLogicalType:
		return true
	case *schema.IntLogicalType:
		return lt.BitWidth() == 64 && lt.IsSigned()
	}
	return false
}

func describe(c *schema.Column) string {
	s := c.PhysicalType().String()
	if lt := c.LogicalType(); lt != nil && !lt.Equals(schema.NoLogicalType{}) {
		s += " (" + lt.String() + ")"
	}
	return s
}

// batchReader is what the typed column chunk readers have in common.
type batchReader[V any] interface {
	HasNext() bool
	ReadBatch(batchSize int64, values []V, defLvls, repLvls []int16) (int64, int, error)
}

const readBatch = 4096

// scan calls fn for every level of a column chunk with the value (the zero
// value where the level is a null or an empty list), the definition level
// and the repetition level. A ByteArray value is only valid during fn.
func scan[V any](r batchReader[V], maxDef, maxRep int16, fn func(v V, def, rep int16)) error {
	vals := make([]V, readBatch)
	def := make([]int16, readBatch)
	rep := make([]int16, readBatch)
	for r.HasNext() {
		total, _, err := r.ReadBatch(readBatch, vals, def, rep)
		if err != nil {
			return err
		}
		if total == 0 {
			break
		}
		j := 0
		for i := range int(total) {
			d, rp := maxDef, int16(0)
			if maxDef > 0 {
				d = def[i]
			}
			if maxRep > 0 {
				rp = rep[i]
			}
			var v V
			if d == maxDef {
				v = vals[j]
				j++
			}
			fn(v, d, rp)
		}
	}
	return nil
}

// readGroup fills fields of group, one row group's rows, from rg.
func readGroup[T any](rg *file.RowGroupReader, fields []field[T], leaves [][]int, group []T) error {
	gr, err := newGroupReader(rg, fields, leaves, len(group), readBatch, internMax)
	if err != nil {
		return err
	}
	if err := gr.read(group); err != nil {
		return err
	}
	return gr.close()
}

// groupReader reads fields of one row group's rows, in order, a slice of
// rows at a time. The flat columns are decoded side by side, a batch of
// rows at a time, so that a batch's rows stay in the CPU cache while every
// column is written into them (column after column over all rows would
// stream the whole []T from memory once per column); a map column's
// entries are read first, for the whole group, and handed to the rows as
// they are read.
type groupReader[T any] struct {
	curs  []*cursor[T]
	maps  []groupMap[T]
	rows  int // the group's rows
	pos   int // rows read
	batch int // rows decoded at a time
}

// groupMap is one map column's entries in a row group, in row order.
type groupMap[T any] struct {
	f       field[T]
	entries []scoreEntry
	next    int
}

// newGroupReader reads rows rows of fields from rg, batch rows at a time;
// its string columns share up to internCap distinct values each.
func newGroupReader[T any](rg *file.RowGroupReader, fields []field[T], leaves [][]int, rows, batch, internCap int) (*groupReader[T], error) {
	gr := &groupReader[T]{rows: rows, batch: batch}
	for i, f := range fields {
		if f.kind == kindScores {
			es, err := readScores(rg, leaves[i], rows)
			if err != nil {
				return nil, fmt.Errorf("column %s: %w", f.name, err)
			}
			gr.maps = append(gr.maps, groupMap[T]{f: f, entries: es})
			continue
		}
		cr, err := rg.Column(leaves[i][0])
		if err != nil {
			return nil, fmt.Errorf("column %s: %w", f.name, err)
		}
		c := &cursor[T]{f: f, maxDef: cr.Descriptor().MaxDefinitionLevel(), def: make([]int16, batch), in: interner{max: internCap}}
		switch f.kind {
		case kindString, kindOptString:
			c.str, c.strs = cr.(*file.ByteArrayColumnChunkReader), make([]parquet.ByteArray, batch)
		case kindInt64:
			c.i64, c.i64s = cr.(*file.Int64ColumnChunkReader), make([]int64, batch)
		case kindFloat64:
			c.f64, c.f64s = cr.(*file.Float64ColumnChunkReader), make([]float64, batch)
		case kindOptBool:
			c.bool, c.bools = cr.(*file.BooleanColumnChunkReader), make([]bool, batch)
			c.backing = make([]bool, rows)
		case kindBool:
			c.bool, c.bools = cr.(*file.BooleanColumnChunkReader), make([]bool, batch)
		default:
			return nil, fmt.Errorf("column %s: unknown kind %v", f.name, f.kind)
		}
		gr.curs = append(gr.curs, c)
	}
	return gr, nil
}

// read fills dst with the group's next len(dst) rows.
func (gr *groupReader[T]) read(dst []T) error {
	if len(dst) > gr.rows-gr.pos {
		return fmt.Errorf("%d rows asked of the %d left", len(dst), gr.rows-gr.pos)
	}
	for lo := 0; lo < len(dst); lo += gr.batch {
		hi := min(lo+gr.batch, len(dst))
		for _, c := range gr.curs {
			c.base = gr.pos
			if err := c.fill(dst, lo, hi); err != nil {
				return fmt.Errorf("column %s: %w", c.f.name, err)
			}
		}
	}
	for i := range gr.maps {
		m := &gr.maps[i]
		for ; m.next < len(m.entries) && m.entries[m.next].row < gr.pos+len(dst); m.next++ {
			e := m.entries[m.next]
			sc := m.f.scores(&dst[e.row-gr.pos])
			if *sc == nil {
				*sc = map[string]float64{}
			}
			(*sc)[e.key] = e.value
		}
	}
	gr.pos += len(dst)
	return nil
}

// close checks that the columns hold no values past the group's rows.
func (gr *groupReader[T]) close() error {
	for _, c := range gr.curs {
		if extra, err := c.rest(); err != nil || extra > 0 {
			if err == nil {
				err = fmt.Errorf("%d values for %d rows", gr.rows+extra, gr.rows)
			}
			return fmt.Errorf("column %s: %w", c.f.name, err)
		}
	}
	return nil
}

// cursor reads one flat column into rows, in order: a null (definition
// level below the maximum, in files not written by nel) reads as the zero
// value.
type cursor[T any] struct {
	f      field[T]
	maxDef int16
	def    []int16
	// The column's reader and value buffer, of f.kind.
	str     *file.ByteArrayColumnChunkReader
	strs    []parquet.ByteArray
	i64     *file.Int64ColumnChunkReader
	i64s    []int64
	f64     *file.Float64ColumnChunkReader
	f64s    []float64
	bool    *file.BooleanColumnChunkReader
	bools   []bool
	backing []bool // the optional bools' storage: one array, not one per row
	base    int    // the row group index of the first row fill is given
	in      interner
}

// fill sets the column in rows[lo:hi], the next rows of the chunk.
func (c *cursor[T]) fill(rows []T, lo, hi int) error {
	for lo < hi {
		want := int64(hi - lo)
		var def []int16
		if c.maxDef > 0 {
			def = c.def[:want]
		}
		var (
			total int64
			err   error
		)
		switch c.f.kind {
		case kindString, kindOptString:
			total, _, err = c.str.ReadBatch(want, c.strs[:want], def, nil)
		case kindInt64:
			total, _, err = c.i64.ReadBatch(want, c.i64s[:want], def, nil)
		case kindFloat64:
			total, _, err = c.f64.ReadBatch(want, c.f64s[:want], def, nil)
		case kindOptBool, kindBool:
			total, _, err = c.bool.ReadBatch(want, c.bools[:want], def, nil)
		}
		if err != nil {
			return err
		}
		if total == 0 {
			return fmt.Errorf("%d values for %d rows", lo, len(rows))
		}
		n := int(total)
		if c.maxDef == 0 {
			c.setDense(rows[lo : lo+n])
		} else {
			c.setSparse(rows[lo:lo+n], def[:n], lo)
		}
		lo += n
	}
	return nil
}

// setDense sets rows from the value buffer, one value per row.
func (c *cursor[T]) setDense(rows []T) {
	f := c.f
	switch f.kind {
	case kindString, kindOptString:
		for i := range rows {
			*f.str(&rows[i]) = c.in.get(c.strs[i])
		}
	case kindInt64:
		for i := range rows {
			*f.i64(&rows[i]) = c.i64s[i]
		}
	case kindFloat64:
		for i := range rows {
			*f.f64(&rows[i]) = c.f64s[i]
		}
	case kindBool:
		for i := range rows {
			*f.b(&rows[i]) = c.bools[i]
		}
	}
}

// setSparse sets rows where def says a value is present (the values are
// packed in the buffer), the zero value elsewhere; lo is rows[0]'s index
// in the row group.
func (c *cursor[T]) setSparse(rows []T, def []int16, lo int) {
	f := c.f
	j := 0
	for i := range rows {
		present := def[i] == c.maxDef
		switch f.kind {
		case kindString, kindOptString:
			v := ""
			if present {
				v = c.in.get(c.strs[j])
			}
			*f.str(&rows[i]) = v
		case kindInt64:
			var v int64
			if present {
				v = c.i64s[j]
			}
			*f.i64(&rows[i]) = v
		case kindFloat64:
			var v float64
			if present {
				v = c.f64s[j]
			}
			*f.f64(&rows[i]) = v
		case kindBool:
			*f.b(&rows[i]) = present && c.bools[j]
		case kindOptBool:
			var p *bool
			if present {
				c.backing[c.base+lo+i] = c.bools[j]
				p = &c.backing[c.base+lo+i]
			}
			*f.opt(&rows[i]) = p
		}
		if present {
			j++
		}
	}
}

// rest counts the column's values past the row group's rows (none in a
// well-formed file).
func (c *cursor[T]) rest() (int, error) {
	extra := 0
	for {
		var (
			total int64
			err   error
		)
		switch c.f.kind {
		case kindString, kindOptString:
			total, _, err = c.str.ReadBatch(int64(len(c.def)), c.strs, c.def, nil)
		case kindInt64:
			total, _, err = c.i64.ReadBatch(int64(len(c.def)), c.i64s, c.def, nil)
		case kindFloat64:
			total, _, err = c.f64.ReadBatch(int64(len(c.def)), c.f64s, c.def, nil)
		case kindOptBool, kindBool:
			total, _, err = c.bool.ReadBatch(int64(len(c.def)), c.bools, c.def, nil)
		}
		if err != nil || total == 0 {
			return extra, err
		}
		extra += int(total)
	}
}

// interner turns a column's values into strings, sharing one string
// between equal values where it can: runs of one value (an item's repeats),
// and the first values seen (categories, finish reasons, benchmark names,
// the few distinct answers), so that a million rows do not cost a million
// small allocations per column.
type interner struct {
	last string
	seen map[string]string
	max  int // the most strings seen holds; 0 means internMax
}

// internMax bounds the strings an interner remembers: past it, a
// high-cardinality column (free text) stops growing the map.
const internMax = 1 << 12

func (in *interner) get(v []byte) string {
	if len(v) == 0 {
		return ""
	}
	if string(v) == in.last {
		return in.last
	}
	full := len(in.seen) >= cmp.Or(in.max, internMax)
	if !full {
		if s, ok := in.seen[string(v)]; ok {
			in.last = s
			return s
		}
	}
	s := string(v)
	if in.seen == nil {
		in.seen = make(map[string]string)
	}
	// A full map stops being consulted: the column has too many distinct
	// values (ids, free text) for sharing to pay.
	if !full && len(v) <= 256 {
		in.seen[s] = s
	}
	in.last = s
	return s
}

// scoreEntry is one present map entry of row row (in its row group).
type scoreEntry struct {
	row   int
	key   string
	value float64
}

// readScores reads a map column of a row group of rows rows: a repetition
// level of 0 starts the next row; an entry is present where the key's
// definition level is at its maximum (lower levels mean an empty or null
// map), and kept where its value is not null.
func readScores(rg *file.RowGroupReader, idx []int, rows int) ([]scoreEntry, error) {
	kr, err := rg.Column(idx[0])
	if err != nil {
		return nil, err
	}
	vr, err := rg.Column(idx[1])
	if err != nil {
		return nil, err
	}
	var entries []scoreEntry
	var in interner
	kd := kr.Descriptor()
	row := -1
	err = scan(kr.(*file.ByteArrayColumnChunkReader), kd.MaxDefinitionLevel(), kd.MaxRepetitionLevel(), func(v parquet.ByteArray, def, rep int16) {
		if rep == 0 {
			row++
		}
		if def == kd.MaxDefinitionLevel() {
			entries = append(entries, scoreEntry{row: row, key: in.get(v)})
		}
	})
	if err != nil {
		return nil, err
	}
	if row+1 != rows {
		return nil, fmt.Errorf("%d map keys rows for %d rows", row+1, rows)
	}
	// The value leaf has the key's levels, plus one definition level where
	// the value is optional; a null value drops its entry.
	vd := vr.Descriptor()
	entryDef := kd.MaxDefinitionLevel()
	next, kept := 0, 0
	err = scan(vr.(*file.Float64ColumnChunkReader), vd.MaxDefinitionLevel(), vd.MaxRepetitionLevel(), func(v float64, def, _ int16) {
		if def < entryDef {
			return
		}
		if next >= len(entries) {
			next++
			return
		}
		e := entries[next]
		next++
		if def != vd.MaxDefinitionLevel() {
			return
		}
		e.value = v
		entries[kept] = e
		kept++
	})
	if err != nil {
		return nil, err
	}
	if next != len(entries) {
		return nil, fmt.Errorf("%d map values for %d keys", next, len(entries))
	}
	return entries[:kept], nil
}
