package compare

// DeltaMethod names how an interval on a difference was computed
// (DeltaCI.Method). Compare reports and gate verdicts publish the names,
// and reports of earlier versions are read again, so a name keeps its
// meaning; what compare and gate do with an interval is a property of
// its DeltaMethod here, not a comparison with its name elsewhere. The
// intervals of the runs' own scores are metrics.Method's.
type DeltaMethod string

// The methods compare writes.
const (
	// DeltaAdjustedWald is Bonett & Price's adjusted Wald interval with
	// z, for 0/1 rewards and one repeat.
	DeltaAdjustedWald DeltaMethod = "adjusted_wald"
	// DeltaAdjustedT is Student t at n−1 df on the per-item differences
	// with two pseudo-differences ±h (PairedCI).
	DeltaAdjustedT DeltaMethod = "adjusted_t"
	// DeltaClustered is Student t at G−1 df on the standard error
	// clustered by category (normal in reports written before DF was
	// set).
	DeltaClustered DeltaMethod = "clt_clustered"
	// DeltaUnpairedMOVERJeffreys is MOVER on Jeffreys' limits of each
	// side's effective sample size (unpaired proportions, Newcombe 2011).
	DeltaUnpairedMOVERJeffreys DeltaMethod = "unpaired_mover_jeffreys"
	// DeltaUnpairedMOVER is MOVER on the headlines' own intervals
	// (Newcombe 1998).
	DeltaUnpairedMOVER DeltaMethod = "unpaired_mover"
	// DeltaUnpairedNormal is normal, the runs' standard errors combined as
	// independent samples.
	DeltaUnpairedNormal DeltaMethod = "unpaired_normal"
)

// DeltaT is Student t at n−1 df on the per-item differences without
// pseudo-differences: reports written before DeltaAdjustedT.
const DeltaT DeltaMethod = "t"

// deltaMethodInfo is one row of the vocabulary.
type deltaMethodInfo struct {
	method  DeltaMethod
	written bool // compare writes it now
	// adjusted: the adjusted paired interval (stats.AdjustedPaired),
	// which NeededItems recomputes at other item counts.
	adjusted bool
	// itemsT: Student t on the items' n−1 df, which more items raise.
	itemsT bool
}

// deltaMethodTable is the vocabulary; a function, so that nothing can
// change it.
func deltaMethodTable() []deltaMethodInfo {
	return []deltaMethodInfo{
		{method: DeltaAdjustedWald, written: true, adjusted: true},
		{method: DeltaAdjustedT, written: true, adjusted: true, itemsT: true},
		{method: DeltaClustered, written: true},
		{method: DeltaUnpairedMOVERJeffreys, written: true},
		{method: DeltaUnpairedMOVER, written: true},
		{method: DeltaUnpairedNormal, written: true},
		{method: DeltaT, itemsT: true},
	}
}

// DeltaMethods lists every method of the vocabulary, those compare
// writes first.
func DeltaMethods() []DeltaMethod {
	t := deltaMethodTable()
	out := make([]DeltaMethod, len(t))
	for i, m := range t {
		out[i] = m.method
	}
	return out
}

// info is m's row; ok is false for a name the vocabulary lacks.
func (m DeltaMethod) info() (info deltaMethodInfo, ok bool) {
	for _, i := range deltaMethodTable() {
		if i.method == m {
			return i, true
		}
	}
	return deltaMethodInfo{method: m}, false
}

// Known reports whether m is in the vocabulary.
func (m DeltaMethod) Known() bool {
	_, ok := m.info()
	return ok
}

// Written reports whether compare writes m now.
func (m DeltaMethod) Written() bool {
	i, _ := m.info()
	return i.written
}

// Adjusted reports whether m is the adjusted paired interval (centre
// and standard error of stats.AdjustedPaired, z or t), which can be
// recomputed at another number of items.
func (m DeltaMethod) Adjusted() bool {
	i, _ := m.info()
	return i.adjusted
}

// ItemsT reports whether m's critical value is Student t's at the items'
// n−1 df (more items raise it; a clustered interval's G−1 they do not).
func (m DeltaMethod) ItemsT() bool {
	i, _ := m.info()
	return i.itemsT
}
