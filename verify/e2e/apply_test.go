package e2e

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/dynamic"
	sigsjson "sigs.k8s.io/json"

	"github.com/vapc-dev/vapc/cel/defaults"
	"github.com/vapc-dev/vapc/cel/manifest"
	"github.com/vapc-dev/vapc/verify/e2e/harness"
)

// policiesDir is where make policies writes the in-tree guards.
const policiesDir = "../../policies"

// lastApplied is the annotation kubectl apply adds to what it applies.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// TestApplyPolicies applies the emitted policies of policies/ with kubectl, as
// a user would, then reads every policy and binding back and requires the
// server's view to be what was emitted: the spec equal to the emitted one
// after the server's defaulting (package cel/defaults), the labels and
// annotations equal but for kubectl's own. Applying them again must change
// nothing.
//
// Documents of vapc's own group (vapc.dev, such as the settings) are not for
// the server and are left out. The test fails when there is nothing to apply.
func TestApplyPolicies(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd; skipped with -short")
	}
	args, emitted := applyArgs(t)
	if len(emitted) == 0 {
		t.Fatalf("no ValidatingAdmissionPolicy or binding in %s/*.yaml: make policies emits them", policiesDir)
	}

	s := harness.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	stdout, stderr, err := s.Kubectl(ctx, append([]string{"apply"}, args...)...)
	if err != nil {
		t.Fatalf("kubectl apply %s: %v\n%s%s", strings.Join(args, " "), err, stdout, stderr)
	}
	t.Logf("kubectl apply %s:\n%s", strings.Join(args, " "), stdout)

	client, err := dynamic.NewForConfig(s.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	get := func(d *manifest.Document) (*unstructured.Unstructured, error) {
		gvk := d.GroupVersionKind()
		return client.Resource(gvk.GroupVersion().WithResource(pluralOf(gvk.Kind))).Get(ctx, d.Object.GetName(), metav1.GetOptions{})
	}
	versions := map[string]string{} // Kind/name to resourceVersion
	for _, d := range emitted {
		key := d.Object.GetKind() + "/" + d.Object.GetName()
		t.Run(key, func(t *testing.T) {
			got, err := get(d)
			if err != nil {
				t.Fatalf("GET %s: %v", d.Describe(), err)
			}
			versions[key] = got.GetResourceVersion()
			compareApplied(t, d, got)
		})
	}

	// kubectl's client-side apply replaces atomic lists that differ from the
	// live object: resourceRules the server gave a default scope are sent
	// again ("configured") although nothing changes. So the second apply is
	// judged by the objects, which must keep their resourceVersion.
	stdout, stderr, err = s.Kubectl(ctx, append([]string{"apply"}, args...)...)
	if err != nil {
		t.Fatalf("kubectl apply %s, again: %v\n%s%s", strings.Join(args, " "), err, stdout, stderr)
	}
	t.Logf("kubectl apply %s, again:\n%s", strings.Join(args, " "), stdout)
	for _, d := range emitted {
		key := d.Object.GetKind() + "/" + d.Object.GetName()
		got, err := get(d)
		if err != nil {
			t.Fatalf("GET %s: %v", d.Describe(), err)
		}
		if rv := got.GetResourceVersion(); rv != versions[key] {
			t.Errorf("%s: applying the same file again changed it: resourceVersion %s, was %s", d.Describe(), rv, versions[key])
		}
	}
}

// applyArgs returns the kubectl apply arguments for the policy files of
// policiesDir, and the documents they apply. It names the folder itself, as
// a user would, unless a file holds vapc.dev documents; then it names each
// file, writing a copy without those documents where needed.
func applyArgs(t *testing.T) ([]string, []*manifest.Document) {
	t.Helper()
	var files []string
	for _, ext := range []string{"*.yaml", "*.yml", "*.json"} { // what kubectl apply -f DIR reads
		m, err := filepath.Glob(filepath.Join(policiesDir, ext))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	slices.Sort(files)
	var (
		args     []string
		emitted  []*manifest.Document
		filtered bool
		dir      = t.TempDir()
	)
	for _, file := range files {
		data, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		docs, err := manifest.Parse(file, data)
		if err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		var keep []*manifest.Document
		for _, d := range docs {
			if d.GroupVersionKind().Group == "vapc.dev" {
				t.Logf("%s: vapc's own, not applied", d.Describe())
				continue
			}
			keep = append(keep, d)
		}
		emitted = append(emitted, keep...)
		switch {
		case len(keep) == len(docs):
			args = append(args, "-f", file)
		case len(keep) > 0:
			var b bytes.Buffer
			for _, d := range keep {
				b.WriteString("---\n")
				b.Write(d.JSON)
				b.WriteString("\n")
			}
			copyPath := filepath.Join(dir, filepath.Base(file))
			if err := os.WriteFile(copyPath, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			args = append(args, "-f", copyPath)
			filtered = true
		default:
			filtered = true
		}
	}
	if !filtered && len(files) > 0 {
		args = []string{"-f", policiesDir + "/"}
	}
	return args, emitted
}

// compareApplied compares the server's object got with the emitted document d.
func compareApplied(t *testing.T, d *manifest.Document, got *unstructured.Unstructured) {
	t.Helper()
	var wantMeta, gotMeta *metav1.ObjectMeta
	switch d.Object.GetKind() {
	case "ValidatingAdmissionPolicy":
		want, server := &admissionregistrationv1.ValidatingAdmissionPolicy{}, &admissionregistrationv1.ValidatingAdmissionPolicy{}
		decodeEmitted(t, d, want)
		fromServer(t, got, server)
		defaults.SetPolicyDefaults(want)
		if diff := cmp.Diff(want.Spec, server.Spec); diff != "" {
			t.Errorf("%s: spec on the server mismatch (-emitted, defaulted +server):\n%s", d.Describe(), diff)
		}
		wantMeta, gotMeta = &want.ObjectMeta, &server.ObjectMeta
	case "ValidatingAdmissionPolicyBinding":
		want, server := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		decodeEmitted(t, d, want)
		fromServer(t, got, server)
		defaults.SetBindingDefaults(want)
		if diff := cmp.Diff(want.Spec, server.Spec); diff != "" {
			t.Errorf("%s: spec on the server mismatch (-emitted, defaulted +server):\n%s", d.Describe(), diff)
		}
		wantMeta, gotMeta = &want.ObjectMeta, &server.ObjectMeta
	default:
		t.Fatalf("%s: not a policy or binding", d.Describe())
	}
	if _, ok := gotMeta.Annotations[lastApplied]; !ok {
		t.Errorf("%s: the server's object has no %s annotation: was it applied?", d.Describe(), lastApplied)
	}
	delete(gotMeta.Annotations, lastApplied)
	if len(gotMeta.Annotations) == 0 {
		gotMeta.Annotations = nil
	}
	if diff := cmp.Diff(wantMeta.Labels, gotMeta.Labels); diff != "" {
		t.Errorf("%s: labels on the server mismatch (-emitted +server):\n%s", d.Describe(), diff)
	}
	if diff := cmp.Diff(wantMeta.Annotations, gotMeta.Annotations); diff != "" {
		t.Errorf("%s: annotations on the server mismatch (-emitted +server, without %s):\n%s", d.Describe(), lastApplied, diff)
	}
}

// decodeEmitted decodes the emitted document strictly: a field the v1 types
// do not have would not reach the server.
func decodeEmitted(t *testing.T, d *manifest.Document, into runtime.Object) {
	t.Helper()
	strict, err := sigsjson.UnmarshalStrict(d.JSON, into)
	if err != nil {
		t.Fatalf("%s: %v", d.Describe(), err)
	}
	if len(strict) > 0 {
		t.Errorf("%s: fields the API does not have: %v", d.Describe(), strict)
	}
}

func fromServer(t *testing.T, u *unstructured.Unstructured, into runtime.Object) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(u.Object, into, true); err != nil {
		t.Fatalf("converting the server's %s %s: %v", u.GetKind(), u.GetName(), err)
	}
}
