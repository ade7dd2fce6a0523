package replay

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/cel"
	vapcschema "github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/exporttest"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// The logs of testdata/recorded were recorded by real kube-apiserver v1.37.0 servers with the
// ServiceAccount admission plugin disabled, while the policies of each folder were installed
// (see ../../shared/recorded/README.md, where they come from). The verdicts in them are the
// server's: the replay must reproduce them.
const recordings = "testdata/recorded"

// TestRecordings replays the recorded logs and holds every verdict the server recorded for the
// folder's policies (a validation_failure entry, a denial) to the replay's: never contradicted
// (a wrong claim, certain or likely), and decided but where the log does not hold what the
// decision needs (the reasons each case allows).
func TestRecordings(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name      string
		dir, log  string
		snapshot  bool
		crds      bool
		check     bool
		undecided []Reason // the reasons a verdict may be indeterminate for
		// export is the cloud export the log is replayed as (exporttest), its verdicts the
		// log's.
		export export.Format
		// gkeDryRuns is WithGKEDryRunsLabelled.
		gkeDryRuns bool
		// atLeast is how many of the server's verdicts the replay must reach (where an export
		// leaves some undecided).
		atLeast int
	}{
		{name: "a", dir: "a", log: "audit.log.gz"},
		{name: "a checked", dir: "a", log: "audit.log.gz", check: true},
		{name: "b", dir: "b", log: "audit.log.gz"},
		{name: "b checked", dir: "b", log: "audit.log.gz", check: true},
		{name: "c", dir: "c", log: "tail.log.gz", snapshot: true},
		// Pods at Metadata level: a decision that needs their objects is not known (a pod
		// deleted or evicted earlier at Metadata level, whose deletion may have left it, as an
		// old object or as a param); a DELETE or an eviction is decided over the snapshot's pod
		// without its body.
		{name: "c pods at Metadata", dir: "c", log: "tail-metadata.log.gz", snapshot: true, undecided: []Reason{ReasonNoObject, ReasonOldObjectUnknown, ReasonParamUnknown}},
		// Two patches whose content type the log does not record decide differently by it. (A
		// deletecollection a policy refused deleted the objects the replay's pipeline reached
		// first, failedDeleteCollection; a pod DELETE a policy refused was refused before or
		// after the store marked the pod as the pipeline's was, refusedPodDelete.)
		{name: "d", dir: "d", log: "audit.log.gz", crds: true, undecided: []Reason{ReasonPatchType}},
		{name: "d checked", dir: "d", log: "audit.log.gz", crds: true, check: true, undecided: []Reason{ReasonPatchType}},
		// The CRDs logged at Metadata level only: served from their create; a paramKind the
		// replay learns from the first use of its resource is not known before it.
		{name: "d without its CRDs", dir: "d", log: "audit.log.gz", undecided: []Reason{ReasonPatchType, ReasonParamKindUnknown}},
		// GKE's entries do not say when a request was received: a write that completed tens of
		// milliseconds before a request is likely one it read (admissionMayFollow), and a
		// paramKind found before a request completed likely found when it came (receivedEarly).
		{name: "a as GKE's sink", dir: "a", log: "audit.log.gz", export: exporttest.GKESink, atLeast: 15},
		{name: "d without its CRDs, as GKE's sink", dir: "d", log: "audit.log.gz", export: exporttest.GKESink, atLeast: 31,
			undecided: []Reason{ReasonPatchType, ReasonParamKindUnknown, ReasonExportLost, ReasonUnknownField, ReasonOldObjectUnknown, ReasonNamespaceUnknown, ReasonNoObject}},
		// d holds no dry run, so its export shows no labelled entry: told that the cluster's
		// GKE labels them, none of its writes may have been one (a namespace's labels, a node's
		// conditions are known again).
		{name: "d without its CRDs, as GKE's sink labelling dry runs", dir: "d", log: "audit.log.gz", export: exporttest.GKESink, gkeDryRuns: true, atLeast: 45,
			undecided: []Reason{ReasonPatchType, ReasonParamKindUnknown, ReasonExportLost, ReasonUnknownField, ReasonOldObjectUnknown, ReasonNamespaceUnknown, ReasonNoObject}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(recordings, tc.dir)
			opts := []Option{WithCheckRecorded(tc.check), WithAdmissionPlugins(withoutServiceAccount(t)), WithGKEDryRunsLabelled(tc.gkeDryRuns)}
			if tc.snapshot {
				opts = append(opts, WithSnapshot(filepath.Join(dir, "snapshot.yaml")))
			}
			if tc.crds {
				opts = append(opts, WithResources(catalogWithCRDs(t, filepath.Join(dir, "crds.yaml"))))
			}
			log := filepath.Join(dir, tc.log)
			if tc.export != "" {
				log = exported(t, log, tc.export)
			}
			recs := replayRecording(t, filepath.Join(dir, "policies.yaml"), log, opts...)
			names := strings.Split(strings.TrimSpace(readString(t, filepath.Join(dir, "policy-names"))), ",")
			verdicts := recordedVerdicts(t, filepath.Join(dir, tc.log), names)
			ignored := ignoredPolicies(t, filepath.Join(dir, "policies.yaml"))
			agree, likely := 0, 0
			for id, v := range verdicts {
				rec := recs[id]
				counted := func(r RecordResult) bool { return !(r.Result == "error" && ignored[r.Policy]) }
				interesting := len(v.fails) > 0 || v.deny != "" || (rec != nil && (slices.ContainsFunc(rec.Results, counted) || rec.Decision != DecisionAdmit))
				switch {
				case !interesting:
					continue
				case rec == nil:
					t.Errorf("%s: the server recorded %v (deny %q), the replay has no record", v.desc, v.fails, v.deny)
					continue
				case rec.Decision == DecisionIndeterminate:
					if !slices.Contains(tc.undecided, rec.Reason) {
						t.Errorf("%s: the server recorded %v (deny %q), the replay is %s", v.desc, v.fails, v.deny, rec.Indeterminate)
					}
					continue
				}
				var fails []string
				for _, r := range rec.Results {
					if counted(r) && (r.Result == "deny" || r.Result == "error") && slices.Contains(r.Actions, "Audit") && r.ExpressionIndex != nil {
						fails = append(fails, r.Policy+"/"+r.Binding+"/"+r.Message)
					}
				}
				slices.Sort(fails)
				fails = slices.Compact(fails) // the audit event keeps a key's first value
				ok := slices.Equal(fails, v.fails) && (rec.Decision == DecisionDeny) == (v.deny != "")
				if ok && v.deny != "" {
					ok = slices.ContainsFunc(rec.Results, func(r RecordResult) bool { return r.Message != "" && strings.HasSuffix(v.deny, r.Message) })
				}
				if !ok {
					t.Errorf("%s: the server recorded %v (deny %q), the replay predicts %s (%s) %v: a wrong claim", v.desc, v.fails, v.deny, rec.Decision, rec.Certainty, fails)
					continue
				}
				agree++
				if rec.Certainty == CertaintyLikely {
					likely++
				}
			}
			t.Logf("%d verdicts agree, %d of them likely", agree, likely)
			if agree < tc.atLeast {
				t.Errorf("%d verdicts agree, want %d at least", agree, tc.atLeast)
			}
			for _, rec := range recs {
				if rec.Reason == ReasonParamKindPending {
					t.Errorf("%s: %s: kube-apiserver had found the paramKind long before", rec, rec.Indeterminate)
				}
			}
		})
	}
}

// TestRecordingsGuards replays the seed incident's log (testdata/recorded/b, recorded with
// reference guards in Audit mode) with the in-tree guards of policies/: they flag exactly the
// requests the reference guards flagged, the node controller's deletes of a NotReady Kosmos
// leaf node's pods among them, with --check-recorded or without (the log shows no verdict of
// the in-tree guards, which the cluster did not run: their absence is no evidence).
func TestRecordingsGuards(t *testing.T) {
	t.Parallel()
	guards := map[string]string{"ref-kosmos-node-not-ready": "kosmos-node-not-ready", "ref-drainer-cordon-guard": "drainer-cordon-guard"}
	log := filepath.Join(recordings, "b", "audit.log.gz")
	want := map[string][]string{}
	var descs map[string]string
	eachFinalEvent(t, log, func(ev *recordedEvent) {
		for _, f := range ev.failures() {
			if g, ok := guards[f.Policy]; ok && !slices.Contains(want[ev.AuditID], g) {
				want[ev.AuditID] = append(want[ev.AuditID], g)
			}
		}
		if descs == nil {
			descs = map[string]string{}
		}
		descs[ev.AuditID] = ev.desc()
	})
	if len(want) != 6 {
		t.Fatalf("the reference guards flagged %d requests, want 6", len(want))
	}
	// And the log as GKE's sink hands it over, which does not say when a request was received:
	// the node's NotReady status, written 60 to 230 ms before each of those deletes completed,
	// is likely what it read (admissionMayFollow). What GKE lost may leave other requests
	// undecided, not the flagged ones.
	for _, v := range []struct {
		check bool
		gke   bool
	}{{false, false}, {true, false}, {false, true}} {
		check, replayed := v.check, log
		if v.gke {
			replayed = exported(t, log, exporttest.GKESink)
		}
		recs := replayRecording(t, filepath.Join("..", "..", "policies"), replayed, WithCheckRecorded(check), WithAdmissionPlugins(withoutServiceAccount(t)))
		got := map[string][]string{}
		for id, rec := range recs {
			for _, r := range rec.Results {
				if (r.Result == "deny" || r.Result == "error") && !slices.Contains(got[id], r.Policy) {
					got[id] = append(got[id], r.Policy)
				}
			}
			if rec.Decision == DecisionIndeterminate && (!v.gke || want[id] != nil) {
				t.Errorf("check %v, GKE %v: %s: %s", check, v.gke, descs[id], rec.Indeterminate)
			}
		}
		for id := range want {
			slices.Sort(want[id])
			slices.Sort(got[id])
		}
		for id := range got {
			if !slices.Equal(want[id], got[id]) {
				t.Errorf("check %v, GKE %v: %s: the reference guards flagged %v, the in-tree guards %v", check, v.gke, descs[id], want[id], got[id])
			}
		}
		for id := range want {
			if !slices.Equal(want[id], got[id]) {
				t.Errorf("check %v, GKE %v: %s: the reference guards flagged %v, the in-tree guards %v", check, v.gke, descs[id], want[id], got[id])
			}
		}
	}
}

// exported writes the log as the export f hands it over, and returns its path.
func exported(t *testing.T, log string, f export.Format) string {
	t.Helper()
	data, err := exporttest.Wrap(f, exporttest.ReadLog(t, log))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), exporttest.Name(f, 0))
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func withoutServiceAccount(t *testing.T) []string {
	t.Helper()
	plugins, err := AdmissionPlugins(nil, []string{"ServiceAccount"})
	if err != nil {
		t.Fatal(err)
	}
	return plugins
}

// replayRecording replays the log with the policies of the file or folder, and returns the
// records by audit ID.
func replayRecording(t *testing.T, policies, log string, opts ...Option) map[string]*Record {
	t.Helper()
	set, ps, bs := readPolicies(t, policies)
	// The map order vapc check's lint names, as cmd/vapc gives it; opts may give another.
	opts = append([]Option{WithMapOrder(mapOrderOf(t, policies))}, opts...)
	r, err := New(ps, bs, append(opts, WithMutatingPolicies(set.MutatingPolicyList(), set.MutatingBindingList()))...)
	if err != nil {
		t.Fatal(err)
	}
	recs := map[string]*Record{}
	if _, err := r.Run(context.Background(), []Source{{Name: log}}, func(rec *Record) error {
		recs[rec.AuditID] = rec
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return recs
}

// recordedVerdict is what the server recorded of a request for the named policies: the
// validation_failure entries (policy/binding/message, sorted) and a denial's message.
type recordedVerdict struct {
	fails []string
	deny  string
	desc  string
}

var recordedDenial = regexp.MustCompile(`ValidatingAdmissionPolicy '([^']+)' with binding '([^']+)' denied request: (.*)$`)

// recordedVerdicts reads the verdicts of the named policies from the final events of a log.
func recordedVerdicts(t *testing.T, log string, names []string) map[string]recordedVerdict {
	t.Helper()
	out := map[string]recordedVerdict{}
	eachFinalEvent(t, log, func(ev *recordedEvent) {
		if ev.Verb == "get" || ev.Verb == "list" || ev.Verb == "watch" {
			return
		}
		v := recordedVerdict{desc: ev.desc()}
		for _, f := range ev.failures() {
			if slices.Contains(names, f.Policy) {
				v.fails = append(v.fails, f.Policy+"/"+f.Binding+"/"+f.Message)
			}
		}
		slices.Sort(v.fails)
		v.fails = slices.Compact(v.fails)
		if ev.ResponseStatus != nil {
			if m := recordedDenial.FindStringSubmatch(ev.ResponseStatus.Message); m != nil && slices.Contains(names, m[1]) {
				v.deny = m[3]
			}
		}
		out[ev.AuditID] = v
	})
	return out
}

// recordedEvent is the part of an audit event the recordings' tests read.
type recordedEvent struct {
	AuditID     string            `json:"auditID"`
	Stage       string            `json:"stage"`
	Verb        string            `json:"verb"`
	Annotations map[string]string `json:"annotations"`
	ObjectRef   *struct {
		Resource, Subresource, Namespace, Name string
	} `json:"objectRef"`
	User struct {
		Username string `json:"username"`
	} `json:"user"`
	ImpersonatedUser *struct {
		Username string `json:"username"`
	} `json:"impersonatedUser"`
	ResponseStatus *struct {
		Code    int32  `json:"code"`
		Message string `json:"message"`
	} `json:"responseStatus"`
}

func (e *recordedEvent) failures() []validationFailure {
	var fs []validationFailure
	_ = json.Unmarshal([]byte(e.Annotations[ValidationFailureAnnotation]), &fs)
	return fs
}

func (e *recordedEvent) desc() string {
	user := e.User.Username
	if e.ImpersonatedUser != nil {
		user = e.ImpersonatedUser.Username
	}
	ref := e.ObjectRef
	if ref == nil {
		return e.Verb + " by " + user
	}
	res := ref.Resource
	if ref.Subresource != "" {
		res += "/" + ref.Subresource
	}
	return e.AuditID + " " + e.Verb + " " + res + " " + state.JoinKey(ref.Namespace, ref.Name) + " by " + user
}

// eachFinalEvent calls fn with every ResponseComplete event of the gzip-compressed log.
func eachFinalEvent(t *testing.T, log string, fn func(*recordedEvent)) {
	t.Helper()
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(zr)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var ev recordedEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("%s: %v", log, err)
		}
		if ev.Stage == "ResponseComplete" {
			fn(&ev)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

// ignoredPolicies are the policies of the file whose failurePolicy is Ignore: the server drops
// their errors.
func ignoredPolicies(t *testing.T, path string) map[string]bool {
	t.Helper()
	set, _ := cel.ReadPaths(nil, path)
	out := map[string]bool{}
	for _, p := range set.Policies {
		if fp := p.Spec.FailurePolicy; fp != nil && *fp == admissionregistrationv1.Ignore {
			out[p.Name] = true
		}
	}
	return out
}

func readString(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// catalogWithCRDs is the built-in catalog of Kubernetes 1.37 with the CRDs of the file.
func catalogWithCRDs(t *testing.T, path string) *vapcschema.Catalog {
	t.Helper()
	cat, err := vapcschema.Builtin(verify.KubernetesVersion)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.LoadCRDs(path); err != nil {
		t.Fatal(err)
	}
	return cat
}
