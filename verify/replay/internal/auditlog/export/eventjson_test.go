package export_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/verify/replay/exporttest"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// TestWriteEvent holds the writer of GKE's events to encoding/json: for every entry GKE would
// write of real logs, and for entries whose strings need escapes, it writes the bytes
// encoding/json writes of the event.
func TestWriteEvent(t *testing.T) {
	t.Parallel()
	entry := func(labels, status, response string) []byte {
		return []byte(`{"insertId":"i1","timestamp":"2026-01-01T00:00:01.5Z","labels":` + labels +
			`,"operation":{"id":"a1","first":true,"last":true},"protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog",` +
			`"serviceName":"k8s.io","methodName":"io.k8s.core.v1.pods.create","resourceName":"core/v1/namespaces/a/pods/p",` +
			`"authenticationInfo":{"principalEmail":"<u>&\u2028\u00e9"},"requestMetadata":{"callerIp":"10.0.0.1","callerSuppliedUserAgent":"kubectl\t\"x\"\u0001"},` +
			`"status":` + status + `,"response":` + response + `}}`)
	}
	entries := map[string][]byte{
		"escapes":           entry(`{"a<b":"c&d\u2029","z":"\ud800","b\n":"\u007f\b\f"}`, `{"code":0}`, `{"@type":"core.k8s.io/v1.Pod","kind":"Pod","metadata":{"name":"p"}}`),
		"a refusal":         entry(`{}`, `{"code":7,"message":"Forbidden","details":[{"@type":"x","a":[1]}]}`, `null`),
		"a Status response": entry(`null`, `{"code":3}`, `{"@type":"meta.k8s.io/v1.Status","kind":"Status","code":422,"reason":"Invalid","message":"m","details":{"name":"p","kind":"pods"}}`),
		"no resource":       bytes.Replace(entry(`{}`, `{}`, `{}`), []byte(`"core/v1/namespaces/a/pods/p"`), []byte(`"/healthz"`), 1),
		"impersonated":      bytes.Replace(entry(`{}`, `{}`, `{}`), []byte(`"authenticationInfo":{`), []byte(`"authenticationInfo":{"authoritySelector":"<a>\u2028",`), 1),
	}
	for _, name := range recorded {
		data, err := exporttest.Wrap(exporttest.GKESink, readLog(t, name))
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range bytes.Split(data, []byte("\n")) {
			if len(l) > 0 {
				entries[fmt.Sprintf("%s line %d", name, len(entries))] = l
			}
		}
	}
	for name, e := range entries {
		fast, slow, err := export.WriteEventBothWays(e)
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		if diff := cmp.Diff(string(slow), string(fast)); diff != "" {
			t.Errorf("%s: writeEvent mismatch (-encoding/json +writeEvent):\n%s", name, diff)
		}
	}
}

// FuzzAppendJSONString holds the string writer of GKE's events to encoding/json's.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "a", "<&>", "\u2028\u2029", "\xff", "\x00\x1f\x7f", "é\"\\"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := export.AppendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
			t.Fatalf("appendJSONString(%q) = %s, encoding/json %s", s, got[1:], want)
		}
	})
}
