package report

import (
	"bytes"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The values testdata/secrets/audit.jsonl writes: Secret data and stringData, and a
// ConfigMap's data, at RequestResponse level, quoted by the policies' messages and audit
// annotations.
var secretValues = []string{"hunter2-s3cr3t-pass", "hunter3-NEWVALUE-pass", "tok-ABCDEF123456", "patched-TOKEN-777", "sk-live-STRINGDATA-999"}

const configMapValue = "cm-SECRET-VALUE-42"

// TestRedact proves that a report never holds the values of Secrets, nor of the resources
// marked sensitive, on a log that writes them at RequestResponse level (create with
// stringData and the last applied configuration, update, patch, delete), under policies that
// quote them in messages, warnings and audit annotations: the objects keep their key names
// and sizes, every text of their rows is scrubbed, and other objects are left whole.
func TestRedact(t *testing.T) {
	dir := filepath.Join("testdata", "secrets")
	log, err := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	forms := func(v string) []string { return []string{v, base64.StdEncoding.EncodeToString([]byte(v))} }
	for _, v := range append(secretValues, configMapValue) {
		if !bytes.Contains(log, []byte(forms(v)[1])) && !bytes.Contains(log, []byte(v)) {
			t.Fatalf("the log does not hold %q: the test proves nothing", v)
		}
	}

	html := func(d *Data) string {
		var buf bytes.Buffer
		if err := WriteHTML(&buf, d); err != nil {
			t.Fatal(err)
		}
		return buf.String()
	}
	d := replayReport(t, dir, "audit.jsonl", WithRedact(schema.GroupResource{Resource: "configmaps"}))
	page := html(d)
	for _, v := range append(secretValues, configMapValue) {
		for _, f := range forms(v) {
			if strings.Contains(page, f) {
				t.Errorf("the report holds the value %q (as %q)", v, f)
			}
		}
	}
	if len(d.Requests.Rows) != 6 {
		t.Fatalf("%d rows, want 6 (every request is warned or audited)", len(d.Requests.Rows))
	}
	for _, r := range d.Requests.Rows {
		sensitive := r.Resource == "secrets" || r.Resource == "configmaps"
		if r.Redacted != sensitive {
			t.Errorf("line %d (%s): redacted = %v, want %v", r.Line, r.Resource, r.Redacted, sensitive)
		}
		if len(r.Object)+len(r.OldObject) == 0 {
			t.Errorf("line %d (%s): no object: the report should show what it may", r.Line, r.Resource)
		}
	}
	// Key names and sizes stay.
	for _, want := range []string{`"password":"\u003credacted: 19 bytes\u003e"`, `"api-key":"\u003credacted: 22 bytes\u003e"`, `"dbpass":"\u003credacted: 18 bytes\u003e"`, `"kubectl.kubernetes.io/last-applied-configuration":"\u003credacted: `} {
		if !strings.Contains(page, want) {
			t.Errorf("the report does not hold %s", want)
		}
	}
	// What is not sensitive is shown whole, the pod's value and message included.
	if !strings.Contains(page, "mode plain-visible-value") {
		t.Error("the pod's message is not in the report: only sensitive objects are redacted")
	}
	// Without --report-redact configmaps, the ConfigMap is shown: the flag is what hides it.
	if !strings.Contains(html(replayReport(t, dir, "audit.jsonl")), configMapValue) {
		t.Error("without WithRedact(configmaps) the ConfigMap's value is not in the report: the test of the flag proves nothing")
	}
}

// TestRedactExports holds the report to redacting Secrets whatever envelope the log comes in:
// an export keeps the resource of each request (GKE's maps it from the entry's resourceName),
// which the redaction keys on.
func TestRedactExports(t *testing.T) {
	dir := filepath.Join("testdata", "secrets")
	for _, name := range []string{"eks-filter-log-events.json", "gke-sink.json"} {
		t.Run(name, func(t *testing.T) {
			d := replayReport(t, dir, name)
			var buf bytes.Buffer
			if err := WriteHTML(&buf, d); err != nil {
				t.Fatal(err)
			}
			for _, v := range secretValues {
				for _, f := range []string{v, base64.StdEncoding.EncodeToString([]byte(v))} {
					if strings.Contains(buf.String(), f) {
						t.Errorf("the report holds the value %q (as %q)", v, f)
					}
				}
			}
			secrets, alternatives := 0, 0
			for _, r := range d.Requests.Rows {
				if r.Resource == "secrets" {
					secrets++
					alternatives += len(r.Alternatives)
					if !r.Redacted {
						t.Errorf("line %d: a Secret's row is not redacted", r.Line)
					}
				}
			}
			if secrets == 0 {
				t.Error("no row of a Secret: the test proves nothing")
			}
			// GKE's entries do not say when a request was received: a write of the Secret
			// completed a second before a request that read it may not have been what its
			// first attempt read, and the alternative quotes the version it replaced, whose
			// values the row's objects do not hold (alternativeTexts).
			if name == "gke-sink.json" && alternatives == 0 {
				t.Error("no alternative in a Secret's row: the test of their redaction proves nothing")
			}
		})
	}
}
