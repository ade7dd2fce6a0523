package e2e

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/yaml"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/cel/manifest"
	_ "github.com/vapc-dev/vapc/cel/mutatingvalidation" // kube-apiserver's validation of MutatingAdmissionPolicies
	"github.com/vapc-dev/vapc/verify/e2e/harness"
)

// checkCorpus are the globs of the files whose every policy and binding
// TestCheckParity creates on the server: the golden corpus of vapc check and
// the cases kept here for the server's subtler create validation.
var checkCorpus = []string{"../../testdata/check/*.yaml", "testdata/check/*.yaml"}

// knownCheckDivergences are the documents, as FILE:NAME, on which vapc check
// is known to decide otherwise than the server, with the reason. The test
// logs them, and fails once vapc and the server agree, so that the entry is
// removed with the fix.
var knownCheckDivergences = map[string]string{}

// TestCheckParity creates every ValidatingAdmissionPolicy and binding of the
// check corpus on a real kube-apiserver (server-side dry run, strict field
// validation) and requires, document by document, that the server refuses
// exactly what vapc check refuses (a create or input error) and, when both
// refuse, that the server's causes name the same fields as vapc's errors,
// with the same messages where vapc reports the apiserver's words unchanged.
//
// Type errors are not part of the comparison: the server accepts them on
// create, and it is kube-controller-manager, which the harness does not run,
// that writes them into status.typeChecking.
func TestCheckParity(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd; skipped with -short")
	}
	var files []string
	for _, g := range checkCorpus {
		m, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) == 0 {
		t.Fatalf("no corpus files in %v", checkCorpus)
	}

	checker, err := cel.NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	s := harness.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	var docs int
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			raw := rawDocuments(t, data)
			parsed, err := manifest.Parse(file, data)
			if err != nil {
				// vapc cannot read the file: the server must refuse what it holds.
				checkUnreadable(ctx, t, s, file, raw, err)
				return
			}
			if len(raw) != len(parsed) {
				t.Fatalf("%s: vapc reads %d documents, the Kubernetes YAML reader %d", file, len(parsed), len(raw))
			}
			for i, d := range parsed {
				gvk := d.GroupVersionKind()
				if gvk.Group != "admissionregistration.k8s.io" {
					// vapc check refuses documents that are not policies (it checks
					// nothing else) where the server would take a ConfigMap: a scope
					// decision of the CLI, not a verdict on a policy.
					t.Logf("%s: not a policy or binding, not sent", d.Describe())
					continue
				}
				docs++
				want := vapcVerdict(checker, d)
				got := serverVerdict(ctx, t, s, d, raw[i])
				if got.err != nil {
					t.Logf("%s: server: %v", d.Describe(), got.err)
				} else {
					t.Logf("%s: server: accepted", d.Describe())
				}
				key := filepath.Base(file) + ":" + d.Object.GetName()
				known, isKnown := knownCheckDivergences[key]
				diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(verdict{}))
				switch {
				case isKnown && diff != "":
					t.Logf("%s: known divergence (%s) (-vapc +server):\n%s", d.Describe(), known, diff)
				case isKnown:
					t.Errorf("%s: vapc and the server agree now: remove %q from knownCheckDivergences", d.Describe(), key)
				case diff != "":
					t.Errorf("%s: vapc check and kube-apiserver disagree on create (-vapc +server):\n%s\nvapc:\n%s\nserver: %s",
						d.Describe(), diff, want.diagnostics, got.err)
				}
			}
		})
	}
	t.Logf("%d files, %d policies and bindings sent to the server", len(files), docs)
}

// verdict is what one side decides about creating one document.
type verdict struct {
	Rejected bool
	// Fields are the field paths the refusal names, sorted, without repeats.
	Fields []string
	// Causes are "field: message" for the errors whose message both sides word
	// alike, sorted: everything but CEL compile errors, which vapc places at
	// their character.
	Causes []string
	// CompileIssues are "field: issue" for every issue of the CEL compile
	// errors, sorted, without their positions.
	CompileIssues []string

	diagnostics cel.Diagnostics // vapc's, for the failure message
	err         error           // the server's
}

// unknownField matches the field a strict decoder names, in the server's
// "strict decoding error: unknown field \"spec.x\"" and in vapc's input errors.
var unknownField = regexp.MustCompile(`(?:unknown|duplicate) field "([^"]*)"`)

// wrongType matches the field of a JSON value of the wrong type, in the
// server's "json: cannot unmarshal number into Go struct field
// ValidatingAdmissionPolicySpec.spec.failurePolicy of type ..." and in vapc's.
var wrongType = regexp.MustCompile(`Go struct field \w+\.(\S+) of type`)

// listIndex matches the list indices and map keys of a field path.
var listIndex = regexp.MustCompile(`\[[^\]]*\]`)

// withoutGoNames drops from the field path of a decoding error the Go names of embedded
// structs (spec.matchConstraints.resourceRules.RuleWithOperations.operations), which vapc's
// field paths, like JSON, do not have.
func withoutGoNames(path string) string {
	var out []string
	for _, n := range strings.Split(path, ".") {
		if n != "" && (n[0] < 'A' || n[0] > 'Z') {
			out = append(out, n)
		}
	}
	return strings.Join(out, ".")
}

// vapcVerdict is vapc check's verdict on creating the document d: refused
// when it has an error of category create or input.
func vapcVerdict(checker *cel.Checker, d *manifest.Document) verdict {
	set, diags := cel.Decode([]*manifest.Document{d})
	diags = append(diags, checker.Check(set)...)
	var v verdict
	for _, diag := range diags {
		if diag.Severity != cel.Error || (diag.Category != cel.CategoryCreate && diag.Category != cel.CategoryInput) {
			continue
		}
		v.Rejected = true
		v.diagnostics = append(v.diagnostics, diag)
		f := strings.TrimPrefix(diag.Field, ".")
		if diag.Category == cel.CategoryInput && f != "" {
			// A value of the wrong type: vapc names it with its list indices and map
			// keys, the server's decoder without them.
			f = listIndex.ReplaceAllString(f, "")
		}
		if f == "" {
			if m := unknownField.FindStringSubmatch(diag.Message); m != nil {
				f = m[1]
			} else if m := wrongType.FindStringSubmatch(diag.Message); m != nil {
				f = m[1]
			}
		}
		v.Fields = append(v.Fields, f)
		switch {
		case diag.Category != cel.CategoryCreate:
		case diag.Column == 0 && !strings.HasPrefix(diag.Message, "compilation failed: "):
			v.Causes = append(v.Causes, f+": "+diag.Message)
		default:
			v.CompileIssues = append(v.CompileIssues, f+": "+strings.TrimPrefix(diag.Message, "compilation failed: "))
		}
	}
	v.Fields = sortedSet(v.Fields)
	slices.Sort(v.Causes)
	slices.Sort(v.CompileIssues)
	return v
}

// serverVerdict creates the document d on the server with a dry run and
// strict field validation, and turns the answer into a verdict. It sends raw,
// the document's YAML as the file has it, so that the server reads it itself.
func serverVerdict(ctx context.Context, t *testing.T, s *harness.Server, d *manifest.Document, raw []byte) verdict {
	t.Helper()
	gvk := d.GroupVersionKind()
	err := createDryRun(ctx, s, gvk.GroupVersion().WithResource(pluralOf(gvk.Kind)), raw)
	v := verdict{err: err}
	if err == nil {
		return v
	}
	v.Rejected = true
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("%s: create: %v", d.Describe(), err)
	}
	st := status.Status()
	switch {
	case st.Code == http.StatusNotFound:
		// The server serves no such version of the resource.
		v.Fields = []string{"apiVersion"}
	case st.Reason == metav1.StatusReasonInvalid && st.Details != nil:
		for _, c := range st.Details.Causes {
			f := strings.TrimPrefix(c.Field, ".")
			v.Fields = append(v.Fields, f)
			issues := compileIssue.FindAllStringSubmatch(c.Message, -1)
			if issues == nil {
				v.Causes = append(v.Causes, f+": "+unrandomName(d, c.Message))
			}
			for _, m := range issues {
				v.CompileIssues = append(v.CompileIssues, f+": "+m[1])
			}
		}
	case st.Reason == metav1.StatusReasonBadRequest:
		for _, m := range unknownField.FindAllStringSubmatch(st.Message, -1) {
			v.Fields = append(v.Fields, m[1])
		}
		for _, m := range wrongType.FindAllStringSubmatch(st.Message, -1) {
			v.Fields = append(v.Fields, withoutGoNames(m[1]))
		}
	default:
		t.Fatalf("%s: create: unexpected answer %d %s: %v", d.Describe(), st.Code, st.Reason, err)
	}

	v.Fields = sortedSet(v.Fields)
	slices.Sort(v.Causes)
	slices.Sort(v.CompileIssues)
	return v
}

// unrandomName replaces, in msg, the name the server generated for d from its
// generateName with the one vapc validates instead: the prefix followed by
// "xxxxx" in place of 5 random characters. The name is quoted alone or, in
// the key of an audit annotation, followed by "/".
func unrandomName(d *manifest.Document, msg string) string {
	prefix := d.Object.GetGenerateName()
	if d.Object.GetName() != "" || prefix == "" {
		return msg
	}
	if len(prefix) > names.MaxGeneratedNameLength {
		prefix = prefix[:names.MaxGeneratedNameLength]
	}
	// The messages quote values as %q does.
	quoted := strings.TrimSuffix(strconv.Quote(prefix), `"`)
	generated := regexp.MustCompile(regexp.QuoteMeta(quoted) + `[a-z0-9]{5}(["/])`)
	return generated.ReplaceAllString(msg, strings.ReplaceAll(quoted, "$", "$$")+`xxxxx$1`)
}

// compileIssue matches one issue of a CEL compile error as the apiserver words
// it: "ERROR: <input>:LINE:COL: MESSAGE", followed by the expression and a caret.
// An issue of the whole expression (its size) is at -1:0.
var compileIssue = regexp.MustCompile(`ERROR: <input>:-?\d+:-?\d+: (.*)`)

// checkUnreadable requires that vapc refuse a file it cannot read, and that
// the server refuse every document the Kubernetes YAML reader finds in it.
// kubectl, which turns YAML into JSON itself, may repair what the server
// refuses (of two duplicate keys, it keeps the last): such differences are
// logged. A file without documents is refused by kubectl before any request.
func checkUnreadable(ctx context.Context, t *testing.T, s *harness.Server, file string, raw [][]byte, parseErr error) {
	t.Helper()
	set, diags := cel.ReadPaths(nil, file)
	if !diags.HasErrors() || len(set.Policies)+len(set.Bindings) != 0 {
		t.Errorf("%s: manifest.Parse: %v, but vapc check reports %v", file, parseErr, diags)
	}
	policies := admissionregistrationv1.SchemeGroupVersion.WithResource("validatingadmissionpolicies")
	for i, doc := range raw {
		err := createDryRun(ctx, s, policies, doc)
		if err == nil {
			t.Errorf("%s: document %d: the server accepts it, but vapc check refuses the file: %v", file, i, parseErr)
			continue
		}
		t.Logf("%s: document %d: server: %v", file, i, err)
	}
	stdout, stderr, err := s.Kubectl(ctx, "create", "--dry-run=server", "--validate=strict", "-f", file)
	switch {
	case len(raw) == 0 && err == nil:
		t.Errorf("kubectl create --dry-run=server -f %s succeeded, but vapc check refuses the file: %v\n%s%s", file, parseErr, stdout, stderr)
	case err == nil:
		t.Logf("%s: kubectl create --dry-run=server, which converts YAML to JSON itself, succeeds: %s", file, stdout)
	}
}

// createDryRun posts the YAML document doc to the collection gvr with a
// server-side dry run and strict field validation.
func createDryRun(ctx context.Context, s *harness.Server, gvr schema.GroupVersionResource, doc []byte) error {
	path := []string{"/apis", gvr.Group, gvr.Version, gvr.Resource}
	if gvr.Group == "" {
		path = []string{"/api", gvr.Version, gvr.Resource}
	}
	return s.Clientset().Discovery().RESTClient().Post().AbsPath(path...).
		Param("dryRun", metav1.DryRunAll).Param("fieldValidation", metav1.FieldValidationStrict).
		SetHeader("Content-Type", "application/yaml").
		Body(doc).Do(ctx).Error()
}

// rawDocuments splits a YAML stream into its documents as kubectl does
// (k8s.io/apimachinery's YAML reader), leaving out empty ones.
func rawDocuments(t *testing.T, data []byte) [][]byte {
	t.Helper()
	var docs [][]byte
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if err == io.EOF {
			return docs
		}
		if err != nil {
			t.Fatalf("reading YAML documents: %v", err)
		}
		if js, err := yaml.YAMLToJSON(doc); err == nil && (len(js) == 0 || string(js) == "null") {
			continue
		}
		docs = append(docs, doc)
	}
}

// pluralOf returns the resource of the admissionregistration kinds.
func pluralOf(kind string) string {
	k := strings.ToLower(kind)
	if strings.HasSuffix(k, "y") {
		return strings.TrimSuffix(k, "y") + "ies"
	}
	return k + "s"
}

func sortedSet(s []string) []string {
	slices.Sort(s)
	return slices.Compact(s)
}
