package replay

import (
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestDecidedWithoutWhatIsMissing: a request whose old object or params the replay does not
// know is decided when every policy is skipped on a matchCondition that reads only the request,
// and stays indeterminate otherwise.
func TestDecidedWithoutWhatIsMissing(t *testing.T) {
	t.Parallel()
	const evictor = "system:serviceaccount:kube-system:node-controller"
	userCondition := admissionregistrationv1.MatchCondition{Name: "evictor", Expression: "request.userInfo.username == '" + evictor + "'"}
	objectCondition := admissionregistrationv1.MatchCondition{Name: "on-a-node", Expression: "has(oldObject.spec.nodeName)"}
	node := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Node", "metadata": map[string]any{"name": name, "labels": map[string]any{"edge": "true"}}}
	}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "ns1"}, "spec": map[string]any{"nodeName": "n1"}}
	eviction := func(id string) string {
		ev := map[string]any{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": map[string]any{"name": "web", "namespace": "ns1"}}
		line := levelEvent(t, id, auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 201, "", ev, nil)
		return strings.Replace(line, `"resource":"pods"`, `"resource":"pods","subresource":"eviction"`, 1)
	}
	as := func(line, user string) string {
		return strings.Replace(line, `"username":"admin"`, `"username":"`+user+`"`, 1)
	}
	// A pod's DELETE answers with the pod marked deleted (the pod strategy's grace period),
	// which it may have been before: the answer tells the old object only where the log's
	// annotations show admission ran (readAsAnswered).
	marked := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "ns1",
		"deletionTimestamp": "2025-01-01T00:00:30Z", "deletionGracePeriodSeconds": int64(30)}, "spec": map[string]any{"nodeName": "n1"}}
	deleteWeb := func(id, user string) string {
		return as(levelEvent(t, id, auditlog.LevelRequestResponse, "delete", "pods", "ns1", "web", 200, "", nil, marked), user)
	}
	// The log begins with the cluster's creation only when it holds the apiserver's own
	// namespaces: without that, nodes are incomplete (no snapshot).
	birth := as(levelEvent(t, "birth", auditlog.LevelRequestResponse, "create", "namespaces", "", "kube-system", 201, "", nil,
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "kube-system"}}), "system:apiserver")

	tests := []struct {
		name       string
		conditions []admissionregistrationv1.MatchCondition
		params     bool
		deny       bool // parameterNotFoundAction Deny
		objectSel  bool
		other      bool // and a policy without params, which evaluates the request
		lines      []string
		want       string // decision, or indeterminate: its Reason
	}{{
		name:       "a kubelet deletes an evicted pod: the user condition skips it",
		conditions: []admissionregistrationv1.MatchCondition{userCondition},
		lines:      []string{birth, levelEvent(t, "p", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 201, "", pod, pod), eviction("e"), deleteWeb("d", "system:node:n1")},
		want:       DecisionAdmit,
	}, {
		name:       "the evictor deletes an evicted pod: the policy applies, the old object decides",
		conditions: []admissionregistrationv1.MatchCondition{userCondition},
		lines:      []string{birth, levelEvent(t, "p", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 201, "", pod, pod), eviction("e"), deleteWeb("d", evictor)},
		want:       string(ReasonOldObjectUnknown),
	}, {
		name:       "a condition on the old object comes first",
		conditions: []admissionregistrationv1.MatchCondition{objectCondition, userCondition},
		lines:      []string{birth, deleteWeb("d", "system:node:n1")},
		want:       string(ReasonOldObjectUnknown),
	}, {
		name:       "a policy that selects objects by label",
		conditions: []admissionregistrationv1.MatchCondition{userCondition},
		objectSel:  true,
		lines:      []string{birth, deleteWeb("d", "system:node:n1")},
		want:       string(ReasonOldObjectUnknown),
	}, {
		name:       "incomplete params, one known: the user condition skips every param",
		conditions: []admissionregistrationv1.MatchCondition{userCondition},
		params:     true,
		lines:      []string{levelEvent(t, "n", auditlog.LevelRequestResponse, "create", "nodes", "", "n1", 201, "", node("n1"), node("n1")), levelEvent(t, "p", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 201, "", pod, pod), deleteWeb("d", "system:node:n1")},
		want:       DecisionAdmit,
	}, {
		// A cut log's kubelet: the policy without params does not read what is missing.
		name:       "incomplete params, one known: the user condition skips every param; another policy evaluates",
		conditions: []admissionregistrationv1.MatchCondition{userCondition},
		params:     true,
		other:      true,
		lines:      []string{levelEvent(t, "n", auditlog.LevelRequestResponse, "create", "nodes", "", "n1", 201, "", node("n1"), node("n1")), levelEvent(t, "p", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 201, "", pod, pod), deleteWeb("d", "system:node:n1")},
		want:       DecisionAdmit,
	}, {
		name:       "incomplete params, none known, Allow: admitted without params, skipped with any",
		conditions: []admissionregistrationv1.MatchCondition{userCondition},
		params:     true,
		lines:      []string{levelEvent(t, "p", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 201, "", pod, pod), deleteWeb("d", "system:node:n1")},
		want:       DecisionAdmit,
	}, {
		name:       "incomplete params, none known, Deny: denied without params",
		conditions: []admissionregistrationv1.MatchCondition{userCondition},
		params:     true,
		deny:       true,
		lines:      []string{levelEvent(t, "p", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 201, "", pod, pod), deleteWeb("d", "system:node:n1")},
		want:       string(ReasonParamUnknown),
	}, {
		name:       "incomplete params, the evictor: the params decide",
		conditions: []admissionregistrationv1.MatchCondition{userCondition},
		params:     true,
		lines:      []string{levelEvent(t, "n", auditlog.LevelRequestResponse, "create", "nodes", "", "n1", 201, "", node("n1"), node("n1")), levelEvent(t, "p", auditlog.LevelRequestResponse, "create", "pods", "ns1", "web", 201, "", pod, pod), deleteWeb("d", evictor)},
		want:       string(ReasonParamUnknown),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, b := levelPolicy("guard", "pods", admissionregistrationv1.Delete, nil, "false")
			p.Spec.MatchConditions = tt.conditions
			if tt.params {
				p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "Node"}
				b.Spec.ParamRef = &admissionregistrationv1.ParamRef{
					Selector:                &metav1.LabelSelector{MatchLabels: map[string]string{"edge": "true"}},
					ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction),
				}
				if tt.deny {
					b.Spec.ParamRef.ParameterNotFoundAction = ptr.To(admissionregistrationv1.DenyAction)
				}
			}
			if tt.objectSel {
				p.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
			}
			ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
			if tt.other {
				o, ob := levelPolicy("named", "pods", admissionregistrationv1.Delete, nil, "oldObject.metadata.name != ''")
				ps, bs = append(ps, o), append(bs, ob)
			}
			sum, recs := replayLines(t, ps, bs, tt.lines...)
			rec := recs["d"]
			if rec == nil {
				t.Fatalf("no record of the delete; summary %+v", sum)
			}
			got := rec.Decision
			if got == DecisionIndeterminate {
				got = string(rec.Reason)
			}
			if got != tt.want {
				t.Errorf("delete decided %q (%s, %v), want %q", got, rec.Indeterminate, rec.Notes, tt.want)
			}
			if tt.want == DecisionAdmit && !strings.Contains(strings.Join(rec.Notes, " "), "decided without what is not known") {
				t.Errorf("delete admitted without saying what it did not know: notes %q", rec.Notes)
			}
		})
	}
}

// TestLogLacksWrites: a log that begins with the cluster's creation holds every object, until
// a write of one it never showed (one kube-apiserver's log of two: the other created it) shows
// it does not: a param it never showed is not known to be absent after that, and the summary
// says why.
func TestLogLacksWrites(t *testing.T) {
	t.Parallel()
	birth := strings.Replace(levelEvent(t, "birth", auditlog.LevelRequestResponse, "create", "namespaces", "", "kube-system", 201, "", nil,
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "kube-system"}}), `"username":"admin"`, `"username":"system:apiserver"`, 1)
	cm := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": name, "namespace": "ns1", "resourceVersion": "30"}, "data": map[string]any{"max": "3"}}
	}
	create := levelEvent(t, "c", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "c", 201, "", cm("c"), cm("c"))
	// Admitted without a param (parameterNotFoundAction Allow); with one, denied.
	p, b := levelPolicy("limited", "configmaps", admissionregistrationv1.Create, nil, "false")
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "limits", Namespace: "params", ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction)}
	for _, tc := range []struct {
		name     string
		lines    []string
		decision string
		reason   Reason
		note     bool
	}{{
		name:     "the log holds every object: no param",
		lines:    []string{birth, create},
		decision: DecisionAdmit,
	}, {
		name: "a patch of an object the log never showed",
		lines: []string{birth, levelEvent(t, "other", auditlog.LevelRequestResponse, "patch", "configmaps", "ns1", "other", 200, "", map[string]any{"data": map[string]any{"max": "3"}}, cm("other")),
			create},
		decision: DecisionIndeterminate, reason: ReasonParamUnknown, note: true,
	}, {
		// kube-apiserver's flow-control configuration as it starts: the consumer's status patch
		// of an object the producer's create, logged after it, made: they ran concurrently.
		name: "a patch of an object whose create, logged after it, ran concurrently",
		lines: []string{timedEvent(t, birth, "00.000000", "00.001000", nil),
			timedEvent(t, levelEvent(t, "other", auditlog.LevelRequestResponse, "patch", "configmaps", "ns1", "other", 200, "", map[string]any{"data": map[string]any{"max": "3"}}, cm("other")), "01.000000", "01.010000", nil),
			timedEvent(t, levelEvent(t, "oc", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "other", 201, "", cm("other"), cm("other")), "00.990000", "01.020000", nil),
			timedEvent(t, create, "02.000000", "02.010000", nil)},
		decision: DecisionAdmit,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			sum, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, tc.lines...)
			checkDecision(t, recs["c"], tc.decision, tc.reason)
			noted := slices.ContainsFunc(sum.Notes, func(n string) bool { return strings.Contains(n, "the log lacks writes the server made") })
			if noted != tc.note {
				t.Errorf("summary notes %q: the log lacking writes noted %v, want %v", sum.Notes, noted, tc.note)
			}
		})
	}
}

// TestDeleteAnsweredOverUnknown: a DELETE of an object the State does not know (no snapshot,
// its writes not in the log) is decided on the object it answered with, as the store read it
// before it marked it: where the log's annotations show admission ran, a mark with a grace
// period the options did not ask for is this DELETE's own (a mark already there would have
// left the deletion pending, without admission); a mark of period 0 may have been there
// before (an object with finalizers, marked, deleted again: admission runs again).
func TestDeleteAnsweredOverUnknown(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("guard", "configmaps", admissionregistrationv1.Delete, nil, "!has(oldObject.metadata.deletionTimestamp)")
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "marked", ValueExpression: "string(has(oldObject.metadata.deletionTimestamp))"}}
	b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}
	cm := func(grace any, finalizers ...any) map[string]any {
		meta := map[string]any{"name": "cm", "namespace": "ns1", "uid": "u1", "resourceVersion": "9"}
		if grace != nil {
			meta["deletionTimestamp"] = "2026-12-01T00:00:30Z"
			meta["deletionGracePeriodSeconds"] = grace
		}
		if len(finalizers) > 0 {
			meta["finalizers"] = finalizers
		}
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta}
	}
	for _, tc := range []struct {
		name      string
		answer    map[string]any
		annotated bool
		want      string // decision, or indeterminate: its Reason
	}{
		{"removed at once", cm(nil), false, DecisionAdmit},
		{"marked with a grace period, admission shown", cm(int64(30)), true, DecisionAdmit},
		{"marked with a grace period, admission not shown", cm(int64(30)), false, string(ReasonOldObjectUnknown)},
		{"marked with period 0 for its finalizers, admission shown", cm(int64(0), "x/hold"), true, string(ReasonUnknownField)},
		{"answered unmarked with finalizers: not the server's", cm(nil, "x/hold"), false, string(ReasonOldObjectUnknown)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var annotations map[string]string
			if tc.annotated {
				annotations = map[string]string{"guard/marked": "false"}
			}
			line := timedEvent(t, levelEvent(t, "d", auditlog.LevelRequestResponse, "delete", "configmaps", "ns1", "cm", 200, "", nil, tc.answer), "01.000000", "01.010000", annotations)
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, line)
			rec := recs["d"]
			if rec == nil {
				t.Fatal("no record of the delete")
			}
			got := rec.Decision
			if got == DecisionIndeterminate {
				got = string(rec.Reason)
			}
			if got != tc.want || rec.Decision != DecisionIndeterminate && len(rec.Disagreements) > 0 {
				t.Errorf("delete: %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestNotFoundAfterFirstAttempt: a patch answered 404 whose annotations show validating
// admission ran: the store's first attempt ran it on the version the object's deletion removed
// (the watch cache's copy), then found it gone. Decided on that version; without the
// annotations, refused before admission.
func TestNotFoundAfterFirstAttempt(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("guard", "configmaps", admissionregistrationv1.Update, nil, "true")
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "old", ValueExpression: "string(oldObject.data.k)"}}
	b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}
	cm := func(rv, v string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "cm", "namespace": "ns1", "uid": "u1", "resourceVersion": rv}, "data": map[string]any{"k": v}}
	}
	// The log begins with the cluster's creation: the State knows configmaps whole.
	birth := asUser(t, levelEvent(t, "birth", auditlog.LevelRequestResponse, "create", "namespaces", "", "kube-system", 201, "", nil,
		map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "kube-system"}}), "system:apiserver")
	notFound := `configmaps "cm" not found`
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		want        string
	}{
		{"the log shows admission ran", map[string]string{"guard/old": "b"}, DecisionAdmit},
		{"it does not", nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lines := []string{
				timedEvent(t, birth, "00.000000", "00.001000", nil),
				timedEvent(t, levelEvent(t, "c", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "cm", 201, "", cm("", "a"), cm("5", "a")), "01.000000", "01.010000", nil),
				timedEvent(t, levelEvent(t, "u", auditlog.LevelRequestResponse, "update", "configmaps", "ns1", "cm", 200, "", cm("5", "b"), cm("6", "b")), "02.000000", "02.010000", nil),
				timedEvent(t, levelEvent(t, "d", auditlog.LevelRequestResponse, "delete", "configmaps", "ns1", "cm", 200, "", nil, cm("6", "b")), "03.000000", "03.010000", nil),
				timedEvent(t, levelEvent(t, "p", auditlog.LevelRequestResponse, "patch", "configmaps", "ns1", "cm", 404, notFound,
					map[string]any{"data": map[string]any{"k": "c"}}, nil), "03.005000", "03.020000", tc.annotations),
			}
			_, recs := replayLines(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, lines...)
			checkDecision(t, recs["p"], tc.want, "")
		})
	}
}
