package main

import (
	"bufio"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"

	"github.com/vapc-dev/vapc/verify/e2e/harness"
)

// TestSnapshotUsage: vapc snapshot without policies, with a kubeconfig that is not there or
// without a cluster to read is a usage error; without a cluster, it says where it looked, as
// kubectl looks: --kubeconfig, $KUBECONFIG (or ~/.kube/config), the in-cluster configuration.
func TestSnapshotUsage(t *testing.T) {
	none := filepath.Join(t.TempDir(), "none")
	t.Setenv("KUBECONFIG", none)
	t.Setenv("HOME", t.TempDir())
	t.Setenv("KUBERNETES_SERVICE_HOST", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"snapshot"}, "vapc: snapshot: --policies is required: the snapshot holds what they read"},
		{[]string{"snapshot", "--policies", "../../policies", "--kubeconfig", "nope.yaml"}, "vapc: snapshot: --kubeconfig: nope.yaml: no such file or directory"},
		{[]string{"snapshot", "--policies", "../../policies"}, "vapc: snapshot: no cluster to read: give --kubeconfig FILE (and --context NAME), or set KUBECONFIG, to the kubeconfig of the cluster the audit log is from"},
		{[]string{"snapshot", "--policies", "../../policies", "extra"}, `vapc: snapshot: unexpected arguments ["extra"] (the policies go in --policies)`},
	} {
		stdout, stderr, code := runVapc(t, "", tc.args...)
		if code != exitUsage || stdout != "" || !strings.HasSuffix(strings.TrimSpace(stderr), tc.want) {
			t.Errorf("vapc %v: exit %d, stdout %q, stderr %q; want %d and %q", tc.args, code, stdout, stderr, exitUsage, tc.want)
		}
	}
	_, stderr, _ := runVapc(t, "", "snapshot", "--policies", "../../policies")
	want := `vapc snapshot: found no kubeconfig that names a cluster, and no in-cluster configuration; it looked, as kubectl does, at:
  --kubeconfig FILE         not given
  $KUBECONFIG               ` + none + `: no such file or directory
  ~/.kube/config            not read: $KUBECONFIG is set
  in-cluster configuration  not in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set
vapc: snapshot: no cluster to read: give --kubeconfig FILE (and --context NAME), or set KUBECONFIG, to the kubeconfig of the cluster the audit log is from
`
	if diff := cmp.Diff(want, stderr); diff != "" {
		t.Errorf("vapc snapshot without a cluster: stderr mismatch (-want +got):\n%s", diff)
	}
}

// TestSnapshotFromCluster takes a snapshot of a real kube-apiserver with vapc snapshot, then
// replays the audit log written after it from that snapshot: the node-controller's delete of
// a pod on a NotReady Kosmos node is decided (denied, as the server did) from the Node and the
// Pod the snapshot holds, where a replay without it cannot decide it.
func TestSnapshotFromCluster(t *testing.T) {
	s := harness.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	const data = "../../verify/e2e/testdata/kosmos-basic/"
	for _, file := range []string{data + "policy.yaml", data + "objects.yaml", "../../testdata/crd/widgets.yaml"} {
		if _, _, err := s.Kubectl(ctx, "apply", "-f", file); err != nil {
			t.Fatal(err)
		}
	}
	now := time.Now().UTC().Format(time.RFC3339)
	patch := `{"status":{"conditions":[{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown","message":"Kubelet stopped posting node status.","lastHeartbeatTime":"` + now + `","lastTransitionTime":"` + now + `"}]}}`
	if _, _, err := s.Kubectl(ctx, "patch", "node", "kosmos-cluster7", "--subresource=status", "-p", patch); err != nil {
		t.Fatal(err)
	}

	// The policy, its binding and its params reach the admission plugin through informers:
	// the replay is of what the server decided once they had.
	waitForDeny(ctx, t, s)

	dir := t.TempDir()
	snapshot := filepath.Join(dir, "cluster.yaml")
	logStart := countLines(t, s.AuditLogPath())
	stdout, stderr, code := runVapc(t, "", "snapshot", "--kubeconfig", s.Kubeconfig(), "--policies", data+"policy.yaml", "-o", snapshot)
	if code != exitOK || stdout != "" {
		t.Fatalf("vapc snapshot: exit %d, stdout %q\nstderr:\n%s", code, stdout, stderr)
	}
	if !strings.HasPrefix(stderr, "vapc snapshot: wrote ") || !strings.Contains(stderr, "customresourcedefinitions.apiextensions.k8s.io 1") || !strings.Contains(stderr, "nodes 2") {
		t.Errorf("vapc snapshot stderr = %q, want the objects it wrote: 1 CRD, 2 nodes, ...", stderr)
	}
	raw, err := os.ReadFile(snapshot)
	if err != nil {
		t.Fatal(err)
	}
	// A List a resource, as the API lists it.
	got := map[string]bool{}
	for i, doc := range strings.Split(string(raw), "\n---\n") {
		var list unstructured.UnstructuredList
		if err := list.UnmarshalJSON(mustJSON(t, []byte(doc))); err != nil {
			t.Fatalf("document %d: %v", i+1, err)
		}
		if k := list.GetKind(); !strings.HasSuffix(k, "List") || k == "List" {
			t.Errorf("document %d is a %s, not the List of a resource", i+1, k)
		}
		got[list.GetKind()] = true
		for _, it := range list.Items {
			got[it.GetKind()+"/"+it.GetNamespace()+"/"+it.GetName()] = true
			if it.GetManagedFields() != nil {
				t.Errorf("%s/%s keeps its managedFields", it.GetKind(), it.GetName())
			}
		}
	}
	if !got["PodList"] || !got["NodeList"] {
		t.Errorf("the snapshot lacks the Lists of the policy's resources: %v", got)
	}
	for _, want := range []string{"CustomResourceDefinition//widgets.example.com", "Namespace//default", "Node//kosmos-cluster7", "Pod/default/web-a"} {
		if !got[want] {
			t.Errorf("the snapshot lacks %s; it holds %v", want, got)
		}
	}

	// The scenario after the snapshot: the node controller deletes a pod of the NotReady
	// Kosmos node (denied) and one of another node (allowed).
	for _, pod := range []string{"web-a", "web-b"} {
		_, _, _ = s.Kubectl(ctx, "delete", "pod", pod, "--wait=false", "--as=system:serviceaccount:kube-system:node-controller")
	}
	log := filepath.Join(dir, "audit.log")
	waitForLines(ctx, t, s.AuditLogPath(), logStart, log, `"name":"web-b"`)

	replayArgs := []string{"replay", "--policies", data + "policy.yaml", "--check-recorded", "--fail-on", "any-change"}
	stdout, stderr, code = runVapc(t, "", append(replayArgs, "--snapshot", snapshot, log)...)
	if code != exitOK || !strings.HasPrefix(stdout, "PASS: ") || !strings.Contains(stdout, "deny 1, indeterminate 0") {
		t.Errorf("vapc replay --snapshot: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	stdout, _, _ = runVapc(t, "", append(replayArgs, log)...)
	if !strings.Contains(stdout, "indeterminate") || strings.Contains(stdout, "deny 1, indeterminate 0") {
		t.Errorf("vapc replay without the snapshot decided the deletes all the same:\n%s", stdout)
	}
}

func mustJSON(t *testing.T, y []byte) []byte {
	t.Helper()
	j, err := yaml.YAMLToJSON(y)
	if err != nil {
		t.Fatal(err)
	}
	return j
}

func countLines(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(data, []byte("\n"))
}

// waitForDeny waits until the policy, its binding and its params have reached the admission
// plugin: a server-side dry run of the delete is denied.
func waitForDeny(ctx context.Context, t *testing.T, s *harness.Server) {
	t.Helper()
	for {
		_, _, err := s.Kubectl(ctx, "delete", "pod", "web-a", "--dry-run=server", "--as=system:serviceaccount:kube-system:node-controller")
		if err != nil && strings.Contains(err.Error(), "may not delete pod web-a") {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the policy did not deny the delete: %v", err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitForLines copies the lines of the audit log from line from on into out, once a final
// record holds marker.
func waitForLines(ctx context.Context, t *testing.T, path string, from int, out, marker string) {
	t.Helper()
	for {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		sc := bufio.NewScanner(f)
		sc.Buffer(nil, 16<<20)
		found := false
		for n := 0; sc.Scan(); n++ {
			if n < from {
				continue
			}
			l := sc.Text()
			b.WriteString(l + "\n")
			if strings.Contains(l, marker) && strings.Contains(l, `"stage":"ResponseComplete"`) && strings.Contains(l, `"verb":"delete"`) && !strings.Contains(l, "dryRun") {
				found = true
			}
		}
		f.Close()
		if found {
			if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
				t.Fatal(err)
			}
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no final record of the delete of %s in the audit log", marker)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
