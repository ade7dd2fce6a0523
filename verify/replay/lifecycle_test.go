package replay

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestGivenLifecycle: the log creates the replayed policy and its binding, deletes the binding
// and creates it again. A request is decided with them only while they are installed; moments
// after a change (the policy source compiles once a second) a verdict of theirs is not
// certain, until the log shows one (a denial: probe) for a request received after the change,
// which shows the policy compiled for those received after it completed (proven); with
// --policies-throughout every request is decided with them. Checked against
// the log's verdicts, no request disagrees: those before the create and in the gap have none
// to give.
func TestGivenLifecycle(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("no-cm", "configmaps", admissionregistrationv1.Create, nil, "false")
	admissionreg := func(id, verb, resource, at string, code int32) string {
		l := levelEvent(t, id, auditlog.LevelMetadata, verb, resource, "", "no-cm", code, "", nil, nil)
		l = replaceOnce(t, l, `"requestURI":"/api/v1/`, `"requestURI":"/apis/admissionregistration.k8s.io/v1/`)
		return timedEvent(t, replaceOnce(t, l, `"apiVersion":"v1","name"`, `"apiGroup":"admissionregistration.k8s.io","apiVersion":"v1","name"`), at+"000", at+"500", nil)
	}
	cm := func(id, at string, code int32) string {
		message := ""
		if code == 422 {
			message = `configmaps "` + id + `" is forbidden: ValidatingAdmissionPolicy 'no-cm' with binding 'no-cm' denied request: denied by no-cm`
		}
		obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": id, "namespace": "ns1"}}
		return timedEvent(t, levelEvent(t, id, auditlog.LevelRequestResponse, "create", "configmaps", "ns1", id, code, message, obj, nil), at+"000", at+"500", nil)
	}
	lines := []string{
		cm("early", "00.000", 201),
		admissionreg("vap", "create", "validatingadmissionpolicies", "01.000", 201),
		admissionreg("vap-again", "create", "validatingadmissionpolicies", "01.001", 409),
		admissionreg("vapb", "create", "validatingadmissionpolicybindings", "01.002", 201),
		cm("moments", "01.300", 201),
		cm("probe", "01.400", 422),
		cm("proven", "01.600", 422),
		cm("before", "03.000", 422),
		admissionreg("unbind", "delete", "validatingadmissionpolicybindings", "04.000", 200),
		cm("unbound-moments", "04.200", 422),
		cm("gap", "06.000", 201),
		admissionreg("rebind", "create", "validatingadmissionpolicybindings", "07.000", 201),
		cm("rebound-moments", "07.300", 201),
		cm("after", "10.000", 422),
	}
	log := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const (
		none   = "none"
		deny   = "deny certain"
		source = "indeterminate policy-source"
	)
	for _, tc := range []struct {
		name  string
		src   Source
		opts  []Option
		want  map[string]string
		notes []string
	}{{
		name: "followed",
		src:  Source{Name: log},
		want: map[string]string{"early": none, "moments": source, "probe": source, "proven": deny, "before": deny, "unbound-moments": source, "gap": none, "rebound-moments": source, "after": deny},
		notes: []string{"the log shows given policies and bindings come and go: 2 not installed at its start (the first: ValidatingAdmissionPolicy no-cm, created at " + log + ":2), 3 creates, 1 deletes (the first: ValidatingAdmissionPolicyBinding no-cm at " + log + ":9); " +
			"a request is decided with each only while it was installed (--policies-throughout decides every request with them)"},
	}, {
		// Unchecked: moments after the policy's first create, the log's admit is no evidence
		// against the replayed policy, which the server had not compiled yet, but
		// --check-recorded takes it as such (a copy created where there was none only adds
		// verdicts: see installed.followSpec).
		name: "throughout",
		src:  Source{Name: log},
		opts: []Option{WithCheckRecorded(false), WithPoliciesThroughout()},
		want: map[string]string{"early": deny, "moments": deny, "probe": deny, "proven": deny, "before": deny, "unbound-moments": deny, "gap": deny, "rebound-moments": deny, "after": deny},
	}, {
		// Not read from a file, the log is not read again for where the policies were at
		// its start: the request before their create is decided with them, and the summary
		// says so.
		name: "standard input",
		src:  Source{Name: "-", Reader: strings.NewReader(strings.Join(lines, "\n") + "\n")},
		want: map[string]string{"early": deny, "moments": source, "probe": source, "proven": deny, "before": deny, "unbound-moments": source, "gap": none, "rebound-moments": source, "after": deny},
		notes: []string{"the log shows given policies and bindings come and go: 1 creates, 1 deletes (the first: ValidatingAdmissionPolicyBinding no-cm at -:9); a request is decided with each only while it was installed (--policies-throughout decides every request with them)",
			"the log creates 2 of the given policies and bindings (the first: ValidatingAdmissionPolicy no-cm, created at -:2), which were taken as installed before: the log was not read from files, which the replay reads again for where they were at its start (give the log as files)"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sum, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				append([]Option{WithCheckRecorded(true)}, tc.opts...), tc.src)
			got := map[string]string{}
			for id := range tc.want {
				got[id] = none
				if rec := recs[id]; rec != nil {
					got[id] = string(rec.Decision) + " " + string(rec.Certainty)
					if rec.Decision == DecisionIndeterminate {
						got[id] = string(rec.Decision) + " " + string(rec.Reason)
					}
					if len(rec.Disagreements) > 0 {
						t.Errorf("%s: disagrees with the log: %v", id, rec.Disagreements)
					}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decisions mismatch (-want +got):\n%s", diff)
			}
			notes := slices.DeleteFunc(slices.Clone(sum.Notes), func(n string) bool { return !strings.Contains(n, "given policies") })
			if diff := cmp.Diff(tc.notes, notes); diff != "" {
				t.Errorf("notes mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
