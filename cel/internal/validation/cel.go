package validation

import (
	"fmt"
	"regexp"
	"sync"

	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apimachinery/pkg/util/version"
	plugincel "k8s.io/apiserver/pkg/admission/plugin/cel"
	"k8s.io/apiserver/pkg/cel"
	"k8s.io/apiserver/pkg/cel/environment"
)

// Options configures ValidatePolicy.
type Options struct {
	// CompatibilityVersion is the Kubernetes version whose CEL environment
	// (environment.MustBaseEnvSet(CompatibilityVersion)) compiles new expressions.
	// kube-apiserver uses its DefaultCompatibilityVersion, one minor version behind the
	// binary, so that a function introduced in its own minor version is refused on create.
	// Nil means DefaultCompatibilityVersion().
	CompatibilityVersion *version.Version
}

// DefaultCompatibilityVersion returns 1.36, the CEL compatibility version kube-apiserver
// v1.37 compiles new expressions with (environment.DefaultCompatibilityVersion of a v1.37
// binary).
func DefaultCompatibilityVersion() *version.Version {
	return version.MajorMinor(1, 36)
}

// compilers holds the two compilers the reference builds from one base environment: the
// shared stateless one (matchConditions, and policies without variables) and a factory
// for the stateful composition compiler (a fresh one per policy with variables).
type compilers struct {
	base      *environment.EnvSet
	stateless plugincel.Compiler
}

var compilerCache sync.Map // "major.minor" -> *compilers

// compilersFor returns the compilers for the compatibility version, building and caching
// them on first use. Unlike environment.MustBaseEnvSet it reports a bad version as an
// error instead of panicking.
func compilersFor(compat *version.Version) (c *compilers, err error) {
	if compat == nil {
		compat = DefaultCompatibilityVersion()
	}
	if len(compat.Components()) < 2 {
		return nil, fmt.Errorf("CEL compatibility version %q must have a major and a minor component", compat.String())
	}
	key := fmt.Sprintf("%d.%d", compat.Major(), compat.Minor())
	if cached, ok := compilerCache.Load(key); ok {
		return cached.(*compilers), nil
	}
	defer func() {
		if r := recover(); r != nil {
			c, err = nil, fmt.Errorf("building the CEL environment for compatibility version %s: %v", key, r)
		}
	}()
	base := environment.MustBaseEnvSet(version.MajorMinor(compat.Major(), compat.Minor()))
	c = &compilers{base: base, stateless: plugincel.NewCompiler(base)}
	cached, _ := compilerCache.LoadOrStore(key, c)
	return cached.(*compilers), nil
}

// createCompiler mirrors createCompiler in k8s.io/kubernetes
// pkg/apis/admissionregistration/validation: a composition compiler, which stores
// variables, when the policy declares variables, else the shared stateless compiler.
func (c *compilers) createCompiler(allowComposition bool) plugincel.Compiler {
	if !allowComposition {
		return c.stateless
	}
	compiler, err := plugincel.NewCompositedCompiler(c.base)
	if err != nil {
		// As in the reference: should never happen, fall back to a plain compiler.
		return plugincel.NewCompiler(c.base)
	}
	return compiler
}

// validateCELCondition mirrors validateCELCondition in k8s.io/kubernetes
// pkg/apis/admissionregistration/validation.
func validateCELCondition(compiler plugincel.Compiler, expression plugincel.ExpressionAccessor, variables plugincel.OptionalVariableDeclarations, envType environment.Type, fldPath *field.Path) field.ErrorList {
	var allErrors field.ErrorList
	result := compiler.CompileCELExpression(expression, variables, envType)
	if result.Error != nil {
		allErrors = append(allErrors, convertCELErrorToValidationError(fldPath, expression, result.Error))
	}
	return allErrors
}

// convertCELErrorToValidationError mirrors convertCELErrorToValidationError in
// k8s.io/kubernetes pkg/apis/admissionregistration/validation.
func convertCELErrorToValidationError(fldPath *field.Path, expression plugincel.ExpressionAccessor, err error) *field.Error {
	if celErr, ok := err.(*cel.Error); ok {
		switch celErr.Type {
		case cel.ErrorTypeRequired:
			return field.Required(fldPath, celErr.Detail)
		case cel.ErrorTypeInvalid:
			return field.Invalid(fldPath, expression.GetExpression(), celErr.Detail)
		case cel.ErrorTypeInternal:
			return field.InternalError(fldPath, celErr)
		}
	}
	return field.InternalError(fldPath, fmt.Errorf("unsupported error type: %w", err))
}

var celIdentRegex = regexp.MustCompile("^[_a-zA-Z][_a-zA-Z0-9]*$")
var celReserved = sets.NewString("true", "false", "null", "in",
	"as", "break", "const", "continue", "else",
	"for", "function", "if", "import", "let",
	"loop", "package", "namespace", "return",
	"var", "void", "while")

// isCELIdentifier mirrors isCELIdentifier in k8s.io/kubernetes
// pkg/apis/admissionregistration/validation.
func isCELIdentifier(name string) bool {
	return celIdentRegex.MatchString(name) && !celReserved.Has(name)
}
