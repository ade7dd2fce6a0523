// Package decide settles what a replay says of a request that kube-apiserver may have admitted
// in more than one state: its informers behind or current, its watch cache's copy of an object
// older than the live one, a write the log records later committed before the request read the
// object. Each source of that nondeterminism generates the states it allows, as Worlds, each
// with the request's outcome in it or why that is not known; Resolve gives the decision:
//
//   - certain when every world decides alike, or when the log's own verdicts are those of
//     worlds that do;
//   - likely when the world the log's order gives (the informers and the watch cache current)
//     is decided and another decides otherwise or is not decided: those are its alternatives;
//   - indeterminate when that world is not decided.
//
// It knows nothing of the outcomes it compares: the caller's type, and its comparison.
package decide

// Evidence is what the log's own verdicts (its audit annotations, a recorded denial) say of a
// world, when the log records verdicts of the policies that decide in it.
type Evidence int

const (
	// NoEvidence: the log does not tell.
	NoEvidence Evidence = iota
	// Agrees: the log's verdicts are those of the world's outcome.
	Agrees
	// Disagrees: they are not.
	Disagrees
)

// Certainty is how Resolve knows the decision.
type Certainty int

const (
	// Certain: every world kube-apiserver could have been in decides alike, or the log's
	// verdicts say which.
	Certain Certainty = iota
	// Likely: decided in the likely world; another decides otherwise, or is not decided.
	Likely
	// Indeterminate: the likely world is not decided.
	Indeterminate
)

// World is a state kube-apiserver may have been in when it admitted a request, and the request's
// outcome in it.
type World[O any] struct {
	// If says what the world needs, for people: "the nodes informer had not yet held the write
	// at audit.log:12".
	If string
	// Likely marks the world the log's order gives: at most one of the worlds Resolve is given.
	Likely bool
	// Outcome is the request's outcome in the world when Decided; Undecided says why it is not
	// known otherwise.
	Outcome   O
	Decided   bool
	Undecided error
	// Evidence is what the log's verdicts say of the world's outcome.
	Evidence Evidence
}

// Result is the decision Resolve settles on: the world whose outcome it is (Chosen; nil when
// Indeterminate), how it is known, the likely world (whose Undecided says why an
// Indeterminate decision is), and the worlds that decide otherwise or are not decided.
type Result[O any] struct {
	Certainty    Certainty
	Chosen       *World[O]
	Likely       *World[O]
	Alternatives []World[O]
}

// Resolve settles the decision over the worlds; same says whether two outcomes are alike. With
// evidence for every decided world and some that agree, all alike, the first of those (the
// likely one when it is among them) is the decision, certain. Otherwise the likely world's, or,
// when no world is marked likely, the first's.
func Resolve[O any](worlds []World[O], same func(a, b O) bool) Result[O] {
	if len(worlds) == 0 {
		return Result[O]{Certainty: Indeterminate}
	}
	likely := 0
	for i, w := range worlds {
		if w.Likely {
			likely = i
			break
		}
	}
	if chosen := byEvidence(worlds, likely, same); chosen >= 0 {
		return Result[O]{Certainty: Certain, Chosen: &worlds[chosen], Likely: &worlds[likely]}
	}
	if worlds[likely].Evidence == Disagrees {
		if res, ok := withoutContradicted(worlds, same); ok {
			return res
		}
	}
	return around(worlds, likely, same, func(World[O]) bool { return false })
}

// around is the decision of the world at likely, and the worlds that decide otherwise or are
// not decided, those skip says did not happen left out.
func around[O any](worlds []World[O], likely int, same func(a, b O) bool, skip func(World[O]) bool) Result[O] {
	l := &worlds[likely]
	var alts []World[O]
	for i, w := range worlds {
		switch {
		case i == likely, skip(w):
		case !w.Decided || !l.Decided || !same(l.Outcome, w.Outcome):
			alts = append(alts, w)
		}
	}
	switch {
	case !l.Decided:
		return Result[O]{Certainty: Indeterminate, Likely: l, Alternatives: alts}
	case len(alts) > 0:
		return Result[O]{Certainty: Likely, Chosen: l, Likely: l, Alternatives: alts}
	}
	return Result[O]{Certainty: Certain, Chosen: l, Likely: l}
}

// withoutContradicted settles the worlds when the log's verdicts contradict the likely one: it
// did not happen, and the others decide. Certain when they are all decided alike; likely the
// first whose verdicts the log's agree with, when one does; otherwise indeterminate on the
// first not decided. ok is false when every world is contradicted, or when the others are all
// decided and none agrees, not alike: nothing the log says chooses among them.
func withoutContradicted[O any](worlds []World[O], same func(a, b O) bool) (Result[O], bool) {
	contradicted := func(w World[O]) bool { return w.Evidence == Disagrees }
	first, agrees, undecided := -1, -1, -1
	for i, w := range worlds {
		switch {
		case contradicted(w):
		case first < 0:
			first = i
			fallthrough
		default:
			if agrees < 0 && w.Decided && w.Evidence == Agrees {
				agrees = i
			}
			if undecided < 0 && !w.Decided {
				undecided = i
			}
		}
	}
	switch {
	case first < 0:
		return Result[O]{}, false
	case agrees >= 0:
		return around(worlds, agrees, same, contradicted), true
	case undecided >= 0:
		return around(worlds, undecided, same, contradicted), true
	}
	res := around(worlds, first, same, contradicted)
	return res, res.Certainty == Certain
}

// byEvidence is the world the log's verdicts choose, or -1: every world decided, each with
// evidence, and those that agree alike; the likely one when it agrees.
func byEvidence[O any](worlds []World[O], likely int, same func(a, b O) bool) int {
	chosen := -1
	for i, w := range worlds {
		if !w.Decided || w.Evidence == NoEvidence {
			return -1
		}
		if w.Evidence != Agrees {
			continue
		}
		if chosen >= 0 && !same(worlds[chosen].Outcome, w.Outcome) {
			return -1
		}
		if chosen < 0 || i == likely {
			chosen = i
		}
	}
	return chosen
}
