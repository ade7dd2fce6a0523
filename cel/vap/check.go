package vap

import (
	"fmt"
	"strings"
	"sync"

	"github.com/vapc-dev/vapc/cel"
)

var (
	checkerOnce sync.Once
	checkerVal  *cel.Checker
	checkerErr  error
)

// defaultChecker returns the checker for cel.DefaultKubernetesVersion, built once: building it
// loads the schemas of every built-in kind.
func defaultChecker() (*cel.Checker, error) {
	checkerOnce.Do(func() {
		checkerVal, checkerErr = cel.NewChecker()
		if checkerErr != nil {
			checkerErr = fmt.Errorf("building the CEL checker: %w", checkerErr)
		}
	})
	return checkerVal, checkerErr
}

// Error is the error of a policy or binding that cannot be built or emitted: every diagnostic
// the checker found (warnings included), each pointing at the Go line that wrote the field.
type Error struct {
	// Object names the policy or binding, as Kind/name.
	Object string
	// Diagnostics holds the errors and warnings, sorted by position.
	Diagnostics cel.Diagnostics
}

// Error formats the errors, one per diagnostic, as FILE:LINE[:COL]: FIELD: MESSAGE followed by
// the expression line and a caret under the offending character.
func (e *Error) Error() string {
	var parts []string
	for _, d := range e.Diagnostics {
		if d.Severity == cel.Error {
			parts = append(parts, d.String())
		}
	}
	return strings.Join(parts, "\n")
}
