package auditlog

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSalvage: what a line that does not decode (cut short, damaged) still tells: its stage,
// verb and the resource its URI names, where each is whole.
func TestSalvage(t *testing.T) {
	const head = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"a","stage":"ResponseComplete",`
	for _, tc := range []struct {
		name, line string
		want       string // stage verb group/resource/subresource ns/name
		harmless   bool
	}{
		{"cut in the URI", head + `"requestURI":"/api/v1/namespaces/team-b/configm`, "ResponseComplete  -", false},
		{"cut after the verb", head + `"requestURI":"/api/v1/namespaces/team-b/configmaps/cfg-1?fieldManager=kubectl-label\u0026timeout=30s","verb":"patch","us`,
			"ResponseComplete patch /configmaps/ team-b/cfg-1", false},
		{"a create", head + `"requestURI":"/apis/apps/v1/namespaces/ns/deployments","verb":"create"`, "ResponseComplete create apps/deployments/ ns/", false},
		{"a subresource", head + `"requestURI":"/api/v1/namespaces/ns/pods/p/eviction","verb":"create"`, "ResponseComplete create /pods/eviction ns/p", false},
		{"a cluster-scoped object", head + `"requestURI":"/api/v1/nodes/n1/status","verb":"patch"`, "ResponseComplete patch /nodes/status /n1", false},
		{"a read", head + `"requestURI":"/api/v1/namespaces/ns/pods?limit=500","verb":"list"`, "ResponseComplete list /pods/ ns/", true},
		{"an earlier stage", `{"stage":"RequestReceived","requestURI":"/api/v1/namespaces/ns/pods","verb":"create"`, "RequestReceived create /pods/ ns/", true},
		{"not a resource", head + `"requestURI":"/healthz","verb":"get"`, "ResponseComplete get -", true},
		{"garbage", `\x00\x01not json`, "  -", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := Salvage([]byte(tc.line))
			got := s.Stage + " " + s.Verb + " -"
			if r := s.Resource; r != nil {
				got = s.Stage + " " + s.Verb + " " + r.APIGroup + "/" + r.Resource + "/" + r.Subresource + " " + r.Namespace + "/" + r.Name
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Salvage (-want +got):\n%s", diff)
			}
			if s.Harmless() != tc.harmless {
				t.Errorf("Harmless() = %v, want %v", s.Harmless(), tc.harmless)
			}
		})
	}
}
