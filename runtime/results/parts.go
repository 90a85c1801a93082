package results

import (
	"bufio"
	"fmt"
	"os"
)

// A file written while its rows are produced (a running shard's) is
// written as parts, each a Parquet file of one row group without
// metadata, which Concat then joins into the file byte for byte.
//
// Parts are compressed at zstd's fastest level, whatever their kind.
// arrow-go keeps its zstd encoders in a sync.Pool, which every garbage
// collection empties, so a writer of parts makes its encoders again for
// almost every part: their windows' history (16 MB at the default level,
// 8 MB at the fastest) is most of what it costs in memory, and one level
// is one pool for all kinds. Measured (BenchmarkShardMemory, peak RSS at
// 80,000 samples): 166 MB with trajectories at the default level, 134 MB
// at the fastest; uncompressed parts compressed once at the end cost more
// than either, in the join. The price: a shard's trajectories file is
// about 8% larger (measured on the simulator's gsm8k answers).
const partLevel = 1

// WriteRowsPart writes rows to path as a part (see above).
func WriteRowsPart(path string, rows []Row) error { return writePart(path, rowFields(), rows) }

// WriteTrajectoriesPart writes ts to path as a part.
func WriteTrajectoriesPart(path string, ts []Trajectory) error {
	return writePart(path, trajectoryFields(), ts)
}

// WriteTurnsPart writes turns to path as a part.
func WriteTurnsPart(path string, turns []Turn) error { return writePart(path, turnFields(), turns) }

// writePart writes a part without fsync (two per file: its data and its
// folder's rename), which was most of what a part cost at the end of a
// shard (issue 23): a part is no record of anything, the shard's journal
// is, and a shard that starts again deletes the parts an earlier run left.
// A part that failed is removed.
func writePart[T any](path string, fields []field[T], items []T) (err error) {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("write %w", err)
	}
	bw := bufio.NewWriterSize(f, 1<<20)
	err = encodeWith(bw, fields, len(items), sliceGroups(items), nil, &columnBuffers{}, partLevel)
	if err == nil {
		err = bw.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}

// ReadRowsPart reads a part written by WriteRowsPart, as it was written.
func ReadRowsPart(path string) ([]Row, error) {
	rows, _, err := readFile(path, rowFields(), nil, false)
	return rows, err
}

// ReadTrajectoriesPart reads a part written by WriteTrajectoriesPart.
func ReadTrajectoriesPart(path string) ([]Trajectory, error) {
	ts, _, err := readFile(path, trajectoryFields(), nil, false)
	return ts, err
}

// ReadTurnsPart reads a part written by WriteTurnsPart.
func ReadTurnsPart(path string) ([]Turn, error) {
	turns, _, err := readFile(path, turnFields(), nil, false)
	return turns, err
}
