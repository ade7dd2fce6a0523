package replay

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vapc-dev/vapc/cel"
	_ "github.com/vapc-dev/vapc/cel/mutatingvalidation" // kube-apiserver's validation of MutatingAdmissionPolicies
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/apiserver"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestMutatingPoliciesReplay replays the recorded end-to-end log with the mutating form of the
// toleration floor among the policies: the pod creates the validating guard refused in the
// server are repaired by the mutating policy first, so the replay admits them, and each record
// says what the policy changed.
func TestMutatingPoliciesReplay(t *testing.T) {
	t.Parallel()
	set, diags := cel.ReadPaths(nil, filepath.Join("testdata", "toleration-floor-map.yaml"))
	if diags.HasErrors() || len(set.MutatingPolicies) != 1 {
		t.Fatalf("reading the mutating policy: %v", diags)
	}
	dir := filepath.Join(auditData, "recorded-e2e")
	_, without := replayScenario(t, dir, "audit.log.gz")
	_, with := replayScenario(t, dir, "audit.log.gz", WithMutatingPolicies(set.MutatingPolicyList(), set.MutatingBindingList()))
	if len(with) != len(without) {
		t.Fatalf("%d records with the mutating policy, %d without", len(with), len(without))
	}
	repaired, mutated := 0, 0
	for i, w := range with {
		o := without[i]
		if len(o.Mutations) > 0 {
			t.Errorf("line %d: mutations without a mutating policy: %v", o.Line, o.Mutations)
		}
		refusedByFloor := o.Decision == DecisionDeny && strings.Contains(o.Message, "eviction-toleration-floor")
		if len(w.Mutations) > 0 {
			mutated++
			for _, c := range w.Mutations {
				if c.Policy != "toleration-floor" || !strings.Contains(string(c.Patch), `"value":600`) {
					t.Errorf("line %d: unexpected change %+v %s", w.Line, c, c.Patch)
				}
			}
		}
		switch {
		case refusedByFloor && w.Operation == "CREATE":
			if w.Decision != DecisionAdmit || len(w.Mutations) == 0 {
				t.Errorf("line %d: the floor refused the pod (%s); with the mutating policy: %s, mutations %v", w.Line, o.Message, w.Decision, w.Mutations)
			}
			repaired++
		case w.Decision != o.Decision && !refusedByFloor:
			t.Errorf("line %d: decision %s without the mutating policy, %s with it", w.Line, o.Decision, w.Decision)
		}
	}
	if repaired == 0 || mutated < repaired {
		t.Errorf("%d pod creates repaired, %d requests mutated: want some, the repaired among them", repaired, mutated)
	}
	t.Logf("%d pod creates repaired, %d requests mutated", repaired, mutated)
}

// TestPipelineVersion: the request pipeline is built for the version the evaluator decides as.
func TestPipelineVersion(t *testing.T) {
	t.Parallel()
	if apiserver.KubernetesVersion != verify.KubernetesVersion {
		t.Errorf("the pipeline is built for Kubernetes %s, the evaluator decides as %s", apiserver.KubernetesVersion, verify.KubernetesVersion)
	}
}

// TestMutatingPoliciesAlone replays the recorded end-to-end log with the mutating policy and no
// validating one: the requests only it matches are replayed, and it changes the pods it
// changes beside the validating guard.
func TestMutatingPoliciesAlone(t *testing.T) {
	t.Parallel()
	set, diags := cel.ReadPaths(nil, filepath.Join("testdata", "toleration-floor-map.yaml"))
	if diags.HasErrors() || len(set.MutatingPolicies) != 1 {
		t.Fatalf("reading the mutating policy: %v", diags)
	}
	opt := WithMutatingPolicies(set.MutatingPolicyList(), set.MutatingBindingList())
	dir := filepath.Join(auditData, "recorded-e2e")
	_, beside := replayScenario(t, dir, "audit.log.gz", opt)
	want := map[int]string{}
	for _, rec := range beside {
		if len(rec.Mutations) > 0 {
			want[rec.Line] = string(rec.Mutations[0].Patch)
		}
	}
	r, err := New(nil, nil, opt, WithCheckRecorded(true))
	if err != nil {
		t.Fatal(err)
	}
	_, recs := replayFile(t, r, filepath.Join(dir, "audit.log.gz"))
	got := map[int]string{}
	for _, rec := range recs {
		if rec.Resource != "pods" || rec.Operation != "CREATE" {
			t.Errorf("line %d: %s %s replayed, which the mutating policy does not match", rec.Line, rec.Operation, rec.Resource)
		}
		if rec.Decision == DecisionIndeterminate {
			t.Errorf("line %d: indeterminate: %s", rec.Line, rec.Indeterminate)
		}
		if len(rec.Mutations) > 0 {
			got[rec.Line] = string(rec.Mutations[0].Patch)
		}
	}
	if len(want) == 0 {
		t.Fatal("the mutating policy changed nothing beside the validating guard")
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("changes alone and beside the validating guard differ (-beside +alone):\n%s", d)
	}
}

func TestPointerValue(t *testing.T) {
	t.Parallel()
	obj := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"rnd.vapc.dev/block": "on", "a~b": "x"}},
		"spec":     map[string]any{"tolerations": []any{map[string]any{"tolerationSeconds": int64(600)}}},
	}
	tests := []struct {
		pointer string
		want    any
		ok      bool
	}{
		{"/metadata/annotations/rnd.vapc.dev~1block", "on", true},
		{"/metadata/annotations/a~0b", "x", true},
		{"/spec/tolerations/0/tolerationSeconds", int64(600), true},
		{"/spec/tolerations/1/tolerationSeconds", nil, false},
		{"/spec/tolerations/x", nil, false},
		{"/metadata/labels", nil, false},
		{"/metadata/annotations/rnd.vapc.dev~1block/deeper", nil, false},
	}
	for _, tc := range tests {
		got, ok := pointerValue(obj, tc.pointer)
		if ok != tc.ok || !cmp.Equal(got, tc.want) {
			t.Errorf("pointerValue(%q) = %v, %v; want %v, %v", tc.pointer, got, ok, tc.want, tc.ok)
		}
	}
}

func TestReapplied(t *testing.T) {
	t.Parallel()
	policy := &admissionregistrationv1.MutatingAdmissionPolicy{}
	policy.Name = "in-cluster"
	policy.Spec.Mutations = []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
		JSONPatch: &admissionregistrationv1.JSONPatch{Expression: "[JSONPatch{op: 'add', path: '/metadata/labels', value: {}}]"}}}
	r := &Replayer{set: policySet{mutating: replayedMutatings([]*admissionregistrationv1.MutatingAdmissionPolicy{policy}, nil)}}
	same, edited := specOf(policy), "{}"
	// The cluster's copy as kubectl sent it from a YAML block scalar (`expression: >`): the
	// same policy.
	folded := policy.DeepCopy()
	folded.Spec.Mutations[0].JSONPatch.Expression += "\n"
	blockScalar := specOf(folded)
	for _, tc := range []struct {
		name, policy, spec string
		allowed            bool
		why, clusterOnly   bool
	}{
		{"the cluster's own copy", "in-cluster", same, true, true, true},
		{"the cluster's own copy, its expression ending in a newline", "in-cluster", blockScalar, true, true, true},
		{"an edited copy", "in-cluster", edited, true, true, false},
		{"a refusal", "in-cluster", same, false, true, false},
		{"a policy the cluster has not bound", "unbound", same, true, false, false},
		{"a new policy", "new", same, true, false, false},
	} {
		cluster := &mutators{policies: map[string]mutatingPolicy{"in-cluster": {spec: tc.spec}, "unbound": {}}, bindings: map[string]string{"b": "in-cluster"}}
		m := &verify.Mutation{Allowed: tc.allowed, Changes: []verify.Change{{Policy: tc.policy, Patch: []byte(`[]`)}}}
		why, clusterOnly := r.reapplied(m, cluster)
		if (why != "") != tc.why || clusterOnly != tc.clusterOnly {
			t.Errorf("%s: reapplied = %q, %v; want a reason %v, cluster only %v", tc.name, why, clusterOnly, tc.why, tc.clusterOnly)
		}
	}
}

// TestRefusedByMutatingPolicy: kube-apiserver refused a pod create in mutating admission, so
// validating admission never ran, and the replay's pipeline refuses it there too. Recorded by
// kube-apiserver v1.37.0:
//   - internal: a JSONPatch gave spec.priority a string, which the server answered with a 500
//     it does not tie to the policy: the log's verdict is not an admission that failed after
//     validating admission, and the request is not changed;
//   - apply: an ApplyConfiguration set an atomic list, which the policy dispatcher answers
//     with the policy's error: the record lists it among the results, with the message after
//     "denied request: ", and the log's verdict names the policy.
func TestRefusedByMutatingPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dir, pod   string
		code       int32
		recorded   string
		recordedBy string
		results    []string
	}{
		{"internal", "badtype", 500, RecordedUnknown, "", nil},
		{"apply", "fa", 403, RecordedDeny, "MutatingAdmissionPolicy 'zz-mapfail-a' with binding 'zz-mapfail-a'",
			[]string{"zz-mapfail-a/zz-mapfail-a error: error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.tolerations"}},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			dir := filepath.Join("testdata", "mutating-refused", tc.dir)
			set, ps, bs := readPolicies(t, filepath.Join(dir, "policy.yaml"))
			r, err := New(ps, bs, WithMutatingPolicies(set.MutatingPolicyList(), set.MutatingBindingList()), WithCheckRecorded(true))
			if err != nil {
				t.Fatal(err)
			}
			sum, recs := replayFile(t, r, filepath.Join(dir, "audit.log.gz"))
			var pod *Record
			for _, rec := range recs {
				if rec.Resource == "pods" && rec.Name == tc.pod {
					pod = rec
				}
			}
			if pod == nil {
				t.Fatalf("no record of the pod create; summary %+v", sum)
			}
			if pod.Decision != DecisionDeny || pod.Code != tc.code || pod.Recorded != tc.recorded || pod.RecordedBy != tc.recordedBy || pod.Changed {
				t.Errorf("pod create: %s %d (%s), recorded %s by %q (%s), changed %v; want deny %d, recorded %s by %q, not changed",
					pod.Decision, pod.Code, pod.Message, pod.Recorded, pod.RecordedBy, pod.RecordedNote, pod.Changed, tc.code, tc.recorded, tc.recordedBy)
			}
			var results []string
			for _, res := range pod.Results {
				results = append(results, res.Policy+"/"+res.Binding+" "+res.Result+": "+res.Message)
			}
			if d := cmp.Diff(tc.results, results); d != "" {
				t.Errorf("results (-want +got):\n%s", d)
			}
			if len(sum.Disagreements) != 0 {
				t.Errorf("disagreements with the log's verdicts: %v, want none", sum.Disagreements)
			}
		})
	}
}

// TestMutatorsBeforeAny: the cluster's MutatingAdmissionPolicies before the log's first write of
// one may be none (nil) among the sets a request may have been admitted with: the policy is not
// bound in every set, its spec not the same in each.
func TestMutatorsBeforeAny(t *testing.T) {
	t.Parallel()
	m := &mutators{policies: map[string]mutatingPolicy{"p": {spec: "s"}}, bindings: map[string]string{"b": "p"}, earlier: []earlierMutators{{m: nil, until: "audit.log:1"}}}
	if got := [3]any{m.has("p"), m.hasAny("p"), m.specOf("p")}; got != [3]any{false, true, ""} {
		t.Errorf("has, hasAny, specOf = %v, want false, true and \"\"", got)
	}
	var none *mutators
	if got := [4]any{none.has("p"), none.hasAny("p"), none.specOf("p"), none.mayMutate(mutatedRequest{})}; got != [4]any{false, false, "", ""} {
		t.Errorf("of none: has, hasAny, specOf, mayMutate = %v, want false, false, \"\" and \"\"", got)
	}
}

// TestFailingMutatorOnUnknownStatus: a pod whose status a kubelet's patch at level
// Metadata left unknown; a MutatingAdmissionPolicy (failurePolicy Fail) that reads
// oldObject.status and errors on some values (int() of status.message) may refuse the pod's
// update: the replay must not decide it admit certain.
func TestFailingMutatorOnUnknownStatus(t *testing.T) {
	t.Parallel()
	pod := func(rv string, labels map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": "p", "namespace": "ns", "uid": "uid-p", "resourceVersion": rv, "creationTimestamp": "2026-11-24T00:00:00Z", "labels": labels},
			"spec": map[string]any{"nodeName": "leaf-1", "terminationGracePeriodSeconds": int64(30),
				"containers": []any{map[string]any{"name": "c", "image": "nginx"}}},
			"status": map[string]any{"phase": "Running"}}
	}
	rules := &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
	}}}}
	mutating := &admissionregistrationv1.MutatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "paint"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{MatchConstraints: rules,
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeApplyConfiguration,
				ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: "Object{metadata: Object.metadata{labels: {'n': string(int(oldObject.status.?message.orValue('0')) + 1)}}}"}}}}}
	binding := &admissionregistrationv1.MutatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "paint"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "paint"}}
	p, b := levelPolicy("guard", "pods", admissionregistrationv1.Update, nil, "request.userInfo.username == 'admin'")
	status := subresourceEvent(t, levelEvent(t, "status", auditlog.LevelMetadata, "patch", "pods", "ns", "p", 200, "", nil, nil), "status")
	// The cluster did not have the policy (it is among --policies only): the server admitted.
	upd := levelEvent(t, "w", auditlog.LevelRequest, "update", "pods", "ns", "p", 200, "", pod("", map[string]any{"app": "web", "x": "y"}), nil)
	sum, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		[]Option{WithCheckRecorded(true), snapshotOf(t, []any{map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns"}}, pod("10", map[string]any{"app": "web"})}),
			WithMutatingPolicies([]*admissionregistrationv1.MutatingAdmissionPolicy{mutating}, []*admissionregistrationv1.MutatingAdmissionPolicyBinding{binding})},
		Source{Name: "audit.jsonl", Reader: strings.NewReader(status + "\n" + upd + "\n")})
	rec := recs["w"]
	if rec == nil {
		t.Fatalf("no record: %+v", sum)
	}
	if rec.Decision == DecisionAdmit && rec.Certainty == CertaintyCertain {
		t.Errorf("the update: %s, want no certain admit: the mutating policy reads the status the log does not hold", describeRecord(rec))
	}
}
