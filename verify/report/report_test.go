package report

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/replay"
)

var update = flag.Bool("update", false, "rewrite the golden files")

const auditData = "../../testdata/audit"

// scenarios are the seed logs of testdata/audit, each with its policy.yaml and, when there is
// one, its snapshot.yaml.
var scenarios = []struct{ dir, log string }{
	{"kosmos-flapping", "audit.jsonl"},
	{"draino", "audit.jsonl"},
	{"busy-hour", "audit.jsonl"},
	{"edge-cases", "audit.jsonl"},
	{"kosmos-basic", "audit.log.gz"},
	{"kosmos-denied-variants", "audit.jsonl"},
	{"recorded-e2e", "audit.log.gz"},
	{"levels-production", "audit.log.gz"},
	{"levels-request", "audit.log.gz"},
	{"levels-omit-managed-fields", "audit.log.gz"},
}

// loadPolicies reads a policy file.
func loadPolicies(t testing.TB, path string) ([]*admissionregistrationv1.ValidatingAdmissionPolicy, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
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
	return ps, bs
}

// replayReport replays a log with the policies and snapshot of its folder into a report, as
// vapc replay --check-recorded --report does. Files are named from the repository's root.
func replayReport(t testing.TB, dir, log string, opts ...Option) *Data {
	t.Helper()
	name := func(f string) string {
		if rel, err := filepath.Rel(auditData, dir); err == nil && !strings.HasPrefix(rel, "..") {
			return filepath.ToSlash(filepath.Join("testdata/audit", rel, f))
		}
		return filepath.ToSlash(filepath.Join("verify/report", dir, f))
	}
	ps, bs := loadPolicies(t, filepath.Join(dir, "policy.yaml"))
	var ropts []replay.Option
	var snaps []string
	if _, err := os.Stat(filepath.Join(dir, "snapshot.yaml")); err == nil {
		ropts = append(ropts, replay.WithSnapshot(filepath.Join(dir, "snapshot.yaml")))
		snaps = append(snaps, name("snapshot.yaml"))
	}
	b, err := New(ps, bs, append([]Option{WithInputs([]string{name(log)}, []string{name("policy.yaml")}, snaps)}, opts...)...)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	r, err := replay.New(ps, bs, append(ropts, replay.WithCheckRecorded(true), replay.WithObserver(b.Observer()))...)
	if err != nil {
		t.Fatalf("replay.New: %v", err)
	}
	f, err := os.Open(filepath.Join(dir, log))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sum, err := r.Run(context.Background(), []replay.Source{{Name: name(log), Reader: f}}, b.Sink(nil))
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	return b.Data(sum)
}

// summarizeObjects replaces the objects of the rows by their kind, name, size and digest, to
// keep the golden files readable; TestRedact and the browser test look at objects whole.
func summarizeObjects(d *Data) *Data {
	c := *d
	c.Requests.Rows = append([]Row(nil), d.Requests.Rows...)
	for i := range c.Requests.Rows {
		r := &c.Requests.Rows[i]
		r.Object, r.OldObject = summarize(r.Object), summarize(r.OldObject)
	}
	return &c
}

func summarize(raw json.RawMessage) json.RawMessage {
	if raw == nil {
		return nil
	}
	var m struct {
		Kind     string                           `json:"kind"`
		Metadata struct{ Namespace, Name string } `json:"metadata"`
	}
	_ = json.Unmarshal(raw, &m)
	name := m.Metadata.Name
	if m.Metadata.Namespace != "" {
		name = m.Metadata.Namespace + "/" + name
	}
	sum := sha256.Sum256(raw)
	out, _ := json.Marshal(fmt.Sprintf("%s %s: %d bytes, sha256 %x", m.Kind, name, len(raw), sum[:6]))
	return out
}

// pretty indents JSON, but writes a value whose compact form fits in 100 bytes on one line:
// golden files a reviewer can read, a third of the size of json.MarshalIndent's.
func pretty(raw []byte) []byte {
	var out bytes.Buffer
	var write func(v json.RawMessage, indent string)
	write = func(v json.RawMessage, indent string) {
		var c bytes.Buffer
		_ = json.Compact(&c, v)
		if c.Len() <= 100 || (c.Bytes()[0] != '{' && c.Bytes()[0] != '[') {
			out.Write(c.Bytes())
			return
		}
		dec := json.NewDecoder(bytes.NewReader(c.Bytes()))
		open, _ := dec.Token()
		object := open == json.Delim('{')
		out.WriteString(open.(json.Delim).String() + "\n")
		for first := true; dec.More(); first = false {
			if !first {
				out.WriteString(",\n")
			}
			out.WriteString(indent + "  ")
			if object {
				k, _ := dec.Token()
				kj, _ := json.Marshal(k)
				out.Write(kj)
				out.WriteString(": ")
			}
			var e json.RawMessage
			_ = dec.Decode(&e)
			write(e, indent+"  ")
		}
		if object {
			out.WriteString("\n" + indent + "}")
		} else {
			out.WriteString("\n" + indent + "]")
		}
	}
	write(raw, "")
	out.WriteByte('\n')
	return out.Bytes()
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

// TestGolden compares the data of the report of every seed log with its golden file,
// testdata/golden/<scenario>.json.
func TestGolden(t *testing.T) {
	for _, tc := range scenarios {
		t.Run(tc.dir, func(t *testing.T) {
			t.Parallel()
			d := replayReport(t, filepath.Join(auditData, tc.dir), tc.log)
			got, err := json.Marshal(summarizeObjects(d))
			if err != nil {
				t.Fatal(err)
			}
			golden(t, filepath.Join("testdata", "golden", tc.dir+".json"), pretty(got))
			var html bytes.Buffer
			if err := WriteHTML(&html, d); err != nil {
				t.Fatal(err)
			}
		})
	}
}
