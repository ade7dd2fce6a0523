package cel

import (
	"sort"
	"strings"
)

// maxSuggestions is how many names a "did you mean" offers at most.
const maxSuggestions = 3

// Closest returns the candidates a mistyped name may have meant, closest first, at most three:
// those within a small edit distance of it (cel-go's and kubectl's, through cobra, way of
// suggesting: the Levenshtein distance, here counting a swap of two neighbouring letters as
// one edit and ignoring case; at most 1 for a name of up to 4 letters, 2 beyond), and those it
// begins (three letters or more). vapc's diagnostics suggest fields and functions with it, and
// the CLI commands and flags.
func Closest(name string, candidates []string) []string {
	type scored struct {
		name string
		d    int
	}
	limit := 1
	if len([]rune(name)) > 4 {
		limit = 2
	}
	lower := strings.ToLower(name)
	var found []scored
	seen := map[string]bool{}
	for _, c := range candidates {
		if c == name || seen[c] {
			continue
		}
		seen[c] = true
		lc := strings.ToLower(c)
		d := editDistance(lower, lc)
		switch {
		case d <= limit:
		case len(lower) >= 3 && strings.HasPrefix(lc, lower):
			d = limit + 1 // after the close ones
		default:
			continue
		}
		found = append(found, scored{c, d})
	}
	sort.Slice(found, func(i, j int) bool {
		if found[i].d != found[j].d {
			return found[i].d < found[j].d
		}
		return found[i].name < found[j].name
	})
	var out []string
	for _, f := range found[:min(len(found), maxSuggestions)] {
		out = append(out, f.name)
	}
	return out
}

// editDistance is the optimal string alignment distance of a and b: insertions, deletions,
// substitutions and swaps of two neighbouring characters.
func editDistance(a, b string) int {
	s, t := []rune(a), []rune(b)
	d := make([][]int, len(s)+1)
	for i := range d {
		d[i] = make([]int, len(t)+1)
		d[i][0] = i
	}
	for j := range d[0] {
		d[0][j] = j
	}
	for i := 1; i <= len(s); i++ {
		for j := 1; j <= len(t); j++ {
			cost := 1
			if s[i-1] == t[j-1] {
				cost = 0
			}
			d[i][j] = min(d[i-1][j]+1, d[i][j-1]+1, d[i-1][j-1]+cost)
			if i > 1 && j > 1 && s[i-1] == t[j-2] && s[i-2] == t[j-1] {
				d[i][j] = min(d[i][j], d[i-2][j-2]+1)
			}
		}
	}
	return d[len(s)][len(t)]
}

// didYouMean words the suggestions for a hint: "did you mean 'labels'?", "did you mean 'a' or
// 'b'?"; "" without one.
func didYouMean(names []string) string {
	if len(names) == 0 {
		return ""
	}
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = "'" + n + "'"
	}
	return "did you mean " + strings.Join(q, " or ") + "?"
}

// joinHints joins the hints that are not empty with "; ".
func joinHints(hints ...string) string {
	var out []string
	for _, h := range hints {
		if h != "" {
			out = append(out, h)
		}
	}
	return strings.Join(out, "; ")
}
