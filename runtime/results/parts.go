package results

import (
	"io"

	"github.com/nel-eval/nel/runtime/atomicfile"
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

func writePart[T any](path string, fields []field[T], items []T) error {
	return atomicfile.Write(path, func(w io.Writer) error {
		return encodeWith(w, fields, len(items), sliceGroups(items), nil, &columnBuffers{}, partLevel)
	})
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
