package replay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	gocmp "cmp"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/utils/ptr"

	"github.com/vapc-dev/vapc/verify/replay/exporttest"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// exportScenario is a real kube-apiserver log (the folder under auditData that holds it and
// its policies) and the options it is replayed with.
type exportScenario struct {
	dir  string
	opts func(t testing.TB) []Option
}

// scenarioLog is an export scenario's log, read, and its replay as the log backend's file.
type scenarioLog struct {
	exportScenario
	path  string // the scenario's folder
	log   []byte
	sum   *Summary
	plain map[string]*Record
}

// scenarioLogs are exportScenarios' logs and their replays (recorded-a's alone with -short).
func scenarioLogs(t *testing.T) []scenarioLog {
	t.Helper()
	var out []scenarioLog
	for _, sc := range exportScenarios {
		if testing.Short() && sc.dir != "recorded-a" {
			continue
		}
		l := scenarioLog{exportScenario: sc, path: filepath.Join(auditData, sc.dir)}
		l.log = exporttest.ReadLog(t, filepath.Join(l.path, "audit.log.gz"))
		l.sum, l.plain = replayBytes(t, l.path, "audit.log", l.log, sc.opts(t))
		out = append(out, l)
	}
	return out
}

// exportScenarios are real kube-apiserver logs and the options they are replayed with.
var exportScenarios = []exportScenario{
	// /work/shared/recorded/a: the server ran without the ServiceAccount plugin.
	{"recorded-a", func(t testing.TB) []Option {
		plugins, err := AdmissionPlugins(nil, []string{"ServiceAccount"})
		if err != nil {
			t.Fatal(err)
		}
		return []Option{WithAdmissionPlugins(plugins)}
	}},
	{"recorded-e2e", func(testing.TB) []Option { return nil }},
	// A kubelet's requests NodeRestriction refused: a GKE export loses the groups by which the
	// plugin knows a node, and the log's 403 still says the policies did not run.
	{"recorded-noderestriction", func(t testing.TB) []Option {
		plugins, err := AdmissionPlugins([]string{"NodeRestriction"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return []Option{WithAdmissionPlugins(plugins)}
	}},
}

// replayBytes replays one log, given as its bytes in any format, with a scenario's policies.
func replayBytes(t testing.TB, dir, name string, data []byte, opts []Option) (*Summary, map[string]*Record) {
	t.Helper()
	ps, bs := loadPolicies(t, dir)
	return replaySources(t, ps, bs, append(opts, WithCheckRecorded(true)), Source{Name: name, Reader: bytes.NewReader(data)})
}

// (An export packs several events into a line: the second and later are FILE:LINE#ITEM; a
// file is named by its path.)
var fileLine = regexp.MustCompile(`[\w./-]+:[0-9]+(#[0-9]+)?`)

// comparable is a record without what names the file and line it was read from, wherever
// the file is.
func comparable(r *Record) string {
	c := *r
	c.File, c.Line = "", 0
	b, _ := json.Marshal(c)
	return fileLine.ReplaceAllString(string(b), "FILE:LINE")
}

// TestExportsDecideAsTheLog replays real logs as each export hands them over (exporttest,
// detected from their bytes) and holds every record to the plain log's: the same decision,
// results, reason and check against the log; where GKE's export (or a Log Analytics row that
// skipped an object) lost what a decision needs,
// the request is indeterminate and names the export, never decided otherwise.
func TestExportsDecideAsTheLog(t *testing.T) {
	t.Parallel()
	for _, sc := range scenarioLogs(t) {
		dir, log, plainSum, plain := sc.path, sc.log, sc.sum, sc.plain
		if len(plain) == 0 {
			t.Fatalf("%s: no record", sc.dir)
		}
		type wrapped struct {
			f          export.Format
			name, test string
		}
		var exports []wrapped
		for _, f := range append(exporttest.Formats(), exporttest.Lossless()...) {
			exports = append(exports, wrapped{f, exporttest.Name(f, 0), string(f)})
		}
		// Firehose's events, out of the server's order, under a name of the user's (copied
		// out, concatenated): read as the log backend's lines, put back in the order of their
		// stage times (source.OrderJitter).
		exports = append(exports, wrapped{exporttest.FirehoseLines, "audit.log", "eks-firehose-lines renamed"})
		// A sink's entries over 2 KiB split in two, as Cloud Logging splits those over its
		// size limit: each replayed once, without its objects.
		const gkeSplit = "gke-sink split"
		exports = append(exports, wrapped{exporttest.GKESink, exporttest.Name(exporttest.GKESink, 0), gkeSplit})
		for _, w := range exports {
			f := w.f
			t.Run(sc.dir+"/"+w.test, func(t *testing.T) {
				data, err := exporttest.Wrap(f, log)
				if w.test == gkeSplit {
					data, err = exporttest.WrapGKEWith(f, log, exporttest.GKEOptions{SplitOver: 2 << 10})
					if n := bytes.Count(data, []byte(`"totalSplits":2`)); err == nil && n == 0 {
						t.Fatal("no entry split")
					}
				}
				if err != nil {
					t.Fatal(err)
				}
				sum, got := replayBytes(t, dir, w.name, data, sc.opts(t))
				if sum.MalformedCount > 0 {
					t.Fatalf("%d malformed lines: %v", sum.MalformedCount, sum.Malformed)
				}
				if sum.Requests != plainSum.Requests {
					t.Errorf("%d requests, the log %d", sum.Requests, plainSum.Requests)
				}
				if len(sum.Disagreements) != len(plainSum.Disagreements) {
					t.Errorf("%d disagreements with the log's verdicts, the log's replay %d: %v", len(sum.Disagreements), len(plainSum.Disagreements), sum.Disagreements)
				}
				// GKE's entries lose parts of every event; a Log Analytics row, the objects
				// its table skipped.
				gke := f == export.GKE || f == exporttest.GKESink || f == export.AzureLogAnalytics
				same := 0
				for id, want := range plain {
					rec := got[id]
					switch {
					case rec == nil:
						t.Errorf("%s %s %s/%s: no record, the log's replay %s", id, want.Verb, want.Resource, want.Name, want.Decision)
					case comparable(rec) == comparable(want):
						same++
					case !gke:
						t.Errorf("%s mismatch (-log +export):\n%s", id, cmp.Diff(comparable(want), comparable(rec)))
					case rec.Decision != DecisionIndeterminate && (sameDecision(rec, want) || claimsLess(rec, want)):
						// Decided alike; what differs is what the entry does not carry (the
						// request's dry run, the notes that name what the replay assumed), or
						// what a pair the policy source may not have compiled gave, which is
						// not claimed (the request may have been received within its window).
						same++
					case rec.Decision != DecisionIndeterminate:
						t.Errorf("%s %s %s/%s: decided %s, the log's replay %s (%s)", id, rec.Verb, rec.Resource, rec.Name, rec.Decision, want.Decision, want.Indeterminate)
					case !namesExport(rec):
						t.Errorf("%s %s %s/%s: %s, which does not name the export", id, rec.Verb, rec.Resource, rec.Name, rec.Indeterminate)
					}
				}
				for id, rec := range got {
					// Where the log's replay matched no policy, an entry that lost when it
					// completed may have been admitted by a policy a namespace written moments
					// later selects: that alternative names what the export lost.
					unmatchedUnlessLost := rec.Decision == DecisionAdmit && len(rec.Results) == 0 && rec.Certainty == CertaintyLikely &&
						!slices.ContainsFunc(rec.Alternatives, func(a Alternative) bool { return a.Decision != DecisionIndeterminate || a.Reason != ReasonExportLost })
					// Where what an entry lost made the replay look at policies the log's
					// replay did not (a pod a split entry left unknown), none of them
					// applying is the same outcome as the record the log's replay did not write.
					noneApplied := w.test == gkeSplit && rec.Decision == DecisionAdmit && len(rec.Results) == 0 && len(rec.Alternatives) == 0
					if plain[id] == nil && (!gke || !(rec.Decision == DecisionIndeterminate && namesExport(rec) || unmatchedUnlessLost || noneApplied)) {
						t.Errorf("%s %s %s/%s: %s, which the log's replay does not evaluate: %s", id, rec.Verb, rec.Resource, rec.Name, rec.Decision, describeRecord(rec))
					}
				}
				lost := 0
				for _, rec := range got {
					if gke && rec.Decision == DecisionIndeterminate && namesExport(rec) {
						lost++
					}
				}
				if same == 0 && lost < len(got) {
					// None as the log's, but what the export lost (a Log Analytics row of a
					// policy that reads the user, the only ones a small log has).
					t.Errorf("no record as the log's of %d", len(plain))
				}
				t.Logf("%d of %d records as the log's, %d records", same, len(plain), len(got))
			})
		}
	}
}

// TestExportInFiles: a day's export comes in many files (an S3 export's objects, a receiver's
// files, AKS's hourly blobs), given in any order: real logs dealt to two streams, as two
// servers write them, each cut into three files of consecutive events, each wrapped as its
// export hands it over and given newest first, replay as the plain log does, every record the
// same (source.Lines opens each file as the merge reaches its first event).
func TestExportInFiles(t *testing.T) {
	t.Parallel()
	for _, sc := range scenarioLogs(t) {
		dir, log, plain := sc.path, sc.log, sc.plain
		lines := strings.SplitAfter(strings.TrimRight(string(log), "\n"), "\n")
		for _, f := range []export.Format{export.CloudWatchS3, export.Webhook, export.AzureBlob} {
			t.Run(sc.dir+"/"+string(f), func(t *testing.T) {
				files := t.TempDir()
				// Two servers' streams (a line each in turn), each cut into three files.
				const streams, chunks = 2, 3
				parts := make([]string, streams*chunks)
				for i, l := range lines {
					parts[i*chunks/len(lines)*streams+i%streams] += l
				}
				var sources []Source
				for i, part := range parts {
					data, err := exporttest.Wrap(f, []byte(strings.TrimRight(part, "\n")+"\n"))
					if err != nil {
						t.Fatal(err)
					}
					path := filepath.Join(files, exporttest.Name(f, i))
					if err := os.WriteFile(path, data, 0o644); err != nil {
						t.Fatal(err)
					}
					sources = append([]Source{{Name: path}}, sources...)
				}
				ps, bs := loadPolicies(t, dir)
				sum, got := replaySources(t, ps, bs, append(sc.opts(t), WithCheckRecorded(true)), sources...)
				if sum.MalformedCount > 0 {
					t.Fatalf("%d malformed lines: %v", sum.MalformedCount, sum.Malformed)
				}
				if len(got) != len(plain) {
					t.Errorf("%d records, the log's replay %d", len(got), len(plain))
				}
				for id, want := range plain {
					if rec := got[id]; rec == nil {
						t.Errorf("%s %s %s/%s: no record, the log's replay %s", id, want.Verb, want.Resource, want.Name, want.Decision)
					} else if comparable(rec) != comparable(want) {
						t.Errorf("%s mismatch (-log +export):\n%s", id, cmp.Diff(comparable(want), comparable(rec)))
					}
				}
			})
		}
	}
}

// sameDecision says whether two records give the same decision, with the same results, the
// same refusal and the same check against the log.
func sameDecision(a, b *Record) bool {
	return a.Decision == b.Decision && a.Changed == b.Changed && cmp.Equal(a.Results, b.Results) &&
		a.Code == b.Code && a.Message == b.Message && cmp.Equal(a.Disagreements, b.Disagreements) && cmp.Equal(a.AuditAnnotations, b.AuditAnnotations)
}

// claimsLess says whether a is b's decision, response and disagreements, claiming some of b's
// results and audit annotations and nothing else.
func claimsLess(a, b *Record) bool {
	if a.Decision != b.Decision || a.Changed != b.Changed || a.Code != b.Code || a.Message != b.Message || !cmp.Equal(a.Disagreements, b.Disagreements) {
		return false
	}
	for k, v := range a.AuditAnnotations {
		if w, ok := b.AuditAnnotations[k]; !ok || w != v {
			return false
		}
	}
	return !slices.ContainsFunc(a.Results, func(r RecordResult) bool {
		return !slices.ContainsFunc(b.Results, func(s RecordResult) bool { return cmp.Equal(r, s) })
	})
}

// namesExport says whether an indeterminate record names the export its event was read
// from as what is missing.
func namesExport(r *Record) bool {
	return r.Reason == ReasonExportLost || strings.Contains(r.Indeterminate, "the "+export.ExportGKE+" export does not carry") ||
		strings.Contains(r.Indeterminate, "the "+export.ExportLogAnalytics+" export does not carry")
}

// gkeLines are the lines as GKE's log sink writes them (exporttest.GKEEntry).
func gkeLines(t *testing.T, lines ...string) []string {
	t.Helper()
	var out []string
	for _, l := range lines {
		e, err := exporttest.GKEEntry([]byte(l), false)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(e))
	}
	return out
}

// TestGKEWithoutLabels: a GKE entry without labels lost its annotations (authorization gives
// every request it runs for one): with --check-recorded, their absence is no verdict to
// compare a policy's audit annotation with (the response is compared).
func TestGKEWithoutLabels(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("annotate", "configmaps", admissionregistrationv1.Create, nil, "object.data.k != 'deny'")
	p.Spec.AuditAnnotations = []admissionregistrationv1.AuditAnnotation{{Key: "k", ValueExpression: "string(object.data.k)"}}
	ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
	admissionreg := func(id, resource, name string) string {
		l := levelEvent(t, id, auditlog.LevelMetadata, "create", resource, "", name, 201, "", nil, nil)
		l = replaceOnce(t, l, `"requestURI":"/api/v1/`, `"requestURI":"/apis/admissionregistration.k8s.io/v1/`)
		return timedEvent(t, replaceOnce(t, l, `"apiVersion":"v1","name"`, `"apiGroup":"admissionregistration.k8s.io","apiVersion":"v1","name"`), "00.000000", "00.001000", nil)
	}
	cm := func(v string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c-" + v, "namespace": "a"}, "data": map[string]any{"k": v}}
	}
	lines := []string{admissionreg("p", "validatingadmissionpolicies", "annotate"), admissionreg("b", "validatingadmissionpolicybindings", "annotate"),
		// Three seconds after the binding's create: past the second kube-apiserver's policy
		// source takes to compile it, within which its audit annotation may not have been given.
		timedEvent(t, levelEvent(t, "ok", auditlog.LevelRequest, "create", "configmaps", "a", "c-ok", 201, "", cm("ok"), nil), "03.000000", "03.001000", map[string]string{"annotate/k": "ok"}),
	}
	// The entries as GKE writes them, then without labels.
	entries := gkeLines(t, lines...)
	for i, e := range entries {
		var m map[string]any
		if err := json.Unmarshal([]byte(e), &m); err != nil {
			t.Fatal(err)
		}
		delete(m, "labels")
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		entries[i] = string(out)
	}
	sum, got := replayLinesWith(t, ps, bs, nil, entries...)
	if len(sum.Disagreements) != 0 {
		t.Errorf("disagreements: %v", sum.Disagreements)
	}
	checkDecision(t, got["ok"], DecisionAdmit, "")
}

// TestExportLosses replays requests whose decision rests on what GKE's entries do not carry:
// read from the log backend, each is decided; read from GKE's export, each is indeterminate,
// with a reason that names the export, and those whose decision does not rest on it are
// decided alike.
func TestExportLosses(t *testing.T) {
	t.Parallel()
	cm := func(name string, rv string) map[string]any {
		md := map[string]any{"name": name, "namespace": "a"}
		if rv != "" {
			md["resourceVersion"], md["uid"] = rv, "u-"+name
		}
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": md, "data": map[string]any{"k": "v"}}
	}
	create := func(id, level string, resp map[string]any) string {
		return timedEvent(t, levelEvent(t, id, level, "create", "configmaps", "a", "c-"+id, 201, "", cm("c-"+id, ""), resp), "01.000000", "01.010000", nil)
	}
	// patch patches configmap known with a body a server-side apply may have sent.
	patch := func(id string) string {
		body := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "known"}, "data": map[string]any{"k": "w"}}
		return timedEvent(t, levelEvent(t, id, auditlog.LevelRequestResponse, "patch", "configmaps", "a", "known", 200, "", body, cm("known", "9")), "02.000000", "02.010000", nil)
	}
	// merged patches it with a body no apply sends (no apiVersion); old answers with an
	// object created a day before.
	merged := func(id string) string {
		return timedEvent(t, levelEvent(t, id, auditlog.LevelRequestResponse, "patch", "configmaps", "a", "known", 200, "", map[string]any{"data": map[string]any{"k": "w"}}, cm("known", "9")), "02.000000", "02.010000", nil)
	}
	managed := func(id string) string {
		resp := cm("known", "9")
		resp["metadata"].(map[string]any)["managedFields"] = []any{
			map[string]any{"manager": "deployer", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:data": map[string]any{"f:k": map[string]any{}}}},
			map[string]any{"manager": "editor", "operation": "Update", "apiVersion": "v1", "fieldsType": "FieldsV1", "fieldsV1": map[string]any{"f:metadata": map[string]any{"f:labels": map[string]any{}}}},
		}
		body := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "known"}, "data": map[string]any{"k": "w"}}
		return timedEvent(t, levelEvent(t, id, auditlog.LevelRequestResponse, "patch", "configmaps", "a", "known", 200, "", body, resp), "02.000000", "02.010000", nil)
	}
	old := func(id string) string {
		resp := cm("known", "9")
		resp["metadata"].(map[string]any)["creationTimestamp"] = "2026-11-23T00:00:00Z"
		body := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "known"}, "data": map[string]any{"k": "w"}}
		return timedEvent(t, levelEvent(t, id, auditlog.LevelRequestResponse, "update", "configmaps", "a", "known", 200, "", body, resp), "02.000000", "02.010000", nil)
	}
	// changed patches configmap known's data to k=w; deleted deletes it.
	changed := func(id string) string {
		resp := cm("known", "9")
		resp["data"] = map[string]any{"k": "w"}
		return timedEvent(t, levelEvent(t, id, auditlog.LevelRequestResponse, "patch", "configmaps", "a", "known", 200, "", map[string]any{"data": map[string]any{"k": "w"}}, resp), "02.000000", "02.010000", nil)
	}
	// data patches configmap known's data to k=v, answered with resourceVersion rv, received
	// at the log's second 2 and at milliseconds.
	data := func(id, v, rv, at string) string {
		resp := cm("known", rv)
		resp["metadata"].(map[string]any)["labels"] = map[string]any{"team": "a"}
		resp["data"] = map[string]any{"k": v}
		return timedEvent(t, levelEvent(t, id, auditlog.LevelRequestResponse, "patch", "configmaps", "a", "known", 200, "", map[string]any{"data": map[string]any{"k": v}}, resp), "02."+at+"000", "02."+at+"010", nil)
	}
	labelled := cm("known", "8")
	labelled["metadata"].(map[string]any)["labels"] = map[string]any{"team": "a"}
	deleted := func(id string) string {
		status := map[string]any{"apiVersion": "v1", "kind": "Status", "status": "Success", "details": map[string]any{"name": "known", "kind": "configmaps", "uid": "u-known"}}
		return timedEvent(t, levelEvent(t, id+"-d", auditlog.LevelRequestResponse, "delete", "configmaps", "a", "known", 200, "", nil, status), "03.000000", "03.010000", nil)
	}
	// knownCreated creates configmap known, labelled, at resourceVersion 8 (its response shows
	// it was no dry run); noVersion applies it, answered with no resourceVersion.
	knownCreated := timedEvent(t, levelEvent(t, "k0", auditlog.LevelRequestResponse, "create", "configmaps", "a", "known", 201, "", cm("known", ""), labelled), "01.000000", "01.010000", nil)
	noVersion := func(id string) string {
		body := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "known"}, "data": map[string]any{"k": "w"}}
		resp := cm("known", "")
		resp["metadata"].(map[string]any)["uid"] = "u-known"
		return timedEvent(t, levelEvent(t, id, auditlog.LevelRequestResponse, "patch", "configmaps", "a", "known", 200, "", body, resp), "02.000000", "02.010000", nil)
	}
	// requestOnly patches its data at level Request, a second after merged.
	requestOnly := func(id string) string {
		return timedEvent(t, levelEvent(t, id, auditlog.LevelRequest, "patch", "configmaps", "a", "known", 200, "", map[string]any{"data": map[string]any{"k": "z"}}, nil), "02.500000", "02.510000", nil)
	}
	// preconditioned patches configmap known's data to k=v, its body asking for resourceVersion
	// asked, answered with rv, received at the log's minute 2 (past GKE's receipt bound of
	// writes at minute 0), second 2 and at milliseconds; deletedLate deletes it after.
	preconditioned := func(id, v, asked, rv, at string) string {
		resp := cm("known", rv)
		resp["metadata"].(map[string]any)["labels"] = map[string]any{"team": "a"}
		resp["data"] = map[string]any{"k": v}
		body := map[string]any{"metadata": map[string]any{"resourceVersion": asked}, "data": map[string]any{"k": v}}
		return timedEvent(t, levelEvent(t, id, auditlog.LevelRequestResponse, "patch", "configmaps", "a", "known", 200, "", body, resp), "02:02."+at+"000", "02:02."+at+"010", nil)
	}
	deletedLate := func(id string) string {
		return replaceOnce(t, replaceOnce(t, deleted(id), "00:00:03.000000Z", "00:02:03.000000Z"), "00:00:03.010000Z", "00:02:03.010000Z")
	}
	// updated updates configmap known to k=v at level Request (no result), its body the whole
	// object as it read it at resourceVersion asked, labels and all.
	updated := func(id, v, asked, at string) string {
		body := cm("known", asked)
		body["metadata"].(map[string]any)["labels"] = map[string]any{"team": "a"}
		body["data"] = map[string]any{"k": v}
		return timedEvent(t, levelEvent(t, id, auditlog.LevelRequest, "update", "configmaps", "a", "known", 200, "", body, nil), "02."+at+"000", "02."+at+"010", nil)
	}
	// answered gives an update's line its result at level RequestResponse: the object it
	// updated, at resourceVersion rv.
	answered := func(line, rv string) string {
		var ev, resp map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		body, err := json.Marshal(ev["requestObject"])
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(body, &resp); err != nil {
			t.Fatal(err)
		}
		resp["metadata"].(map[string]any)["resourceVersion"] = rv
		ev["responseObject"], ev["level"] = resp, auditlog.LevelRequestResponse
		b, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	// oldReader admits, reading the old object: an update whose old object is not known is not
	// decided by it (one that reads nothing of it would be).
	const oldReader = "oldObject == null || true"
	tests := []struct {
		name, expr string
		op         admissionregistrationv1.OperationType
		lines      []string
		snapshot   []any
		// plain is the decision of the log's replay (admit when empty), and decision, reason
		// and detail the record of GKE's: what its detail holds.
		plain    string
		decision string
		reason   Reason
		detail   string
	}{
		{name: "groups", expr: "'system:masters' in request.userInfo.groups", op: admissionregistrationv1.Create,
			lines:    []string{create("g1", auditlog.LevelRequestResponse, cm("c-g1", "5"))},
			decision: DecisionIndeterminate, reason: ReasonExportLost, detail: "reads request.userInfo.groups, and request.userInfo.groups is not known: the GKE Cloud Logging export does not carry the user's groups"},
		{name: "uid", expr: "!has(request.userInfo.uid)", op: admissionregistrationv1.Create,
			lines:    []string{create("u1", auditlog.LevelRequestResponse, cm("c-u1", "5"))},
			decision: DecisionIndeterminate, reason: ReasonExportLost, detail: "the GKE Cloud Logging export does not carry the user's uid"},
		{name: "the user's name is carried", expr: "request.userInfo.username == 'admin'", op: admissionregistrationv1.Create,
			lines:    []string{create("n1", auditlog.LevelRequestResponse, cm("c-n1", "5"))},
			decision: DecisionAdmit},
		{name: "a member of system:masters is allowed every check", expr: "authorizer.group('').resource('secrets').namespace('a').check('get').allowed()", op: admissionregistrationv1.Create,
			lines:    []string{create("m1", auditlog.LevelRequestResponse, cm("c-m1", "5"))},
			decision: DecisionIndeterminate, reason: ReasonAuthorizer, detail: "the GKE Cloud Logging export does not carry the user's groups (whether the user is a member of system:masters"},
		{name: "a create's response shows it was no dry run", expr: "!request.dryRun", op: admissionregistrationv1.Create,
			lines:    []string{create("d1", auditlog.LevelRequestResponse, cm("c-d1", "5"))},
			decision: DecisionAdmit},
		{name: "a create without response may have been a dry run", expr: "!request.dryRun", op: admissionregistrationv1.Create,
			lines:    []string{create("d2", auditlog.LevelRequest, nil)},
			decision: DecisionIndeterminate, reason: ReasonExportLost, detail: "the GKE Cloud Logging export does not carry whether the request was a dry run"},
		// An export that labels a dry run (later in it) labels them all: one without the
		// label was none.
		{name: "a create without response, where the export labels dry runs", expr: "!request.dryRun", op: admissionregistrationv1.Create,
			lines:    []string{create("d3", auditlog.LevelRequest, nil), replaceOnce(t, merged("p12"), `"requestURI":"/api/v1/namespaces/a/configmaps/known"`, `"requestURI":"/api/v1/namespaces/a/configmaps/known?dryRun=All"`)},
			decision: DecisionAdmit},
		// A write's options (fieldManager, fieldValidation, force) are its query's.
		{name: "a create's options", expr: "!has(request.options.fieldManager) || request.options.fieldManager != 'x'", op: admissionregistrationv1.Create,
			lines:    []string{create("o1", auditlog.LevelRequestResponse, cm("c-o1", "5"))},
			decision: DecisionIndeterminate, reason: ReasonExportLost, detail: "reads request.options.fieldManager, and request.options is not known: the GKE Cloud Logging export does not carry the request URI's query (the request's options"},
		{name: "a patch may have created its object", expr: oldReader, op: admissionregistrationv1.Update,
			lines: []string{patch("p1")}, plain: DecisionIndeterminate, // old-object-unknown
			decision: DecisionIndeterminate, reason: ReasonExportLost, detail: "the GKE Cloud Logging export does not carry the exact HTTP status code: whether the patch created the object (201, a CREATE for admission), and the replay does not know that configmaps a/known was there before"},
		// Only a server-side apply creates, and its body names its apiVersion; an object
		// created a day before was there: the State's not knowing the object is what
		// leaves these undecided, as in the log's replay.
		{name: "a patch no apply sends", expr: oldReader, op: admissionregistrationv1.Update,
			lines: []string{merged("p4")}, plain: DecisionIndeterminate,
			decision: DecisionIndeterminate, reason: ReasonOldObjectUnknown, detail: "configmaps a/known is not in the snapshot or earlier in the log"},
		// An apply that creates writes its manager's managedFields entry alone, but mutating
		// admission may add others: two managers do not tell it did not create.
		{name: "a patch of an object two managers wrote", expr: oldReader, op: admissionregistrationv1.Update,
			lines: []string{managed("p6")}, plain: DecisionIndeterminate,
			decision: DecisionIndeterminate, reason: ReasonExportLost, detail: "whether the patch created the object"},
		{name: "an update of an object created a day before", expr: oldReader, op: admissionregistrationv1.Update,
			lines: []string{old("u1")}, plain: DecisionIndeterminate,
			decision: DecisionIndeterminate, reason: ReasonOldObjectUnknown, detail: "configmaps a/known is not in the snapshot or earlier in the log"},
		// No update of a config map creates it (its strategy's AllowCreateOnUpdate): the
		// lost code leaves it an UPDATE, whose old object the State does not know.
		{name: "an update never creates a config map", expr: oldReader, op: admissionregistrationv1.Update,
			lines: []string{answered(updated("u8", "a", "8", "500"), "9")}, plain: DecisionIndeterminate,
			decision: DecisionIndeterminate, reason: ReasonOldObjectUnknown, detail: "configmaps a/known is not in the snapshot or earlier in the log"},
		// GKE labels a dry run's entry: the policy reads request.dryRun, known.
		{name: "a dry run GKE labels", expr: "!request.dryRun", op: admissionregistrationv1.Update,
			lines: []string{replaceOnce(t, merged("p5"), `"requestURI":"/api/v1/namespaces/a/configmaps/known"`, `"requestURI":"/api/v1/namespaces/a/configmaps/known?dryRun=All"`)}, snapshot: []any{cm("known", "8")},
			plain: DecisionDeny, decision: DecisionDeny},
		{name: "a patch of an object the snapshot holds", expr: "true", op: admissionregistrationv1.Update,
			lines: []string{patch("p2")}, snapshot: []any{cm("known", "8")},
			decision: DecisionAdmit},
		// A dry run stores nothing: what the State knows of the object after it is what the
		// log's replay knows only when the write was stored (that it is there, a patch shows).
		{name: "a patch that may have been a dry run", expr: "oldObject.data.k == 'w'", op: admissionregistrationv1.Delete,
			lines:    []string{changed("p3"), deleted("p3")},
			decision: DecisionIndeterminate, reason: ReasonUnknownField, detail: "whether the write at audit.jsonl:1 was a dry run, which stores nothing"},
		// What a patch that may have been a dry run did not touch is in its response as
		// stored (its labels); one answered with the resourceVersion the object had was a
		// dry run, and the next, answered with another, was stored: known whole.
		{name: "a patch that may have been a dry run keeps what it did not touch", expr: "oldObject.metadata.labels.team == 'a'", op: admissionregistrationv1.Delete,
			lines: []string{data("p7", "w", "9", "000"), deleted("p7")}, snapshot: []any{labelled},
			decision: DecisionAdmit},
		{name: "a dry run, then a patch stored", expr: "oldObject.data.k == 'x'", op: admissionregistrationv1.Delete,
			lines: []string{data("p8", "w", "8", "000"), data("p9", "x", "9", "500"), deleted("p9")}, snapshot: []any{labelled},
			decision: DecisionAdmit},
		{name: "two patches that may have been dry runs keep what neither touched", expr: "oldObject.metadata.labels.team == 'a'", op: admissionregistrationv1.Delete,
			lines: []string{data("p10", "w", "9", "000"), data("p11", "x", "10", "500"), deleted("p11")}, snapshot: []any{labelled},
			decision: DecisionAdmit},
		// etcd's revisions only grow: a write answered with a later version than the one the
		// State knows was stored, whether or not the log holds the resource whole (the
		// create, not a snapshot, showed it).
		{name: "a dry run, then a patch stored, the resource not held whole", expr: "oldObject.data.k == 'x'", op: admissionregistrationv1.Delete,
			lines:    []string{knownCreated, data("p12", "w", "8", "000"), data("p13", "x", "9", "500"), deleted("p13")},
			decision: DecisionAdmit},
		// A patch but an apply never creates: the object the State did not know is there
		// after it, dry run or not, at the version it answered with (the next write,
		// answered with a later one, was stored); what it holds but its identity is not known.
		{name: "a patch shows its object is there", expr: "oldObject.metadata.name == 'known'", op: admissionregistrationv1.Delete,
			lines:    []string{merged("p15"), deleted("p15")},
			decision: DecisionAdmit},
		{name: "a patch shows its object is there, not what it holds", expr: "oldObject.data.k == 'v'", op: admissionregistrationv1.Delete,
			lines:    []string{merged("p16"), deleted("p16")},
			decision: DecisionIndeterminate, reason: ReasonUnknownField, detail: "whether the write at audit.jsonl:1 was a dry run"},
		{name: "a patch that may have been a dry run, then one stored", expr: "oldObject.data.k == 'x'", op: admissionregistrationv1.Delete,
			lines:    []string{merged("p17"), data("p18", "x", "10", "500"), deleted("p18")},
			decision: DecisionAdmit},
		// A write logged without its result, which may have been a dry run too: the object
		// is there, what the writes may have changed not known, not as the log's replay has
		// it (no labels): the first patch's answer gave its identity only.
		{name: "a patch shows its object is there, then one without its result", expr: "has(oldObject.metadata.labels)", op: admissionregistrationv1.Delete,
			lines: []string{merged("p20"), requestOnly("p21"), deleted("p21")}, plain: DecisionDeny,
			decision: DecisionIndeterminate, reason: ReasonUnknownField, detail: "whether the write at audit.jsonl:1 was a dry run"},
		// A write without its result (a kubelet's status update at level Request), which may
		// have been a dry run: what the pipeline rebuilt of it and the object before it agree
		// on is known (its labels), the rest not.
		{name: "a write without its result keeps what it did not touch", expr: "oldObject.metadata.labels.team == 'a'", op: admissionregistrationv1.Delete,
			lines:    []string{knownCreated, requestOnly("p22"), deleted("p22")},
			decision: DecisionAdmit},
		{name: "a write without its result, what it may have changed", expr: "oldObject.data.k == 'z'", op: admissionregistrationv1.Delete,
			lines:    []string{knownCreated, requestOnly("p23"), deleted("p23")},
			decision: DecisionIndeterminate, reason: ReasonUnknownField, detail: "whether the write at audit.jsonl:2 was a dry run"},
		// A dry run answers with the version its precondition asked for: a write answered
		// with another was stored, whatever the State knew of the version before (a patch
		// without its result, whose version is not known).
		{name: "a patch answered past its precondition was stored", expr: "oldObject.data.k == 'x'", op: admissionregistrationv1.Delete,
			lines:    []string{knownCreated, requestOnly("p24"), preconditioned("p25", "x", "9", "10", "800"), deletedLate("p25")},
			decision: DecisionAdmit},
		// Two updates without results within GKE's receipt bound (a minute): both leave the
		// labels as they are.
		{name: "two updates whose receipts are lost keep what both leave", expr: "oldObject.metadata.labels.team == 'a'", op: admissionregistrationv1.Delete,
			lines:    []string{knownCreated, updated("u2", "a", "8", "500"), updated("u3", "b", "9", "700"), deleted("u3")},
			decision: DecisionAdmit},
		// Their preconditions order them (no update of a config map creates it, so each
		// update's precondition was checked: the one that found version 9 committed after the
		// one that found 8), in the log's order or not.
		{name: "preconditions order two updates whose receipts are lost", expr: "oldObject.data.k == 'b'", op: admissionregistrationv1.Delete,
			lines:    []string{knownCreated, updated("u4", "a", "8", "500"), answered(updated("u5", "b", "9", "700"), "10"), deleted("u5")},
			decision: DecisionAdmit},
		// An apply may have created the object: a dry run that did answers with no version.
		{name: "an apply answered with no version", expr: "oldObject == null || true", op: admissionregistrationv1.Delete,
			lines:    []string{noVersion("p19"), deleted("p19")},
			decision: DecisionIndeterminate, reason: ReasonOldObjectUnknown, detail: "whether the write at audit.jsonl:1 was a dry run"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("lost", "configmaps", tt.op, nil, tt.expr)
			plain, got, sum := replayAsExported(t, p, b, tt.snapshot, gkeLines, tt.lines...)
			if sum.MalformedCount > 0 {
				t.Fatalf("malformed: %v", sum.Malformed)
			}
			for id, want := range plain {
				if want.Decision != gocmp.Or(tt.plain, DecisionAdmit) {
					t.Fatalf("the log's replay: %s", describeRecord(want))
				}
				rec := got[id]
				if rec == nil || rec.Decision != tt.decision || rec.Reason != tt.reason || !strings.Contains(rec.Indeterminate, tt.detail) {
					t.Errorf("GKE's replay: %s, want %s %s %q", describeRecord(rec), tt.decision, tt.reason, tt.detail)
				}
			}
		})
	}
}

// TestExportLostConnectOptions: a connect's object is its options, which the handler decodes
// from the request URI's query; GKE's entry does not carry the query, so a policy that reads
// the object decides nothing on it (before, the replay decoded empty options and decided,
// likely, against the server).
func TestExportLostConnectOptions(t *testing.T) {
	t.Parallel()
	line := levelEvent(t, "exec", auditlog.LevelMetadata, "create", "pods", "a", "p", 101, "", nil, nil)
	var ev map[string]any
	if err := json.Unmarshal([]byte(line), &ev); err != nil {
		t.Fatal(err)
	}
	ev["requestURI"] = "/api/v1/namespaces/a/pods/p/exec?command=ls&container=c&stdout=true"
	ev["objectRef"].(map[string]any)["subresource"] = "exec"
	b, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	lines := []string{timedEvent(t, string(b), "01.000000", "01.010000", nil)}
	for _, tc := range []struct {
		name, expr string
		plain      string // the log's replay's decision
		gke        string
	}{
		{"the options", "object.command[0] != 'ls'", DecisionDeny, DecisionIndeterminate},
		{"the pod's name only", "request.name == 'p'", DecisionAdmit, DecisionAdmit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, bd := levelPolicy("exec-guard", "pods/exec", admissionregistrationv1.Connect, nil, tc.expr)
			ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{bd}
			_, plain := replayLinesWith(t, ps, bs, nil, lines...)
			if rec := plain["exec"]; rec == nil || rec.Decision != tc.plain {
				t.Fatalf("the log's replay: %s, want %s", describeRecord(rec), tc.plain)
			}
			_, got := replayLinesWith(t, ps, bs, nil, gkeLines(t, lines...)...)
			rec := got["exec"]
			if rec == nil || rec.Decision != tc.gke || tc.gke == DecisionIndeterminate && (rec.Reason != ReasonExportLost || !strings.Contains(rec.Indeterminate, "a connect's options")) {
				t.Errorf("GKE's replay: %s, want %s", describeRecord(rec), tc.gke)
			}
		})
	}
}

// configMapWrites are the lines of a ConfigMap a/c's create (resourceVersion 5) and update (6)
// at level RequestResponse.
func configMapWrites(t *testing.T) []string {
	t.Helper()
	cm := func(rv, v string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"k": v},
			"metadata": map[string]any{"name": "c", "namespace": "a", "resourceVersion": rv, "uid": "u-c"}}
	}
	return []string{
		timedEvent(t, levelEvent(t, "create", auditlog.LevelRequestResponse, "create", "configmaps", "a", "c", 201, "", cm("", "v"), cm("5", "v")), "01.000000", "01.010000", nil),
		timedEvent(t, levelEvent(t, "update", auditlog.LevelRequestResponse, "update", "configmaps", "a", "c", 200, "", cm("5", "w"), cm("6", "w")), "02.000000", "02.010000", nil),
	}
}

// TestCloudWatchCutEvents replays events CloudWatch Logs cut at its size limit, as an S3
// export hands them over: the cut event is no malformed line; what it wrote is not known to
// the requests after it, and it is itself decided on nothing its export lost
// (ReasonExportLost).
func TestCloudWatchCutEvents(t *testing.T) {
	t.Parallel()
	lines := append(configMapWrites(t),
		timedEvent(t, levelEvent(t, "delete", auditlog.LevelRequestResponse, "delete", "configmaps", "a", "c", 200, "", nil,
			map[string]any{"apiVersion": "v1", "kind": "Status", "status": "Success", "details": map[string]any{"name": "c", "kind": "configmaps", "uid": "u-c"}}), "03.000000", "03.010000", nil))
	// s3 is the line of an S3 export of an event, cut as CloudWatch Logs cuts it when cut.
	s3 := func(l string, cut bool) string {
		at := regexp.MustCompile(`"stageTimestamp":"([^"]*)"`).FindStringSubmatch(l)[1] + " "
		if cut {
			l = cloudWatchCut(t, l, 40)
		}
		return at + l
	}
	tests := []struct {
		name string
		cut  int // the line cut
		op   admissionregistrationv1.OperationType
		// id, reason and detail are the record of the request the policy matches.
		id     string
		reason Reason
		detail string
	}{
		{name: "a write cut: the object it wrote is not known", cut: 0, op: admissionregistrationv1.Update, id: "update",
			reason: ReasonOldObjectUnknown, detail: "written at audit.jsonl:1 at level Metadata: the result is not in the log"},
		// Rebuilt without its object, as a write at level Metadata is (unlogged.go), but for
		// the verdicts cut with its annotations.
		{name: "an update cut: its verdicts are not known", cut: 1, op: admissionregistrationv1.Update, id: "update",
			reason: ReasonExportLost, detail: "which it cut at its size limit"},
		// Decided without its options, as a DELETE at level Metadata is (unlogged.go), but for
		// the verdicts cut with its annotations.
		{name: "a delete cut: its verdicts are not known", cut: 2, op: admissionregistrationv1.Delete, id: "delete",
			reason: ReasonExportLost, detail: "which it cut at its size limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("cut", "configmaps", tt.op, nil, "oldObject.data.k != ''")
			ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
			_, plain := replayLinesWith(t, ps, bs, nil, lines...)
			if rec := plain[tt.id]; rec == nil || rec.Decision != DecisionAdmit {
				t.Fatalf("the log's replay: %s, want admit", describeRecord(rec))
			}
			var cut []string
			for i, l := range lines {
				cut = append(cut, s3(l, i == tt.cut))
			}
			sum, got := replayLinesWith(t, ps, bs, nil, cut...)
			if sum.MalformedCount > 0 {
				t.Fatalf("malformed: %v", sum.Malformed)
			}
			if rec := got[tt.id]; rec == nil || rec.Decision != DecisionIndeterminate || rec.Reason != tt.reason || !strings.Contains(rec.Indeterminate, tt.detail) {
				t.Errorf("the export's replay: %s, want indeterminate %s %q", describeRecord(rec), tt.reason, tt.detail)
			}
		})
	}
}

// csrPEM is a certificate signing request for CN=alice (openssl req -new, a P-256 key), base64.
const csrPEM = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0KTUlIS01ISUNBUUF3RURFT01Bd0dBMVVFQXd3RllXeHBZMlV3V1RBVEJnY3Foa2pPUFFJQkJnZ3Foa2pPUFFNQgpCd05DQUFRZnE4L281cG42L0Z4Sm5uSDU2Z2kwaklEMk51dGdSM2VXSWVmLzFFZ3djNUlJRXhVaFpEZW05ekFGClFwWmNBY0ZBdktUNzEwYysvSThqYlBwdFJxYUlvQUF3Q2dZSUtvWkl6ajBFQXdJRFNBQXdSUUloQU05MUZKV1UKSUNGKzd4Y0phYVh1VjFJRk9GN3ZHVkVzYmZaYlRXZFkrZjVzQWlBeFJTaU9zYzBWNklvYThWN3BxdmR4MmxadAozYktJVmh1akFwa2MySzJkbUE9PQotLS0tLUVORCBDRVJUSUZJQ0FURSBSRVFVRVNULS0tLS0K"

// TestExportLostUserInObject: a CertificateSigningRequest's strategy copies the requesting
// user's groups, uid and extra into its spec before admission (PrepareForCreate). Read from
// GKE's export, which does not carry them, a decision that reads them there is not made.
func TestExportLostUserInObject(t *testing.T) {
	t.Parallel()
	csr := func() map[string]any {
		return map[string]any{"apiVersion": "certificates.k8s.io/v1", "kind": "CertificateSigningRequest", "metadata": map[string]any{"name": "csr-a"},
			"spec": map[string]any{"request": csrPEM, "signerName": "example.com/signer", "usages": []any{"client auth"}}}
	}
	rules := createRules("certificates.k8s.io", "certificatesigningrequests")
	for _, tc := range []struct {
		name, expr string
		decision   string
		reason     Reason
	}{
		{name: "the groups the strategy copied", expr: "'system:masters' in object.spec.groups", decision: DecisionIndeterminate, reason: ReasonExportLost},
		{name: "the user's name, which the export carries", expr: "object.spec.username == 'admin'", decision: DecisionAdmit},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "csr"},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: ptr.To(admissionregistrationv1.Fail), MatchConstraints: rules,
					Validations: []admissionregistrationv1.Validation{{Expression: tc.expr, Message: "refused"}}}}
			b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{ObjectMeta: metav1.ObjectMeta{Name: "csr"},
				Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "csr", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}}}
			ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
			// At level Request: the pipeline serves the request body, as the strategy fills it.
			line := event{id: "c", verb: "create", group: "certificates.k8s.io", version: "v1", resource: "certificatesigningrequests", name: "csr-a", code: 201,
				received: at(t, 1), req: csr()}.line(t)
			line = strings.Replace(line, `"level":"RequestResponse"`, `"level":"Request"`, 1)
			_, plain := replayLinesWith(t, ps, bs, nil, line)
			checkDecision(t, plain["c"], DecisionAdmit, "")
			_, got := replayLinesWith(t, ps, bs, nil, gkeLines(t, line)...)
			checkDecision(t, got["c"], tc.decision, tc.reason)
			// AKS's Log Analytics rows lose whom the request impersonated: the whole user,
			// its name too, unless its authorization names the user.
			laReplay := func(line string) *Record {
				row, err := exporttest.LogAnalyticsRow([]byte(line), false)
				if err != nil {
					t.Fatal(err)
				}
				rows, err := json.Marshal([]any{row})
				if err != nil {
					t.Fatal(err)
				}
				_, la := replayLinesWith(t, ps, bs, nil, string(rows))
				return la["c"]
			}
			checkDecision(t, laReplay(line), DecisionIndeterminate, ReasonExportLost)
			named := replaceOnce(t, line, `"stageTimestamp"`, `"annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC: allowed by ClusterRoleBinding \"b\" of ClusterRole \"csr-creator\" to User \"admin\""},"stageTimestamp"`)
			checkDecision(t, laReplay(named), tc.decision, tc.reason)
		})
	}
}

// TestLogAnalyticsLosses replays AKS's Log Analytics rows that lost what the log backend's
// event holds: an object the table skipped (too big), or a column the query left out. What
// the row lost is not known to the replay, and a decision that needs it is not made: its
// reason names the export.
func TestLogAnalyticsLosses(t *testing.T) {
	t.Parallel()
	lines := configMapWrites(t)
	tests := []struct {
		name string
		row  int            // the row that lost something
		set  map[string]any // its columns set, or (nil) left out
		expr string         // the policy's validation of the update
		// reason and detail are the update's record.
		reason Reason
		detail string
	}{
		{name: "the create's response skipped: the object it wrote is not known", row: 0, set: map[string]any{"ResponseObject": "skipped-too-big-size-object"}, expr: "oldObject.data.k != ''",
			reason: ReasonOldObjectUnknown, detail: "at level Metadata"},
		{name: "the update's request skipped: the object admission saw is not known", row: 1, set: map[string]any{"RequestObject": "skipped-too-big-size-object"}, expr: "object.data.k != ''",
			reason: ReasonNoObject, detail: "the " + export.ExportLogAnalytics + " export does not carry the audit level"},
		{name: "the update's annotations left out: its verdicts are not known", row: 1, set: map[string]any{"Annotations": nil}, expr: "oldObject.data.k != ''",
			reason: ReasonExportLost, detail: "its verdicts are not known"},
		// AKS's tables have no ImpersonatedUser column: User is who authenticated, not
		// necessarily whom admission saw.
		{name: "the requesting user read: whether the update impersonated another is not known", row: 1, expr: "request.userInfo.username != 'mallory'",
			reason: ReasonExportLost, detail: "whether the request impersonated another user"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("la", "configmaps", admissionregistrationv1.Update, nil, tt.expr)
			ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
			_, plain := replayLinesWith(t, ps, bs, nil, lines...)
			if rec := plain["update"]; rec == nil || rec.Decision != DecisionAdmit {
				t.Fatalf("the log's replay: %s, want admit", describeRecord(rec))
			}
			var rows []map[string]any
			for i, l := range lines {
				row, err := exporttest.LogAnalyticsRow([]byte(l), false)
				if err != nil {
					t.Fatal(err)
				}
				if i == tt.row {
					for k, v := range tt.set {
						if v == nil {
							delete(row, k)
						} else {
							row[k] = v
						}
					}
				}
				rows = append(rows, row)
			}
			data, err := json.MarshalIndent(rows, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			sum, got := replayLinesWith(t, ps, bs, nil, string(data))
			if sum.MalformedCount > 0 {
				t.Fatalf("malformed: %v", sum.Malformed)
			}
			if rec := got["update"]; rec == nil || rec.Decision != DecisionIndeterminate || rec.Reason != tt.reason || !strings.Contains(rec.Indeterminate, tt.detail) {
				t.Errorf("the export's replay: %s, want indeterminate %s %q", describeRecord(rec), tt.reason, tt.detail)
			}
		})
	}
}

// TestLogAnalyticsAuthorizedUser: AKS's Log Analytics rows lose whom a request impersonated,
// but its authorization annotation names the user admission saw when RBAC allowed it by a
// binding to a User or a ServiceAccount: that username is known (the impersonated user's
// too), the groups, uid and extra of a user the request may have impersonated are not.
func TestLogAnalyticsAuthorizedUser(t *testing.T) {
	t.Parallel()
	const nodeController = "system:serviceaccount:kube-system:node-controller"
	for _, tc := range []struct {
		name, user, impersonated, reason, expr string
		want                                   string
	}{
		{name: "a binding to the user", user: "admin", reason: `RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "edit" to User "admin"`,
			expr: "request.userInfo.username != 'mallory'", want: DecisionAdmit},
		{name: "a RoleBinding to the service account", user: nodeController, reason: `RBAC: allowed by RoleBinding "b/kube-system" of Role "r" to ServiceAccount "node-controller/kube-system"`,
			expr: "request.userInfo.username == '" + nodeController + "'", want: DecisionAdmit},
		{name: "the groups of a user named", user: "admin", reason: `RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "edit" to User "admin"`,
			expr: "!('x' in request.userInfo.groups)", want: DecisionIndeterminate},
		{name: "a binding to a group", user: "admin", reason: `RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "edit" to Group "system:masters"`,
			expr: "request.userInfo.username != 'mallory'", want: DecisionIndeterminate},
		// Authorization saw another user: the request impersonated bob, whom admission saw.
		{name: "a binding to the user impersonated", user: "admin", impersonated: "bob", reason: `RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "edit" to User "bob"`,
			expr: "request.userInfo.username == 'bob'", want: DecisionAdmit},
		{name: "the groups of the user impersonated", user: "admin", impersonated: "bob", reason: `RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "edit" to User "bob"`,
			expr: "!('system:masters' in request.userInfo.groups)", want: DecisionIndeterminate},
		{name: "another authorizer", user: "admin", reason: "",
			expr: "request.userInfo.username != 'mallory'", want: DecisionIndeterminate},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			lines := configMapWrites(t)
			for i, l := range lines {
				l = replaceOnce(t, l, `"username":"admin"`, `"username":"`+tc.user+`"`)
				if tc.impersonated != "" {
					l = replaceOnce(t, l, `"objectRef"`, `"impersonatedUser":{"username":"`+tc.impersonated+`","groups":["system:authenticated"]},"objectRef"`)
				}
				lines[i] = replaceOnce(t, l, `"stageTimestamp"`, `"annotations":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":`+strconv.Quote(tc.reason)+`},"stageTimestamp"`)
			}
			p, b := levelPolicy("la", "configmaps", admissionregistrationv1.Update, nil, tc.expr)
			ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
			_, plain := replayLinesWith(t, ps, bs, nil, lines...)
			checkDecision(t, plain["update"], DecisionAdmit, "")
			var rows []any
			for _, l := range lines {
				row, err := exporttest.LogAnalyticsRow([]byte(l), false)
				if err != nil {
					t.Fatal(err)
				}
				rows = append(rows, row)
			}
			data, err := json.Marshal(rows)
			if err != nil {
				t.Fatal(err)
			}
			_, got := replayLinesWith(t, ps, bs, nil, string(data))
			var reason Reason
			if tc.want == DecisionIndeterminate {
				reason = ReasonExportLost
			}
			checkDecision(t, got["update"], tc.want, reason)
		})
	}
}

// TestCutToTheSecond: aws logs tail --format short gives each line's time to the second. A
// param's write CloudWatch cut is rebuilt at its second's last millisecond; a request of that
// second that the log's order puts before it may have come after it: its likely state is not
// known (before, decided likely on the param before the write).
func TestCutToTheSecond(t *testing.T) {
	t.Parallel()
	param := func(rv, v string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"k": v},
			"metadata": map[string]any{"name": "p", "namespace": "params", "resourceVersion": rv, "uid": "u-p"}}
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": "a"}}
	cmDone := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "x", "namespace": "a", "uid": "u-x", "resourceVersion": "9"}}
	lines := []string{
		timedEvent(t, levelEvent(t, "create", auditlog.LevelRequestResponse, "create", "configmaps", "params", "p", 201, "", param("", "v"), param("5", "v")), "01.000000", "01.010000", nil),
		timedEvent(t, levelEvent(t, "patch", auditlog.LevelRequestResponse, "patch", "configmaps", "params", "p", 200, "", map[string]any{"data": map[string]any{"k": "w"}}, param("6", "w")), "02.200000", "02.300000", nil),
		timedEvent(t, levelEvent(t, "x", auditlog.LevelRequestResponse, "create", "configmaps", "a", "x", 201, "", cm, cmDone), "02.490000", "02.500000", nil),
	}
	short := func(l string, cut bool) string {
		at := regexp.MustCompile(`"stageTimestamp":"([^"]*)"`).FindStringSubmatch(l)[1][:19] + " "
		if cut {
			l = cloudWatchCut(t, l, 30)
		}
		return at + l
	}
	p, b := levelPolicy("param", "configmaps", admissionregistrationv1.Create, nil, "params.data.k == 'v'")
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "p", Namespace: "params", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)}
	ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
	var cut []string
	for i, l := range lines {
		cut = append(cut, short(l, i == 1))
	}
	sum, got := replayLinesWith(t, ps, bs, nil, cut...)
	if sum.MalformedCount > 0 {
		t.Fatalf("malformed: %v", sum.Malformed)
	}
	if rec := got["x"]; rec == nil || rec.Decision != DecisionIndeterminate || rec.Reason != ReasonParamUnknown || !strings.Contains(rec.Indeterminate, "its export gives when it completed only within the second before the time it gives") {
		t.Errorf("the export's replay: %s, want indeterminate param-unknown", describeRecord(rec))
	}
}

// cloudWatchCut is the event line l as CloudWatch Logs cuts it at its size limit: in the order
// of the log backend's fields, which writes the objects after the request's head, cut keep
// bytes into its first object and marked.
func cloudWatchCut(t *testing.T, l string, keep int) string {
	t.Helper()
	var ev auditv1.Event
	if err := json.Unmarshal([]byte(l), &ev); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(&ev)
	if err != nil {
		t.Fatal(err)
	}
	return string(b[:regexp.MustCompile(`"re(quest|sponse)Object"`).FindIndex(b)[0]+keep]) + "[Truncated...]"
}

// TestCutStampedLate: EKS stamps a log event as its agent reads it, up to a second after the
// event completed (AWS's sample: 0.3 and 0.8 s). An event CloudWatch cut is placed at that
// stamp: an update it completed before, which the log then records after the next update of
// the same object, may have been what that next update read. Decided on the log's order,
// "admit, likely", against the server's denial; now not known, unless both versions decide
// alike (a matchCondition that skips the policy: certain, and no panic checking the log's
// verdicts against the world that is not decided).
func TestCutStampedLate(t *testing.T) {
	t.Parallel()
	cm := func(name, rv, k string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "data": map[string]any{"k": k},
			"metadata": map[string]any{"name": name, "namespace": "a", "resourceVersion": rv, "uid": "u-" + name}}
	}
	denied := func(name string) string {
		return `configmaps "` + name + `" is forbidden: ValidatingAdmissionPolicy 'old' with binding 'old' denied request: denied by old`
	}
	for _, tt := range []struct {
		name      string
		condition string // the policy's matchCondition, if any
		code      int32  // the next update's
		decision  string
		reason    Reason
	}{
		{name: "the versions decide otherwise", code: 422, decision: DecisionIndeterminate, reason: ReasonOldObjectUnknown},
		{name: "the policy skips the request", condition: "request.userInfo.username == 'nobody'", code: 200, decision: DecisionAdmit},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msg, resp := "", map[string]any(nil)
			if tt.code != 200 {
				msg = denied("c")
			} else {
				resp = cm("c", "7", "w")
			}
			lines := []string{
				// A denial the log records shows the policy installed.
				timedEvent(t, levelEvent(t, "early", auditlog.LevelRequestResponse, "create", "configmaps", "a", "e", 422, denied("e"), cm("e", "", "v"), nil), "00.500000", "00.510000", nil),
				timedEvent(t, levelEvent(t, "create", auditlog.LevelRequestResponse, "create", "configmaps", "a", "c", 201, "", cm("c", "", "v"), cm("c", "5", "v")), "01.000000", "01.010000", nil),
				timedEvent(t, levelEvent(t, "block", auditlog.LevelRequestResponse, "update", "configmaps", "a", "c", 200, "", cm("c", "5", "blocked"), cm("c", "6", "blocked")), "02.000000", "02.042000", nil),
				timedEvent(t, levelEvent(t, "next", auditlog.LevelRequestResponse, "update", "configmaps", "a", "c", tt.code, msg, cm("c", "", "w"), resp), "02.100000", "02.310000", nil),
			}
			p, b := levelPolicy("old", "configmaps", admissionregistrationv1.Update, nil, "oldObject.data.k != 'blocked'")
			p.Spec.MatchConstraints.ResourceRules[0].Operations = append(p.Spec.MatchConstraints.ResourceRules[0].Operations, admissionregistrationv1.Create)
			if tt.condition != "" {
				p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "who", Expression: tt.condition}}
			}
			ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
			var events []map[string]any
			for i, l := range lines {
				done, err := time.Parse(time.RFC3339Nano, regexp.MustCompile(`"stageTimestamp":"([^"]*)"`).FindStringSubmatch(l)[1])
				if err != nil {
					t.Fatal(err)
				}
				if i == 2 {
					l, done = cloudWatchCut(t, l, 30), done.Add(808*time.Millisecond)
				}
				events = append(events, map[string]any{"logStreamName": "kube-apiserver-audit-1", "timestamp": done.UnixMilli(), "message": l})
			}
			slices.SortStableFunc(events, func(a, b map[string]any) int { return gocmp.Compare(a["timestamp"].(int64), b["timestamp"].(int64)) })
			doc, err := json.Marshal(map[string]any{"events": events})
			if err != nil {
				t.Fatal(err)
			}
			sum, got := replayLinesWith(t, ps, bs, nil, string(doc))
			if sum.MalformedCount > 0 {
				t.Fatalf("malformed: %v", sum.Malformed)
			}
			rec := got["next"]
			switch {
			case tt.decision == DecisionAdmit && (rec == nil || rec.Decision != DecisionAdmit || rec.Certainty != CertaintyCertain):
				t.Errorf("the export's replay: %s, want admit, certain (the policy's matchCondition skips it)", describeRecord(rec))
			case tt.decision != DecisionAdmit && (rec == nil || rec.Decision != tt.decision || rec.Reason != tt.reason || !strings.Contains(rec.Indeterminate, "only within the second before the time it gives")):
				t.Errorf("the export's replay: %s, want %s %s", describeRecord(rec), tt.decision, tt.reason)
			}
		})
	}
}

// TestExportMalformedEventField: an event that does not decode, inside an export's record, is
// said to be so with the record's field that holds it (as a malformed line names file and
// line).
func TestExportMalformedEventField(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("any", "configmaps", admissionregistrationv1.Create, nil, "true")
	bad := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"x","stage":"ResponseComplete","verb":5}`
	for _, tt := range []struct{ name, data, want string }{
		{"AKS blob", `{"category":"kube-audit","resourceId":"/X","properties":{"log":` + strconv.Quote(bad) + `}}`, "properties.log: not an audit.k8s.io/v1 Event: verb is a JSON number, not a string"},
		{"filter-log-events", `{"events":[{"logStreamName":"kube-apiserver-audit-1","timestamp":1,"message":` + strconv.Quote(bad) + `}]}`, "events[0].message: not an audit.k8s.io/v1 Event: verb is a JSON number, not a string"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sum, _ := replayLinesWith(t, []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}, nil, tt.data)
			if len(sum.Malformed) != 1 || sum.Malformed[0].Reason != tt.want {
				t.Errorf("malformed %v, want one: %q", sum.Malformed, tt.want)
			}
		})
	}
}

// TestGKEJSONPatchFirstAttempt: a JSON patch that ran concurrently with a merge patch of the same
// ConfigMap, whose write was committed first: the store's first attempt read the version before
// it, and the audit event keeps that attempt's annotations. GKE's entry holds the response and
// not the patch (an array, which its request object cannot be): what the patch made of the
// older version is not known, so the annotations the log records are not claimed to be the last
// attempt's (random parity controllers seed c:787, a GKE sink stamped when received, where the
// replay took the body for one that does not apply and the first attempt for one that
// published nothing).
func TestGKEJSONPatchFirstAttempt(t *testing.T) {
	t.Parallel()
	const expr = "int(object.data['n']) != 7"
	p, b := levelPolicy("n", "configmaps", admissionregistrationv1.Update, nil, expr)
	b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}
	cm := func(rv string, data map[string]any, labels map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "c1", "namespace": "a", "uid": "u-c1",
			"resourceVersion": rv, "creationTimestamp": "2026-11-24T00:00:00Z", "labels": labels}, "data": data}
	}
	failure := func(err string) map[string]string {
		return map[string]string{ValidationFailureAnnotation: `[{"message":"expression '` + expr + `' resulted in error: ` + err + `","policy":"n","binding":"n","expressionIndex":0,"validationActions":["Audit"]}]`}
	}
	// The merge patch, received after the JSON patch and completed before it.
	merged := timedEvent(t, levelEvent(t, "merge", auditlog.LevelRequestResponse, "patch", "configmaps", "a", "c1", 200, "",
		map[string]any{"data": map[string]any{"n": "x"}}, cm("11", map[string]any{"a": "1", "n": "x"}, nil)), "01.005000", "01.008000", failure("type conversion error from 'string' to 'int'"))
	// The JSON patch: its first attempt read version 10, without n.
	jsonPatch := levelEvent(t, "json", auditlog.LevelRequestResponse, "patch", "configmaps", "a", "c1", 200, "",
		map[string]any{"placeholder": true}, cm("12", map[string]any{"a": "1", "n": "x"}, map[string]any{"x": "y"}))
	jsonPatch = replaceOnce(t, jsonPatch, `{"placeholder":true}`, `[{"op":"add","path":"/metadata/labels","value":{"x":"y"}}]`)
	jsonPatch = timedEvent(t, jsonPatch, "01.000000", "01.020000", failure("no such key: n"))
	snapshot := []any{cm("10", map[string]any{"a": "1"}, nil)}
	ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}

	// The log backend's: the patch's first attempt on version 10 gives the annotations recorded.
	sum, got := replayLinesWith(t, ps, bs, snapshot, merged, jsonPatch)
	if len(sum.Disagreements) != 0 {
		t.Errorf("the log: disagreements: %v", sum.Disagreements)
	}
	if rec := got["json"]; rec == nil || rec.Decision != DecisionAdmit {
		t.Errorf("the log: %s, want admit", describeRecord(rec))
	}
	// GKE's, stamped when received or when completed.
	for _, stamp := range []exporttest.GKEStamp{exporttest.StampReceived, exporttest.StampCompleted} {
		wrapped, err := exporttest.WrapGKE(exporttest.GKESink, []byte(merged+"\n"+jsonPatch+"\n"), stamp)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(wrapped, []byte(`"op":"add"`)) {
			t.Fatalf("the GKE entry holds the JSON patch: %s", wrapped)
		}
		sum, got := replayLinesWith(t, ps, bs, snapshot, strings.Split(strings.TrimSpace(string(wrapped)), "\n")...)
		if len(sum.Disagreements) != 0 {
			t.Errorf("GKE (stamp %d): disagreements: %v", stamp, sum.Disagreements)
		}
		if rec := got["json"]; rec == nil || rec.Decision == DecisionDeny {
			t.Errorf("GKE (stamp %d): %s, want admit or indeterminate", stamp, describeRecord(rec))
		}
	}
}

// TestGKEJSONPatchDefaultedOnRead: a JSON patch of a PersistentVolumeClaim, whose response is
// not its admission object (apiserver.DefaultedOnRead), is sent through the pipeline; GKE's
// entry does not hold its body, which was sent as an empty merge patch before, refused as
// invalid, and the request held indeterminate for a failed rebuild: it is the body that is not
// known (no-object), naming the export.
func TestGKEJSONPatchDefaultedOnRead(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("lbl", "persistentvolumeclaims", admissionregistrationv1.Update, nil, "has(object.metadata.labels) && 'x' in object.metadata.labels")
	pvc := func(rv string, labels map[string]any) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": map[string]any{"name": "c1", "namespace": "a", "uid": "u-c1",
			"resourceVersion": rv, "creationTimestamp": "2026-11-24T00:00:00Z", "labels": labels},
			"spec":   map[string]any{"accessModes": []any{"ReadWriteOnce"}, "resources": map[string]any{"requests": map[string]any{"storage": "1Gi"}}, "volumeMode": "Filesystem"},
			"status": map[string]any{"phase": "Pending"}}
	}
	patch := levelEvent(t, "json", auditlog.LevelRequestResponse, "patch", "persistentvolumeclaims", "a", "c1", 200, "", map[string]any{"placeholder": true}, pvc("11", map[string]any{"x": "y"}))
	patch = replaceOnce(t, patch, `{"placeholder":true}`, `[{"op":"add","path":"/metadata/labels","value":{"x":"y"}}]`)
	patch = timedEvent(t, patch, "01.000000", "01.020000", nil)
	ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
	snapshot := []any{pvc("10", nil)}
	if _, got := replayLinesWith(t, ps, bs, snapshot, patch); got["json"] == nil || got["json"].Decision != DecisionAdmit {
		t.Errorf("the log: %s, want admit", describeRecord(got["json"]))
	}
	wrapped, err := exporttest.WrapGKE(exporttest.GKESink, []byte(patch+"\n"), exporttest.StampCompleted)
	if err != nil {
		t.Fatal(err)
	}
	_, got := replayLinesWith(t, ps, bs, snapshot, strings.Split(strings.TrimSpace(string(wrapped)), "\n")...)
	if rec := got["json"]; rec == nil || rec.Decision != DecisionIndeterminate || rec.Reason != ReasonNoObject || !namesExport(rec) {
		t.Errorf("GKE: %s, want indeterminate no-object naming the export", describeRecord(rec))
	}
}

// TestGKEInformerLagText: a request a second after its policy's param was changed is decided
// on the param's new version from the log backend's file. GKE's entry does not carry when the
// request was received, which may have been up to a minute before it completed: the informer
// may not have held the change. The alternative says when the write completed against the
// request's response, which the export gives, and why not against when it was received (it
// said "completed 59s after this request was received", of a request received a second after
// the write).
func TestGKEInformerLagText(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("limit", "configmaps", admissionregistrationv1.Create, nil, "params.data.allow == 'yes'")
	p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	allow := admissionregistrationv1.AllowAction
	b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Namespace: "params", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"param": "yes"}}, ParameterNotFoundAction: &allow}
	param := func(rv, allow string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "p", "namespace": "params", "resourceVersion": rv, "uid": "u-p", "labels": map[string]any{"param": "yes"}},
			"data": map[string]any{"allow": allow}}
	}
	cm := map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "later", "namespace": "ns1"}}
	lines := []string{
		timedEvent(t, levelEvent(t, "2", auditlog.LevelRequestResponse, "update", "configmaps", "params", "p", 200, "", param("10", "yes"), param("11", "yes")), "02.000000", "02.010000", nil),
		timedEvent(t, levelEvent(t, "3", auditlog.LevelRequestResponse, "create", "configmaps", "ns1", "later", 201, "", cm, cm), "03.000000", "03.001000", nil),
	}
	ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
	snapshot := []any{param("10", "no")}
	if _, recs := replayLinesWith(t, ps, bs, snapshot, lines...); recs["3"] == nil || recs["3"].Decision != DecisionAdmit || recs["3"].Certainty != CertaintyCertain {
		t.Fatalf("the log backend's file: %s, want admit, certain", describeRecord(recs["3"]))
	}
	_, recs := replayLinesWith(t, ps, bs, snapshot, gkeLines(t, lines...)...)
	rec := recs["3"]
	want := "the configmaps informer had not yet held the write at audit.jsonl:1, which completed 991ms before this request completed (the GKE Cloud Logging export does not carry when the request was received)"
	if rec == nil || rec.Decision != DecisionAdmit || rec.Certainty != CertaintyLikely || !mentions(rec, want) {
		t.Errorf("GKE's export: %s, want likely admit, the alternative %q", describeRecord(rec), want)
	}
}

// TestExportedCustomResourceUpdate: an update of a custom resource never creates it (the
// apiextensions apiserver's strategy: AllowCreateOnUpdate false), so GKE's losing its HTTP
// code leaves it an UPDATE whose old object the replay does not know, as the log's replay
// has it; an update of a lease, which may create, is undecided by the lost code, as is one of
// a resource no CRD is known to serve (an aggregated API's may create: found by a review),
// even where the log writes a CRD of its group (another resource's: an APIService serves a
// group-version, and a group may hold both; a review found it decided deny, certain, where the
// server admitted a CREATE the policy does not match).
func TestExportedCustomResourceUpdate(t *testing.T) {
	t.Parallel()
	crd, err := os.ReadFile(filepath.Join("..", "..", "testdata", "crd", "widgets.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "crd.yaml"), crd, 0o644); err != nil {
		t.Fatal(err)
	}
	widget := func(rv string) map[string]any {
		return map[string]any{"apiVersion": "example.com/v1", "kind": "Widget",
			"metadata": map[string]any{"name": "w1", "namespace": "app", "uid": "u-w1", "resourceVersion": rv, "generation": int64(1)},
			"spec":     map[string]any{"size": "small", "replicas": int64(2)}}
	}
	thing := func(rv string) map[string]any {
		return map[string]any{"apiVersion": "things.example.com/v1", "kind": "Thing",
			"metadata": map[string]any{"name": "w1", "namespace": "app", "uid": "u-t1", "resourceVersion": rv},
			"spec":     map[string]any{"size": "small"}}
	}
	lease := func(rv string) map[string]any {
		return map[string]any{"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
			"metadata": map[string]any{"name": "w1", "namespace": "app", "uid": "u-l1", "resourceVersion": rv},
			"spec":     map[string]any{"holderIdentity": "a"}}
	}
	// A CRD of the things' group, another resource's, written at level Metadata.
	gadgets := strings.Replace(event{id: "crd1", verb: "create", group: "apiextensions.k8s.io", version: "v1", resource: "customresourcedefinitions",
		name: "gadgets.things.example.com", code: 201, received: at(t, 1)}.line(t), `"level":"RequestResponse"`, `"level":"Metadata"`, 1)
	for _, tc := range []struct {
		name, group, version, resource string
		req, resp                      map[string]any
		reason                         Reason
		detail                         string
		before                         []string // the log's lines before the update
	}{
		{"a widget", "example.com", "v1", "widgets", widget("30"), widget("31"), ReasonOldObjectUnknown, "widgets.example.com app/w1 is not in the snapshot or earlier in the log", nil},
		{"a lease", "coordination.k8s.io", "v1", "leases", lease("30"), lease("31"), ReasonExportLost, "whether the update created the object", nil},
		// A resource the replay learns from its use, no CRD of its group written in the log
		// or known: it may be an aggregated API's, whose update may create.
		{"a resource learned from its use", "things.example.com", "v1", "things", thing("30"), thing("31"), ReasonExportLost, "whether the update created the object", nil},
		{"a resource learned from its use, a CRD of its group written", "things.example.com", "v1", "things", thing("30"), thing("31"), ReasonExportLost, "whether the update created the object", []string{gadgets}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, b := levelPolicy("old-reader", tc.resource, admissionregistrationv1.Update, nil, "oldObject == null || true")
			p.Spec.MatchConstraints.ResourceRules[0].APIGroups = []string{tc.group}
			line := event{id: "u1", verb: "update", group: tc.group, version: tc.version, resource: tc.resource, ns: "app", name: "w1", code: 200, received: at(t, 2), req: tc.req, resp: tc.resp}.line(t)
			ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
			opts := []Option{WithCheckRecorded(true), WithSnapshot(dir)}
			lines := append(slices.Clone(tc.before), line)
			_, plain := replaySources(t, ps, bs, opts, Source{Name: "audit.jsonl", Reader: strings.NewReader(strings.Join(lines, "\n") + "\n")})
			if rec := plain["u1"]; rec == nil || rec.Decision != DecisionIndeterminate || rec.Reason != ReasonOldObjectUnknown {
				t.Fatalf("the log's replay: %s, want indeterminate %s", describeRecord(rec), ReasonOldObjectUnknown)
			}
			_, got := replaySources(t, ps, bs, opts, Source{Name: "audit.jsonl", Reader: strings.NewReader(strings.Join(gkeLines(t, lines...), "\n") + "\n")})
			if rec := got["u1"]; rec == nil || rec.Decision != DecisionIndeterminate || rec.Reason != tc.reason || !strings.Contains(rec.Indeterminate, tc.detail) {
				t.Errorf("GKE's replay: %s, want indeterminate %s %q", describeRecord(rec), tc.reason, tc.detail)
			}
		})
	}
}

// TestGKESplitEntry: Cloud Logging splits an audit entry over its size limit into pieces, each
// with a part of the request's and the response's objects
// (https://cloud.google.com/logging/docs/audit/split-logs). A privileged pod's create, the
// securityContext in the second piece: read from the first alone, a policy that denies
// privileged containers admitted it, certain, and the second piece was another event under
// the same audit ID (malformed). The objects are not replayed: the create is indeterminate
// (no-object, naming the split), and the second piece is the same event read again.
func TestGKESplitEntry(t *testing.T) {
	t.Parallel()
	p, b := levelPolicy("no-privileged", "pods", admissionregistrationv1.Create, nil,
		"!object.spec.containers.exists(c, has(c.securityContext) && has(c.securityContext.privileged) && c.securityContext.privileged)")
	b.Spec.ValidationActions = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "shop"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx", "securityContext": map[string]any{"privileged": true}}}}}
	ev := timedEvent(t, levelEvent(t, "pod", auditlog.LevelRequest, "create", "pods", "shop", "web", 201, "", pod, nil), "01.000000", "01.020000", nil)
	wrapped, err := exporttest.WrapGKE(exporttest.GKESink, []byte(ev+"\n"), exporttest.StampCompleted)
	if err != nil {
		t.Fatal(err)
	}
	var entry map[string]any
	if err := json.Unmarshal(bytes.TrimSpace(wrapped), &entry); err != nil {
		t.Fatalf("%v: %q of %s", err, wrapped, ev)
	}
	piece := func(index int, request map[string]any) string {
		e := maps.Clone(entry)
		payload := maps.Clone(e["protoPayload"].(map[string]any))
		payload["request"] = request
		e["protoPayload"] = payload
		e["split"] = map[string]any{"uid": "split-1", "index": index, "totalSplits": 2}
		e["insertId"] = fmt.Sprint(e["insertId"], index)
		out, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	first := piece(0, map[string]any{"@type": "core.k8s.io/v1.Pod", "apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "web", "namespace": "shop"},
		"spec": map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}}})
	second := piece(1, map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"securityContext": map[string]any{"privileged": true}}}}})
	// Without an operation, the split's uid is the audit ID; protobuf's JSON leaves out the
	// first piece's index, 0.
	withoutOperation := func(piece string) string {
		var e map[string]any
		if err := json.Unmarshal([]byte(piece), &e); err != nil {
			t.Fatal(err)
		}
		delete(e, "operation")
		delete(e["split"].(map[string]any), "index")
		if e["split"].(map[string]any)["uid"] = "split-1"; strings.Contains(piece, `"index":1`) {
			e["split"].(map[string]any)["index"] = 1
		}
		out, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		return string(out)
	}
	ps, bs := []*admissionregistrationv1.ValidatingAdmissionPolicy{p}, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{b}
	for _, tc := range []struct {
		id     string
		pieces []string
	}{
		{"pod", []string{first, second}},
		{"pod", []string{second, first}},
		{"split-1", []string{withoutOperation(first), withoutOperation(second)}},
	} {
		sum, got := replayLines(t, ps, bs, tc.pieces...)
		rec := got[tc.id]
		if rec == nil || rec.Decision != DecisionIndeterminate || rec.Reason != ReasonNoObject || !strings.Contains(rec.Indeterminate, "the objects of an entry it split over its size limit") {
			t.Errorf("the create: %s, want indeterminate (no-object), naming the split", describeRecord(rec))
		}
		if sum.MalformedCount != 0 || sum.Duplicates != 1 {
			t.Errorf("%d malformed lines (%v), %d duplicates; want none, and the other piece a duplicate", sum.MalformedCount, sum.Malformed, sum.Duplicates)
		}
	}
}
