package replay

import (
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

func pod(labels map[string]any, containers ...any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Pod",
		"metadata": map[string]any{"name": "p", "namespace": "ns", "labels": labels},
		"spec":     map[string]any{"containers": containers},
	}}
}

// TestApplyPatch covers the patch types an audit log can hold without its content type.
func TestApplyPatch(t *testing.T) {
	t.Parallel()
	c := func(name, image string) any { return map[string]any{"name": name, "image": image} }
	for _, tc := range []struct {
		name, body string
		query      url.Values
		want       map[string]any // labels and containers of the result
		source     string
		err        bool
	}{
		{name: "json patch", body: `[{"op":"replace","path":"/metadata/labels/tier","value":"db"}]`,
			want: map[string]any{"labels": map[string]any{"tier": "db"}, "containers": []any{c("a", "x"), c("b", "y")}}, source: "patched (json patch on the prior state)"},
		{name: "labels, merge and strategic agree", body: `{"metadata":{"labels":{"tier":"db"}}}`,
			want: map[string]any{"labels": map[string]any{"tier": "db"}, "containers": []any{c("a", "x"), c("b", "y")}}, source: "patched (merge or strategic-merge patch on the prior state)"},
		{name: "strategic directive", body: `{"spec":{"$setElementOrder/containers":[{"name":"a"},{"name":"b"}],"containers":[{"name":"b","image":"z"}]}}`,
			want: map[string]any{"labels": map[string]any{"tier": "web"}, "containers": []any{c("a", "x"), c("b", "z")}}, source: "patched (strategic-merge patch on the prior state)"},
		{name: "list: merge and strategic differ", body: `{"spec":{"containers":[{"name":"b","image":"z"}]}}`, err: true},
		{name: "server-side apply", body: `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`, query: url.Values{"fieldManager": {"kubectl"}, "force": {"true"}}, err: true},
		{name: "bad json patch", body: `[{"op":"replace","path":"/nope/x","value":1}]`, err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			old := pod(map[string]any{"tier": "web"}, c("a", "x"), c("b", "y"))
			q := tc.query
			if q == nil {
				q = url.Values{}
			}
			got, source, err := applyPatch(old, []byte(tc.body), q)
			if tc.err {
				if err == nil {
					t.Fatalf("applyPatch(%s) = %v, want an error", tc.body, got.Object)
				}
				return
			}
			if err != nil {
				t.Fatalf("applyPatch(%s): %v", tc.body, err)
			}
			labels, _, _ := unstructured.NestedFieldNoCopy(got.Object, "metadata", "labels")
			containers, _, _ := unstructured.NestedFieldNoCopy(got.Object, "spec", "containers")
			if diff := cmp.Diff(tc.want, map[string]any{"labels": labels, "containers": containers}); diff != "" {
				t.Errorf("applyPatch(%s) mismatch (-want +got):\n%s", tc.body, diff)
			}
			if source != tc.source {
				t.Errorf("source = %q, want %q", source, tc.source)
			}
		})
	}
}

// TestGracefulDeletionPending mirrors rest.BeforeDelete's pending case.
func TestGracefulDeletionPending(t *testing.T) {
	t.Parallel()
	deleting := func(grace any) *unstructured.Unstructured {
		u := pod(nil)
		md := u.Object["metadata"].(map[string]any)
		md["deletionTimestamp"] = "2026-01-05T10:01:00Z"
		if grace != nil {
			md["deletionGracePeriodSeconds"] = grace
		}
		return u
	}
	opts := func(grace any) *unstructured.Unstructured {
		if grace == nil {
			return &unstructured.Unstructured{Object: map[string]any{}}
		}
		return &unstructured.Unstructured{Object: map[string]any{"gracePeriodSeconds": grace}}
	}
	for _, tc := range []struct {
		name string
		old  *unstructured.Unstructured
		opts *unstructured.Unstructured
		want bool
	}{
		{"not being deleted", pod(nil), opts(nil), false},
		{"pending, no grace asked", deleting(int64(30)), opts(nil), true},
		{"pending, same grace", deleting(int64(30)), opts(float64(30)), true},
		{"pending, shorter grace runs admission", deleting(int64(30)), opts(float64(0)), false},
		{"grace period zero (finalizers) runs admission", deleting(int64(0)), opts(nil), false},
		{"no grace period runs admission", deleting(nil), opts(nil), false},
	} {
		if got := gracefulDeletionPending(tc.old, tc.opts); got != tc.want {
			t.Errorf("%s: gracefulDeletionPending = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestClassify reads what the log says admission did.
func TestClassify(t *testing.T) {
	t.Parallel()
	ev := func(verb, sub string, code int32, reason, msg string, ann map[string]string) *Event {
		return &Event{Verb: verb, Stage: auditlog.StageResponseComplete, ObjectRef: &ObjectRef{Resource: "pods", Name: "p", Subresource: sub},
			ResponseStatus: &Status{Code: code, Reason: reason, Message: msg}, Annotations: ann}
	}
	lost := func(e *Event) *Event {
		e.Loss = auditlog.Loss{Export: "GKE Cloud Logging", Lost: auditlog.LostMessage}
		return e
	}
	service := func(e *Event) *Event {
		e.ObjectRef.Resource = "services"
		return e
	}
	serviceAccount := func(e *Event) *Event {
		e.ObjectRef.Resource = "serviceaccounts"
		return e
	}
	type out struct {
		Outcome, By string
		Skip        Reason
		Sure        bool
	}
	for _, tc := range []struct {
		name string
		ev   *Event
		want out
	}{
		{"ok", ev("delete", "", 200, "", "", nil), out{RecordedAdmit, "", "", false}},
		{"vap deny", ev("delete", "", 422, "Invalid", `pods "a" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no`, nil), out{RecordedDeny, "ValidatingAdmissionPolicy 'p' with binding 'b'", "", false}},
		{"vap deny, forbidden", ev("delete", "", 403, "Forbidden", `ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no`, nil), out{RecordedDeny, "ValidatingAdmissionPolicy 'p' with binding 'b'", "", false}},
		{"vap deny of the IP allocation", ev("create", "", 422, "Invalid", `Service "svc-a" is invalid: spec.clusterIPs: Invalid value: [""]: failed to allocate IP: ipaddresses.networking.k8s.io "10.0.0.251" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no`, nil), out{"", "", SkipBeforeAdmission, true}},
		{"vap deny of another request", ev("create", "", 500, "InternalError", `Internal error occurred: secrets "s" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no`, nil), out{RecordedUnknown, "", "", false}},
		// The ResourceQuota plugin, after validating admission, updates the quota's status: a
		// policy denied that update, named by its own resource.
		// The service registry allocates what a Service asks for before validating admission.
		{"a node port taken", service(ev("create", "", 422, "Invalid", `Service "low" is invalid: spec.ports[0].nodePort: Invalid value: 30050: provided port is already allocated`, nil)), out{"", "", SkipBeforeAdmission, true}},
		{"a node port out of range", service(ev("update", "", 422, "Invalid", `Service "low" is invalid: spec.ports[1].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767`, nil)), out{"", "", SkipBeforeAdmission, true}},
		{"an address taken", service(ev("create", "", 422, "Invalid", `Service "s" is invalid: spec.clusterIPs: Invalid value: []string{"10.0.0.10"}: failed to allocate IP 10.0.0.10: provided IP is already allocated`, nil)), out{"", "", SkipBeforeAdmission, true}},
		// The patcher's answer to a JSON patch whose path the object it read lacks (random
		// parity m:1168: a concurrent merge patch, logged after it, added the map it adds to).
		{"a patch that does not apply", ev("patch", "", 422, "Invalid", patchFailed, nil), out{"", "", SkipBeforeAdmission, true}},
		{"a pod's nodePort-like message", ev("create", "", 422, "Invalid", `Pod "p" is invalid: spec.ports[0].nodePort: Invalid value: 1: provided port is already allocated`, nil), out{"", "", SkipBeforeAdmission, false}},
		{"vap deny of the quota's update", ev("create", "", 422, "Invalid", `resourcequotas "quota" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no`, nil), out{RecordedUnknown, "", "", false}},
		{"webhook", ev("delete", "", 403, "Forbidden", `admission webhook "w.example.com" denied the request: no`, nil), out{RecordedDeny, `admission webhook "w.example.com"`, "", false}},
		{"quota exceeded", ev("create", "", 403, "Forbidden", `pods "p" is forbidden: exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2`, nil), out{RecordedDeny, "ResourceQuota", "", false}},
		{"quota not computed yet", ev("create", "", 403, "Forbidden", `pods "p" is forbidden: status unknown for quota: q, resources: pods`, nil), out{RecordedDeny, "ResourceQuota", "", false}},
		{"quota requires limits", ev("create", "", 403, "Forbidden", `pods "p" is forbidden: failed quota: q: must specify limits.cpu for: c`, nil), out{RecordedDeny, "ResourceQuota", "", false}},
		{"another plugin", ev("create", "", 403, "Forbidden", `pods "p" is forbidden: no PriorityClass with name rnd-missing was found`, nil), out{RecordedDeny, "another admission plugin", "", false}},
		// REST storages that refuse after validating admission admitted the request.
		{"an eviction a disruption budget blocks", ev("create", "eviction", 403, "Forbidden", `poddisruptionbudget.policy "pdb" is forbidden: DisruptedPods map too big - too many evictions not confirmed by PDB controller`, nil), out{RecordedAdmit, "", "", false}},
		{"a token request refused", ev("create", "token", 403, "Forbidden", `serviceaccounts/token "default" is forbidden: token request denied`, nil), out{RecordedAdmit, "", "", false}},
		// kube-apiserver v1.37.0's answer to a pod create an ApplyConfiguration refused (the
		// fresh-eyes parity run r3, pod work/fa).
		{"mutating policy", ev("create", "", 403, "Invalid", `policy 'zz-mapfail-a' with binding 'zz-mapfail-a' denied request: error applying patch: invalid ApplyConfiguration: may not mutate atomic arrays, maps or structs: .spec.tolerations`, nil), out{RecordedDeny, "MutatingAdmissionPolicy 'zz-mapfail-a' with binding 'zz-mapfail-a'", "", false}},
		{"kyverno 400", ev("delete", "", 400, "", `admission webhook "validate.kyverno.svc-fail" denied the request: x`, nil), out{RecordedDeny, `admission webhook "validate.kyverno.svc-fail"`, "", false}},
		{"authorizer", ev("delete", "", 403, "Forbidden", `pods "a" is forbidden: User "u" cannot delete resource "pods"`, map[string]string{"authorization.k8s.io/decision": "forbid"}), out{"", "", SkipUnauthorized, false}},
		{"unauthenticated", ev("delete", "", 401, "Unauthorized", "", nil), out{"", "", SkipUnauthenticated, false}},
		{"create conflict is after admission", ev("create", "", 409, "AlreadyExists", "", nil), out{RecordedAdmit, "", "", false}},
		{"update conflict is before admission", ev("update", "", 409, "Conflict", `Operation cannot be fulfilled on pods "p": the object has been modified; please apply your changes to the latest version and try again`, nil), out{"", "", SkipBeforeAdmission, true}},
		{"another object's conflict may be after admission", ev("update", "", 409, "Conflict", `Operation cannot be fulfilled on resourcequotas "p": the object has been modified; please apply your changes to the latest version and try again`, nil), out{"", "", SkipBeforeAdmission, false}},
		{"a conflict of another name may be after admission", ev("update", "", 409, "Conflict", `Operation cannot be fulfilled on pods "q": the object has been modified`, nil), out{"", "", SkipBeforeAdmission, false}},
		{"delete precondition conflict is before admission", ev("delete", "", 409, "Conflict", `Operation cannot be fulfilled on Pod "p": the ResourceVersion in the precondition (864) does not match the ResourceVersion in record (898). The object might have been modified`, nil), out{"", "", SkipBeforeAdmission, true}},
		{"apply conflict is before admission", ev("patch", "", 409, "Conflict", `Apply failed with 1 conflict: conflict with "kubectl": .spec.replicas`, nil), out{"", "", SkipBeforeAdmission, true}},
		{"not found", ev("delete", "", 404, "NotFound", "", nil), out{"", "", SkipBeforeAdmission, false}},
		// GKE's entry of a request logged without its response gives the failure's reason only.
		{"invalid, the message lost", lost(ev("create", "", 422, "Invalid", "Invalid", nil)), out{RecordedUnknown, "", "", false}},
		{"forbidden, the message lost", lost(ev("create", "", 403, "Forbidden", "Forbidden", nil)), out{RecordedUnknown, "", "", false}},
		{"forbidden by the authorizer, the message lost", lost(ev("create", "", 403, "Forbidden", "Forbidden", map[string]string{"authorization.k8s.io/decision": "forbid"})), out{"", "", SkipUnauthorized, false}},
		{"not found, the message lost", lost(ev("delete", "", 404, "NotFound", "NotFound", nil)), out{"", "", SkipBeforeAdmission, false}},
		{"evicting a missing pod is after admission", ev("create", "eviction", 404, "NotFound", `pods "p" not found`, nil), out{RecordedAdmit, "", "", false}},
		{"evicting in a missing namespace is before admission", ev("create", "eviction", 404, "NotFound", `namespaces "ns" not found`, nil), out{"", "", SkipBeforeAdmission, false}},
		// TokenREST.Create reads the service account before validating admission and the
		// object the token is bound to after it (a real server's log holds the annotations).
		{"a token for a missing service account is before admission", serviceAccount(ev("create", "token", 404, "NotFound", `serviceaccounts "robot" not found`, nil)), out{"", "", SkipBeforeAdmission, false}},
		{"a token bound to a missing pod is after admission", serviceAccount(ev("create", "token", 404, "NotFound", `pods "nosuch" not found`, nil)), out{RecordedAdmit, "", "", false}},
		// NodeRestriction's informer lookup of a node's bound pod, before admission: its
		// lister names the resource singular.
		{"a node's token bound to a pod its informer lacks is before admission", serviceAccount(ev("create", "token", 404, "NotFound", `pod "nosuch" not found`, nil)), out{"", "", SkipBeforeAdmission, false}},
		{"a token bound to another account's pod is after admission", serviceAccount(ev("create", "token", 400, "BadRequest", `cannot bind token for serviceaccount "default" to pod running with different serviceaccount name.`, nil)), out{RecordedAdmit, "", "", false}},
		{"a token request's bad request is before admission", serviceAccount(ev("create", "token", 400, "BadRequest", `the body of the request was in an unknown format`, nil)), out{"", "", SkipBeforeAdmission, false}},
		{"eviction blocked by a PDB is after admission", ev("create", "eviction", 429, "TooManyRequests", "Cannot evict pod as it would violate the pod's disruption budget.", nil), out{RecordedAdmit, "", "", false}},
		{"throttled", ev("create", "", 429, "TooManyRequests", "Too many requests", nil), out{"", "", SkipBeforeAdmission, false}},
		{"timeout", ev("create", "", 504, "Timeout", "", nil), out{RecordedUnknown, "", "", false}},
		{"panic", &Event{Stage: auditlog.StagePanic, ResponseStatus: &Status{Code: 500}}, out{RecordedUnknown, "", "", false}},
		// A GKE entry's failure whose gRPC code leaves its HTTP code open (exporttest: the
		// code google/rpc maps it to, and LostCode): not a refusal before admission.
		{"code lost by the export", lostCode(ev("create", "", 400, "", `leases.coordination.k8s.io "l" is invalid: spec: bad`, nil)), out{RecordedUnknown, "", "", false}},
		{"code lost by the export, a policy's denial", lostCode(ev("create", "", 400, "", `pods "p" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no`, nil)), out{RecordedDeny, "ValidatingAdmissionPolicy 'p' with binding 'b'", "", false}},
		{"not found, the code lost", lostCode(ev("delete", "", 404, "", `pods "p" not found`, nil)), out{RecordedUnknown, "", "", false}},
	} {
		r := classify(tc.ev, false)
		if diff := cmp.Diff(tc.want, out{r.outcome, r.by, r.skip, r.sure}); diff != "" {
			t.Errorf("%s: classify mismatch (-want +got):\n%s", tc.name, diff)
		}
	}
}

// lostCode is ev as an export that does not carry its HTTP code gives it.
func lostCode(ev *Event) *Event {
	ev.Loss = auditlog.Loss{Export: "GKE Cloud Logging", Lost: auditlog.LostCode}
	return ev
}

// TestConnect rebuilds the options of a CONNECT from the request URI.
func TestConnect(t *testing.T) {
	t.Parallel()
	r, err := New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	ev := &Event{Verb: "create", Level: auditlog.LevelMetadata, Stage: auditlog.StageResponseComplete,
		RequestURI: "/api/v1/namespaces/ns/pods/p/exec?command=sh&command=-c&command=id&container=c&stdin=true&stdout=true&tty=true",
		ObjectRef:  &ObjectRef{Resource: "pods", Namespace: "ns", Name: "p", APIVersion: "v1", Subresource: "exec"}, ResponseStatus: &Status{Code: 101}}
	tg, skip := r.resolve(ev)
	if skip != "" || tg.op != "CONNECT" {
		t.Fatalf("resolve = %v %q, want CONNECT", tg.op, skip)
	}
	b := r.rebuild(ev, tg, classify(ev, true), state.Prior{}, serverFacts{})
	want := map[string]any{"apiVersion": "v1", "kind": "PodExecOptions", "command": []any{"sh", "-c", "id"}, "container": "c", "stdin": true, "stdout": true, "tty": true}
	if b.indeterminate.is() {
		t.Fatalf("indeterminate: %s", b.indeterminate)
	}
	if diff := cmp.Diff(want, b.req.Object.Object); diff != "" {
		t.Errorf("options mismatch (-want +got):\n%s", diff)
	}
}

// TestAdmissionDeleteOptions mirrors the changes rest.BeforeDelete makes to the options of a
// DELETE before validating admission sees them.
func TestAdmissionDeleteOptions(t *testing.T) {
	t.Parallel()
	scheduled := func(grace any, phase string) *unstructured.Unstructured {
		u := pod(nil)
		spec := u.Object["spec"].(map[string]any)
		spec["nodeName"] = "w1"
		if grace != nil {
			spec["terminationGracePeriodSeconds"] = grace
		}
		if phase != "" {
			u.Object["status"] = map[string]any{"phase": phase}
		}
		return u
	}
	deleting := scheduled(int64(30), "")
	deleting.Object["metadata"].(map[string]any)["deletionTimestamp"] = "2026-01-05T10:01:00Z"
	for _, tc := range []struct {
		name string
		gr   schema.GroupResource
		old  *unstructured.Unstructured
		in   any // gracePeriodSeconds asked for, nil for none
		want any // gracePeriodSeconds admission sees, nil for none
	}{
		{"configmap without grace", schema.GroupResource{Resource: "configmaps"}, nil, nil, nil},
		{"configmap, negative grace is 1s", schema.GroupResource{Resource: "configmaps"}, nil, float64(-5), int64(1)},
		{"configmap keeps its grace", schema.GroupResource{Resource: "configmaps"}, nil, float64(7), float64(7)},
		{"scheduled pod: its termination grace period", podsGR, scheduled(int64(45), ""), nil, int64(45)},
		{"scheduled pod without one: 0", podsGR, scheduled(nil, ""), nil, int64(0)},
		{"scheduled pod: the grace asked for", podsGR, scheduled(int64(45), ""), float64(5), int64(5)},
		{"scheduled pod, negative grace is 1s", podsGR, scheduled(int64(45), ""), float64(-3), int64(1)},
		{"unscheduled pod: 0", podsGR, pod(nil), float64(20), int64(0)},
		{"terminated pod: 0", podsGR, scheduled(int64(45), "Succeeded"), nil, int64(0)},
		{"pod being deleted keeps the options", podsGR, deleting, float64(3), float64(3)},
	} {
		opts := &unstructured.Unstructured{Object: map[string]any{}}
		if tc.in != nil {
			opts.Object["gracePeriodSeconds"] = tc.in
		}
		admissionDeleteOptions(tc.gr, "", tc.old, opts)
		if got := opts.Object["gracePeriodSeconds"]; got != tc.want {
			t.Errorf("%s: gracePeriodSeconds = %#v, want %#v", tc.name, got, tc.want)
		}
	}
}

// TestDeleteOptions reads a DELETE's options as its handler does: from the body when there is
// one, the query then ignored, else from the query as the ParameterCodec converts it.
func TestDeleteOptions(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, body, query string
		want              map[string]any
		dryRun            bool
	}{
		{"body", `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/__internal","gracePeriodSeconds":3,"dryRun":["All"]}`, "",
			map[string]any{"gracePeriodSeconds": float64(3), "dryRun": []any{"All"}}, true},
		{"a body hides the query's dryRun", `{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":3}`, "dryRun=All",
			map[string]any{"gracePeriodSeconds": float64(3)}, false},
		{"an escaped member", `{"kind":"DeleteOptions","apiVersion":"v1","dry\u0052un":["All"]}`, "",
			map[string]any{"dryRun": []any{"All"}}, true},
		{"an escaped parameter", "", "dry%52un=All", map[string]any{"dryRun": []any{"All"}}, true},
		{"query", "", "gracePeriodSeconds=5&propagationPolicy=Orphan&dryRun=All",
			map[string]any{"gracePeriodSeconds": int64(5), "propagationPolicy": "Orphan", "dryRun": []any{"All"}}, true},
		{"query bools are true unless 0 or false", "", "orphanDependents=yes&ignoreStoreReadErrorWithClusterBreakingPotential=FALSE",
			map[string]any{"orphanDependents": true, "ignoreStoreReadErrorWithClusterBreakingPotential": false}, false},
		{"an empty query bool is true", "", "orphanDependents=", map[string]any{"orphanDependents": true}, false},
		{"query 0", "", "orphanDependents=0", map[string]any{"orphanDependents": false}, false},
	} {
		q, _ := url.ParseQuery(tc.query)
		got, err := deleteOptions([]byte(tc.body), q)
		if err != nil {
			t.Errorf("%s: deleteOptions: %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got.Object); diff != "" {
			t.Errorf("%s: deleteOptions mismatch (-want +got):\n%s", tc.name, diff)
		}
		ev := &Event{Verb: "delete", RequestURI: "/api/v1/namespaces/ns/configmaps/cm?" + tc.query, RequestObject: []byte(tc.body)}
		if got := isDryRun(ev); got != tc.dryRun {
			t.Errorf("%s: isDryRun = %v, want %v", tc.name, got, tc.dryRun)
		}
	}
}

// TestDecodeKindAsWhole holds decodeKind, which usesPipeline reads a response's kind with, to
// the apiVersion and kind auditlog.DecodeAnyObject gives, which evaluate decodes the response
// with once for both usesPipeline and rebuild.
func TestDecodeKindAsWhole(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		``,
		`null`,
		`[]`,
		`{}`,
		`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"}}`,
		`{"metadata":{"name":"p"},"kind":"Pod","apiVersion":"v1"}`,
		`{"apiVersion":"apps/v1","metadata":{"name":"d"}}`,
		`{"kind":"Scale","apiVersion":"autoscaling/v1","kind":"Deployment"}`,
		`{"kind":5,"apiVersion":"v1"}`,
		`{"kind":"Pod","apiVersion":"v1","spec":{"containers":[}`,
		`{"kind":"P\u006fd","apiVersion":"v1"}`,
	} {
		type kind struct {
			Nil              bool
			APIVersion, Kind string
		}
		of := func(u *unstructured.Unstructured) kind {
			if u == nil {
				return kind{Nil: true}
			}
			return kind{APIVersion: u.GetAPIVersion(), Kind: u.GetKind()}
		}
		want, got := of(auditlog.DecodeAnyObject([]byte(raw))), of(decodeKind([]byte(raw)))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("decodeKind(%q) mismatch (-DecodeAnyObject +decodeKind):\n%s", raw, diff)
		}
	}
}

// TestAdmittedBeforeFailingLostCode: a failure whose exact code and message an export lost (GKE
// gives 413, a policy denial's code, the gRPC code 500 has) may have been a policy's denial:
// that the pipeline ran validating admission does not make it admitted before failing (random
// parity seed c:475).
func TestAdmittedBeforeFailingLostCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		lost auditlog.Lost
		want string
	}{
		{"the code and the message lost", auditlog.LostCode | auditlog.LostMessage, RecordedUnknown},
		{"the code lost, the message kept", auditlog.LostCode, RecordedAdmit},
	} {
		ev := &Event{Verb: "create", Stage: auditlog.StageResponseComplete, ObjectRef: &ObjectRef{Resource: "nodes", Name: "n"},
			ResponseStatus: &Status{Code: 500, Status: "Failure", Message: "RequestEntityTooLarge"}}
		ev.Loss = auditlog.Loss{Export: "GKE Cloud Logging", Lost: tc.lost}
		j := &job{ev: ev, rec: recording{outcome: RecordedUnknown}}
		out := &Record{Logged: Logged{Recorded: RecordedUnknown}}
		admittedBeforeFailing(j, out)
		if out.Recorded != tc.want {
			t.Errorf("%s: recorded %s (%s), want %s", tc.name, out.Recorded, out.RecordedNote, tc.want)
		}
	}
}

// TestSettleFailedWithoutMessage: where an export lost a failed request's message, an
// admission's audit annotations and warnings are not claimed (what refused it may have run
// before validating admission), and a refused generateName create's message does not name the
// object by the replay's own generated name.
func TestSettleFailedWithoutMessage(t *testing.T) {
	t.Parallel()
	lost := auditlog.Loss{Export: "GKE Cloud Logging", Lost: auditlog.LostMessage}
	t.Run("annotations of an admission", func(t *testing.T) {
		ev := &Event{Verb: "create", Stage: auditlog.StageResponseComplete, ObjectRef: &ObjectRef{Resource: "configmaps", Namespace: "a", Name: "c"},
			ResponseStatus: &Status{Code: 500, Status: "Failure"}, Loss: lost}
		out := &Record{Decision: DecisionAdmit, Logged: Logged{Recorded: RecordedUnknown}, AuditAnnotations: map[string]string{"p/k": "v"}, Warnings: []string{"w"},
			Results: []RecordResult{{Policy: "p", AuditAnnotations: map[string]string{"k": "v"}}}}
		j := &job{ev: ev, result: jobResult{out: out}}
		j.settleUnran()
		if out.AuditAnnotations != nil || out.Warnings != nil || out.Results[0].AuditAnnotations != nil || len(out.Notes) != 2 {
			t.Errorf("annotations %v, warnings %v, results %v, notes %q; want none, and two notes", out.AuditAnnotations, out.Warnings, out.Results, out.Notes)
		}
		kept := &Record{Decision: DecisionAdmit, Logged: Logged{Recorded: RecordedUnknown}, AuditAnnotations: map[string]string{"p/k": "v"}}
		(&job{ev: &Event{Verb: "create", ResponseStatus: &Status{Code: 500}}, result: jobResult{out: kept}}).settleUnran()
		if kept.AuditAnnotations == nil {
			t.Error("the annotations of a failure whose message the log holds were taken out")
		}
	})
	t.Run("a generated name", func(t *testing.T) {
		ev := &Event{Verb: "create", Stage: auditlog.StageResponseComplete, ObjectRef: &ObjectRef{Resource: "pods", Namespace: "a"},
			RequestObject:  []byte(`{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"web-5c9-","namespace":"a"}}`),
			ResponseStatus: &Status{Code: 422, Status: "Failure"}, Loss: lost}
		out := &Record{Decision: DecisionDeny, Message: `pods "web-5c9-x7k2q" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'p' denied request: no`}
		j := &job{ev: ev, result: jobResult{out: out}}
		j.settleGeneratedName()
		if want := `pods "web-5c9-?????" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'p' denied request: no`; out.Message != want || len(out.Notes) != 1 {
			t.Errorf("message %q, notes %q; want %q and a note", out.Message, out.Notes, want)
		}
	})
}

// TestUnknownResource: a request for a resource the replay does not serve says why: a group
// version Kubernetes publishes but kube-apiserver serves only when --runtime-config enables it,
// or no built-in resource at all.
func TestUnknownResource(t *testing.T) {
	for _, tc := range []struct {
		gvr  schema.GroupVersionResource
		want string
	}{
		{schema.GroupVersionResource{Group: "resource.k8s.io", Version: "v1beta1", Resource: "resourceclaims"}, "in resource.k8s.io/v1beta1, a group version kube-apiserver serves only when --runtime-config enables it"},
		{schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}, "is not a resource of Kubernetes 1.37 (add its CRD)"},
	} {
		if got := unknownResource(target{gvr: tc.gvr}); !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want it to say %q", tc.gvr, got, tc.want)
		}
	}
}
