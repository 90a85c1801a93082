package dataset

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/schema"
)

// Parquet is read with arrow-go's low-level file reader rather than
// pqarrow, which would add ~10 MB to nel-run. Records are rebuilt from the
// definition and repetition levels for the shapes Hub datasets use:
// primitive columns, lists of primitives and structs whose children are
// primitives or lists of primitives.

var parquetMagic = []byte("PAR1")

func parseParquet(data []byte) (recs []Record, err error) {
	err = scanParquet(bytes.NewReader(data), int64(len(data)), func(g []Record) error {
		recs = append(recs, g...)
		return nil
	})
	return recs, err
}

// scanParquet reads the Parquet file r (size bytes) a row group at a
// time, handing fn each group's records. An error of fn ends the scan and
// is returned (errStop: nil).
func scanParquet(r parquet.ReaderAtSeeker, size int64, fn func(recs []Record) error) (err error) {
	var head, tail [4]byte
	if _, err := r.ReadAt(head[:], 0); err != nil || !bytes.Equal(head[:], parquetMagic) {
		return fmt.Errorf("not a Parquet file (no PAR1 magic at the start)")
	}
	if size < 12 {
		return fmt.Errorf("truncated Parquet file (%d bytes)", size)
	}
	var foot [8]byte
	if _, err := r.ReadAt(foot[:], size-8); err != nil {
		return fmt.Errorf("read Parquet footer: %w", err)
	}
	copy(tail[:], foot[4:])
	if !bytes.Equal(tail[:], parquetMagic) {
		return fmt.Errorf("truncated Parquet file (no PAR1 magic at the end)")
	}
	if fl := binary.LittleEndian.Uint32(foot[:4]); int64(fl) > size-12 {
		return fmt.Errorf("truncated Parquet file (footer of %d bytes in a %d-byte file)", fl, size)
	}
	// arrow-go can panic on corrupt pages; a bad file must be an error.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("corrupt Parquet file: %v", r)
		}
	}()
	rd, err := file.NewParquetReader(r)
	if err != nil {
		return fmt.Errorf("read Parquet footer: %w", err)
	}
	defer rd.Close()
	sc := rd.MetaData().Schema
	fields, err := planFields(sc)
	if err != nil {
		return err
	}
	for g := 0; g < rd.NumRowGroups(); g++ {
		rg := rd.RowGroup(g)
		recs := make([]Record, int(rg.NumRows()))
		for i := range recs {
			recs[i] = make(Record, len(fields))
		}
		for _, f := range fields {
			if err := f.fill(rg, recs); err != nil {
				return fmt.Errorf("row group %d: column %q: %w", g, f.name, err)
			}
		}
		if err := fn(recs); err == errStop {
			return nil
		} else if err != nil {
			return err
		}
	}
	return nil
}

// leafShape says how one leaf column maps to per-row values.
type leafShape struct {
	col  int    // leaf column index
	path string // dotted path, for errors
	// list is true when the leaf sits under one repeated node.
	list bool
	// nullDef: def < nullDef means the value (scalar) or the list is null.
	nullDef int16
	// elemDef: for lists, def >= elemDef means an element is present
	// (def in [nullDef, elemDef) is an empty list).
	elemDef int16
	maxDef  int16
}

// fieldPlan is one top-level column of the records.
type fieldPlan struct {
	name string
	leaf *leafShape // a primitive or list column
	// For a struct: its children and the def level below which the
	// struct itself is null.
	children  []string
	leaves    []*leafShape
	structDef int16
}

func planFields(sc *schema.Schema) ([]*fieldPlan, error) {
	root := sc.Root()
	var out []*fieldPlan
	for i := 0; i < root.NumFields(); i++ {
		n := root.Field(i)
		fp := &fieldPlan{name: n.Name()}
		if g, ok := n.(*schema.GroupNode); ok && !isList(g) && n.RepetitionType() != parquet.Repetitions.Repeated {
			if isMap(g) {
				return nil, fmt.Errorf("column %q: MAP columns are not supported", n.Name())
			}
			fp.structDef = defOf(n)
			for j := 0; j < g.NumFields(); j++ {
				c := g.Field(j)
				ls, err := planLeaf(sc, c, defOf(n))
				if err != nil {
					return nil, err
				}
				fp.children = append(fp.children, c.Name())
				fp.leaves = append(fp.leaves, ls)
			}
		} else {
			ls, err := planLeaf(sc, n, 0)
			if err != nil {
				return nil, err
			}
			fp.leaf = ls
		}
		out = append(out, fp)
	}
	return out, nil
}

// defOf is the definition level at node n: the number of optional or
// repeated nodes from the root down to and including n.
func defOf(n schema.Node) int16 {
	var d int16
	for ; n != nil && n.Parent() != nil; n = n.Parent() {
		if n.RepetitionType() != parquet.Repetitions.Required {
			d++
		}
	}
	return d
}

func isList(g *schema.GroupNode) bool {
	if _, ok := g.LogicalType().(schema.ListLogicalType); ok {
		return true
	}
	return g.ConvertedType() == schema.ConvertedTypes.List
}

func isMap(g *schema.GroupNode) bool {
	if _, ok := g.LogicalType().(schema.MapLogicalType); ok {
		return true
	}
	return g.ConvertedType() == schema.ConvertedTypes.Map || g.ConvertedType() == schema.ConvertedTypes.MapKeyValue
}

// planLeaf plans node n (a primitive, a repeated primitive, or a LIST of
// primitives); parentDef is the def level of its parent.
func planLeaf(sc *schema.Schema, n schema.Node, parentDef int16) (*leafShape, error) {
	unsupported := func() (*leafShape, error) {
		return nil, fmt.Errorf("column %q: unsupported nesting (only primitives, lists of primitives and structs of those)", n.Path())
	}
	switch t := n.(type) {
	case *schema.PrimitiveNode:
		ls := &leafShape{col: sc.ColumnIndexByNode(t), path: t.Path(), maxDef: defOf(t)}
		if t.RepetitionType() == parquet.Repetitions.Repeated {
			// Legacy bare repeated field: a non-null list of required elements.
			ls.list, ls.nullDef, ls.elemDef = true, parentDef, defOf(t)
		} else {
			ls.nullDef = defOf(t)
		}
		return ls, nil
	case *schema.GroupNode:
		if !isList(t) || t.RepetitionType() == parquet.Repetitions.Repeated || t.NumFields() != 1 {
			return unsupported()
		}
		rep := t.Field(0)
		if rep.RepetitionType() != parquet.Repetitions.Repeated {
			return unsupported()
		}
		elem := rep
		if g, ok := rep.(*schema.GroupNode); ok {
			// Three-level list: repeated group "list" { element }.
			if g.NumFields() != 1 {
				return unsupported()
			}
			elem = g.Field(0)
		}
		p, ok := elem.(*schema.PrimitiveNode)
		if !ok || (elem != rep && p.RepetitionType() == parquet.Repetitions.Repeated) {
			return unsupported()
		}
		return &leafShape{
			col:     sc.ColumnIndexByNode(p),
			path:    p.Path(),
			list:    true,
			nullDef: defOf(t),
			elemDef: defOf(rep),
			maxDef:  defOf(p),
		}, nil
	}
	return unsupported()
}

// fill sets f's value in each of recs (one row group's rows).
func (f *fieldPlan) fill(rg *file.RowGroupReader, recs []Record) error {
	if f.leaf != nil {
		vals, _, err := readLeaf(rg, f.leaf, len(recs))
		if err != nil {
			return err
		}
		for i, r := range recs {
			r[f.name] = vals[i]
		}
		return nil
	}
	structs := make([]map[string]any, len(recs))
	for i := range structs {
		structs[i] = make(map[string]any, len(f.children))
	}
	var null []bool
	for k, ls := range f.leaves {
		vals, firstDef, err := readLeaf(rg, ls, len(recs))
		if err != nil {
			return err
		}
		if null == nil {
			null = make([]bool, len(recs))
			for i, d := range firstDef {
				null[i] = d < f.structDef
			}
		}
		for i := range recs {
			structs[i][f.children[k]] = vals[i]
		}
	}
	for i, r := range recs {
		if null != nil && null[i] {
			r[f.name] = nil
		} else {
			r[f.name] = structs[i]
		}
	}
	return nil
}

// readLeaf reads one leaf column chunk and rebuilds nrows values; it also
// returns each row's first definition level (for struct nullness).
func readLeaf(rg *file.RowGroupReader, ls *leafShape, nrows int) ([]any, []int16, error) {
	cr, err := rg.Column(ls.col)
	if err != nil {
		return nil, nil, err
	}
	defs, reps, vals, err := readColumn(cr)
	if err != nil {
		return nil, nil, err
	}
	out := make([]any, 0, nrows)
	first := make([]int16, 0, nrows)
	vi := 0
	next := func(def int16) (any, error) {
		if def < ls.maxDef {
			return nil, nil
		}
		if vi >= len(vals) {
			return nil, fmt.Errorf("fewer values than definition levels")
		}
		v := vals[vi]
		vi++
		return v, nil
	}
	for i := 0; i < len(defs); {
		def := defs[i]
		if ls.list && reps != nil && reps[i] != 0 {
			return nil, nil, fmt.Errorf("row starts with repetition level %d", reps[i])
		}
		first = append(first, def)
		if !ls.list {
			v, err := next(def)
			if err != nil {
				return nil, nil, err
			}
			out = append(out, v)
			i++
			continue
		}
		// A list row: this entry and all following ones with rep > 0.
		j := i + 1
		for j < len(defs) && reps[j] != 0 {
			j++
		}
		switch {
		case def < ls.nullDef:
			out = append(out, nil)
		case def < ls.elemDef:
			out = append(out, []any{})
		default:
			lst := make([]any, 0, j-i)
			for k := i; k < j; k++ {
				v, err := next(defs[k])
				if err != nil {
					return nil, nil, err
				}
				lst = append(lst, v)
			}
			out = append(out, lst)
		}
		i = j
	}
	if len(out) != nrows {
		return nil, nil, fmt.Errorf("%d rows, row group says %d", len(out), nrows)
	}
	return out, first, nil
}

// readColumn reads a whole column chunk: levels and the non-null values
// converted to Go values.
func readColumn(cr file.ColumnChunkReader) (defs, reps []int16, vals []any, err error) {
	const batch = 4096
	d := make([]int16, batch)
	r := make([]int16, batch)
	hasDef := cr.Descriptor().MaxDefinitionLevel() > 0
	hasRep := cr.Descriptor().MaxRepetitionLevel() > 0
	for cr.HasNext() {
		var (
			total int64
			n     int
		)
		switch c := cr.(type) {
		case *file.BooleanColumnChunkReader:
			buf := make([]bool, batch)
			total, n, err = c.ReadBatch(batch, buf, d, r)
			for _, v := range buf[:n] {
				vals = append(vals, v)
			}
		case *file.Int32ColumnChunkReader:
			buf := make([]int32, batch)
			total, n, err = c.ReadBatch(batch, buf, d, r)
			for _, v := range buf[:n] {
				vals = append(vals, int64(v))
			}
		case *file.Int64ColumnChunkReader:
			buf := make([]int64, batch)
			total, n, err = c.ReadBatch(batch, buf, d, r)
			for _, v := range buf[:n] {
				vals = append(vals, v)
			}
		case *file.Float32ColumnChunkReader:
			buf := make([]float32, batch)
			total, n, err = c.ReadBatch(batch, buf, d, r)
			for _, v := range buf[:n] {
				vals = append(vals, float64(v))
			}
		case *file.Float64ColumnChunkReader:
			buf := make([]float64, batch)
			total, n, err = c.ReadBatch(batch, buf, d, r)
			for _, v := range buf[:n] {
				vals = append(vals, v)
			}
		case *file.ByteArrayColumnChunkReader:
			buf := make([]parquet.ByteArray, batch)
			total, n, err = c.ReadBatch(batch, buf, d, r)
			for _, v := range buf[:n] {
				vals = append(vals, string(v)) // copies: the buffer is reused
			}
		case *file.FixedLenByteArrayColumnChunkReader:
			buf := make([]parquet.FixedLenByteArray, batch)
			total, n, err = c.ReadBatch(batch, buf, d, r)
			for _, v := range buf[:n] {
				vals = append(vals, string(v))
			}
		default:
			return nil, nil, nil, fmt.Errorf("unsupported physical type %s", cr.Type())
		}
		if err != nil {
			return nil, nil, nil, err
		}
		if total == 0 {
			break
		}
		for k := int64(0); k < total; k++ {
			if hasDef {
				defs = append(defs, d[k])
			} else {
				defs = append(defs, 0)
			}
			if hasRep {
				reps = append(reps, r[k])
			}
		}
	}
	if err := cr.Err(); err != nil {
		return nil, nil, nil, err
	}
	return defs, reps, vals, nil
}
