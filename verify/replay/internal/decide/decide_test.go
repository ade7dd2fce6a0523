package decide

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestResolve(t *testing.T) {
	unknown := errors.New("not known")
	w := func(cond string, outcome string) World[string] {
		if outcome == "" {
			return World[string]{If: cond, Undecided: unknown}
		}
		return World[string]{If: cond, Outcome: outcome, Decided: true}
	}
	likely := func(x World[string]) World[string] { x.Likely = true; return x }
	with := func(x World[string], e Evidence) World[string] { x.Evidence = e; return x }
	type want struct {
		Certainty    Certainty
		Chosen       string // the chosen world's If
		Alternatives []string
	}
	for _, tc := range []struct {
		name   string
		worlds []World[string]
		want   want
	}{
		{"one world", []World[string]{w("log", "admit")}, want{Certain, "log", nil}},
		{"every world alike", []World[string]{likely(w("log", "admit")), w("lag", "admit")}, want{Certain, "log", nil}},
		{"a lag decides otherwise", []World[string]{w("lag", "deny"), likely(w("log", "admit"))}, want{Likely, "log", []string{"lag"}}},
		{"a lag not decided", []World[string]{likely(w("log", "admit")), w("lag", "")}, want{Likely, "log", []string{"lag"}}},
		{"the likely world not decided", []World[string]{likely(w("log", "")), w("lag", "deny")}, want{Indeterminate, "", []string{"lag"}}},
		{"none marked likely: the first", []World[string]{w("first", "admit"), w("second", "deny")}, want{Likely, "first", []string{"second"}}},
		{"the log's verdicts choose another world",
			[]World[string]{likely(with(w("log", "admit"), Disagrees)), with(w("lag", "deny"), Agrees)}, want{Certain, "lag", nil}},
		{"the log's verdicts choose the likely world",
			[]World[string]{with(w("lag", "deny"), Disagrees), likely(with(w("log", "admit"), Agrees))}, want{Certain, "log", nil}},
		{"worlds that agree with the log, alike: the likely one",
			[]World[string]{with(w("lag", "admit"), Agrees), likely(with(w("log", "admit"), Agrees)), with(w("other", "deny"), Disagrees)}, want{Certain, "log", nil}},
		{"worlds that agree with the log decide otherwise",
			[]World[string]{likely(with(w("log", "admit"), Agrees)), with(w("lag", "deny"), Agrees)}, want{Likely, "log", []string{"lag"}}},
		{"no world agrees with the log",
			[]World[string]{likely(with(w("log", "admit"), Disagrees)), with(w("lag", "deny"), Disagrees)}, want{Likely, "log", []string{"lag"}}},
		{"a world without evidence, alike: the log contradicts the likely one",
			[]World[string]{likely(with(w("log", "admit"), Disagrees)), with(w("lag", "deny"), Agrees), w("other", "deny")}, want{Certain, "lag", nil}},
		{"a world not decided: the one the log agrees with is likely",
			[]World[string]{likely(with(w("log", "admit"), Disagrees)), with(w("lag", "deny"), Agrees), w("other", "")}, want{Likely, "lag", []string{"other"}}},
		{"the log contradicts the likely world, the other is not decided",
			[]World[string]{likely(with(w("log", "admit"), Disagrees)), w("other", "")}, want{Indeterminate, "", nil}},
		{"the log contradicts the likely world, the others decide otherwise without evidence",
			[]World[string]{likely(with(w("log", "admit"), Disagrees)), w("a", "deny"), w("b", "warn")}, want{Likely, "log", []string{"a", "b"}}},
		{"no world", nil, want{Indeterminate, "", nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := Resolve(tc.worlds, func(a, b string) bool { return a == b })
			got := want{Certainty: r.Certainty}
			if r.Chosen != nil {
				got.Chosen = r.Chosen.If
			}
			for _, a := range r.Alternatives {
				got.Alternatives = append(got.Alternatives, a.If)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Resolve mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
