package replay

import (
	"encoding/json"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// gkeUnlabelled are lines as GKE's entries of a cluster that does not label its dry runs: each
// write may have been one (a dry run's URI, ?dryRun=All, is lost with the label).
func gkeUnlabelled(t *testing.T, lines ...string) []string {
	t.Helper()
	out := gkeLines(t, lines...)
	for i, e := range out {
		var m map[string]any
		if err := json.Unmarshal([]byte(e), &m); err != nil {
			t.Fatal(err)
		}
		if l, ok := m["labels"].(map[string]any); ok {
			delete(l, "command.gke.io/dryRun")
		}
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out[i] = string(b)
	}
	return out
}

// TestDryRunRaces replays writes that may have been dry runs where GKE's export lost whether
// they were (a review's cases): the log's replay decides as the server did, and GKE's replay
// decides alike or not at all, never otherwise.
func TestDryRunRaces(t *testing.T) {
	t.Parallel()
	cm := func(name, rv, k string) map[string]any {
		md := map[string]any{"name": name, "namespace": "a", "labels": map[string]any{"team": "a"}}
		if rv != "" {
			md["resourceVersion"], md["uid"], md["creationTimestamp"] = rv, "u-"+name, "2026-11-24T00:00:01Z"
		}
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": map[string]any{"k": k}}
	}
	status := map[string]any{"apiVersion": "v1", "kind": "Status", "status": "Success", "details": map[string]any{"name": "known", "kind": "configmaps", "uid": "u-known"}}
	withQuery := func(line, name, query string) string {
		return replaceOnce(t, line, `/configmaps/`+name+`"`, `/configmaps/`+name+`?`+query+`"`)
	}

	// A dry run (kubectl diff) read the version a real write committed before that write's
	// response completed: it is logged first, answered with the later version.
	created := timedEvent(t, levelEvent(t, "k0", auditlog.LevelRequestResponse, "create", "configmaps", "a", "known", 201, "", cm("known", "", "v"), cm("known", "8", "v")), "01.000000", "01.010000", nil)
	diff := withQuery(levelEvent(t, "dry", auditlog.LevelRequestResponse, "patch", "configmaps", "a", "known", 200, "", map[string]any{"data": map[string]any{"k": "w"}}, cm("known", "9", "w")), "known", "dryRun=All")
	real := levelEvent(t, "real", auditlog.LevelRequestResponse, "patch", "configmaps", "a", "known", 200, "", map[string]any{"data": map[string]any{"k": "x"}}, cm("known", "9", "x"))
	del := levelEvent(t, "del", auditlog.LevelRequestResponse, "delete", "configmaps", "a", "known", 200, "", nil, status)
	raced := []string{
		timedEvent(t, diff, "02.100000", "02.200000", nil),
		timedEvent(t, real, "02.000000", "02.900000", nil),
		timedEvent(t, del, "03.000000", "03.010000", nil),
	}

	// A dry-run server-side apply of an object not there, its body giving a resourceVersion
	// (a manifest kubectl get -o yaml wrote): answered 201 with that version, it stored
	// nothing; a real apply then creates the object, a CREATE for admission.
	applied := func(rv string) map[string]any {
		b := cm("known", "", "w")
		if rv != "" {
			b["metadata"].(map[string]any)["resourceVersion"] = rv
		}
		return b
	}
	answered := func(rv, uid, at string) map[string]any {
		o := cm("known", rv, "w")
		o["metadata"].(map[string]any)["uid"], o["metadata"].(map[string]any)["creationTimestamp"] = uid, at
		return o
	}
	dryApply := withQuery(levelEvent(t, "dry", auditlog.LevelRequestResponse, "patch", "configmaps", "a", "known", 201, "", applied("5"), answered("5", "u-dry", "2026-11-24T00:00:02Z")), "known", `dryRun=All\u0026fieldManager=kubectl`)
	apply := withQuery(levelEvent(t, "apply", auditlog.LevelRequestResponse, "patch", "configmaps", "a", "known", 201, "", applied(""), answered("20", "u-known", "2026-11-24T00:00:03Z")), "known", "fieldManager=kubectl")

	tests := []struct {
		name     string
		op       admissionregistrationv1.OperationType
		expr     string
		snapshot []any
		lines    []string
		id       string
	}{
		{name: "a dry run logged before the write it read, the object created", op: admissionregistrationv1.Delete, expr: "oldObject.data.k == 'x'",
			lines: append([]string{created}, raced...), id: "del"},
		{name: "a dry run logged before the write it read, the object from the snapshot", op: admissionregistrationv1.Delete, expr: "oldObject.data.k == 'x'",
			snapshot: []any{cm("known", "8", "v")}, lines: raced, id: "del"},
		{name: "a dry-run apply that would create, its body giving a version", op: admissionregistrationv1.Update, expr: "false",
			lines: []string{timedEvent(t, dryApply, "02.000000", "02.010000", nil), timedEvent(t, apply, "03.000000", "03.010000", nil)}, id: "apply"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("lost", "configmaps", tt.op, nil, tt.expr)
			ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
			_, plain := replayLinesWith(t, ps, bs, tt.snapshot, tt.lines...)
			_, got := replayLinesWith(t, ps, bs, tt.snapshot, gkeUnlabelled(t, tt.lines...)...)
			want, rec := plain[tt.id], got[tt.id]
			switch {
			case want == nil:
				// No policy matched (the apply created: a CREATE).
				if rec != nil && rec.Decision != DecisionIndeterminate {
					t.Errorf("GKE's replay: %s, where no policy matched", describeRecord(rec))
				}
			case want.Decision == DecisionIndeterminate || want.Certainty != CertaintyCertain:
				t.Fatalf("the log's replay: %s, want a certain decision", describeRecord(want))
			case rec == nil || rec.Decision != DecisionIndeterminate && rec.Decision != want.Decision:
				t.Errorf("GKE's replay: %s, the server %s", describeRecord(rec), want.Decision)
			}
		})
	}
}

// TestDryRunParamSelected: a param the State forgot is shown there by a patch that may have
// been a dry run (kubectl diff relabelling it), all but its identity unknown: a binding's
// selector its answered labels do not match may select it all the same.
func TestDryRunParamSelected(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("guard", "secrets", admissionregistrationv1.Create, nil, "true")
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)}
	prm := func(rv, team string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "prm", "namespace": "a", "uid": "u-prm", "resourceVersion": rv,
			"creationTimestamp": "2026-11-23T00:00:00Z", "labels": map[string]any{"team": team}}, "data": map[string]any{"k": "v"}}
	}
	forgot := levelEvent(t, "p1", auditlog.LevelMetadata, "patch", "configmaps", "a", "prm", 200, "", nil, nil)
	diff := replaceOnce(t, levelEvent(t, "p2", auditlog.LevelRequestResponse, "patch", "configmaps", "a", "prm", 200, "", map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "b"}}}, prm("9", "b")),
		`/configmaps/prm"`, `/configmaps/prm?dryRun=All"`)
	secret := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s", "namespace": "a"}}
	lines := []string{
		timedEvent(t, forgot, "02.000000", "02.010000", nil),
		timedEvent(t, diff, "01:30.000000", "01:30.010000", nil),
		timedEvent(t, levelEvent(t, "r", auditlog.LevelRequestResponse, "create", "secrets", "a", "s", 201, "", secret, nil), "02:50.000000", "02:50.010000", nil),
	}
	ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
	snapshot := []any{prm("8", "a")}
	// The log's replay does not know the param either (its patch at level Metadata, the
	// dry run it knows as one); GKE's must not take the dry run's labels as the param's.
	for _, in := range [][]string{lines, gkeUnlabelled(t, lines...)} {
		_, got := replayLinesWith(t, ps, bs, snapshot, in...)
		if rec := got["r"]; rec == nil || rec.Decision != DecisionIndeterminate {
			t.Errorf("%s, want indeterminate: the param's labels are not known", describeRecord(rec))
		}
	}
}

// TestDryRunParamMatchedLabelsUnknown: a dry run (kubectl diff) that read the version a real
// relabelling committed is logged before it, answered with that version and the param's old
// labels; the real write then answers with the same version and labels team=b. The State
// puts the dry run's answer back with the labels unknown: its stored labels (team=a) match
// the binding's selector, so the param is listed, as certain, while the server did not
// select it (team=b) and admitted (parameterNotFoundAction Allow).
func TestDryRunParamMatchedLabelsUnknown(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("guard", "secrets", admissionregistrationv1.Create, nil, "false")
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, ParameterNotFoundAction: ptr.To(admissionregistrationv1.AllowAction)}
	prm := func(rv, team string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "prm", "namespace": "a", "uid": "u-prm", "resourceVersion": rv,
			"creationTimestamp": "2026-11-23T00:00:00Z", "labels": map[string]any{"team": team}}, "data": map[string]any{"k": "v"}}
	}
	dry := replaceOnce(t, levelEvent(t, "dry", auditlog.LevelRequestResponse, "patch", "configmaps", "a", "prm", 200, "", map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "a"}}}, prm("9", "a")),
		`/configmaps/prm"`, `/configmaps/prm?dryRun=All"`)
	real := levelEvent(t, "real", auditlog.LevelRequestResponse, "patch", "configmaps", "a", "prm", 200, "", map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "b"}}}, prm("9", "b"))
	secret := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s", "namespace": "a"}}
	lines := []string{
		timedEvent(t, dry, "02.100000", "02.200000", nil),
		timedEvent(t, real, "02.000000", "02.900000", nil),
		timedEvent(t, levelEvent(t, "r", auditlog.LevelRequestResponse, "create", "secrets", "a", "s", 201, "", secret, nil), "02:50.000000", "02:50.010000", nil),
	}
	ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
	snapshot := []any{prm("8", "a")}
	_, plain := replayLinesWith(t, ps, bs, snapshot, lines...)
	_, got := replayLinesWith(t, ps, bs, snapshot, gkeUnlabelled(t, lines...)...)
	rec := got["r"]
	if want := plain["r"]; rec == nil || rec.Decision != DecisionIndeterminate && (want == nil || rec.Decision != want.Decision) {
		t.Errorf("GKE's replay: %s, the server: %s", describeRecord(rec), describeRecord(want))
	}
}

// TestDryRunParamSelectedCachedList is TestDryRunParamSelected with a request evaluated
// between the forgetting patch and the dry run, which caches the list by the binding's
// selector: putPartly's setUnknowns does not invalidate it.
func TestDryRunParamSelectedCachedList(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("guard", "secrets", admissionregistrationv1.Create, nil, "true")
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)}
	prm := func(rv, team string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "prm", "namespace": "a", "uid": "u-prm", "resourceVersion": rv,
			"creationTimestamp": "2026-11-23T00:00:00Z", "labels": map[string]any{"team": team}}, "data": map[string]any{"k": "v"}}
	}
	forgot := levelEvent(t, "p1", auditlog.LevelMetadata, "patch", "configmaps", "a", "prm", 200, "", nil, nil)
	diff := replaceOnce(t, levelEvent(t, "p2", auditlog.LevelRequestResponse, "patch", "configmaps", "a", "prm", 200, "", map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": "b"}}}, prm("9", "b")),
		`/configmaps/prm"`, `/configmaps/prm?dryRun=All"`)
	secret := func(name string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name, "namespace": "a"}}
	}
	lines := []string{
		timedEvent(t, forgot, "02.000000", "02.010000", nil),
		timedEvent(t, levelEvent(t, "r0", auditlog.LevelRequestResponse, "create", "secrets", "a", "s0", 201, "", secret("s0"), nil), "01:00.000000", "01:00.010000", nil),
		timedEvent(t, diff, "01:30.000000", "01:30.010000", nil),
		timedEvent(t, levelEvent(t, "r", auditlog.LevelRequestResponse, "create", "secrets", "a", "s", 201, "", secret("s"), nil), "02:50.000000", "02:50.010000", nil),
	}
	ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
	snapshot := []any{prm("8", "a")}
	for _, in := range [][]string{lines, gkeUnlabelled(t, lines...)} {
		_, got := replayLinesWith(t, ps, bs, snapshot, in...)
		if rec := got["r"]; rec == nil || rec.Decision != DecisionIndeterminate {
			t.Errorf("%s, want indeterminate: the param's labels are not known", describeRecord(rec))
		}
	}
}
