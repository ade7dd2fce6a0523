package replay

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/exporttest"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// TestGivenLifecycle: the log creates the replayed policy and its binding, deletes the binding
// and creates it again. A request is decided with them only while they are installed; moments
// after a change (the policy source compiles within two seconds) a verdict of theirs is not
// certain, until the log shows one (a denial: probe) for a request received after the change,
// which shows the policy compiled for that request and those received after it completed
// (proven), of any server's log (the request's own verdict); a request whose own response is
// an admit the binding would have refused shows the policy source had not compiled it yet
// (moments, rebound-moments), and one that is the binding's denial shows it in effect, its
// delete not compiled yet (unbound-moments), as past the window, within as long again, which a
// loaded server takes (slow-unbound, which the replay took as decided without it before;
// slow-gap: its admit shows the delete compiled); with
// --policies-throughout every request is decided with them. Checked against the log's
// verdicts, no request disagrees: those before the create and in the gap have none to give.
func TestGivenLifecycle(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("no-cm", "configmaps", admissionregistrationv1.Create, nil, "false")
	admissionreg := func(id, verb, resource, at string, code int32) string {
		return noCMWrite(t, id, verb, resource, at, code)
	}
	cm := func(id, at string, code int32) string {
		return createdIn(t, "configmaps", "ConfigMap", id, at, code, "no-cm")
	}
	lines := []string{
		cm("early", "00.000", 201),
		admissionreg("vap", "create", "validatingadmissionpolicies", "01.000", 201),
		admissionreg("vap-again", "create", "validatingadmissionpolicies", "01.001", 409),
		admissionreg("vapb", "create", "validatingadmissionpolicybindings", "01.002", 201),
		cm("moments", "01.300", 201),
		cm("probe", "01.400", 422),
		cm("proven", "01.600", 422),
		cm("before", "04.000", 422),
		admissionreg("unbind", "delete", "validatingadmissionpolicybindings", "05.000", 200),
		cm("unbound-moments", "05.200", 422),
		cm("slow-unbound", "07.600", 422),
		cm("slow-gap", "08.000", 201),
		cm("gap", "09.500", 201),
		admissionreg("rebind", "create", "validatingadmissionpolicybindings", "10.000", 201),
		cm("rebound-moments", "10.300", 201),
		cm("after", "14.000", 422),
	}
	log := writeLog(t, t.TempDir(), "audit.log", lines)
	const (
		none   = "none"
		admit  = "admit certain"
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
		want: map[string]string{"early": none, "moments": admit, "probe": deny, "proven": deny, "before": deny, "unbound-moments": deny, "slow-unbound": deny, "slow-gap": admit, "gap": none, "rebound-moments": admit, "after": deny},
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
		want: map[string]string{"early": deny, "moments": deny, "probe": deny, "proven": deny, "before": deny, "unbound-moments": deny, "slow-unbound": deny, "slow-gap": deny, "gap": deny, "rebound-moments": deny, "after": deny},
	}, {
		// Standard input is copied to a file first (source.Spool), and read again as the
		// file is: the same decisions, named "-".
		name: "standard input",
		src:  Source{Name: "-", Reader: strings.NewReader(strings.Join(lines, "\n") + "\n")},
		want: map[string]string{"early": none, "moments": admit, "probe": deny, "proven": deny, "before": deny, "unbound-moments": deny, "slow-unbound": deny, "slow-gap": admit, "gap": none, "rebound-moments": admit, "after": deny},
		notes: []string{"the log shows given policies and bindings come and go: 2 not installed at its start (the first: ValidatingAdmissionPolicy no-cm, created at -:2), 3 creates, 1 deletes (the first: ValidatingAdmissionPolicyBinding no-cm at -:9); " +
			"a request is decided with each only while it was installed (--policies-throughout decides every request with them)"},
	}, {
		// Where standard input cannot be copied (its folder is not there: a disk that is
		// full likewise), it is read once: the requests before the policies' create are
		// decided with them, and the summary says so; nor is it known to be one server's
		// log (compiledBy): no evidence of its verdicts.
		name: "standard input not copied",
		src:  Source{Name: "-", Reader: strings.NewReader(strings.Join(lines, "\n") + "\n")},
		opts: []Option{withSpoolDir(filepath.Join(t.TempDir(), "absent"))},
		want: map[string]string{"early": deny, "moments": admit, "probe": deny, "proven": deny, "before": deny, "unbound-moments": deny, "slow-unbound": deny, "slow-gap": admit, "gap": none, "rebound-moments": admit, "after": deny},
		notes: []string{"the log shows given policies and bindings come and go: 1 creates, 1 deletes (the first: ValidatingAdmissionPolicyBinding no-cm at -:9); a request is decided with each only while it was installed (--policies-throughout decides every request with them)",
			"the log creates 2 of the given policies and bindings (the first: ValidatingAdmissionPolicy no-cm, created at -:2), which were taken as installed before: the log was not read from files, which the replay reads again for where they were at its start (give the log as files)"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sum, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
				append([]Option{WithCheckRecorded(true)}, tc.opts...), tc.src)
			checkOutcomes(t, recs, tc.want)
			notes := slices.DeleteFunc(slices.Clone(sum.Notes), func(n string) bool { return !strings.Contains(n, "given policies") })
			if diff := cmp.Diff(tc.notes, notes); diff != "" {
				t.Errorf("notes mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGivenAnnotatingMoments: a given policy that admits and annotates (random parity c:559,
// its observer), created moments before a request: the log shows the request without its
// annotations (the policy source had not compiled it), and the replay's would be a claim the
// server did not make. Its binding refused nothing: admitted either way, certain, its
// annotations not claimed (it was indeterminate before); a request whose log holds them shows
// it compiled.
func TestGivenAnnotatingMoments(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("observe", "configmaps", admissionregistrationv1.Create, nil, "true")
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "name", ValueExpression: "'seen'"}}
	annotated := func(id, at string) string {
		l := createdIn(t, "configmaps", "ConfigMap", id, at, 201, "observe")
		return replaceOnce(t, l, `"kind":"Event"`, `"kind":"Event","annotations":{"observe/name":"seen"}`)
	}
	lines := []string{
		admissionWrite(t, "vap", "create", "validatingadmissionpolicies", "observe", "01.000", 201, "", nil, nil),
		admissionWrite(t, "vapb", "create", "validatingadmissionpolicybindings", "observe", "01.002", 201, "", nil, nil),
		createdIn(t, "configmaps", "ConfigMap", "moments", "01.300", 201, "observe"),
		annotated("compiled", "01.900"),
		annotated("after", "03.000"),
	}
	_, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b},
		[]Option{WithCheckRecorded(true)}, Source{Name: writeLog(t, t.TempDir(), "audit.log", lines)})
	want := map[string]string{"moments": "admit certain", "compiled": "admit certain", "after": "admit certain"}
	checkOutcomes(t, recs, want)
	if rec := recs["moments"]; rec != nil && (len(rec.AuditAnnotations) > 0 || !slices.ContainsFunc(rec.Notes, func(n string) bool { return strings.Contains(n, "is not claimed") })) {
		t.Errorf("moments: annotations %v, notes %v: want none claimed, and a note saying so", rec.AuditAnnotations, rec.Notes)
	}
	if rec := recs["compiled"]; rec != nil && rec.AuditAnnotations["observe/name"] != "seen" {
		t.Errorf("compiled: annotations %v, want observe/name", rec.AuditAnnotations)
	}
}

// TestGivenSourceDeniedAnyway: a binding created moments before a request that another
// policy, installed long before, denies: denied whether or not the policy source had compiled
// the create (a helper's HA recording, 18 such requests indeterminate).
func TestGivenSourceDeniedAnyway(t *testing.T) {
	t.Parallel()
	always, alwaysB := levelPolicy("always", "configmaps", admissionregistrationv1.Create, nil, "!object.metadata.name.startsWith('x')")
	lines := []string{
		admissionWrite(t, "vap", "create", "validatingadmissionpolicies", "late", "01.000", 201, "", nil, nil),
		admissionWrite(t, "vapb", "create", "validatingadmissionpolicybindings", "late", "01.002", 201, "", nil, nil),
		createdIn(t, "configmaps", "ConfigMap", "x-both", "01.300", 422, "always"),
		createdIn(t, "configmaps", "ConfigMap", "y-late", "01.400", 201, "late"),
	}
	const (
		notCompiled   = "admitted without what kube-apiserver's policy source had not compiled yet (a create)"
		compiledOrNot = "decided whether or not kube-apiserver's policy source had compiled"
	)
	for _, tc := range []struct {
		name    string
		actions []admissionregistrationv1.ValidationAction
		want    map[string]string
		// quiet are the records of which the late binding's results, annotations and
		// warnings are not claimed, with the note that says why.
		quiet map[string]string
	}{{
		// y-late's own admit shows the policy source had not compiled the binding, which
		// would have refused it.
		name:    "the new binding denies",
		actions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
		want:    map[string]string{"x-both": "deny certain", "y-late": "admit certain"},
		quiet:   map[string]string{"y-late": notCompiled},
	}, {
		// Its validation failure annotation is in the log or not as the policy source had
		// compiled it: that is not known.
		name:    "the new binding denies and audits",
		actions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Audit},
		want:    map[string]string{"x-both": "indeterminate policy-source", "y-late": "admit certain"},
		quiet:   map[string]string{"y-late": notCompiled},
	}, {
		// Without the Deny action it refuses nothing: the verdicts are the same whether the
		// policy source had compiled it or not, and what it gave is not claimed (random
		// parity seed r:1462: a Warn and Audit binding created moments before).
		name:    "the new binding audits",
		actions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit},
		want:    map[string]string{"x-both": "deny certain", "y-late": "admit certain"},
		quiet:   map[string]string{"x-both": compiledOrNot, "y-late": compiledOrNot},
	}, {
		name:    "the new binding warns and audits",
		actions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn, admissionregistrationv1.Audit},
		want:    map[string]string{"x-both": "deny certain", "y-late": "admit certain"},
		quiet:   map[string]string{"x-both": compiledOrNot, "y-late": compiledOrNot},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			late, lateB := levelPolicy("late", "configmaps", admissionregistrationv1.Create, nil, "false")
			lateB.Spec.ValidationActions = tc.actions
			_, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{always, late}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{alwaysB, lateB},
				[]Option{WithCheckRecorded(true)}, Source{Name: writeLog(t, t.TempDir(), "audit.log", lines)})
			checkOutcomes(t, recs, tc.want)
			for _, rec := range recs {
				note, ok := tc.quiet[rec.Name]
				if !ok {
					continue
				}
				if slices.ContainsFunc(rec.Results, func(r RecordResult) bool { return r.Policy == "late" }) || rec.AuditAnnotations[ValidationFailureAnnotation] != "" ||
					slices.ContainsFunc(rec.Warnings, func(w string) bool { return strings.Contains(w, "'late'") }) {
					t.Errorf("%s: claims what the late binding gave: results %+v, annotations %v, warnings %q", rec.Name, rec.Results, rec.AuditAnnotations, rec.Warnings)
				}
				if !slices.ContainsFunc(rec.Notes, func(n string) bool {
					return strings.HasPrefix(n, note)
				}) {
					t.Errorf("%s: no note of the binding moments old: %q", rec.Name, rec.Notes)
				}
			}
		})
	}
}

// TestGivenLifecycleWrites: writes of a given policy or binding that do not say where it is
// after them (a delete at level Metadata, which may have been a dry run; a delete whose
// finalizers keep the object, then the garbage collector's patch that deletes it), that
// are no write of it (a 404 of a version the server does not serve), a deletecollection
// before the log's first write of it, and verdicts of another kube-apiserver, whose policy
// source compiles on its own: no request is decided as the server may not have.
func TestGivenLifecycleWrites(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("no-cm", "configmaps", admissionregistrationv1.Create, nil, "false")
	admissionreg := func(id, verb, resource, at string, code int32, message string, req, resp map[string]any) string {
		return admissionWrite(t, id, verb, resource, "no-cm", at, code, message, req, resp)
	}
	cm := func(id, at string, code int32) string {
		return createdIn(t, "configmaps", "ConfigMap", id, at, code, "no-cm")
	}
	binding := func(meta map[string]any) map[string]any {
		meta["name"] = "no-cm"
		return map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": meta, "spec": map[string]any{"policyName": "no-cm", "validationActions": []any{"Deny"}}}
	}
	deleteCollection := replaceOnce(t, admissionreg("dc", "deletecollection", "validatingadmissionpolicybindings", "01.000", 200, "", nil, nil), `"name":"no-cm",`, "")
	unserved := replaceOnce(t, admissionreg("alpha", "delete", "validatingadmissionpolicybindings", "01.000", 404, "the server could not find the requested resource", nil, nil), "/v1/", "/v1alpha9/")
	const (
		none   = "none"
		admit  = "admit certain"
		deny   = "deny certain"
		source = "indeterminate policy-source"
	)
	for _, tc := range []struct {
		name  string
		files [][]string
		// warn binds the policy with the Warn action alone.
		warn bool
		want map[string]string
	}{{
		// A warning decides nothing: moments after the create, the admit is certain.
		name: "a Warn binding created moments before",
		files: [][]string{{
			admissionreg("vap", "create", "validatingadmissionpolicies", "01.000", 201, "", nil, nil),
			admissionreg("vapb", "create", "validatingadmissionpolicybindings", "01.002", 201, "", nil, nil),
			cm("moments", "01.300", 201),
		}},
		warn: true,
		want: map[string]string{"moments": "admit certain"},
	}, {
		// kubectl apply reads the binding (not there), and the server refuses its create:
		// the log holds no other write of it.
		name: "a binding the server refused to create",
		files: [][]string{{
			admissionreg("get", "get", "validatingadmissionpolicybindings", "01.000", 404, `validatingadmissionpolicybindings.admissionregistration.k8s.io "no-cm" not found`, nil, nil),
			admissionreg("refused", "create", "validatingadmissionpolicybindings", "01.002", 422, "refused", nil, nil),
			cm("after", "05.000", 201),
		}},
		want: map[string]string{"after": none},
	}, {
		// A read says nothing of a change: one from the watch cache, moments after the
		// create, did not find it.
		name: "a stale read after the create",
		files: [][]string{{
			admissionreg("create", "create", "validatingadmissionpolicybindings", "01.000", 201, "", nil, nil),
			replaceOnce(t, admissionreg("stale", "get", "validatingadmissionpolicybindings", "01.001", 404, `validatingadmissionpolicybindings.admissionregistration.k8s.io "no-cm" not found`, nil, nil), `/no-cm"`, `/no-cm?resourceVersion=0"`),
			cm("after", "05.000", 422),
		}},
		want: map[string]string{"after": deny},
	}, {
		name: "a deletecollection whose response lists what it deleted",
		files: [][]string{{
			cm("before", "00.000", 422),
			replaceOnce(t, admissionreg("dc", "deletecollection", "validatingadmissionpolicybindings", "01.000", 200, "", map[string]any{"apiVersion": "v1", "kind": "DeleteOptions"},
				map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBindingList", "items": []any{binding(map[string]any{})}}), `"name":"no-cm",`, ""),
			cm("after", "06.000", 201),
		}},
		want: map[string]string{"before": deny, "after": none},
	}, {
		name: "a deletecollection that deleted another",
		files: [][]string{{
			cm("before", "00.000", 422),
			replaceOnce(t, admissionreg("dc", "deletecollection", "validatingadmissionpolicybindings", "01.000", 200, "", map[string]any{"apiVersion": "v1", "kind": "DeleteOptions"},
				map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBindingList", "items": []any{}}), `"name":"no-cm",`, ""),
			cm("after", "05.000", 422),
		}},
		want: map[string]string{"before": deny, "after": deny},
	}, {
		// Created with a finalizer (its request shows it), deleted at level Request: the
		// delete's response, which would show it marked deleted, is not in the log.
		name: "a delete of one with finalizers, without its response",
		files: [][]string{{
			admissionreg("create", "create", "validatingadmissionpolicybindings", "00.500", 201, "", binding(map[string]any{"finalizers": []any{"example.com/keep"}}), nil),
			cm("before", "03.000", 422),
			admissionreg("delete", "delete", "validatingadmissionpolicybindings", "04.000", 200, "", map[string]any{"apiVersion": "v1", "kind": "DeleteOptions"}, nil),
			cm("after", "07.000", 422),
		}},
		// Where it is after the delete is not known; after's own denial shows it there.
		want: map[string]string{"before": deny, "after": deny},
	}, {
		name: "a foreground delete, without its response",
		files: [][]string{{
			cm("before", "00.000", 422),
			admissionreg("delete", "delete", "validatingadmissionpolicybindings", "01.000", 200, "", map[string]any{"apiVersion": "v1", "kind": "DeleteOptions", "propagationPolicy": "Foreground"}, nil),
			cm("after", "05.000", 422),
		}},
		// Where it is after the delete is not known; after's own denial shows it there.
		want: map[string]string{"before": deny, "after": deny},
	}, {
		// The log begins moments after the binding was created (a cut, a rotation): a write
		// of it shows its creationTimestamp, to the second.
		name: "a log that begins moments after the create",
		files: [][]string{{
			cm("first", "00.300", 201),
			admissionreg("status", "patch", "validatingadmissionpolicybindings", "00.500", 200, "", nil, binding(map[string]any{"creationTimestamp": "2026-11-24T00:00:00Z"})),
			cm("late", "05.000", 422),
		}},
		// Its own admit shows the binding was not in effect for it.
		want: map[string]string{"first": admit, "late": deny},
	}, {
		name: "a delete at level Metadata, maybe a dry run",
		files: [][]string{{
			cm("before", "00.000", 422),
			admissionreg("dry-delete", "delete", "validatingadmissionpolicybindings", "01.000", 200, "", nil, nil),
			cm("after", "10.000", 422),
		}},
		// Whether the delete was a dry run is not known, but after's own denial shows the
		// binding in effect.
		want: map[string]string{"before": deny, "after": deny},
	}, {
		name: "a delete its finalizers hold, then the patch that removes them",
		files: [][]string{{
			cm("before", "00.000", 422),
			admissionreg("fg-delete", "delete", "validatingadmissionpolicybindings", "01.000", 200, "", map[string]any{"apiVersion": "v1", "kind": "DeleteOptions"},
				binding(map[string]any{"deletionTimestamp": "2026-11-24T00:00:01Z", "finalizers": []any{"foregroundDeletion"}})),
			cm("pending", "05.000", 422),
			admissionreg("gc-patch", "patch", "validatingadmissionpolicybindings", "06.000", 200, "", map[string]any{"metadata": map[string]any{"finalizers": nil}},
				binding(map[string]any{"deletionTimestamp": "2026-11-24T00:00:01Z"})),
			cm("gone", "11.000", 201),
		}},
		// pending's own denial shows the binding its finalizers held in effect.
		want: map[string]string{"before": deny, "pending": deny, "gone": none},
	}, {
		name: "the patch that removes them, not logged with its result",
		files: [][]string{{
			cm("before", "00.000", 422),
			admissionreg("fg-delete", "delete", "validatingadmissionpolicybindings", "01.000", 202, "", map[string]any{"apiVersion": "v1", "kind": "DeleteOptions"}, nil),
			admissionreg("gc-patch", "patch", "validatingadmissionpolicybindings", "06.000", 200, "", nil, nil),
			cm("gone", "10.000", 201),
		}},
		// Nor whether the patch changed its spec.
		want: map[string]string{"before": deny, "gone": "indeterminate policy-changed"},
	}, {
		name:  "a deletecollection before the first write",
		files: [][]string{{cm("early", "00.000", 422), deleteCollection, admissionreg("create", "create", "validatingadmissionpolicybindings", "05.000", 201, "", nil, nil), cm("after", "10.000", 422)}},
		want:  map[string]string{"early": deny, "after": deny},
	}, {
		name:  "a 404 of a version the server does not serve",
		files: [][]string{{cm("before", "00.000", 422), unserved, cm("after", "10.000", 422)}},
		want:  map[string]string{"before": deny, "after": deny},
	}, {
		name: "another kube-apiserver's verdict",
		files: [][]string{{
			cm("early", "00.000", 201),
			admissionreg("vap", "create", "validatingadmissionpolicies", "01.000", 201, "", nil, nil),
			admissionreg("vapb", "create", "validatingadmissionpolicybindings", "01.002", 201, "", nil, nil),
			cm("probe", "01.100", 422),
			cm("proven", "01.500", 422),
		}, {
			cm("early-b", "00.100", 201),
			cm("on-b", "01.700", 201),
		}},
		// The other server's verdicts say nothing of its own policy source; on-b's own
		// admit does.
		want: map[string]string{"early": none, "probe": deny, "proven": deny, "early-b": none, "on-b": admit},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			var srcs []Source
			for i, lines := range tc.files {
				srcs = append(srcs, Source{Name: writeLog(t, dir, fmt.Sprintf("audit-%d.log", i), lines)})
			}
			b := b
			if tc.warn {
				b = b.DeepCopy()
				b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}
			}
			_, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, []Option{WithCheckRecorded(true)}, srcs...)
			checkOutcomes(t, recs, tc.want)
		})
	}
}

// TestGivenMutatingMoments: a replayed MutatingAdmissionPolicy created moments before a request
// refuses it (an expression's error, failurePolicy Fail): the server may not have compiled it
// yet, and so admitted; a request seconds later is refused, certain.
func TestGivenMutatingMoments(t *testing.T) {
	t.Parallel()
	fail := admissionregistrationv1.Fail
	m := &admissionregistrationv1.MutatingAdmissionPolicy{}
	m.Name = "no-cm"
	m.Spec = admissionregistrationv1.MutatingAdmissionPolicySpec{FailurePolicy: &fail, ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
		}}}},
		Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch,
			JSONPatch: &admissionregistrationv1.JSONPatch{Expression: "[JSONPatch{op: 'add', path: '/metadata/labels', value: {'x': string(1 / (size(request.namespace) - size(request.namespace)))}}]"}}}}
	mb := &admissionregistrationv1.MutatingAdmissionPolicyBinding{}
	mb.Name, mb.Spec.PolicyName = "no-cm", "no-cm"
	admissionreg := func(id, resource, at string) string {
		return admissionWrite(t, id, "create", resource, "no-cm", at, 201, "", nil, nil)
	}
	cm := func(id, at string) string { return createdIn(t, "configmaps", "ConfigMap", id, at, 201, "") }
	// The log then patches the policy's mutation (its result at level Request applied to the
	// copy it showed): the server ran the log's, and a request it ran on is policy-changed.
	respec := admissionWrite(t, "respec", "patch", "mutatingadmissionpolicies", "no-cm", "10.000", 200, "", map[string]any{"spec": map[string]any{"mutations": []any{
		map[string]any{"patchType": "JSONPatch", "jsonPatch": map[string]any{"expression": "[JSONPatch{op: 'add', path: '/metadata/labels', value: {'x': 'y'}}]"}}}}}, nil)
	log := writeLog(t, t.TempDir(), "audit.log", []string{cm("early", "00.000"), admissionreg("map", "mutatingadmissionpolicies", "01.000"),
		admissionreg("mapb", "mutatingadmissionpolicybindings", "01.002"), cm("moments", "01.300"), cm("second", "02.300"), cm("later", "09.000"), respec, cm("respecified", "12.000")})
	_, recs := replaySources(t, nil, nil, []Option{WithMutatingPolicies([]*admissionregistrationv1.MutatingAdmissionPolicy{m}, []*admissionregistrationv1.MutatingAdmissionPolicyBinding{mb})}, Source{Name: log})
	// A request 1.3 s after the binding: the policy source compiles a second after its last
	// refresh, and its refresh compiles every policy (random parity seed r:1518: a binding
	// not in effect 1.26 s after its create).
	want := map[string]string{"early": "none", "moments": "indeterminate policy-source", "second": "indeterminate policy-source", "later": "deny certain", "respecified": "indeterminate policy-changed"}
	checkOutcomes(t, recs, want)
}

// TestGivenMutatingBurst: the cluster's binding of a MutatingAdmissionPolicy the log does not
// show is deleted, then a GitOps sync writes more policies than the sets the replay keeps
// (maxMutatorSets): a request the policy source's window still reaches may have been admitted
// with the binding (a set the replay dropped), which may have changed its object; one after
// the window is decided.
func TestGivenMutatingBurst(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("owner", "configmaps", admissionregistrationv1.Create, nil, `has(object.data) && 'owner' in object.data`)
	lines := []string{
		admissionWrite(t, "bound", "create", "mutatingadmissionpolicybindings", "no-cm", "00.100", 201, "", nil, nil),
		noCMWrite(t, "unbound", "delete", "mutatingadmissionpolicybindings", "01.000", 200),
	}
	for i := range maxMutatorSets {
		lines = append(lines, admissionWrite(t, fmt.Sprintf("other-%d", i), "create", "mutatingadmissionpolicies", fmt.Sprintf("other-%d", i), fmt.Sprintf("01.%03d", 10+i), 201, "", nil, nil))
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c", "namespace": "ns1"}, "data": map[string]any{"a": "b"}}
	for id, at := range map[string]string{"moments": "02.300", "later": "09.000"} {
		// At level Request: the object before any mutation.
		lines = append(lines, timedEvent(t, levelEvent(t, id, auditlog.LevelRequest, "create", "configmaps", "ns1", "c-"+id, 201, "", cm, nil), at+"000", at+"010", nil))
	}
	log := writeLog(t, t.TempDir(), "audit.log", lines)
	_, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, nil, Source{Name: log})
	if rec := recs["moments"]; rec == nil || rec.Decision != DecisionIndeterminate || !strings.Contains(rec.Indeterminate, "which the replay no longer holds") {
		t.Errorf("moments: %v, want indeterminate: the dropped set's binding may have changed it", rec)
	}
	if rec := recs["later"]; rec == nil || rec.Decision != DecisionDeny {
		t.Errorf("later: %v, want deny", rec)
	}
}

// TestClusterMutatingConnect: kube-apiserver's MutatingAdmissionPolicy plugin handles CONNECT
// too (ConnectResource admits the options it then connects with): an exec whose cluster binds a
// MutatingAdmissionPolicy the log does not show may have had its options changed, so a policy
// that reads them decides nothing; one that reads only the request decides (decided before,
// on the options as the request URI gave them).
func TestClusterMutatingConnect(t *testing.T) {
	t.Parallel()
	line := levelEvent(t, "exec", auditlog.LevelMetadata, "create", "pods", "ns1", "p", 101, "", nil, nil)
	line = replaceOnce(t, line, `"requestURI":"/api/v1/namespaces/ns1/pods"`, `"requestURI":"/api/v1/namespaces/ns1/pods/p/exec?command=ls&container=c&stdout=true"`)
	line = replaceOnce(t, line, `"resource":"pods"}`, `"resource":"pods","subresource":"exec"}`)
	lines := []string{
		admissionWrite(t, "bound", "create", "mutatingadmissionpolicybindings", "exec-shaper", "00.100", 201, "", nil, nil),
		timedEvent(t, line, "09.000000", "09.010000", nil),
	}
	for _, tc := range []struct{ name, expr, want string }{
		{"the options", "object.command[0] != 'ls'", DecisionIndeterminate},
		{"the request", "request.name != 'p'", DecisionDeny},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("exec-guard", "pods/exec", admissionregistrationv1.Connect, nil, tc.expr)
			_, recs := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, nil, lines...)
			rec := recs["exec"]
			if rec == nil || rec.Decision != tc.want || tc.want == DecisionIndeterminate && !strings.Contains(rec.Indeterminate, "binds a policy the log does not show") {
				t.Errorf("exec: %s, want %s", describeRecord(rec), tc.want)
			}
		})
	}
}

// TestGivenCompiledTogether: two policies and their bindings applied one after the other; a
// denial by the second, received after its create, shows kube-apiserver's policy source had
// compiled the first too (its informers hold each resource's writes in the order they were
// stored): a request of the first's moments later is decided, certain, though its own log
// shows no verdict of it (the replayed first policy is stricter than the cluster's was).
// A denial shows its own server had compiled the policy (early, probe).
func TestGivenCompiledTogether(t *testing.T) {
	t.Parallel()
	p1, b1 := levelPolicy("no-cm", "configmaps", admissionregistrationv1.Create, nil, "false")
	p2, b2 := levelPolicy("no-secret", "secrets", admissionregistrationv1.Create, nil, "false")
	admissionreg := func(id, resource, name, at string) string {
		return admissionWrite(t, id, "create", resource, name, at, 201, "", nil, nil)
	}
	create := func(id, resource, policy, at string) string {
		kind := map[string]string{"configmaps": "ConfigMap", "secrets": "Secret"}[resource]
		code := int32(422)
		if policy == "" {
			code = 201
		}
		return createdIn(t, resource, kind, id, at, code, policy)
	}
	lines := []string{
		admissionreg("p1", "validatingadmissionpolicies", "no-cm", "01.000"),
		admissionreg("b1", "validatingadmissionpolicybindings", "no-cm", "01.002"),
		admissionreg("p2", "validatingadmissionpolicies", "no-secret", "01.010"),
		admissionreg("b2", "validatingadmissionpolicybindings", "no-secret", "01.012"),
		create("early", "configmaps", "no-cm", "01.200"),
		create("probe", "secrets", "no-secret", "01.500"),
		create("after", "configmaps", "", "01.700"),
	}
	log := writeLog(t, t.TempDir(), "audit.log", lines)
	_, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p1, p2}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b1, b2}, nil, Source{Name: log})
	want := map[string]string{"early": "deny certain", "probe": "deny certain", "after": "deny certain"}
	if diff := cmp.Diff(want, lifecycleOutcomes(t, recs, []string{"early", "probe", "after"})); diff != "" {
		t.Errorf("decisions mismatch (-want +got):\n%s", diff)
	}
}

// TestGivenSpecChanges: the log writes the given binding other than the given one (kubectl
// patch of its validationActions to Warn and Audit: the server admits what the given one
// denies) and back: a request the given pair gives a verdict while the cluster's differs is
// policy-changed, the given one's decision its alternative; one after the log left it the
// given one again is decided, once the policy source's second has passed. Patches at level
// Request are applied to the copy the log last showed; a write whose result the log does not
// show may have changed it.
func TestGivenSpecChanges(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("no-cm", "configmaps", admissionregistrationv1.Create, nil, "false")
	const changed = "indeterminate policy-changed"
	deny := "deny certain"
	write := func(id, verb, at string, req, resp map[string]any) string {
		return admissionWrite(t, id, verb, "validatingadmissionpolicybindings", "no-cm", at, 200, "", req, resp)
	}
	actions := func(a ...any) map[string]any { return map[string]any{"spec": map[string]any{"validationActions": a}} }
	bindingObject := func(a ...any) map[string]any {
		return map[string]any{"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding", "metadata": map[string]any{"name": "no-cm"},
			"spec": map[string]any{"policyName": "no-cm", "validationActions": a}}
	}
	cm := func(id, at string, code int32) string {
		return createdIn(t, "configmaps", "ConfigMap", id, at, code, "no-cm")
	}
	for _, tc := range []struct {
		name  string
		lines []string
		want  map[string]string
		// given are the given binding's validationActions (Deny when nil).
		given []admissionregistrationv1.ValidationAction
	}{{
		name: "patched to Warn and back, at level Request",
		lines: []string{cm("before", "00.000", 422), write("warn", "patch", "01.000", actions("Warn", "Audit"), nil), cm("warned", "03.000", 201),
			write("deny", "patch", "04.000", actions("Deny"), nil), cm("moments", "04.300", 422), cm("slow", "07.000", 422), cm("after", "09.000", 422)},
		// Moments after it was patched back, the policy source may not have compiled it: its
		// own denial is no evidence (the other spec may deny too); nor 3 s after, which a
		// loaded server's policy source may take.
		want: map[string]string{"before": deny, "warned": changed, "moments": changed, "slow": changed, "after": deny},
	}, {
		name: "its response shows it",
		lines: []string{cm("before", "00.000", 422), write("warn", "patch", "01.000", actions("Warn", "Audit"), bindingObject("Warn", "Audit")), cm("warned", "03.000", 201),
			write("apply", "patch", "04.000", bindingObject("Deny"), bindingObject("Deny")), cm("after", "09.000", 422)},
		want: map[string]string{"before": deny, "warned": changed, "after": deny},
	}, {
		name:  "a server-side apply of the given one, a label",
		lines: []string{cm("before", "00.000", 422), write("apply", "patch", "01.000", bindingObject("Deny"), nil), write("label", "patch", "02.000", map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}}, nil), cm("after", "07.000", 422)},
		want:  map[string]string{"before": deny, "after": deny},
	}, {
		// The cluster's copy denies what the given one admits: the given pair gives no
		// verdict, but the copy, which selects the same requests, does.
		name: "the copy denies",
		lines: []string{cm("before", "00.000", 201), write("deny", "patch", "01.000", actions("Deny"), nil), cm("denied", "03.000", 422),
			write("audit", "patch", "04.000", actions("Audit"), nil), cm("moments", "04.300", 422), cm("after", "09.000", 201)},
		want:  map[string]string{"before": "admit certain", "denied": changed, "moments": changed, "after": "admit certain"},
		given: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit},
	}, {
		// A request received 2.5 s after the copy that denies was replaced, and logged after a
		// later write (a label) that completed past the band: the copy was still one the
		// server may have decided with when the request was received (it denied). The copy
		// was dropped as the later write completed, and the request claimed admit certain.
		name: "the copy replaced, a slow request logged after a later write",
		lines: []string{cm("before", "00.000", 201), write("deny", "patch", "01.000", actions("Deny"), nil),
			write("audit", "patch", "04.000", actions("Audit"), nil),
			write("label", "patch", "08.500", map[string]any{"metadata": map[string]any{"labels": map[string]any{"a": "b"}}}, nil),
			timedEvent(t, cm("slow", "06.500", 422), "06.500000", "08.600000", nil), cm("after", "13.000", 201)},
		want:  map[string]string{"before": "admit certain", "slow": changed, "after": "admit certain"},
		given: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit},
	}, {
		// The copy that denies deleted: within the policy source's time after the delete the
		// pair is decided with, and the server decided with the copy, not the given one
		// (which audits): the denials at moments and slow are the copy's.
		name: "the copy deleted",
		lines: []string{cm("before", "00.000", 201), write("deny", "patch", "01.000", actions("Deny"), nil), cm("denied", "03.000", 422),
			write("delete", "delete", "04.000", map[string]any{"apiVersion": "v1", "kind": "DeleteOptions"}, nil), cm("moments", "04.300", 422), cm("slow", "07.000", 422)},
		want:  map[string]string{"before": "admit certain", "denied": changed, "moments": changed, "slow": changed},
		given: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit},
	}, {
		// A binding of another policy: any request may be the copy's.
		name:  "the copy binds another policy",
		lines: []string{cm("before", "00.000", 422), write("rebind", "patch", "01.000", map[string]any{"spec": map[string]any{"policyName": "other"}}, nil), cm("rebound", "03.000", 201)},
		want:  map[string]string{"before": deny, "rebound": changed},
	}, {
		name:  "an update at level Metadata",
		lines: []string{cm("before", "00.000", 422), write("update", "update", "01.000", nil, nil), cm("after", "07.000", 422)},
		want:  map[string]string{"before": deny, "after": changed},
	}, {
		name: "a JSON patch",
		lines: []string{cm("before", "00.000", 422), replaceOnce(t, write("json", "patch", "01.000", map[string]any{"x": "y"}, nil), `{"x":"y"}`, `[{"op":"replace","path":"/spec/validationActions","value":["Audit"]}]`),
			cm("after", "07.000", 201)},
		want: map[string]string{"before": deny, "after": changed},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			log := writeLog(t, t.TempDir(), "audit.log", tc.lines)
			b := b.DeepCopy()
			if tc.given != nil {
				b.Spec.ValidationActions = tc.given
			}
			_, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, nil, Source{Name: log})
			checkOutcomes(t, recs, tc.want)
			for id, w := range tc.want {
				if rec := recs[id]; w == changed && rec != nil && (len(rec.Alternatives) == 0 || rec.Alternatives[len(rec.Alternatives)-1].If != "the cluster's policies and bindings were the given ones") {
					t.Errorf("%s: alternatives %+v, want the given one's decision last", id, rec.Alternatives)
				}
			}
		})
	}
}

// TestGivenActionsChanged: the cluster's copy of a given binding differs in its
// validationActions alone (patched from Deny to Warn at level Request, helper exW): a request
// the given pair admits without a failure, the copy admits alike, and it is decided; one the
// given pair denies is policy-changed (its copy warned).
func TestGivenActionsChanged(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("no-bad", "configmaps", admissionregistrationv1.Create, nil, "!object.metadata.name.startsWith('bad')")
	warn := admissionWrite(t, "warn", "patch", "validatingadmissionpolicybindings", "no-bad", "01.000", 200, "", map[string]any{"spec": map[string]any{"validationActions": []any{"Warn"}}}, nil)
	lines := []string{
		createdIn(t, "configmaps", "ConfigMap", "ok-before", "00.000", 201, ""),
		warn,
		createdIn(t, "configmaps", "ConfigMap", "ok-moments", "01.300", 201, ""),
		createdIn(t, "configmaps", "ConfigMap", "ok-after", "03.000", 201, ""),
		createdIn(t, "configmaps", "ConfigMap", "bad-after", "03.500", 201, ""),
	}
	log := writeLog(t, t.TempDir(), "audit.log", lines)
	_, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, nil, Source{Name: log})
	want := map[string]string{"ok-before": "admit certain", "ok-moments": "admit certain", "ok-after": "admit certain", "bad-after": "indeterminate policy-changed"}
	if diff := cmp.Diff(want, lifecycleOutcomes(t, recs, slices.Collect(maps.Keys(want)))); diff != "" {
		t.Errorf("decisions mismatch (-want +got):\n%s", diff)
	}
}

// TestGivenCopySelects: the cluster's copy of a given policy denies what the given one admits
// (its expression patched): a request the given pair matches is policy-changed, verdict or
// not; and one whose copy selects other requests (its match constraints patched to secrets)
// makes any request policy-changed, here a secret's that only another given policy matches.
func TestGivenCopySelects(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("cm", "configmaps", admissionregistrationv1.Create, nil, "true")
	q, qb := levelPolicy("secret", "secrets", admissionregistrationv1.Create, nil, "true")
	patch := func(id, at string, body map[string]any) string {
		return admissionWrite(t, id, "patch", "validatingadmissionpolicies", "cm", at, 200, "", body, nil)
	}
	const changed = "indeterminate policy-changed"
	for _, tc := range []struct {
		name  string
		lines []string
		want  map[string]string
	}{{
		name: "its expression",
		lines: []string{createdIn(t, "configmaps", "ConfigMap", "before", "00.000", 201, ""),
			patch("expr", "01.000", map[string]any{"spec": map[string]any{"validations": []any{map[string]any{"expression": "false", "message": "no"}}}}),
			createdIn(t, "configmaps", "ConfigMap", "denied", "03.000", 422, "cm")},
		want: map[string]string{"before": "admit certain", "denied": changed},
	}, {
		name: "its match constraints",
		lines: []string{createdIn(t, "secrets", "Secret", "before", "00.000", 201, ""),
			patch("match", "01.000", map[string]any{"spec": map[string]any{"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"secrets"}}}}}}),
			createdIn(t, "secrets", "Secret", "other", "03.000", 201, "")},
		want: map[string]string{"before": "admit certain", "other": changed},
	}, {
		// Three writes within a second: its match constraints and expression, then its
		// expression alone (its match constraints back), then the given one again. The
		// policy source may still hold the first copy, which denies secrets, for a second
		// after the second write replaced it, whichever it compiled since.
		name: "three writes within a second",
		lines: []string{createdIn(t, "secrets", "Secret", "before", "00.000", 201, ""),
			patch("first", "01.000", map[string]any{"spec": map[string]any{
				"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"secrets"}}}},
				"validations":      []any{map[string]any{"expression": "false", "message": "no"}}}}),
			patch("second", "01.100", map[string]any{"spec": map[string]any{
				"matchConstraints": map[string]any{"resourceRules": []any{map[string]any{"apiGroups": []any{""}, "apiVersions": []any{"v1"}, "operations": []any{"CREATE"}, "resources": []any{"configmaps"}}}}}}),
			patch("third", "01.200", map[string]any{"spec": map[string]any{"validations": []any{map[string]any{"expression": "true"}}}}),
			createdIn(t, "secrets", "Secret", "moments", "01.700", 201, ""),
			createdIn(t, "secrets", "Secret", "after", "06.000", 201, "")},
		want: map[string]string{"before": "admit certain", "moments": changed, "after": "admit certain"},
	}} {
		log := writeLog(t, t.TempDir(), "audit.log", tc.lines)
		_, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p, q}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b, qb}, nil, Source{Name: log})
		if diff := cmp.Diff(tc.want, lifecycleOutcomes(t, recs, slices.Collect(maps.Keys(tc.want)))); diff != "" {
			t.Errorf("%s: decisions mismatch (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestGivenCompiledOneServer: one file holding two kube-apiservers' logs, concatenated (its
// clock goes back where the second's begins): the first server's verdict shows its policy
// source had compiled the create, which says nothing of the second's. A request the second
// admitted moments after the create is policy-source, not a deny: neither read in parts (a
// plain file: no compile evidence from a file whose clock goes back) nor read in the file's
// order (gzip-compressed: none from where the clock goes back on).
func TestGivenCompiledOneServer(t *testing.T) {
	t.Parallel()
	p1, b1 := levelPolicy("no-cm", "configmaps", admissionregistrationv1.Create, nil, "false")
	admissionreg := func(id, resource, name, at string) string {
		return admissionWrite(t, id, "create", resource, name, at, 201, "", nil, nil)
	}
	create := func(id, resource, at string, code int32) string {
		kind := map[string]string{"configmaps": "ConfigMap", "secrets": "Secret"}[resource]
		return createdIn(t, resource, kind, id, at, code, "no-cm")
	}
	lines := []string{
		// The first server's.
		admissionreg("p1", "validatingadmissionpolicies", "no-cm", "01.000"),
		admissionreg("b1", "validatingadmissionpolicybindings", "no-cm", "01.002"),
		create("probe", "configmaps", "01.300", 422),
		create("after", "configmaps", "01.400", 422),
		create("filler-1", "secrets", "03.000", 201),
		// The second's, which began before the first's ended.
		create("filler-2", "secrets", "01.100", 201),
		create("other", "configmaps", "01.500", 201),
	}
	dir := t.TempDir()
	plain := writeLog(t, dir, "audit.log", lines)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(strings.Join(lines, "\n") + "\n"))
	zw.Close()
	compressed := filepath.Join(dir, "audit.log.gz")
	if err := os.WriteFile(compressed, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		log  string
		want map[string]string
	}{
		// probe and after are denied by their own verdicts, which show their server had
		// compiled the policy; other's own admit shows its server had not.
		{"in parts", plain, map[string]string{"probe": "deny certain", "after": "deny certain", "other": "admit certain"}},
		{"in the file's order", compressed, map[string]string{"probe": "deny certain", "after": "deny certain", "other": "admit certain"}},
	} {
		_, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p1}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b1}, nil, Source{Name: tc.log})
		if diff := cmp.Diff(tc.want, lifecycleOutcomes(t, recs, []string{"probe", "after", "other"})); diff != "" {
			t.Errorf("%s: decisions mismatch (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestGivenCompiledMergedServers: two kube-apiservers' logs merged in one plain file in the
// order of their times, as a log shipper writes them (helper exW): the first server's verdict
// shows its policy source had compiled the create, which says nothing of the second's; the
// second's admit moments after the create shows its own had not (the request's own response).
// The file shows both servers' identity
// leases; without them it is taken as one server's log.
func TestGivenCompiledMergedServers(t *testing.T) {
	t.Parallel()
	p1, b1 := levelPolicy("no-cm", "configmaps", admissionregistrationv1.Create, nil, "false")
	admissionreg := func(id, resource, name, at string) string {
		return admissionWrite(t, id, "create", resource, name, at, 201, "", nil, nil)
	}
	create := func(id, at string, code int32) string {
		return createdIn(t, "configmaps", "ConfigMap", id, at, code, "no-cm")
	}
	identity := func(id, name, at string) string {
		l := levelEvent(t, id, auditlog.LevelMetadata, "update", "leases", "kube-system", name, 200, "", nil, nil)
		l = replaceOnce(t, l, `"apiVersion":"v1","name"`, `"apiGroup":"coordination.k8s.io","apiVersion":"v1","name"`)
		return timedEvent(t, asUser(t, l, "system:apiserver"), at+"000", at+"500", nil)
	}
	lines := []string{
		admissionreg("p1", "validatingadmissionpolicies", "no-cm", "01.000"),
		admissionreg("b1", "validatingadmissionpolicybindings", "no-cm", "01.002"),
		create("probe", "01.300", 422), // the first server's
		create("other", "01.500", 201), // the second's
	}
	identities := []string{identity("id-a", "apiserver-aaaa", "00.100"), identity("id-b", "apiserver-bbbb", "00.200")}
	for _, tc := range []struct {
		name  string
		lines []string
		want  map[string]string
	}{
		{"with both identities", append(slices.Clone(identities), lines...), map[string]string{"probe": "deny certain", "other": "admit certain"}},
		{"with one", append(identities[:1:1], lines...), map[string]string{"probe": "deny certain", "other": "deny certain"}},
	} {
		log := writeLog(t, t.TempDir(), "audit.log", tc.lines)
		_, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p1}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b1}, nil, Source{Name: log})
		if diff := cmp.Diff(tc.want, lifecycleOutcomes(t, recs, []string{"probe", "other"})); diff != "" {
			t.Errorf("%s: decisions mismatch (-want +got):\n%s", tc.name, diff)
		}
	}
}

// admissionWrite is the audit event of a write (verb, code, message) of the admission object
// name of resource, received at at (seconds of the tests' minute) and completed half a
// millisecond later: at level Metadata unless it holds req or resp.
func admissionWrite(t *testing.T, id, verb, resource, name, at string, code int32, message string, req, resp map[string]any) string {
	t.Helper()
	level := auditlog.LevelMetadata
	if req != nil || resp != nil {
		level = auditlog.LevelRequestResponse
	}
	l := levelEvent(t, id, level, verb, resource, "", name, code, message, req, resp)
	l = replaceOnce(t, l, `"requestURI":"/api/v1/`, `"requestURI":"/apis/admissionregistration.k8s.io/v1/`)
	return timedEvent(t, replaceOnce(t, l, `"apiVersion":"v1","name"`, `"apiGroup":"admissionregistration.k8s.io","apiVersion":"v1","name"`), at+"000", at+"500", nil)
}

// createdIn is the audit event of a create of the object id (of kind) of resource in ns1,
// received at at: admitted (201), or denied by the policy and binding named policy (422).
func createdIn(t *testing.T, resource, kind, id, at string, code int32, policy string) string {
	t.Helper()
	message := ""
	if code == 422 {
		message = resource + ` "` + id + `" is forbidden: ValidatingAdmissionPolicy '` + policy + `' with binding '` + policy + `' denied request: denied by ` + policy
	}
	obj := map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": id, "namespace": "ns1"}}
	return timedEvent(t, levelEvent(t, id, auditlog.LevelRequestResponse, "create", resource, "ns1", id, code, message, obj, nil), at+"000", at+"500", nil)
}

// noCMWrite is a write of the admission policy or binding no-cm, a delete with its options:
// not a dry run (at level Metadata it may have been one).
func noCMWrite(t *testing.T, id, verb, resource, at string, code int32) string {
	t.Helper()
	var options map[string]any
	if verb == "delete" {
		options = map[string]any{"apiVersion": "v1", "kind": "DeleteOptions"}
	}
	return admissionWrite(t, id, verb, resource, "no-cm", at, code, "", options, nil)
}

// deniedWithStatus is createdIn's create of a ConfigMap refused by the policy, with the
// response's Status object, as kube-apiserver logs a failure at level RequestResponse (a GKE
// entry keeps its message then).
func deniedWithStatus(t *testing.T, id, at, policy string) string {
	t.Helper()
	message := `configmaps "` + id + `" is forbidden: ValidatingAdmissionPolicy '` + policy + `' with binding '` + policy + `' denied request: denied by ` + policy
	obj := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": id, "namespace": "ns1"}}
	status := map[string]any{"apiVersion": "v1", "kind": "Status", "metadata": map[string]any{}, "status": "Failure", "message": message, "reason": "Invalid", "code": int64(422)}
	return timedEvent(t, levelEvent(t, id, auditlog.LevelRequestResponse, "create", "configmaps", "ns1", id, 422, message, obj, status), at+"000", at+"500", nil)
}

// writeLog writes the lines as the log file name in dir.
func writeLog(t *testing.T, dir, name string, lines []string) string {
	t.Helper()
	log := filepath.Join(dir, name)
	if err := os.WriteFile(log, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return log
}

// checkOutcomes holds the records of want's ids to its outcomes (see lifecycleOutcomes).
func checkOutcomes(t *testing.T, recs map[string]*Record, want map[string]string) {
	t.Helper()
	if diff := cmp.Diff(want, lifecycleOutcomes(t, recs, slices.Collect(maps.Keys(want)))); diff != "" {
		t.Errorf("decisions mismatch (-want +got):\n%s", diff)
	}
}

// lifecycleOutcomes are the decisions of the records of ids: "none" without one, the decision
// and certainty, or "indeterminate" and the reason. A record that disagrees with the log
// fails the test.
func lifecycleOutcomes(t *testing.T, recs map[string]*Record, ids []string) map[string]string {
	t.Helper()
	got := map[string]string{}
	for _, id := range ids {
		got[id] = "none"
		rec := recs[id]
		switch {
		case rec == nil:
		case rec.Decision == DecisionIndeterminate:
			got[id] = string(rec.Decision) + " " + string(rec.Reason)
		default:
			got[id] = string(rec.Decision) + " " + string(rec.Certainty)
		}
		if rec != nil && len(rec.Disagreements) > 0 {
			t.Errorf("%s: disagrees with the log: %v", id, rec.Disagreements)
		}
	}
	return got
}

// TestSameSelectionParams: a binding patched to another paramRef (parameterNotFoundAction
// Deny where the given one allows, helper exAJ) selects the same requests, but may refuse those
// the given pair skipped for want of a param: the copy's params differ (selectedAny).
func TestSameSelectionParams(t *testing.T) {
	k := givenKey{givenMutatingBinding, "team"}
	spec := func(paramRef string) string {
		return `{"policyName":"team","matchResources":{"matchPolicy":"Equivalent"}` + paramRef + `}`
	}
	allow, deny := spec(`,"paramRef":{"name":"p","parameterNotFoundAction":"Allow"}`), spec(`,"paramRef":{"name":"p","parameterNotFoundAction":"Deny"}`)
	for _, tc := range []struct {
		name         string
		a, b         string
		same, params bool // sameSelection without and with the params
	}{
		{name: "the same", a: allow, b: allow, same: true, params: true},
		{name: "parameterNotFoundAction", a: allow, b: deny, same: true, params: false},
		{name: "no paramRef", a: allow, b: spec(""), same: true, params: false},
		{name: "another policy", a: allow, b: `{"policyName":"other","matchResources":{"matchPolicy":"Equivalent"},"paramRef":{"name":"p","parameterNotFoundAction":"Allow"}}`, same: false, params: false},
	} {
		if got := sameSelection(k, tc.a, tc.b, false); got != tc.same {
			t.Errorf("%s: sameSelection without params %v, want %v", tc.name, got, tc.same)
		}
		if got := sameSelection(k, tc.a, tc.b, true); got != tc.params {
			t.Errorf("%s: sameSelection with params %v, want %v", tc.name, got, tc.params)
		}
	}
}

// TestWithoutRefusingPairs: an unsure pair settles a record only where it refused nothing:
// each of its results an admit, or one of a binding without the Deny action. A binding without
// Deny refuses all the same where it cannot be configured under failurePolicy Fail (params not
// found, parameterNotFoundAction Deny), and the policy source may not have compiled it, so that
// the request's verdict may have been another.
func TestWithoutRefusingPairs(t *testing.T) {
	pair := givenPair{givenKey{givenPolicy, "late"}, givenKey{givenBinding, "late"}}
	deny, audit := []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}
	for _, tc := range []struct {
		name    string
		result  verify.Result
		settled bool
	}{
		{"audited a failure", verify.Result{Policy: "late", Binding: "late", Result: verify.ResultDeny, Actions: audit}, true},
		{"not configured", verify.Result{Policy: "late", Binding: "late", Result: verify.ResultError, Actions: deny, Message: "failed to configure binding: no params found"}, false},
		{"a binding with Deny admitted, annotating", verify.Result{Policy: "late", Binding: "late", Result: verify.ResultAdmit, Actions: deny, AuditAnnotations: map[string]string{"k": "v"}}, true},
		{"a binding with Deny denied", verify.Result{Policy: "late", Binding: "late", Result: verify.ResultDeny, Actions: deny}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := &job{}
			j.result.dec = &verify.Decision{Allowed: true, Results: []verify.Result{tc.result}}
			out := &Record{Decision: DecisionAdmit}
			if got := j.withoutRefusingPairs(out, []givenPair{pair}, nil, []string{"created moments before"}); got != tc.settled {
				t.Errorf("settled %v, want %v", got, tc.settled)
			}
		})
	}
}

// TestGivenOwnResponse: moments after a binding's create or delete, a request the binding
// would refuse is decided by its own response where that shows whether the server had the
// binding in effect: an admit (a binding in effect would have refused it: not compiled yet,
// what the binding gave not claimed), or the binding's own denial as the evaluation words it
// (in effect). A denial worded otherwise (the server's copy may not be the given one), and an
// admit where a binding settled long before refuses too, stay as they were.
func TestGivenOwnResponse(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("no-cm", "configmaps", admissionregistrationv1.Create, nil, "false")
	b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Audit}
	old, oldB := levelPolicy("old", "configmaps", admissionregistrationv1.Create, nil, "!object.metadata.name.startsWith('both')")
	admissionreg := func(id, verb, resource, at string, code int32) string {
		return noCMWrite(t, id, verb, resource, at, code)
	}
	lines := []string{
		admissionreg("vap", "create", "validatingadmissionpolicies", "01.000", 201),
		admissionreg("vapb", "create", "validatingadmissionpolicybindings", "01.002", 201),
		createdIn(t, "configmaps", "ConfigMap", "admitted", "01.300", 201, "no-cm"),
		createdIn(t, "configmaps", "ConfigMap", "both", "01.350", 201, "no-cm"),
		createdIn(t, "configmaps", "ConfigMap", "settled", "03.000", 422, "no-cm"),
		admissionreg("unbind", "delete", "validatingadmissionpolicybindings", "04.000", 200),
		createdIn(t, "configmaps", "ConfigMap", "in-effect", "04.200", 422, "no-cm"),
		replaceOnce(t, createdIn(t, "configmaps", "ConfigMap", "worded-otherwise", "04.300", 422, "no-cm"), "denied by no-cm", "denied by an older no-cm"),
	}
	_, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p, old}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b, oldB}, nil,
		Source{Name: writeLog(t, t.TempDir(), "audit.log", lines)})
	checkOutcomes(t, recs, map[string]string{
		"admitted":         "admit certain",
		"both":             "indeterminate policy-source", // old denies it too: the log's admit is no evidence of no-cm
		"settled":          "deny certain",
		"in-effect":        "deny certain",
		"worded-otherwise": "indeterminate policy-source",
	})
	rec := recs["admitted"]
	if rec == nil {
		t.Fatal("no record of admitted")
	}
	if slices.ContainsFunc(rec.Results, func(r RecordResult) bool { return r.Policy == "no-cm" }) || rec.AuditAnnotations[ValidationFailureAnnotation] != "" {
		t.Errorf("admitted: claims what the binding moments old gave: results %+v, annotations %v", rec.Results, rec.AuditAnnotations)
	}
	if !slices.ContainsFunc(rec.Notes, func(n string) bool {
		return strings.HasPrefix(n, "admitted without what kube-apiserver's policy source had not compiled yet")
	}) {
		t.Errorf("admitted: no note of why: %q", rec.Notes)
	}
	if rec := recs["in-effect"]; rec != nil && !slices.ContainsFunc(rec.Results, func(r RecordResult) bool { return r.Policy == "no-cm" && r.Result == verify.ResultDeny }) {
		t.Errorf("in-effect: the binding's denial is not among its results: %+v", rec.Results)
	}
}

// TestGivenOwnResponseExported: a GKE export does not say when a request was received; one
// that completed two seconds after a binding's create is decided with it, likely, unless its
// own admit shows the binding was not in effect for it (received before the policy source
// compiled the create). Where another pair, deleted moments before, is settled by the
// request's own denial, the one created seconds before refuses nothing (it only audits): the
// denial is certain, and what that one gave is not claimed (it was likely before, settled as an
// unsure pair was not).
func TestGivenOwnResponseExported(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("no-cm", "configmaps", admissionregistrationv1.Create, nil, "false")
	aud, audB := levelPolicy("aud", "configmaps", admissionregistrationv1.Create, nil, "false")
	audB.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}
	for _, tc := range []struct {
		name  string
		lines []string
		want  map[string]string
	}{{
		name: "admitted",
		lines: []string{
			noCMWrite(t, "vap", "create", "validatingadmissionpolicies", "01.000", 201),
			noCMWrite(t, "vapb", "create", "validatingadmissionpolicybindings", "01.002", 201),
			createdIn(t, "configmaps", "ConfigMap", "admitted", "03.000", 201, "no-cm"),
		},
		want: map[string]string{"admitted": "admit certain"},
	}, {
		name: "denied by a binding deleted moments before",
		lines: []string{
			admissionWrite(t, "vap", "create", "validatingadmissionpolicies", "aud", "01.000", 201, "", nil, nil),
			admissionWrite(t, "vapb", "create", "validatingadmissionpolicybindings", "aud", "01.002", 201, "", nil, nil),
			noCMWrite(t, "unbind", "delete", "validatingadmissionpolicybindings", "03.000", 200),
			deniedWithStatus(t, "in-effect", "03.300", "no-cm"),
		},
		want: map[string]string{"in-effect": "deny certain"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			sink, err := exporttest.Wrap(exporttest.GKESink, []byte(strings.Join(tc.lines, "\n")+"\n"))
			if err != nil {
				t.Fatal(err)
			}
			log := filepath.Join(t.TempDir(), "sink.json")
			if err := os.WriteFile(log, sink, 0o644); err != nil {
				t.Fatal(err)
			}
			_, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p, aud}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b, audB}, nil, Source{Name: log})
			checkOutcomes(t, recs, tc.want)
			if rec := recs["in-effect"]; rec != nil && (slices.ContainsFunc(rec.Results, func(r RecordResult) bool { return r.Policy == "aud" }) ||
				strings.Contains(rec.AuditAnnotations[ValidationFailureAnnotation], `"aud"`)) {
				t.Errorf("in-effect claims what the binding created seconds before gave: %+v %v", rec.Results, rec.AuditAnnotations)
			}
		})
	}
}

// TestGivenSourceSlowCompile: past the policy source's window after a binding's create, the
// binding is in effect likely, not surely, for as long again (a loaded server compiles late:
// random parity controllers seed c:787, an observer binding not in effect 2.8 s after its
// create completed, whose audit annotations the replay claimed). A request there is decided
// by what its own response shows (an admit the binding would have refused, the binding's
// denial), or without claiming what a binding that refuses nothing gave; past that band, with
// the binding.
func TestGivenSourceSlowCompile(t *testing.T) {
	t.Parallel()
	lines := []string{
		admissionWrite(t, "vap", "create", "validatingadmissionpolicies", "late", "01.000", 201, "", nil, nil),
		admissionWrite(t, "vapb", "create", "validatingadmissionpolicybindings", "late", "01.002", 201, "", nil, nil),
		createdIn(t, "configmaps", "ConfigMap", "x-slow", "03.800", 201, "late"),
		createdIn(t, "configmaps", "ConfigMap", "x-denied", "03.900", 422, "late"),
		createdIn(t, "configmaps", "ConfigMap", "x-after", "07.000", 422, "late"),
	}
	for _, tc := range []struct {
		name    string
		actions []admissionregistrationv1.ValidationAction
		check   bool
		want    map[string]string
	}{
		{name: "denies, checked", actions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}, check: true,
			want: map[string]string{"x-slow": "admit certain", "x-denied": "deny certain", "x-after": "deny certain"}},
		{name: "denies", actions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			want: map[string]string{"x-slow": "admit certain", "x-denied": "deny certain", "x-after": "deny certain"}},
		// It refuses nothing: its validation_failure entry, which the log shows or not as the
		// policy source had compiled it, is not claimed there.
		{name: "audits", actions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit},
			want: map[string]string{"x-slow": "admit certain"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			late, lateB := levelPolicy("late", "configmaps", admissionregistrationv1.Create, nil, "false")
			lateB.Spec.ValidationActions = tc.actions
			_, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{late}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{lateB},
				[]Option{WithCheckRecorded(tc.check)}, Source{Name: writeLog(t, t.TempDir(), "audit.log", lines)})
			got := map[string]string{}
			for name := range tc.want {
				got[name] = "none"
				for _, rec := range recs {
					if rec.Name == name {
						got[name] = string(rec.Decision) + " " + string(rec.Certainty)
						if len(rec.Disagreements) > 0 {
							got[name] += fmt.Sprint(" ", rec.Disagreements)
						}
						if name == "x-slow" && rec.AuditAnnotations[ValidationFailureAnnotation] != "" {
							got[name] += " claiming " + rec.AuditAnnotations[ValidationFailureAnnotation]
						}
					}
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("decisions (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGivenSourceSlowCompileLikely: in the band past the policy source's window, a binding that
// denies and audits, where a policy installed long before denies the request too (the log's
// refusal is that one's): denied either way, but its validation_failure entry is in the log or
// not as the policy source had compiled it, which the request's response does not show: likely,
// its alternative the binding not compiled. Past the band, settled (the request at 05.300 is
// 4.30 s after the create completed, the band 4.25 s).
func TestGivenSourceSlowCompileLikely(t *testing.T) {
	t.Parallel()
	always, alwaysB := levelPolicy("always", "configmaps", admissionregistrationv1.Create, nil, "!object.metadata.name.startsWith('x')")
	late, lateB := levelPolicy("late", "configmaps", admissionregistrationv1.Create, nil, "false")
	lateB.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Audit}
	lines := []string{
		admissionWrite(t, "vap", "create", "validatingadmissionpolicies", "late", "01.000", 201, "", nil, nil),
		admissionWrite(t, "vapb", "create", "validatingadmissionpolicybindings", "late", "01.002", 201, "", nil, nil),
		createdIn(t, "configmaps", "ConfigMap", "x-band", "03.800", 422, "always"),
		createdIn(t, "configmaps", "ConfigMap", "x-past", "05.300", 422, "always"),
	}
	_, recs := replaySources(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{always, late}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{alwaysB, lateB},
		nil, Source{Name: writeLog(t, t.TempDir(), "audit.log", lines)})
	checkOutcomes(t, recs, map[string]string{"x-band": "deny likely", "x-past": "deny certain"})
	if rec := recs["x-band"]; rec != nil && !slices.ContainsFunc(rec.Alternatives, func(a Alternative) bool { return a.Reason == ReasonPolicySource }) {
		t.Errorf("x-band: no alternative of the binding not compiled: %v", rec.Alternatives)
	}
}

// TestRecencySince: what a request's reason says of when a policy or binding changed against
// it. Where its export lost when it was received (GKE), received is the earliest it can have
// been, a minute before its response: the change is placed against the response, and the
// text says why (it said "59.5s before the request was received" of a request received
// moments after the change).
func TestRecencySince(t *testing.T) {
	at := func(s string) time.Time { return auditlog.ParseTime("2026-01-02T03:04:" + s + "Z") }
	for _, tc := range []struct {
		name string
		rc   recency
		done time.Time
		want string
	}{
		{name: "before it was received", rc: recency{received: at("05.500"), completed: at("05.600")}, done: at("05.000"),
			want: "500ms before the request was received"},
		{name: "after it was received", rc: recency{received: at("05.500"), completed: at("05.600")}, done: at("05.550"),
			want: "after the request was received"},
		{name: "its export lost when it was received", rc: recency{received: at("05.600").Add(-auditlog.MaxRequestDuration), completed: at("05.600"), lostReceived: true}, done: at("05.100"),
			want: "500ms before the request completed, and the export does not say when it was received"},
	} {
		if got := tc.rc.since(tc.done); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
