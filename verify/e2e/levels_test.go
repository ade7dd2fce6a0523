package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"github.com/vapc-dev/vapc/verify/e2e/harness"
	"github.com/vapc-dev/vapc/verify/replay"
)

// auditLevel is an audit policy a real cluster may run with, and what a replay of its log
// may leave undecided: the reasons (Record.Reason)
// a request may be indeterminate for, because the log truly lacks the data.
type auditLevel struct {
	name string
	// policy is the file of testdata/levels given to --audit-policy-file.
	policy string
	// indeterminate maps the reasons allowed to whether some request must have it.
	indeterminate map[string]bool
}

var auditLevels = []auditLevel{
	{
		// RequestResponse for writes of pods and nodes (subresources included), Metadata for
		// everything else, no RequestReceived stage: ConfigMaps are written at Metadata level,
		// so the toleration floor (a ConfigMap param) and every ConfigMap request a policy
		// decides by its object are unknown, and so is a ConfigMap after such a write.
		name: "production", policy: "production.yaml",
		indeterminate: map[string]bool{"no-object": true, "param-unknown": true, "old-object-unknown": false},
	},
	{
		// Request for everything: no response objects. The replay follows each write through
		// the pipeline, but what the log does not say stays unknown: a patch's content type
		// (merge and strategic merge patches write the nodes' condition lists differently), so
		// the conditions a param or an oldObject holds after one.
		name: "request", policy: "request.yaml",
		indeterminate: map[string]bool{"param-unknown": true, "unknown-field": true, "old-object-unknown": false, "namespace-unknown": false, "request-object": false, "patch": false},
	},
	{
		// RequestResponse for everything with omitManagedFields: every decision is determinable.
		name: "omit-managed-fields", policy: "omit-managed-fields.yaml",
		indeterminate: map[string]bool{},
	},
}

// TestReplayAuditLevels drives a real kube-apiserver through a compact set of the decision
// scenarios under the audit policies real clusters use, then replays its log with
// --check-recorded semantics: zero disagreements, never a wrong decision, every line accounted
// for, and every denial of the server either predicted with the same code and message or
// indeterminate for a reason the level explains.
func TestReplayAuditLevels(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd; skipped with -short")
	}
	set := inTreeGuards(t).add(readPolicies(t, "testdata/decision/policies.yaml"))
	for _, lv := range auditLevels {
		t.Run(lv.name, func(t *testing.T) {
			t.Parallel()
			policy, err := filepath.Abs(filepath.Join("testdata/levels", lv.policy))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			s := harness.Start(t, harness.WithAPIServerFlags("--audit-policy-file="+policy))
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			d := &decisions{cluster: newCluster(t, s), t: t, ctx: ctx}
			d.setup(set)
			d.kosmosFlapping()
			d.drainer()
			d.tolerations()
			d.levelsConfigMaps()
			// A last write every policy logs: once its event is in the log, so is every other.
			d.put(ctx, configMap(podsNS, "levels-end", nil, nil))
			last := d.lastAuditID()
			waitForAuditEvent(ctx, t, s.AuditLogPath(), func(e *auditEvent) bool {
				return string(e.AuditID) == last && e.Stage == "ResponseComplete"
			})
			t.Logf("%s: %d requests checked, %d denials, %s", lv.name, d.sent, len(d.denied), time.Since(start).Round(time.Millisecond))
			if dir := os.Getenv("VAPC_E2E_RECORD_LEVELS"); dir != "" {
				recordLevel(t, filepath.Join(dir, "levels-"+lv.name), s.AuditLogPath(), policy, set)
			}
			checkLevelReplay(t, lv, s.AuditLogPath(), set, d.denied)
		})
	}
}

// levelsConfigMaps: a denied create, an admitted create, a denied update that reads the
// oldObject and an admitted strategic merge patch, against the namespace of the guard.
func (d *decisions) levelsConfigMaps() {
	ctx := d.ctx
	alice := d.as(e2eAlice, []string{"e2e-writers"}, "uid-alice", map[string][]string{"team": {"platform", "sre"}})
	cms := func(c dynamic.Interface) dynamic.ResourceInterface {
		return c.Resource(configMapsGVR).Namespace(guardedNS)
	}
	create := func(c dynamic.Interface, cm *unstructured.Unstructured) error {
		_, err := cms(c).Create(ctx, cm, metav1.CreateOptions{})
		return err
	}
	d.want("alice creates a configmap with a password", create(alice, configMap(guardedNS, "cm-1", nil, map[string]any{"password": "hunter2"})),
		"configmap cm-1 of team payments holds a password (dryRun false, CREATE)")
	d.want("alice creates an audited configmap", create(alice, configMap(guardedNS, "cm-5", map[string]any{"e2e.vapc.dev/audit": "true"}, map[string]any{"owner": "alice"})), "")
	d.want("alice changes the owner (update)", func() error {
		cm, err := cms(alice).Get(ctx, "cm-5", metav1.GetOptions{})
		if err != nil {
			return err
		}
		cm.Object["data"] = map[string]any{"owner": "bob"}
		_, err = cms(alice).Update(ctx, cm, metav1.UpdateOptions{})
		return err
	}(), "the owner of a configmap cannot change")
	d.want("alice adds a key (strategic patch)", d.kubectl("patch", "configmap", "-n", guardedNS, "cm-5", "--as="+e2eAlice, "--as-group=e2e-writers",
		"--as-uid=uid-alice", "--type=strategic", "-p", `{"data":{"color":"blue"}}`), "")
}

// checkLevelReplay replays the log of one audit level and holds it to the server's decisions.
func checkLevelReplay(t *testing.T, lv auditLevel, log string, set policySet, denied []denial) {
	t.Helper()
	r, err := replay.New(set.policies, set.bindings, replay.WithCheckRecorded(true))
	if err != nil {
		t.Fatal(err)
	}
	byID := map[string]*replay.Record{}
	sum, err := r.Run(context.Background(), []replay.Source{{Name: log}}, func(rec *replay.Record) error {
		byID[rec.AuditID] = rec
		return nil
	})
	if err != nil {
		t.Fatalf("replay: %v", err)
	}
	var text strings.Builder
	if err := replay.WriteText(&text, sum); err != nil {
		t.Fatal(err)
	}
	t.Logf("vapc replay --check-recorded (%s):\n%s", lv.name, text.String())

	// Every line accounted for.
	skipped := 0
	for _, n := range sum.Skipped {
		skipped += n
	}
	indeterminate := 0
	for _, n := range sum.Indeterminate {
		indeterminate += n
	}
	if got := sum.MalformedCount + sum.Blank + sum.Duplicates + sum.IntermediateStages + sum.Requests; got != sum.Lines {
		t.Errorf("lines: %d read, %d accounted for", sum.Lines, got)
	}
	if got := skipped + sum.NotMatched + sum.Evaluated; got != sum.Requests {
		t.Errorf("requests: %d, %d accounted for", sum.Requests, got)
	}
	if got := sum.Admit + sum.Deny + indeterminate; got != sum.Evaluated {
		t.Errorf("evaluated: %d, %d accounted for", sum.Evaluated, got)
	}
	if sum.MalformedCount > 0 {
		t.Errorf("%d malformed lines: %v", sum.MalformedCount, sum.Malformed)
	}
	if len(byID) != sum.Evaluated {
		t.Errorf("%d records for %d evaluated requests", len(byID), sum.Evaluated)
	}

	// Zero disagreements, never a wrong decision, indeterminate only for the level's reasons.
	for _, dis := range sum.Disagreements {
		t.Errorf("disagreement at line %d (%s): %s", dis.Line, describeRecord(byID[dis.AuditID]), dis.Detail)
	}
	seen := map[string]int{}
	for _, rec := range byID {
		if rec.Changed {
			t.Errorf("wrong decision at line %d (%s): recorded %s, predicted %s", rec.Line, describeRecord(rec), rec.Recorded, rec.Decision)
		}
		if rec.Decision != replay.DecisionIndeterminate {
			continue
		}
		kind := string(rec.Reason)
		seen[kind]++
		if _, ok := lv.indeterminate[kind]; !ok {
			t.Errorf("indeterminate at line %d (%s): %s; the %s level allows only %v", rec.Line, describeRecord(rec), rec.Indeterminate, lv.name, sortedKeys(lv.indeterminate))
		}
	}
	for kind, must := range lv.indeterminate {
		if must && seen[kind] == 0 {
			t.Errorf("no request indeterminate for %s: the %s level lacks its data", kind, lv.name)
		}
	}
	t.Logf("%s: indeterminate %v", lv.name, seen)

	// Every denial: predicted with the same code and message, or indeterminate.
	decided := func(what string, code int32, message string, rec *replay.Record) {
		switch {
		case rec == nil:
			t.Errorf("%s: the server denied %d %q, the replay has no record", what, code, message)
		case rec.Decision == replay.DecisionIndeterminate:
		case rec.Decision != replay.DecisionDeny || rec.Code != code || rec.Message != message:
			t.Errorf("%s: the server denied %d %q, the replay predicts %s %d %q", what, code, message, rec.Decision, rec.Code, rec.Message)
		}
	}
	for _, dn := range denied {
		if dn.auditID != "" {
			decided(dn.what, dn.code, dn.message, byID[dn.auditID])
		}
	}
	loaded := map[string]bool{}
	for _, p := range set.policies {
		loaded[p.Name] = true
	}
	n := 0
	forEachFinalEvent(t, log, func(e *auditEvent) {
		if e.ResponseStatus == nil || e.ResponseStatus.Code < 400 || !strings.Contains(e.ResponseStatus.Message, policyDenied) {
			return
		}
		name, _, _ := strings.Cut(e.ResponseStatus.Message[strings.Index(e.ResponseStatus.Message, policyDenied)+len(policyDenied):], "'")
		if loaded[name] {
			n++
			decided(e.Verb+" "+e.RequestURI, e.ResponseStatus.Code, e.ResponseStatus.Message, byID[string(e.AuditID)])
		}
	})
	if n < len(denied) {
		t.Errorf("the log holds %d denials of the policies, the test saw %d", n, len(denied))
	}
}

func sortedKeys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// recordLevel writes the audit log (gzip-compressed), the audit policy and the policies into
// dir, for the replay's golden tests: VAPC_E2E_RECORD_LEVELS=$PWD/testdata/audit go test
// ./verify/e2e -run TestReplayAuditLevels, then go test ./verify/replay -update.
func recordLevel(t *testing.T, dir, log, auditPolicy string, set policySet) {
	t.Helper()
	data, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&gz, gzip.BestCompression)
	zw.Write(data)
	zw.Close()
	ap, err := os.ReadFile(auditPolicy)
	if err != nil {
		t.Fatal(err)
	}
	docs := set.yamlDocs(t)
	policy := "# The policies of TestReplayAuditLevels (verify/e2e/levels_test.go) as it installed them: the\n" +
		"# in-tree guards re-bound [Deny, Audit] with a copy bound [Audit], and verify/e2e/testdata/decision.\n" +
		strings.Join(docs, "---\n")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, content := range map[string][]byte{"audit.log.gz": gz.Bytes(), "policy.yaml": []byte(policy), "audit-policy.yaml": ap} {
		if err := os.WriteFile(filepath.Join(dir, name), content, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("recorded %s and its policies in %s", log, dir)
}
