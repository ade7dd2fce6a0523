package verify

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMapOrderSearch: the search for the server's order of several by-chance values goes on
// eight times longer for each value beyond the first, and stops once every combination of the
// values each took has come.
func TestMapOrderSearch(t *testing.T) {
	type eval struct{ msgs, annotations, outcomes []string }
	for _, tc := range []struct {
		name   string
		first  eval
		then   []eval
		budget int
		done   []bool // after each of then
	}{{
		name:   "one message",
		first:  eval{msgs: []string{"a,b"}},
		then:   []eval{{msgs: []string{"a,b"}}, {msgs: []string{"b,a"}}},
		budget: mapOrderSearches,
		done:   []bool{true, true},
	}, {
		name:   "two messages: four combinations",
		first:  eval{msgs: []string{"a,b", "a,b"}},
		then:   []eval{{msgs: []string{"b,a", "a,b"}}, {msgs: []string{"a,b", "b,a"}}, {msgs: []string{"a,b", "a,b"}}, {msgs: []string{"b,a", "b,a"}}},
		budget: mapOrderSearches * 8,
		// After the second evaluation the second message took one value: both combinations came
		// (the search goes on to mapOrderSearches all the same).
		done: []bool{true, false, false, true},
	}, {
		name:   "a message and an annotation and an outcome: capped",
		first:  eval{msgs: []string{"a,b"}, annotations: []string{"p/k=a,b"}, outcomes: []string{"false 403", "p b <nil> deny 0"}},
		budget: mapOrderSearchesMax,
	}, {
		// Three params of a binding, each admitting one evaluation in eight: the server's may
		// be all three admitting, which no evaluation has given yet (seed r:233).
		name:  "the outcomes of three params: each a value",
		first: eval{outcomes: []string{"false 403", "p b a deny 0", "p b b deny 0", "p b c deny 0"}},
		then: []eval{
			{outcomes: []string{"false 403", "p b a admit -", "p b b deny 0", "p b c deny 0"}},
			{outcomes: []string{"false 403", "p b a deny 0", "p b b admit -", "p b c deny 0"}},
			{outcomes: []string{"false 403", "p b a deny 0", "p b b deny 0", "p b c admit -"}},
		},
		budget: mapOrderSearchesMax,
		// After the second, one param had admitted: both combinations came; after the third
		// and fourth, four and eight combinations may, of which three and four came.
		done: []bool{true, false, false},
	}, {
		name:   "an evaluation with another number of values counts no combinations",
		first:  eval{msgs: []string{"a,b"}},
		then:   []eval{{msgs: []string{"a,b", "c"}}, {msgs: []string{"b,a"}}},
		budget: mapOrderSearches,
		done:   []bool{false, false},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			c := newCombinations(tc.first.msgs, tc.first.annotations, tc.first.outcomes)
			if got := c.budget(); got != tc.budget {
				t.Errorf("budget %d, want %d", got, tc.budget)
			}
			var done []bool
			for _, e := range tc.then {
				done = append(done, c.add(e.msgs, e.annotations, e.outcomes))
			}
			if diff := cmp.Diff(tc.done, done); diff != "" {
				t.Errorf("done after each (-want +got):\n%s", diff)
			}
		})
	}
}
