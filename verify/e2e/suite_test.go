package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/vapc-dev/vapc/cel/manifest"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/e2e/harness"
	"github.com/vapc-dev/vapc/verify/suite"
)

// suiteFiles are the suites whose cases TestSuiteParity sends to the server: the in-tree
// guards', the recorded Kosmos sample's and the MutatingAdmissionPolicies' (on built-in kinds
// and on a custom resource, whose CRD is created first).
func suiteFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob("../../policies/testdata/*.suite.yaml")
	if err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{"kosmos", "mutating", "mutating-crd"} {
		more, err := filepath.Glob("../../testdata/suites/" + dir + "/*.suite.yaml")
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, more...)
	}
	sort.Strings(files)
	return files
}

// TestSuiteParity sends every case of the in-tree guards' suites to a real kube-apiserver as a
// real request (its cluster objects and old object created first, as the case's user) and
// checks that the server decides what the case expects, with the expected code and message,
// and what vapc's evaluator decides for the same case.
//
// No case may be left out: a case whose request the server cannot be made to receive
// literally (an authorizer answered from vapc's configuration, CONNECT, a requestKind pinned
// by an AdmissionReview through another version) or that the server refuses before admission
// fails the test. The in-tree suites are written so that every case reaches admission.
func TestSuiteParity(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd; skipped with -short")
	}
	// Suites give objects as stored. The default admission plugins that add to a pod what a
	// suite's old object does not hold (tolerations, a service account token volume, a
	// priority) are off, so that the stored object is the case's and an update of it is the
	// case's update.
	files := suiteFiles(t)
	if len(files) < 2 {
		t.Fatalf("found %d suites, want the in-tree guards' and the Kosmos sample's", len(files))
	}
	p := suiteParity(t, files, false, "--disable-admission-plugins=DefaultTolerationSeconds,ServiceAccount,Priority")
	if p.cases < 35 {
		t.Errorf("%d cases, want the in-tree suites' (at least 35)", p.cases)
	}
	if p.compared < 8 {
		t.Errorf("%d stored objects compared, want every admitted creation of the mutating suites' (at least 8)", p.compared)
	}
}

// TestSuiteParityPipeline sends the cases of the suites that run through kube-apiserver's
// request pipeline (pipeline: true) to a server with its default admission plugins, but the
// ServiceAccount and Priority plugins (a suite's stored pods do not hold what they add, so an
// update of one would change it): the server must decide what vapc's pipeline decides, the
// refusals before admission included.
func TestSuiteParityPipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd; skipped with -short")
	}
	files, err := filepath.Glob("../../testdata/suites/pipeline/*.suite.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no pipeline suites: %v", err)
	}
	p := suiteParity(t, files, true, "--disable-admission-plugins=ServiceAccount,Priority")
	if p.sent < 5 {
		t.Errorf("%d cases sent, want the pipeline suite's (at least 5)", p.sent)
	}
}

// suiteParity sends every case of the suites to a server started with the flags, as
// TestSuiteParity describes; pipelineOnly sends only the cases that go through the request
// pipeline (for a server whose admission plugins change objects: a case without the pipeline
// gives the object as admission sees it).
func suiteParity(t *testing.T, files []string, pipelineOnly bool, flags ...string) *parity {
	start := time.Now()
	s := harness.Start(t, harness.WithAPIServerFlags(flags...))
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	p := &parity{cluster: newCluster(t, s), ctx: ctx, written: map[string]*unstructured.Unstructured{}, granted: map[string]bool{}}
	p.sync(ctx)
	cases, sent := 0, 0
	defined := map[string]bool{} // the CRDs of the suites, by name
	for _, f := range files {
		suites, err := suite.Load(f)
		if err != nil {
			t.Fatalf("suite.Load(%q) = %v", f, err)
		}
		for _, st := range suites {
			res, err := st.Resolve()
			if err != nil {
				t.Fatalf("%s: Resolve() = %v", f, err)
			}
			for _, c := range st.CRDs {
				docs, err := manifest.ReadPaths(nil, filepath.Join(filepath.Dir(f), c))
				if err != nil {
					t.Fatal(err)
				}
				for _, d := range docs {
					if d.Object.GetKind() == "CustomResourceDefinition" && !defined[d.Object.GetName()] {
						p.defineCRD(ctx, d.Object)
						defined[d.Object.GetName()] = true
					}
				}
			}
			// What vapc decides for the same cases, to hold it to the server too.
			local, err := suite.Run(ctx, st)
			if err != nil {
				t.Fatalf("%s: Run() = %v", f, err)
			}
			set := policySet{}
			var mutating []*unstructured.Unstructured
			for _, u := range res.Policies {
				switch u.GetKind() {
				case "MutatingAdmissionPolicy", "MutatingAdmissionPolicyBinding":
					mutating = append(mutating, u)
				case "ValidatingAdmissionPolicy":
					pol := &admissionregistrationv1.ValidatingAdmissionPolicy{}
					fromUnstructured(t, u, pol)
					set.policies = append(set.policies, pol)
				case "ValidatingAdmissionPolicyBinding":
					b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
					fromUnstructured(t, u, b)
					set.bindings = append(set.bindings, b)
				}
			}
			p.installed = set
			p.install(ctx, set)
			p.installMutating(ctx, mutating)
			for i := range res.Cases {
				rc := &res.Cases[i]
				name := fmt.Sprintf("%s: %s", st.Pos(fmt.Sprintf("cases[%d]", i)), rc.Case.Name)
				cases++
				if rc.Err != nil {
					t.Errorf("%s: %v", name, rc.Err)
					continue
				}
				if pipelineOnly && !st.Pipelined(rc.Case) {
					continue
				}
				if why := p.skip(st, rc); why != "" {
					t.Errorf("%s: cannot be sent to the server: %s", name, why)
					continue
				}
				if why := p.run(name, st, rc, &local.Cases[i]); why != "" {
					t.Errorf("%s: the request did not reach admission: %s", name, why)
					continue
				}
				sent++
			}
			p.uninstall(ctx, set)
			p.uninstallMutating(ctx, mutating)
		}
	}
	t.Logf("%d of %d cases of %d suites sent to the server, %d stored objects compared, %s", sent, cases, len(files), p.compared, time.Since(start).Round(time.Millisecond))
	p.cases, p.sent = cases, sent
	return p
}

// parity sends suite cases to a server.
type parity struct {
	*cluster
	ctx       context.Context
	installed policySet
	// written are the objects the cases wrote, as written, by kind, namespace and name; an
	// object a case's request may have changed is not among them.
	written map[string]*unstructured.Unstructured
	granted map[string]bool
	// compared counts the cases whose stored object was compared with vapc's; cases those
	// of the suites.
	compared, cases, sent int
}

func objectKey(u *unstructured.Unstructured) string {
	ns := u.GetNamespace()
	if ns == "" && u.GetKind() != "Node" && u.GetKind() != "Namespace" {
		ns = metav1.NamespaceDefault
	}
	return u.GetKind() + "/" + ns + "/" + u.GetName()
}

// skip says why a case cannot be sent to a server literally, or "".
func (p *parity) skip(st *suite.Suite, rc *suite.ResolvedCase) string {
	c := rc.Case
	switch {
	case c.Authorizer != nil || st.Authorizer != nil:
		return "the case's authorizer answers from vapc's configuration, the server's from RBAC"
	case rc.Request.Operation == admission.Connect:
		return "CONNECT needs a kubelet to proxy to"
	}
	if k := rc.Request.Kind; !k.Empty() {
		res := rc.Request.Resource
		if want := p.mapperKind(res, rc.Request.SubResource); !want.Empty() && want != k {
			return fmt.Sprintf("the request's kind %s is not the kind the server's %s takes (%s)", k, res.Resource, want)
		}
	}
	return ""
}

// mapperKind is the kind a request for the resource and subresource carries.
func (p *parity) mapperKind(gvr schema.GroupVersionResource, sub string) schema.GroupVersionKind {
	if sub != "" {
		return p.resources.KindFor(gvr, sub)
	}
	gvk, err := p.mapper.KindFor(gvr)
	if err != nil {
		return schema.GroupVersionKind{}
	}
	return gvk
}

// run prepares the cluster for a case, sends its request and compares the decision. It
// returns why the request could not reach admission, or "".
func (p *parity) run(name string, su *suite.Suite, rc *suite.ResolvedCase, localCase *suite.CaseReport) string {
	t, ctx := p.t, p.ctx
	t.Helper()
	local := localCase.Decision
	req := rc.Request
	user := req.UserInfo.Username
	if user != "" && user != harness.AdminUser && !p.granted[user] {
		p.grantAll(ctx, user)
		p.granted[user] = true
	}

	// The cluster objects of the case, and nothing left of earlier cases.
	desired := map[string]*unstructured.Unstructured{}
	for _, u := range rc.Objects {
		desired[objectKey(u)] = u
	}
	target := req.Object
	if target == nil {
		target = req.OldObject
	}
	var targetKey string
	if target != nil && req.SubResource == "" {
		target = target.DeepCopy()
		if req.Namespace != "" {
			target.SetNamespace(req.Namespace)
		}
		if req.Name != "" {
			target.SetName(req.Name)
		}
		targetKey = objectKey(target)
	}
	switch req.Operation {
	case admission.Create:
		if req.SubResource == "eviction" {
			// An eviction reaches admission for a pod that exists.
			pod := pod(req.Name, "")
			pod.SetNamespace(req.Namespace)
			desired[objectKey(pod)] = pod
		} else if targetKey != "" {
			delete(desired, targetKey)
			p.remove(ctx, target)
			delete(p.written, targetKey)
		}
	case admission.Update, admission.Delete:
		old := req.OldObject.DeepCopy()
		old.SetNamespace(target.GetNamespace())
		old.SetName(target.GetName())
		desired[targetKey] = old
	}
	for k, u := range p.written {
		if _, ok := desired[k]; !ok && u.GetKind() != "Namespace" {
			p.remove(ctx, u)
			delete(p.written, k)
		}
	}
	keys := make([]string, 0, len(desired))
	for k := range desired {
		keys = append(keys, k)
	}
	// Namespaces first, nodes before pods.
	sort.Slice(keys, func(i, j int) bool {
		ni, nj := strings.HasPrefix(keys[i], "Namespace/"), strings.HasPrefix(keys[j], "Namespace/")
		if ni != nj {
			return ni
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		u := desired[k]
		if w, ok := p.written[k]; ok && equality.Semantic.DeepEqual(w.Object, u.Object) {
			continue
		}
		if u.GetKind() == "Pod" {
			p.remove(ctx, u) // pods are immutable
		}
		p.putSuspending(u)
		p.written[k] = u.DeepCopy()
	}
	// The request may change its object.
	delete(p.written, targetKey)
	if req.SubResource == "eviction" {
		delete(p.written, "Pod/"+req.Namespace+"/"+req.Name)
	}
	p.sync(ctx)

	var got *unstructured.Unstructured
	var err error
	var notLiteral string
	untilSchemaKnown(func() error {
		got, err, notLiteral = p.send(rc)
		return err
	})
	if notLiteral != "" {
		return notLiteral
	}
	if got != nil && localCase.Object != nil {
		// What the mutating policies made is what the server stored (or would have, dry-run).
		p.compared++
		if d := diffStored(localCase.Object, got); d != "" {
			t.Errorf("%s: the server's object differs from vapc's (-vapc +server):\n%s", name, d)
		}
	}
	want := rc.Case.Expect
	st, refused := statusOf(err)
	switch {
	case local == nil:
		t.Errorf("%s: vapc could not evaluate the case", name)
	case err == nil && !local.Allowed:
		t.Errorf("%s: the server admitted, vapc denies %d %q", name, local.Code, local.Message)
	case refused && local.Allowed:
		t.Errorf("%s: the server denied %d %q, vapc admits", name, st.Code, st.Message)
	case refused && !local.Refuses(st.Code, st.Message):
		t.Errorf("%s: the server denied %d %q, vapc denies %d %q", name, st.Code, st.Message, local.Code, local.Message)
	}
	switch {
	case err != nil && !refused:
		t.Errorf("%s: %v", name, err)
	case want.Decision == "admit" && err != nil:
		t.Errorf("%s: the server denied %d %q, the case expects admit", name, st.Code, st.Message)
	case want.Decision == "deny" && err == nil:
		t.Errorf("%s: the server admitted, the case expects deny", name)
	case want.Decision == "deny" && !strings.Contains(st.Message, "' with binding '") && !su.Pipelined(rc.Case):
		t.Errorf("%s: the server refused %d %q, not an admission policy", name, st.Code, st.Message)
	case want.Decision == "deny" && want.Message != "" && st.Message != want.Message:
		t.Errorf("%s: the server denied with\n\t%q\nthe case expects\n\t%q", name, st.Message, want.Message)
	case want.Decision == "deny" && want.Code != 0 && st.Code != want.Code:
		t.Errorf("%s: the server denied with code %d, the case expects %d", name, st.Code, want.Code)
	case want.Decision == "deny" && want.Reason != "" && string(st.Reason) != want.Reason:
		t.Errorf("%s: the server denied with reason %s, the case expects %s", name, st.Reason, want.Reason)
	}
	return ""
}

// putSuspending writes an object of the cluster; when a policy under test refuses the write
// (an old object that breaks the guard, created before the guard in the story of the case),
// it writes it with the bindings removed.
func (p *parity) putSuspending(u *unstructured.Unstructured) {
	p.t.Helper()
	_, err := p.tryPut(p.ctx, u)
	if err == nil {
		return
	}
	if !strings.Contains(err.Error(), "ValidatingAdmissionPolicy '") {
		p.t.Fatalf("writing %s: %v", objectKey(u), err)
	}
	bindings := policySet{bindings: p.installed.bindings}
	p.uninstall(p.ctx, bindings)
	p.sync(p.ctx)
	p.put(p.ctx, u)
	p.install(p.ctx, bindings)
}

// send sends the case's request as its user. notLiteral says why the server cannot receive it.
func (p *parity) send(rc *suite.ResolvedCase) (out *unstructured.Unstructured, err error, notLiteral string) {
	req := rc.Request
	var d dynamic.Interface = p.dyn
	if u := req.UserInfo; u.Username != "" && u.Username != harness.AdminUser {
		d = p.dynamicFor(rest.ImpersonationConfig{UserName: u.Username, UID: u.UID, Groups: u.Groups, Extra: u.Extra})
	}
	ri := d.Resource(req.Resource)
	var nri dynamic.ResourceInterface = ri
	ns := req.Namespace
	var obj *unstructured.Unstructured
	if req.Object != nil {
		obj = req.Object.DeepCopy()
	}
	name := req.Name
	for _, u := range []*unstructured.Unstructured{obj, req.OldObject} {
		if u != nil && ns == "" {
			ns = u.GetNamespace()
		}
		if u != nil && name == "" {
			name = u.GetName()
		}
	}
	if p.namespaced(req.Resource) {
		if ns == "" {
			ns = metav1.NamespaceDefault
		}
		nri = ri.Namespace(ns)
	}
	var subs []string
	if req.SubResource != "" {
		subs = []string{req.SubResource}
	}
	dryRun := []string(nil)
	if req.DryRun {
		dryRun = []string{metav1.DryRunAll}
	}
	ctx := p.ctx
	switch req.Operation {
	case admission.Create:
		if obj != nil && obj.GetNamespace() == "" && ns != "" && req.SubResource == "" {
			obj.SetNamespace(ns)
		}
		out, err = nri.Create(ctx, obj, metav1.CreateOptions{DryRun: dryRun}, subs...)
	case admission.Update:
		cur, gerr := nri.Get(ctx, name, metav1.GetOptions{})
		if gerr != nil {
			return nil, gerr, ""
		}
		obj.SetResourceVersion(cur.GetResourceVersion())
		out, err = nri.Update(ctx, obj, metav1.UpdateOptions{DryRun: dryRun}, subs...)
		if st, ok := statusOf(err); ok && st.Code == 422 && !strings.Contains(st.Message, "ValidatingAdmissionPolicy '") {
			return nil, nil, "the server refuses the update before admission: " + st.Message
		}
	case admission.Delete:
		opts := metav1.DeleteOptions{DryRun: dryRun}
		if req.Options != nil {
			data, _ := json.Marshal(req.Options.Object)
			if jerr := json.Unmarshal(data, &opts); jerr != nil {
				return nil, jerr, ""
			}
			if opts.Preconditions != nil && opts.Preconditions.UID != nil {
				// The case's uid is made up: the precondition must hold for the request to reach
				// admission.
				cur, gerr := nri.Get(ctx, name, metav1.GetOptions{})
				if gerr != nil {
					return nil, gerr, ""
				}
				uid := types.UID(cur.GetUID())
				opts.Preconditions.UID = &uid
			}
			if req.DryRun {
				opts.DryRun = dryRun
			}
		}
		err = nri.Delete(ctx, name, opts, subs...)
	default:
		return nil, nil, fmt.Sprintf("operation %s", req.Operation)
	}
	return out, err, ""
}

// namespaced says whether the resource is namespaced.
func (p *parity) namespaced(gvr schema.GroupVersionResource) bool {
	gvk, err := p.mapper.KindFor(gvr)
	if err != nil {
		p.t.Fatalf("%s: %v", gvr, err)
	}
	m, err := p.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		p.t.Fatalf("%s: %v", gvr, err)
	}
	return m.Scope.Name() == meta.RESTScopeNameNamespace
}

// installMutating writes the MutatingAdmissionPolicies and bindings of a suite and waits until
// the admission plugin runs them.
func (p *parity) installMutating(ctx context.Context, docs []*unstructured.Unstructured) {
	p.t.Helper()
	if len(docs) == 0 {
		return
	}
	for _, u := range docs {
		if u.GetKind() == "MutatingAdmissionPolicy" {
			p.put(ctx, u)
		}
	}
	for _, u := range docs {
		if u.GetKind() == "MutatingAdmissionPolicyBinding" {
			p.put(ctx, u)
		}
	}
	p.syncMutating(ctx)
}

// uninstallMutating deletes what installMutating wrote and waits until the plugin forgets it.
func (p *parity) uninstallMutating(ctx context.Context, docs []*unstructured.Unstructured) {
	p.t.Helper()
	if len(docs) == 0 {
		return
	}
	for _, kind := range []string{"MutatingAdmissionPolicyBinding", "MutatingAdmissionPolicy"} {
		for _, u := range docs {
			if u.GetKind() == kind {
				p.remove(ctx, u)
			}
		}
	}
	p.syncMutating(ctx)
}

// syncMutating waits until the MutatingAdmissionPolicy plugin sees every policy written so
// far: it writes a barrier policy of a new generation, after the others, and waits until a
// dry-run request shows its mark. The plugin's policy source compiles its informer's
// policies as a whole, in the order they came.
func (p *parity) syncMutating(ctx context.Context) {
	p.t.Helper()
	p.gen++
	gen := fmt.Sprint(p.gen)
	p.barrierNamespace(ctx)
	policy := obj(map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicy",
		"metadata": map[string]any{"name": "vapc-map-barrier"},
		"spec": map[string]any{
			"reinvocationPolicy": "Never",
			"matchConstraints": map[string]any{
				"resourceRules":  []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"configmaps"}}},
				"objectSelector": map[string]any{"matchLabels": map[string]any{"vapc.dev/map-barrier": "probe"}},
			},
			"mutations": []any{map[string]any{"patchType": "JSONPatch", "jsonPatch": map[string]any{
				"expression": "[JSONPatch{op: 'add', path: '/metadata/labels/vapc.dev~1map-gen', value: '" + gen + "'}]",
			}}},
		},
	})
	binding := obj(map[string]any{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingAdmissionPolicyBinding",
		"metadata": map[string]any{"name": "vapc-map-barrier"},
		"spec":     map[string]any{"policyName": "vapc-map-barrier"},
	})
	p.put(ctx, policy)
	p.put(ctx, binding)
	deadline := time.Now().Add(60 * time.Second)
	for {
		probe := obj(map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{
			"name": "map-probe", "namespace": barrierNS, "labels": map[string]any{"vapc.dev/map-barrier": "probe"},
		}})
		out, err := p.dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}).Namespace(barrierNS).
			Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil && out.GetLabels()["vapc.dev/map-gen"] == gen {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("the MutatingAdmissionPolicy plugin did not see generation %s within 60s; last probe: %v", gen, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// diffStored diffs vapc's object with the server's, both defaulted as the server defaults
// them, without the metadata the server sets on a write and without the status the registry
// strategy resets (a case's object is the object as admission sees it, not as stored).
func diffStored(local json.RawMessage, server *unstructured.Unstructured) string {
	var l, s map[string]any
	decode := func(data []byte, v any) error {
		data, err := verify.DefaultJSON(data)
		if err != nil {
			return err
		}
		d := json.NewDecoder(bytes.NewReader(data))
		d.UseNumber() // 30 and 30.0 apart, as the server tells them
		return d.Decode(v)
	}
	raw, err := server.MarshalJSON()
	if err == nil {
		err = decode(raw, &s)
	}
	if err == nil {
		err = decode(local, &l)
	}
	if err != nil {
		return err.Error()
	}
	delete(l, "status")
	delete(s, "status")
	for _, m := range []map[string]any{l, s} {
		if md, ok := m["metadata"].(map[string]any); ok {
			for _, f := range []string{"uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"} {
				delete(md, f)
			}
		}
	}
	return cmp.Diff(l, s)
}
