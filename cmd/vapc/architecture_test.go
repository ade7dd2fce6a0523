package main

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestArchitecture keeps ARCHITECTURE.md true: its package table lists every package of the
// module and nothing else, and the imports of the packages' source (tests aside) go the one way
// it states.
func TestArchitecture(t *testing.T) {
	t.Parallel()
	const root = "../.."
	const module = "github.com/vapc-dev/vapc/"
	imports := map[string][]string{} // package → the module's packages it imports
	fset := token.NewFileSet()
	err := walkModule(root, func(path, pkg string) error {
		if _, ok := imports[pkg]; !ok {
			imports[pkg] = nil // a package of tests only (verify/e2e) is a package too
		}
		if strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		for _, imp := range f.Imports {
			p, err := strconv.Unquote(imp.Path.Value)
			if err != nil {
				return err
			}
			if rest, ok := strings.CutPrefix(p, module); ok && !slices.Contains(imports[pkg], rest) {
				imports[pkg] = append(imports[pkg], rest)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(imports) < 10 {
		t.Fatalf("found only %d packages under %s", len(imports), root)
	}

	doc, err := os.ReadFile(filepath.Join(root, "ARCHITECTURE.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range regexp.MustCompile("(?m)^\\| `([^`]+)` \\|").FindAllStringSubmatch(string(doc), -1) {
		listed[m[1]] = true
	}
	for pkg := range imports {
		if !listed[pkg] {
			t.Errorf("ARCHITECTURE.md's package table does not list %s", pkg)
		}
	}
	for pkg := range listed {
		if _, ok := imports[pkg]; !ok {
			t.Errorf("ARCHITECTURE.md's package table lists %s, which is not a package of the module", pkg)
		}
	}

	under := func(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }
	for pkg, imps := range imports {
		for _, imp := range imps {
			var broken string
			switch {
			case under(pkg, "cel") && (under(imp, "verify") || under(imp, "policies") || under(imp, "cmd") || under(imp, "internal")):
				broken = "cel imports nothing of verify, policies, cmd or internal"
			case under(pkg, "verify") && (under(imp, "policies") || under(imp, "cmd")):
				broken = "verify imports nothing of policies or cmd"
			case under(imp, "cmd") || under(imp, "internal/cmd"):
				broken = "nothing imports a command"
			case imp == "verify/report" && pkg != "cmd/vapc":
				broken = "nothing uses verify/report but cmd/vapc"
			case under(imp, "internal/auditgen") && pkg != "internal/cmd/vapc-bench":
				broken = "only internal/cmd/vapc-bench imports internal/auditgen"
			case pkg == "verify/replay/internal/decide":
				broken = "verify/replay/internal/decide imports nothing of the module: it compares the outcomes it is given"
			case imp == "verify/replay/exporttest":
				broken = "only tests import exporttest"
			case pkg == "verify/replay/internal/auditlog/export" && imp != "verify/replay/internal/auditlog":
				broken = "the export readers import nothing of the module but auditlog"
			case pkg == "verify/replay/internal/state" && under(imp, "verify/replay") && imp != "verify/replay/internal/auditlog":
				broken = "verify/replay/internal/state imports nothing of the replay but the object decoder (auditlog): the replay applies what requests did through its methods"
			case pkg == "verify/replay/internal/catalog" && under(imp, "verify/replay"):
				broken = "verify/replay/internal/catalog imports nothing of the replay: the replay tells it what the log did"
			case pkg == "verify/replay/internal/source" && imp != "verify/replay/internal/auditlog" && imp != "verify/replay/internal/auditlog/export":
				broken = "verify/replay/internal/source imports nothing of the module but the readers (auditlog, export)"
			}
			if broken != "" {
				t.Errorf("%s imports %s: ARCHITECTURE.md says %s", pkg, imp, broken)
			}
		}
	}
}
