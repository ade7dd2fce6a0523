package replay

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const auditData = "../../testdata/audit"

// loadPolicies reads a scenario's policy.yaml.
func loadPolicies(t testing.TB, dir string) ([]*admissionregistrationv1.ValidatingAdmissionPolicy, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	_, ps, bs := readPolicies(t, filepath.Join(dir, "policy.yaml"))
	return ps, bs
}

// readPolicies reads the policies of a file or folder: the set, and its validating policies
// and bindings.
func readPolicies(t testing.TB, path string) (*cel.Set, []*admissionregistrationv1.ValidatingAdmissionPolicy, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	t.Helper()
	set, diags := cel.ReadPaths(nil, path)
	if len(diags.Without(cel.Info).Without(cel.Warning)) > 0 {
		t.Fatalf("policies: %v", diags)
	}
	var ps []*admissionregistrationv1.ValidatingAdmissionPolicy
	for _, p := range set.Policies {
		ps = append(ps, p.ValidatingAdmissionPolicy)
	}
	var bs []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, b := range set.Bindings {
		bs = append(bs, b.ValidatingAdmissionPolicyBinding)
	}
	return set, ps, bs
}

// replayScenario replays a scenario folder's log with its policies and snapshot.
func replayScenario(t testing.TB, dir, log string, opts ...Option) (*Summary, []*Record) {
	t.Helper()
	ps, bs := loadPolicies(t, dir)
	if _, err := os.Stat(filepath.Join(dir, "snapshot.yaml")); err == nil {
		opts = append(opts, WithSnapshot(filepath.Join(dir, "snapshot.yaml")))
	}
	r, err := New(ps, bs, append(opts, WithCheckRecorded(true))...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return replayFile(t, r, filepath.Join(dir, log))
}

// replayFile runs the replayer over one log file and returns its summary and records.
func replayFile(t testing.TB, r *Replayer, path string) (*Summary, []*Record) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var recs []*Record
	sum, err := r.Run(context.Background(), []Source{{Name: filepath.Base(path), Reader: f}}, func(rec *Record) error {
		recs = append(recs, rec)
		return nil
	})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return sum, recs
}

func golden(t *testing.T, path string, got []byte) {
	t.Helper()
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// TestGolden replays every scenario of testdata/audit and compares the text summary and the
// JSON lines with the golden files.
func TestGolden(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dir, log string
		// disagreements is how many verdicts of the log --check-recorded must contradict.
		disagreements int
	}{
		{"kosmos-basic", "audit.log.gz", 0},
		// The policies were not installed when the log was written: the log holds no verdict
		// of theirs to contradict (Summary.UncheckedPolicies).
		{"kosmos-flapping", "audit.jsonl", 0},
		{"kosmos-denied-variants", "audit.jsonl", 2}, // line 16 ran under another (Audit) binding: admitted, with another annotation
		{"draino", "audit.jsonl", 0},                 // not installed either
		{"busy-hour", "audit.jsonl", 0},
		{"recorded-e2e", "audit.log.gz", 0}, // recorded by verify/e2e TestDecisionParity on kube-apiserver v1.37.0
		{"edge-cases", "audit.jsonl", 0},    // line 10: no-db-evictions ([Deny] only) was not installed: the eviction was admitted
		// Recorded by verify/e2e TestReplayAuditLevels on kube-apiserver v1.37.0 under the audit
		// policy of the folder's audit-policy.yaml.
		{"levels-production", "audit.log.gz", 0},
		{"levels-request", "audit.log.gz", 0},
		{"levels-omit-managed-fields", "audit.log.gz", 0},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(auditData, tc.dir)
			sum, recs := replayScenario(t, dir, tc.log)
			var text, jsonl bytes.Buffer
			if err := WriteText(&text, sum); err != nil {
				t.Fatal(err)
			}
			w := JSONLWriter(&jsonl)
			for _, r := range recs {
				if err := w(r); err != nil {
					t.Fatal(err)
				}
			}
			golden(t, filepath.Join(dir, "replay.golden"), text.Bytes())
			golden(t, filepath.Join(dir, "replay.jsonl.golden"), jsonl.Bytes())
			if got := len(sum.Disagreements); got != tc.disagreements {
				t.Errorf("disagreements = %d, want %d: %v", got, tc.disagreements, sum.Disagreements)
			}
			accounted := sum.MalformedCount + sum.Blank + sum.Duplicates + sum.IntermediateStages + sum.Requests
			if accounted != sum.Lines {
				t.Errorf("lines = %d, accounted for %d", sum.Lines, accounted)
			}
			if got := total(sum.Skipped) + sum.NotMatched + sum.Evaluated; got != sum.Requests {
				t.Errorf("requests = %d, skipped+not matched+evaluated = %d", sum.Requests, got)
			}
		})
	}
}

// TestKosmosBasic pins the decisions on the log recorded by kube-apiserver v1.37.0.
func TestKosmosBasic(t *testing.T) {
	t.Parallel()
	sum, recs := replayScenario(t, filepath.Join(auditData, "kosmos-basic"), "audit.log.gz")
	type row struct{ Name, User, Decision, Recorded string }
	var got []row
	for _, r := range recs {
		got = append(got, row{r.Name, r.User, r.Decision, r.Recorded})
	}
	want := []row{
		{"web-a", "system:serviceaccount:kube-system:node-controller", "deny", "deny"},
		{"web-b", "system:serviceaccount:kube-system:node-controller", "admit", "admit"},
		{"web-c", "admin", "admit", "admit"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("decisions mismatch (-want +got):\n%s", diff)
	}
	if sum.Checked != 3 || len(sum.Disagreements) != 0 {
		t.Errorf("checked %d, disagreements %v; want 3 checked, none", sum.Checked, sum.Disagreements)
	}
}

// TestSnapshotSeedsParams replays the flapping log without and with the snapshot: without it,
// the param Nodes are not known and the node-controller deletes are indeterminate.
func TestSnapshotSeedsParams(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(auditData, "kosmos-flapping")
	ps, bs := loadPolicies(t, dir)
	r, err := New(ps, bs)
	if err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum, err := r.Run(context.Background(), []Source{{Name: "audit.jsonl", Reader: f}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if sum.Deny != 0 || total(sum.Indeterminate) == 0 {
		t.Errorf("without snapshot: deny %d, indeterminate %v; want 0 and some", sum.Deny, sum.Indeterminate)
	}
	with, _ := replayScenario(t, dir, "audit.jsonl")
	if with.Deny != 2 {
		t.Errorf("with snapshot: deny %d, want 2", with.Deny)
	}
}

// fakeEvaluator denies every DELETE and records what it was asked.
type fakeEvaluator struct{ reqs []verify.Request }

func (f *fakeEvaluator) Evaluate(_ context.Context, req verify.Request) (*verify.Decision, error) {
	f.reqs = append(f.reqs, req)
	res := verify.Result{Policy: "edge-guard", Binding: "edge-guard", Result: verify.ResultAdmit}
	if req.Operation == "DELETE" {
		res.Result, res.Message = verify.ResultDeny, "fake"
		res.Actions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}
		return &verify.Decision{Code: 403, Message: "fake", Results: []verify.Result{res}}, nil
	}
	return &verify.Decision{Allowed: true, Code: 200, Results: []verify.Result{res}}, nil
}

// EvaluateAttributes records a request kube-apiserver's pipeline built as Evaluate records the
// requests the replay rebuilds.
func (f *fakeEvaluator) EvaluateAttributes(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) (*verify.Decision, error) {
	req := verify.Request{Operation: a.GetOperation(), Name: a.GetName(), DryRun: a.IsDryRun(),
		UserInfo: verify.UserInfo{Username: a.GetUserInfo().GetName()}}
	if a.GetOldObject() != nil {
		req.OldObject = &unstructured.Unstructured{}
	}
	if opts, ok := a.GetOperationOptions().(*metav1.DeleteOptions); ok && opts.GracePeriodSeconds != nil {
		req.Options = &unstructured.Unstructured{Object: map[string]any{"gracePeriodSeconds": *opts.GracePeriodSeconds}}
	}
	return f.Evaluate(ctx, req)
}

// TestFakeEvaluator drives a replay through the narrow Evaluator interface and checks the
// rebuilt requests: impersonated user, dryRun, options, old objects.
func TestFakeEvaluator(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(auditData, "edge-cases")
	ps, bs := loadPolicies(t, dir)
	fake := &fakeEvaluator{}
	r, err := New(ps, bs, WithWorkers(1), WithEvaluator(func(_ []*admissionregistrationv1.ValidatingAdmissionPolicy, _ []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, _ verify.Resources, _ verify.ObjectStore) (Evaluator, error) {
		return fake, nil
	}))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := r.Run(context.Background(), []Source{{Name: filepath.Join(dir, "audit.jsonl")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	type req struct {
		Op, Name, User string
		DryRun         bool
		Old            bool
		Grace          any
	}
	var got []req
	for _, q := range fake.reqs {
		var grace any
		if q.Options != nil {
			grace = q.Options.Object["gracePeriodSeconds"]
		}
		r := req{string(q.Operation), q.Name, q.UserInfo.Username, q.DryRun, q.OldObject != nil, grace}
		// A request may be evaluated more than once (a patch as each of the types it may
		// have been sent as; a decision checked without the old object): once is enough.
		if len(got) > 0 && got[len(got)-1] == r {
			continue
		}
		got = append(got, r)
	}
	// The grace period of a pod's DELETE is the one the pod strategy sets before admission:
	// its terminationGracePeriodSeconds when none is asked for.
	want := []req{
		{"UPDATE", "web-0", "admin", false, true, nil},
		{"DELETE", "db-0", "jane", false, true, int64(30)},
		{"DELETE", "web-0", "admin", true, true, int64(30)},
		{"DELETE", "web-0", "admin", false, true, int64(30)},
		{"DELETE", "web-0", "system:node:w1", false, true, int64(0)},
		{"CREATE", "db-0", "system:serviceaccount:kube-system:draino", false, false, nil},
		// At level Metadata, its options not logged: over a stand-in for the pod the replay
		// does not know (unscheduled: a grace period of zero), its decision undecided.
		{"DELETE", "cache-0", "admin", false, true, int64(0)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("requests mismatch (-want +got):\n%s", diff)
	}
	if sum.Skipped[string(SkipPendingDeletion)] != 1 {
		t.Errorf("skipped %v, want one %s", sum.Skipped, SkipPendingDeletion)
	}
}

// TestMalformedInput checks that bad lines are counted with their line numbers and never stop
// the replay: invalid JSON, a line over the limit, a truncated gzip stream, a missing file.
func TestMalformedInput(t *testing.T) {
	t.Parallel()
	lines := gunzipLines(t, filepath.Join(auditData, "kosmos-basic", "audit.log.gz"))
	long := `{"auditID":"x","stage":"ResponseComplete","pad":"` + strings.Repeat("a", 5000) + `"}` + "\n"
	mixed := lines[0] + "{oops\n" + long + lines[9] + "[1,2]\n" + lines[12][:40]
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(strings.Join(lines[1:9], ""))) // other requests than mixed's
	zw.Close()
	truncated := gz.Bytes()[:gz.Len()/2]

	ps, bs := loadPolicies(t, filepath.Join(auditData, "kosmos-basic"))
	r, err := New(ps, bs, WithMaxLineBytes(4096))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := r.Run(context.Background(), []Source{
		{Name: "mixed.log", Reader: strings.NewReader(mixed)},
		{Name: "truncated.log.gz", Reader: bytes.NewReader(truncated)},
		{Name: filepath.Join(t.TempDir(), "missing.log")},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// The logs' lines are read as one log, in the time order of their events (a line that is
	// not one at once): each log's in its order.
	var got []string
	rank := map[string]int{"mixed.log": 0, "truncated.log.gz": 1, "missing.log": 2}
	malformed := slices.Clone(sum.Malformed)
	sort.SliceStable(malformed, func(i, j int) bool {
		return rank[filepath.Base(malformed[i].File)] < rank[filepath.Base(malformed[j].File)]
	})
	for _, m := range malformed {
		reason := m.Reason
		if strings.HasPrefix(reason, "cannot open") {
			reason = "cannot open"
		}
		got = append(got, filepath.Base(m.File)+":"+itoa(m.Line)+": "+reason)
	}
	want := []string{
		"mixed.log:2: not JSON: invalid character 'o' looking for beginning of object key string",
		"mixed.log:3: line longer than 4096 bytes (at least 5052): skipped",
		"mixed.log:5: not an audit.k8s.io/v1 Event: a JSON array, not an object",
		"mixed.log:6: truncated JSON (40 bytes)",
	}
	if len(got) < len(want)+2 {
		t.Fatalf("malformed = %q, want %q and the gzip and missing file errors", got, want)
	}
	if diff := cmp.Diff(want, got[:len(want)]); diff != "" {
		t.Errorf("malformed mismatch (-want +got):\n%s", diff)
	}
	if !strings.Contains(got[len(want)], "truncated.log.gz") || !strings.Contains(got[len(want)], "truncated") {
		t.Errorf("gzip: got %q, want a truncated stream", got[len(want)])
	}
	if got[len(got)-1] != "missing.log:0: cannot open" {
		t.Errorf("missing file: got %q", got[len(got)-1])
	}
	if sum.Requests < 2 {
		t.Errorf("requests = %d: good lines after bad ones must still be replayed", sum.Requests)
	}
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

// TestHostileLines: every line that is not a request of its own is reported with its line
// number, and the rest of the log is replayed: a final record read twice, an event of another
// apiVersion or kind, a resource request without objectRef. Events out of time order and
// unknown fields are replayed as they come.
func TestHostileLines(t *testing.T) {
	t.Parallel()
	ev := func(id, extra string) string {
		return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"` + id + `","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/ns/configmaps/c","verb":"get","user":{"username":"u"},"objectRef":{"resource":"configmaps","namespace":"ns","name":"c","apiVersion":"v1"},"responseStatus":{"code":200},"stageTimestamp":"2026-11-22T10:00:0` + id + `Z"` + extra + "}\n"
	}
	noRef := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"7","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/ns/pods/p","verb":"delete","user":{"username":"u"},"responseStatus":{"code":200}}` + "\n"
	healthz := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"8","stage":"ResponseComplete","requestURI":"/apis/apps/v1?timeout=32s","verb":"get","user":{"username":"u"},"responseStatus":{"code":200}}` + "\n"
	log := ev("1", "") +
		ev("2", `,"unknownField":{"a":[1]}`) +
		ev("1", `,"annotations":{"a":"b"}`) + // another final record of the first's audit ID
		strings.Replace(ev("3", ""), "audit.k8s.io/v1", "audit.k8s.io/v1beta1", 1) +
		strings.Replace(ev("4", ""), `"kind":"Event"`, `"kind":"EventList"`, 1) +
		ev("5", "") +
		strings.Replace(ev("6", ""), "10:00:06Z", "09:00:00Z", 1) + // out of time order
		noRef + healthz
	r, err := New(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	sum, err := r.Run(context.Background(), []Source{{Name: "hostile.log", Reader: strings.NewReader(log)}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	// In the order of the lines: the log's clock goes back at line 7, whose part is read
	// first.
	malformed := slices.Clone(sum.Malformed)
	slices.SortStableFunc(malformed, func(a, b Malformed) int { return a.Line - b.Line })
	for _, m := range malformed {
		got = append(got, itoa(m.Line)+": "+m.Reason)
	}
	want := []string{
		"3: duplicate: the final record of audit ID 1 was read at hostile.log:1 already, another event",
		`4: not an audit.k8s.io/v1 Event: apiVersion "audit.k8s.io/v1beta1", kind "Event"`,
		`5: not an audit.k8s.io/v1 Event: apiVersion "audit.k8s.io/v1", kind "EventList"`,
		"8: no objectRef: a request for a resource (/api/v1/namespaces/ns/pods/p) without the object it is about",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("malformed mismatch (-want +got):\n%s", diff)
	}
	if sum.Lines != 9 || sum.Requests != 5 || sum.Skipped[string(SkipRead)] != 4 || sum.Skipped[string(SkipNonResource)] != 1 {
		t.Errorf("lines %d, requests %d, skipped %v; want 9 lines, 5 requests: 4 reads and 1 non-resource", sum.Lines, sum.Requests, sum.Skipped)
	}
	if want := int64(len(log)); sum.Bytes != want {
		t.Errorf("bytes = %d, want %d", sum.Bytes, want)
	}
}

// TestRecordedE2E holds the replay to the log kube-apiserver v1.37.0 wrote in the decision
// parity scenarios of verify/e2e (Kosmos flapping, drainer cordons and evictions, ConfigMap
// and Node params, selectors, matchConditions, failurePolicy, dry runs, impersonation, every
// patch type, deletes of terminating pods): no request indeterminate, no verdict of the log
// contradicted, and every denial predicted with the server's code and message.
func TestRecordedE2E(t *testing.T) {
	t.Parallel()
	sum, recs := replayScenario(t, filepath.Join(auditData, "recorded-e2e"), "audit.log.gz")
	if len(sum.Disagreements) > 0 || total(sum.Indeterminate) > 0 {
		t.Errorf("disagreements %v, indeterminate %v; want none", sum.Disagreements, sum.Indeterminate)
	}
	denials := 0
	for _, r := range recs {
		if r.Changed {
			t.Errorf("line %d: recorded %s, predicted %s", r.Line, r.Recorded, r.Decision)
		}
		if r.Recorded == RecordedDeny {
			denials++
		}
	}
	if sum.Evaluated < 50 || denials < 20 {
		t.Errorf("evaluated %d requests with %d recorded denials, want the scenarios' (50, 20)", sum.Evaluated, denials)
	}
	if got := sum.Skipped[string(SkipPendingDeletion)]; got != 2 {
		t.Errorf("skipped %d deletes of terminating pods, want 2", got)
	}
}

// TestRotatedLogsInTimeOrder: rotated logs given newest first, as a shell glob sorts
// audit.log before audit.log.1.gz, are replayed oldest first, so that the State sees the
// writes in order: the Kosmos guard's denial is predicted, and the summary says so.
func TestRotatedLogsInTimeOrder(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(auditData, "kosmos-basic")
	lines := gunzipLines(t, filepath.Join(dir, "audit.log.gz"))
	tmp := t.TempDir()
	older, newer := filepath.Join(tmp, "audit.log.1.gz"), filepath.Join(tmp, "audit.log")
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(strings.Join(lines[:len(lines)/2], "")))
	zw.Close()
	if err := os.WriteFile(older, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(newer, []byte(strings.Join(lines[len(lines)/2:], "")), 0o644); err != nil {
		t.Fatal(err)
	}
	ps, bs := loadPolicies(t, dir)
	r, err := New(ps, bs, WithCheckRecorded(true))
	if err != nil {
		t.Fatal(err)
	}
	sum, err := r.Run(context.Background(), []Source{{Name: newer}, {Name: older}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{older, newer}, sum.Files); diff != "" {
		t.Errorf("files mismatch (-want +got):\n%s", diff)
	}
	if !slices.ContainsFunc(sum.Notes, func(n string) bool {
		return strings.Contains(n, "in the time order of their events, not in the order given")
	}) {
		t.Errorf("notes = %q, want one about the order", sum.Notes)
	}
	if sum.Deny != 1 || total(sum.Indeterminate) != 0 || len(sum.Disagreements) != 0 {
		t.Errorf("deny %d, indeterminate %v, disagreements %v; want the one denial, none indeterminate", sum.Deny, sum.Indeterminate, sum.Disagreements)
	}
}

// gunzipLines returns the lines of a gzip-compressed log, each with its line end.
func gunzipLines(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	var plain bytes.Buffer
	if _, err := plain.ReadFrom(zr); err != nil {
		t.Fatal(err)
	}
	return strings.SplitAfter(plain.String(), "\n")
}

func withSpecFinalizers(u *unstructured.Unstructured, finalizers ...any) *unstructured.Unstructured {
	u.Object["spec"] = map[string]any{"finalizers": finalizers}
	return u
}

func TestEmptiedOfFinalizers(t *testing.T) {
	t.Parallel()
	obj := func(kind string, deleting bool, grace *int64, finalizers ...string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": kind, "metadata": map[string]any{"name": "x"}}}
		if deleting {
			u.SetDeletionTimestamp(&metav1.Time{Time: time.Unix(1, 0)})
		}
		u.SetDeletionGracePeriodSeconds(grace)
		u.SetFinalizers(finalizers)
		return u
	}
	zero, thirty := int64(0), int64(30)
	for _, tc := range []struct {
		name string
		u    *unstructured.Unstructured
		want bool
		raw  []byte
	}{
		{"being deleted, no finalizer left", obj("ConfigMap", true, &zero), true, nil},
		{"being deleted, no grace period", obj("ConfigMap", true, nil), true, nil},
		{"a finalizer left", obj("ConfigMap", true, &zero, "orphan"), false, nil},
		{"a grace period left", obj("Pod", true, &thirty), false, nil},
		{"not being deleted", obj("ConfigMap", false, nil), false, nil},
		// ShouldDeleteNamespaceDuringUpdate: spec.finalizers too.
		{"a namespace finalized", obj("Namespace", true, nil), true, nil},
		{"a namespace with spec.finalizers", withSpecFinalizers(obj("Namespace", true, nil), "kubernetes"), false, nil},
		{"a namespace's header, its spec in the JSON", obj("Namespace", true, nil), false, []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"x","deletionTimestamp":"1970-01-01T00:00:01Z"},"spec":{"finalizers":["kubernetes"]}}`)},
	} {
		if got := emptiedOfFinalizers(tc.u, tc.raw); got != tc.want {
			t.Errorf("%s: emptiedOfFinalizers = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestRecentIDs checks the memory of audit IDs read: a UUID and any other string are found
// again as long as fewer than maxRecentIDs others came since, and two IDs are one only if they
// are the same string.
func TestRecentIDs(t *testing.T) {
	t.Parallel()
	const id = "6f1c2a5e-0b7d-4c1e-9a3f-2d8e4b6a1c07"
	var r recentIDs
	for i, tc := range []struct {
		id      string
		dup     bool
		firstAt int
	}{
		{id: id},
		{id: strings.ToUpper(id)},
		{id: "not-a-uuid"},
		{id: "6f1c2a5e-0b7d-4c1e-9a3f-2d8e4b6a1c0g"}, // not hexadecimal
		{id: id, dup: true, firstAt: 0},
		{id: strings.ToUpper(id), dup: true, firstAt: 1},
		{id: "not-a-uuid", dup: true, firstAt: 2},
		{id: "6f1c2a5e-0b7d-4c1e-9a3f-2d8e4b6a1c0g", dup: true, firstAt: 3},
		{id: "6f1c2a5e-0b7d-4c1e-9a3f-2d8e4b6a1c08"},
	} {
		first, dup := r.add(tc.id, finalRef{lineRef{file: "a.log", line: i}, 1})
		if dup != tc.dup || (dup && first.lineRef != (lineRef{file: "a.log", line: tc.firstAt})) {
			t.Errorf("%d: add(%q) = %v, %v; want dup %v at a.log:%d", i, tc.id, first, dup, tc.dup, tc.firstAt)
		}
	}
	// The oldest are forgotten once maxRecentIDs more were read.
	for i := 0; i < maxRecentIDs; i++ {
		if _, dup := r.add(fmt.Sprintf("%08x-0000-4000-8000-000000000000", i), finalRef{lineRef{file: "b.log", line: i}, 1}); dup {
			t.Fatalf("add(%d) is a duplicate", i)
		}
	}
	if _, dup := r.add(id, finalRef{lineRef{file: "c.log", line: 1}, 1}); dup {
		t.Errorf("add(%q) after %d others is a duplicate, want it forgotten", id, maxRecentIDs)
	}
	if first, dup := r.add(fmt.Sprintf("%08x-0000-4000-8000-000000000000", maxRecentIDs-1), finalRef{lineRef{file: "c.log", line: 2}, 1}); !dup || first.String() != fmt.Sprintf("b.log:%d", maxRecentIDs-1) {
		t.Errorf("the last ID read: %v, %v; want a duplicate of b.log:%d", first, dup, maxRecentIDs-1)
	}
}

// TestRunOnce: a Replayer's State moves forward with the log it replays: a second Run is an
// error, not a replay from where the first left off.
func TestRunOnce(t *testing.T) {
	t.Parallel()
	ps, bs := loadPolicies(t, filepath.Join(auditData, "kosmos-basic"))
	r, err := New(ps, bs)
	if err != nil {
		t.Fatal(err)
	}
	log := []Source{{Name: "a.log", Reader: strings.NewReader("")}}
	if _, err := r.Run(context.Background(), log, nil); err != nil {
		t.Fatal(err)
	}
	if sum, err := r.Run(context.Background(), log, nil); err == nil || sum != nil {
		t.Errorf("a second Run: %v, %v; want an error", sum, err)
	}
}

// TestClockJumpNotes: a log that goes back at many lines has the first few noted, one by one,
// and the rest counted in one note, not dropped unsaid.
func TestClockJumpNotes(t *testing.T) {
	t.Parallel()
	var log strings.Builder
	// Pairs of seconds written later one first: back two seconds at every second line.
	for s := 0; s < 20; s += 4 {
		for _, at := range []int{s + 3, s + 1} {
			fmt.Fprintf(&log, `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"%d","stage":"ResponseComplete","requestURI":"/api/v1/namespaces","verb":"list","user":{"username":"u"},"objectRef":{"resource":"namespaces","apiVersion":"v1"},"responseStatus":{"code":200},"stageTimestamp":"2026-11-22T10:00:%02d.000000Z"}`+"\n", at, at)
		}
	}
	// Split cuts a plain file into its parts; a compressed one is replayed in its order, its
	// jumps met as it is read.
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	zw.Write([]byte(log.String()))
	zw.Close()
	for name, data := range map[string][]byte{"audit.log": []byte(log.String()), "audit.log.gz": gz.Bytes()} {
		path := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := New(nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		sum, err := r.Run(context.Background(), []Source{{Name: path}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		var noted, more []string
		for _, n := range sum.Notes {
			switch {
			case strings.Contains(n, "the log's clock goes back"):
				noted = append(noted, n)
			case strings.Contains(n, "more lines than those noted above"):
				more = append(more, n)
			}
		}
		if len(sum.ClockJumps) != 5 || len(noted) != maxClockNotes || len(more) != 1 || !strings.Contains(more[0], "at 2 more lines") {
			t.Errorf("%s: %d jumps, notes %q and %q; want 5 jumps, %d noted and the 2 more counted", name, len(sum.ClockJumps), noted, more, maxClockNotes)
		}
	}
}
