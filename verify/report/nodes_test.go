package report

import "testing"

func TestRequesterGroup(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ user, sub, want string }{
		{"system:serviceaccount:kube-system:node-controller", "", GroupNodeController},
		{"system:serviceaccount:kube-system:taint-eviction-controller", "", GroupTaintEviction},
		{"system:serviceaccount:kube-system:draino", "eviction", GroupDrainer},
		{"system:serviceaccount:kube-system:cluster-autoscaler", "", GroupDrainer},
		{"system:node:worker-1", "", GroupKubelet},
		{"system:serviceaccount:kube-system:replicaset-controller", "", GroupControllers},
		{"system:kube-scheduler", "", GroupControllers},
		{"jane@example.com", "eviction", GroupDrainer}, // kubectl drain
		{"jane@example.com", "", GroupUsers},
	} {
		if got := requesterGroup(tc.user, tc.sub); got != tc.want {
			t.Errorf("requesterGroup(%q, %q) = %q, want %q", tc.user, tc.sub, got, tc.want)
		}
	}
}

func TestPodNodeName(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in    string
		want  string
		found bool
	}{
		{`{"kind":"Pod","spec":{"nodeName":"worker-1","containers":[]}}`, "worker-1", true},
		{`{"kind":"Pod","spec":{ "nodeName" : "worker-2" }}`, "worker-2", true},
		{`{"kind":"Pod","status":{"nominatedNodeName":"worker-3"},"metadata":{"managedFields":[{"fieldsV1":{"f:spec":{"f:nodeName":{}}}}]}}`, "", false},
		{`{"kind":"Pod","spec":{}}`, "", false},
		{`{"kind":"Pod","spec":{"nodeName":"a\"b"}}`, "", false},
	} {
		got, found := podNodeName([]byte(tc.in))
		if got != tc.want || found != tc.found {
			t.Errorf("podNodeName(%s) = %q, %v; want %q, %v", tc.in, got, found, tc.want, tc.found)
		}
	}
}

func TestChooseBucket(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ ms, want int64 }{
		{0, 1000}, {460003, 1000}, {3600000, 5000}, {24 * 3600000, 60000}, {30 * 24 * 3600000, 30 * 60000},
	} {
		if got := chooseBucket(tc.ms); got != tc.want {
			t.Errorf("chooseBucket(%d) = %d, want %d", tc.ms, got, tc.want)
		}
	}
}
