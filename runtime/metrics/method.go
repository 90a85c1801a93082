package metrics

// Method names how an interval was computed (Interval.Method). The names
// are a published format: eval.json, its Parquet and CSV exports and the
// bundles of earlier runs carry them, so a name, once written, never
// changes meaning; an interval computed another way gets a new name, and
// the old one stays below for the bundles that have it. What nel does
// with an interval (how a model card marks it, what compare's MOVER takes
// from it, whether pass@k's Beta-binomial applies) is a property of its
// Method here, not a comparison with its name elsewhere.
type Method string

// The methods nel writes (docs/statistics.md says why each).
const (
	MethodT                        Method = "t"
	MethodCLTClustered             Method = "clt_clustered"
	MethodWilsonEnds               Method = "wilson_ends"
	MethodJeffreysEffective        Method = "jeffreys_effective"
	MethodJeffreysBetaBinomial     Method = "jeffreys_betabinomial"
	MethodKornGraubardClustered    Method = "korn_graubard_clustered"
	MethodJeffreysRatio            Method = "jeffreys_ratio"
	MethodCLTRatio                 Method = "clt_ratio"
	MethodBootstrapPercentile      Method = "bootstrap_percentile"
	MethodBootstrapClusterExpanded Method = "bootstrap_cluster_expanded"
)

// The methods of bundles written by earlier versions of nel, which it
// reads (reports, compare, gate) and no longer writes.
const (
	MethodCLT              Method = "clt"
	MethodWilson           Method = "wilson"
	MethodWilsonEffective  Method = "wilson_effective"
	MethodKornGraubard     Method = "korn_graubard"
	MethodWilsonClustered  Method = "wilson_clustered"
	MethodWilsonRatio      Method = "wilson_ratio"
	MethodBootstrapCluster Method = "bootstrap_cluster"
)

// CardMark is how a model card's row marks an interval of a method.
type CardMark int

// The zero CardMark is none of these: a method in the vocabulary states its
// mark.
const (
	// CardPlain: no mark. An interval over items that the card's footnote
	// already names (Wilson's or a Beta interval for binary rewards,
	// Student t's otherwise).
	CardPlain CardMark = iota + 1
	// CardClustered: "(clustered)", an interval on the standard error
	// clustered by the items' categories.
	CardClustered
	// CardNamed: the method's name in brackets, and its description in
	// the footnote.
	CardNamed
)

// MOVERLimits is what compare's MOVER takes from one side's headline
// interval when two runs' items cannot be paired.
type MOVERLimits int

// The zero MOVERLimits is neither: a method in the vocabulary states which.
const (
	// MOVERStated: the interval's limits as the bundle states them.
	MOVERStated MOVERLimits = iota + 1
	// MOVERJeffreys: Jeffreys' limits on the interval's effective sample
	// size (MOVER-J, Newcombe 2011), for a proportion over independent
	// items or repeats.
	MOVERJeffreys
)

// Family is the construction an interval's limits come from; the zero
// Family is none (a name the vocabulary lacks).
type Family int

const (
	FamilyNormal Family = iota + 1
	FamilyT
	FamilyWilson
	FamilyJeffreys
	FamilyClopperPearson
	FamilyPercentile
)

// methodInfo is one row of the vocabulary.
type methodInfo struct {
	method Method
	// written: nel writes it now (false: an earlier version's name).
	written bool
	// description is the one line a model card prints for it.
	description string
	card        CardMark
	mover       MOVERLimits
	family      Family
	// oneValue: an interval over items that hold one 0/1 value each
	// (independent Bernoulli trials), which pass@k at k = repeats is.
	oneValue bool
}

// methodTable is the vocabulary, nel's own methods first. A function, not
// a package variable, so that nothing can change it.
func methodTable() []methodInfo {
	return []methodInfo{
		{MethodT, true, "Student t on the item means, n−1 df",
			CardPlain, MOVERStated, FamilyT, false},
		{MethodCLTClustered, true, "Student t on the standard error clustered by category, G−1 df",
			CardClustered, MOVERStated, FamilyT, false},
		{MethodWilsonEnds, true, "Wilson's score interval on the items' 0/1 values, with the exact one-sided bound at 0 or n right and Jeffreys' at 1 or n−1",
			CardPlain, MOVERJeffreys, FamilyWilson, true},
		{MethodJeffreysEffective, true, "Jeffreys' interval on Korn & Graubard's effective sample size over items with repeats",
			CardPlain, MOVERJeffreys, FamilyJeffreys, false},
		{MethodJeffreysBetaBinomial, true, "Jeffreys' interval for pass@k on an effective sample size capped by a Beta-binomial model of the items' counts",
			CardPlain, MOVERStated, FamilyJeffreys, false},
		{MethodKornGraubardClustered, true, "Clopper–Pearson's interval on Korn & Graubard's effective sample size from the standard error clustered by category",
			CardClustered, MOVERStated, FamilyClopperPearson, false},
		{MethodJeffreysRatio, true, "Jeffreys' interval on Korn & Graubard's effective sample size of a ratio of sums over items (the delta method's standard error)",
			CardNamed, MOVERStated, FamilyJeffreys, false},
		{MethodCLTRatio, true, "the delta method's interval on a ratio of sums over items, Student t at m−1 df",
			CardNamed, MOVERStated, FamilyT, false},
		{MethodBootstrapPercentile, true, "NeMo Evaluator's percentile bootstrap over items, kept for parity and not a confidence interval",
			CardNamed, MOVERStated, FamilyPercentile, false},
		{MethodBootstrapClusterExpanded, true, "the percentile bootstrap over whole categories at Hesterberg's expanded level, kept for parity",
			CardNamed, MOVERStated, FamilyPercentile, false},

		{MethodCLT, false, "mean ± z·SE on the item means",
			CardPlain, MOVERStated, FamilyNormal, false},
		{MethodWilson, false, "Wilson's score interval on the items' 0/1 values, with Brown, Cai & DasGupta's Poisson bounds near either end",
			CardPlain, MOVERJeffreys, FamilyWilson, true},
		{MethodWilsonEffective, false, "Wilson's interval on the effective sample size over items with repeats",
			CardPlain, MOVERStated, FamilyWilson, false},
		{MethodKornGraubard, false, "Clopper–Pearson's interval on Korn & Graubard's effective sample size over items with repeats",
			CardPlain, MOVERStated, FamilyClopperPearson, false},
		{MethodWilsonClustered, false, "Wilson's interval on the effective sample size from the standard error clustered by category",
			CardClustered, MOVERStated, FamilyWilson, false},
		{MethodWilsonRatio, false, "Wilson's interval on the effective sample size of a ratio of sums over items",
			CardNamed, MOVERStated, FamilyWilson, false},
		{MethodBootstrapCluster, false, "the percentile bootstrap over whole categories, kept for parity",
			CardNamed, MOVERStated, FamilyPercentile, false},
	}
}

// Methods lists every method of the vocabulary, those nel writes first.
func Methods() []Method {
	t := methodTable()
	out := make([]Method, len(t))
	for i, m := range t {
		out[i] = m.method
	}
	return out
}

// info is m's row; ok is false for a name the vocabulary lacks (a bundle
// of a later nel).
func (m Method) info() (info methodInfo, ok bool) {
	for _, i := range methodTable() {
		if i.method == m {
			return i, true
		}
	}
	return methodInfo{method: m, card: CardNamed, mover: MOVERStated}, false
}

// Known reports whether m is in the vocabulary.
func (m Method) Known() bool {
	_, ok := m.info()
	return ok
}

// Written reports whether nel writes m now (not only earlier versions).
func (m Method) Written() bool {
	i, _ := m.info()
	return i.written
}

// Description is m's one line for a model card's footnote; "" for a name
// the vocabulary lacks.
func (m Method) Description() string {
	i, _ := m.info()
	return i.description
}

// Card is how a model card marks an interval of m: CardNamed for a name
// the vocabulary lacks, which the card can only print.
func (m Method) Card() CardMark {
	i, _ := m.info()
	return i.card
}

// Clustered reports whether an interval of m is on the standard error
// clustered by the items' categories (reports mark it "(clustered)").
func (m Method) Clustered() bool {
	return m.Card() == CardClustered
}

// MOVER is what compare's MOVER takes from an interval of m: its stated
// limits for a name the vocabulary lacks.
func (m Method) MOVER() MOVERLimits {
	i, _ := m.info()
	return i.mover
}

// Family is the construction of m's limits; 0 for a name the vocabulary
// lacks.
func (m Method) Family() Family {
	i, _ := m.info()
	return i.family
}

// OneValuePerItem reports whether an interval of m is over items that
// hold one 0/1 value each: Wilson's on the items, not an interval on an
// effective sample size of repeats.
func (m Method) OneValuePerItem() bool {
	i, _ := m.info()
	return i.oneValue
}
