package replay

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	api "k8s.io/kubernetes/pkg/apis/core"
)

// TestServiceAllocations: of a Service create, what kube-apiserver's allocators set that the
// request did not ask for is unknown; what it asked for is what the server allocated (or it
// refused before admission).
func TestServiceAllocations(t *testing.T) {
	t.Parallel()
	// The object as the replay's pipeline gives it: its allocators hand out an address and
	// node ports of their own.
	svc := func(typ api.ServiceType, clusterIP string, nodePorts ...int32) *api.Service {
		s := &api.Service{Spec: api.ServiceSpec{Type: typ, ClusterIP: clusterIP, ClusterIPs: []string{clusterIP}, IPFamilies: []api.IPFamily{api.IPv4Protocol}}}
		for _, p := range nodePorts {
			s.Spec.Ports = append(s.Spec.Ports, api.ServicePort{NodePort: p})
		}
		return s
	}
	for _, tc := range []struct {
		name string
		obj  *api.Service
		body string
		want []string
	}{
		{"a cluster IP service", svc(api.ServiceTypeClusterIP, "10.0.0.1", 0),
			`{"spec":{"ports":[{"port":80}]}}`, []string{"object.spec.clusterIP", "object.spec.clusterIPs", "object.spec.ipFamilies"}},
		{"its address given", svc(api.ServiceTypeClusterIP, "10.0.0.7", 0),
			`{"spec":{"clusterIP":"10.0.0.7","ports":[{"port":80}]}}`, nil},
		{"its address given, dual stack preferred", svc(api.ServiceTypeClusterIP, "10.0.0.7", 0),
			`{"spec":{"clusterIP":"10.0.0.7","ipFamilyPolicy":"PreferDualStack","ports":[{"port":80}]}}`, []string{"object.spec.clusterIP", "object.spec.clusterIPs", "object.spec.ipFamilies"}},
		{"headless", svc(api.ServiceTypeClusterIP, "None", 0),
			`{"spec":{"clusterIP":"None","ports":[{"port":80}]}}`, []string{"object.spec.ipFamilies"}},
		{"headless, its family given", svc(api.ServiceTypeClusterIP, "None", 0),
			`{"spec":{"clusterIP":"None","ipFamilies":["IPv4"],"ports":[{"port":80}]}}`, nil},
		{"external name", &api.Service{Spec: api.ServiceSpec{Type: api.ServiceTypeExternalName}},
			`{"spec":{"type":"ExternalName","externalName":"db.example.com"}}`, nil},
		{"node ports, one asked for", svc(api.ServiceTypeNodePort, "10.0.0.1", 30050, 30000),
			`{"spec":{"type":"NodePort","ports":[{"port":80,"nodePort":30050},{"port":81}]}}`,
			[]string{"object.spec.clusterIP", "object.spec.clusterIPs", "object.spec.ipFamilies", "object.spec.ports.*.nodePort"}},
		{"node ports and address asked for", svc(api.ServiceTypeNodePort, "10.0.0.9", 30050),
			`{"spec":{"type":"NodePort","clusterIP":"10.0.0.9","ports":[{"port":80,"nodePort":30050}]}}`, nil},
		{"no body", svc(api.ServiceTypeNodePort, "10.0.0.1", 30000), ``,
			[]string{"object.spec.ports.*.nodePort", "object.spec.healthCheckNodePort", "object.spec.clusterIP", "object.spec.clusterIPs", "object.spec.ipFamilies"}},
	} {
		var got []string
		for _, u := range serviceAllocations(tc.obj, []byte(tc.body)) {
			got = append(got, u.Path.String())
		}
		if d := cmp.Diff(tc.want, got); d != "" {
			t.Errorf("%s: unknown fields (-want +got):\n%s", tc.name, d)
		}
	}
}
