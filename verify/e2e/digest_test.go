package e2e

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
)

// failures keeps the first errors of each test, which TestMain prints again after the tests:
// a CI log cut to its head and its tail still says why a test failed (a random parity run logs
// hundreds of lines before its first error, and the tests after it more).
var failures struct {
	sync.Mutex
	order []string
	first map[string][]string
	more  map[string]int
}

// failuresKept is how many errors of a test the digest repeats, and failureChars how much of
// each.
const (
	failuresKept = 3
	failureChars = 600
)

// errorf is t.Errorf, and keeps the message for the digest.
func errorf(t testing.TB, format string, args ...any) {
	t.Helper()
	msg := fmt.Sprintf(format, args...)
	t.Error(msg)
	failures.Lock()
	defer failures.Unlock()
	if failures.first == nil {
		failures.first, failures.more = map[string][]string{}, map[string]int{}
	}
	name := t.Name()
	if _, ok := failures.first[name]; !ok {
		failures.order = append(failures.order, name)
	}
	if len(failures.first[name]) == failuresKept {
		failures.more[name]++
		return
	}
	failures.first[name] = append(failures.first[name], msg)
}

// writeFailures writes the digest: a line for each test errorf failed, its first errors cut to
// failureChars each.
func writeFailures(w io.Writer) {
	failures.Lock()
	defer failures.Unlock()
	if len(failures.order) == 0 {
		return
	}
	fmt.Fprintln(w, "verify/e2e: the first errors of each failed test, repeated from above:")
	for _, name := range failures.order {
		var b strings.Builder
		b.WriteString(name)
		for _, msg := range failures.first[name] {
			msg = strings.Join(strings.Fields(msg), " ")
			if len(msg) > failureChars {
				msg = msg[:failureChars] + "…"
			}
			b.WriteString(" | " + msg)
		}
		if n := failures.more[name]; n > 0 {
			fmt.Fprintf(&b, " | and %d more", n)
		}
		fmt.Fprintln(w, b.String())
	}
}
