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
			plain, got, _ := replayAsExported(t, p, b, tt.snapshot, gkeUnlabelled, tt.lines...)
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

// TestDryRunParams replays a param chosen by a binding's selector (team=a) whose labels a
// write that may have been a dry run leaves unknown: the log's replay decides as the server
// did, or not at all, and GKE's alike or not at all.
//   - forgotten: a patch at level Metadata forgets the param; a dry run (kubectl diff)
//     relabelling it team=b shows it is there, all but its identity unknown; the selector
//     its answered labels do not match may select it all the same (parameterNotFoundAction
//     Deny: deny certain before);
//   - the same with a request between them, whose list by the selector a View caches;
//   - raced: a dry run that read the version a real relabelling (team=b) committed is logged
//     before it, answered with that version and the old labels; the real write answers with
//     the same version: the labels are not known, though the stored ones match the selector
//     (parameterNotFoundAction Allow, the expression false: deny certain before).
func TestDryRunParams(t *testing.T) {
	t.Parallel()
	prm := func(rv, team string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "prm", "namespace": "a", "uid": "u-prm", "resourceVersion": rv,
			"creationTimestamp": "2026-11-23T00:00:00Z", "labels": map[string]any{"team": team}}, "data": map[string]any{"k": "v"}}
	}
	relabel := func(id, team, rv, query string) string {
		l := levelEvent(t, id, auditlog.LevelRequestResponse, "patch", "configmaps", "a", "prm", 200, "", map[string]any{"metadata": map[string]any{"labels": map[string]any{"team": team}}}, prm(rv, team))
		if query != "" {
			l = replaceOnce(t, l, `/configmaps/prm"`, `/configmaps/prm?`+query+`"`)
		}
		return l
	}
	// create creates Secret id, received at the minute and second at, completed 10 ms later.
	create := func(id, at string) string {
		secret := map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": id, "namespace": "a"}}
		return timedEvent(t, levelEvent(t, id, auditlog.LevelRequestResponse, "create", "secrets", "a", id, 201, "", secret, nil), at+".000000", at+".010000", nil)
	}
	forgot := timedEvent(t, levelEvent(t, "p1", auditlog.LevelMetadata, "patch", "configmaps", "a", "prm", 200, "", nil, nil), "02.000000", "02.010000", nil)
	diff := timedEvent(t, relabel("p2", "b", "9", "dryRun=All"), "01:30.000000", "01:30.010000", nil)
	tests := []struct {
		name     string
		notFound admissionregistrationv1.ParameterNotFoundActionType
		expr     string
		lines    []string
	}{
		{name: "forgotten, then relabelled by a dry run", notFound: admissionregistrationv1.DenyAction, expr: "true",
			lines: []string{forgot, diff, create("r", "02:50")}},
		{name: "forgotten, listed, then relabelled by a dry run", notFound: admissionregistrationv1.DenyAction, expr: "true",
			lines: []string{forgot, create("r0", "01:00"), diff, create("r", "02:50")}},
		{name: "a dry run logged before the relabelling whose version it read", notFound: admissionregistrationv1.AllowAction, expr: "false",
			lines: []string{timedEvent(t, relabel("dry", "a", "9", "dryRun=All"), "02.100000", "02.200000", nil), timedEvent(t, relabel("real", "b", "9", ""), "02.000000", "02.900000", nil), create("r", "02:50")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("guard", "secrets", admissionregistrationv1.Create, nil, tt.expr)
			p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
			b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}, ParameterNotFoundAction: ptr.To(tt.notFound)}
			plain, got, _ := replayAsExported(t, p, b, []any{prm("8", "a")}, gkeUnlabelled, tt.lines...)
			want, rec := plain["r"], got["r"]
			if rec == nil || rec.Decision != DecisionIndeterminate && (want == nil || rec.Decision != want.Decision) {
				t.Errorf("GKE's replay: %s, the log's: %s", describeRecord(rec), describeRecord(want))
			}
		})
	}
}

// replayAsExported replays lines with the policy and binding from the log backend's file and
// as export gives them: each replay's records by audit ID, and the export's summary.
func replayAsExported(t *testing.T, p *admissionregistrationv1.ValidatingAdmissionPolicy, b *admissionregistrationv1.ValidatingAdmissionPolicyBinding, snapshot []any,
	export func(*testing.T, ...string) []string, lines ...string) (plain, got map[string]*Record, sum *Summary) {
	t.Helper()
	ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
	_, plain = replayLinesWith(t, ps, bs, snapshot, lines...)
	sum, got = replayLinesWith(t, ps, bs, snapshot, export(t, lines...)...)
	return plain, got, sum
}
