package e2e

import (
	"path/filepath"
	"regexp"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/cel/defaults"
	"github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify/e2e/harness"
)

// TestTypeCheckParity proves that vapc's embedded Kubernetes 1.37 schemas and REST mapping type
// expressions as the live server's own do. The harness runs no kube-controller-manager, which is
// what writes status.typeChecking; so the test runs the same upstream validating.TypeChecker
// twice over every policy of the check corpus: once with the server's OpenAPI v3 documents and
// discovery (what kube-controller-manager uses), once with vapc's catalog, and requires the
// same expression warnings.
func TestTypeCheckParity(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd; skipped with -short")
	}
	files, err := filepath.Glob("../../testdata/check/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	set, _ := cel.ReadPaths(nil, files...)
	if len(set.Policies) < 10 {
		t.Fatalf("only %d policies in the corpus", len(set.Policies))
	}

	s := harness.Start(t)
	dc, err := discovery.NewDiscoveryClientForConfig(s.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	cached := memory.NewMemCacheClient(dc)
	server := &validating.TypeChecker{
		SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: dc},
		RestMapper:     restmapper.NewDeferredDiscoveryRESTMapper(cached),
	}
	cat, err := schema.Builtin("1.37")
	if err != nil {
		t.Fatal(err)
	}
	local := &validating.TypeChecker{SchemaResolver: cat.Resolver(), RestMapper: cat.RESTMapper()}

	warned := 0
	for _, p := range set.Policies {
		t.Run(p.Name, func(t *testing.T) {
			obj := p.DeepCopy()
			defaults.SetPolicyDefaults(obj)
			want := typeWarnings(server, obj)
			got := typeWarnings(local, obj)
			if len(want) > 0 {
				warned++
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s: type checking warnings with vapc's schemas differ from the server's (-server +vapc):\n%s", p.Source.FieldPos("metadata.name"), diff)
			}
		})
	}
	if warned == 0 {
		t.Errorf("no policy of the corpus has a type warning: the comparison proves nothing")
	}
}

// typeNameSuffix is the unique suffix the TypeChecker gives each kind's type name
// (generateUniqueTypeName: Kind plus the clock's nanoseconds).
var typeNameSuffix = regexp.MustCompile(`([A-Z][A-Za-z]*)\d{1,9}\b`)

func typeWarnings(tc *validating.TypeChecker, p *admissionregistrationv1.ValidatingAdmissionPolicy) []admissionregistrationv1.ExpressionWarning {
	ws := tc.Check(p)
	for i := range ws {
		ws[i].Warning = typeNameSuffix.ReplaceAllString(ws[i].Warning, "$1")
	}
	return ws
}
