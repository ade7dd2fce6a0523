package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/vapc-dev/vapc/verify/e2e/harness"
)

// productionAuditPolicy is an audit policy as production clusters write them: reads, leases,
// events and secrets at Metadata level; pods, nodes, their status and the workloads at
// RequestResponse; everything else at Request.
const productionAuditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: ["RequestReceived"]
rules:
- level: Metadata
  verbs: ["get", "list", "watch"]
- level: Metadata
  resources:
  - {group: "coordination.k8s.io", resources: ["leases"]}
  - {group: "", resources: ["events", "secrets"]}
  - {group: "events.k8s.io", resources: ["events"]}
- level: RequestResponse
  resources:
  - {group: "", resources: ["pods", "pods/status", "pods/binding", "pods/eviction", "nodes", "nodes/status"]}
  - {group: "apps", resources: ["deployments", "deployments/status", "deployments/scale", "replicasets", "replicasets/status", "statefulsets", "daemonsets"]}
- level: Request
`

// TestRecordClusterTraffic records the traffic of a small cluster for the replay benchmark
// (hack/bench.sh's cluster traffic, testdata/bench/cluster-traffic.log.gz) into the file
// VAPC_RECORD_TRAFFIC names: kube-apiserver with kube-controller-manager and kube-scheduler,
// three nodes whose kubelets (played: node status and lease heartbeats, pod status patches,
// final pod deletes) run the pods the scheduler binds to them, workloads scaled, restarted,
// their pods deleted and evicted, a node cordoned and drained, under productionAuditPolicy. It is
// a recording tool, not a test: without VAPC_RECORD_TRAFFIC it records nothing.
func TestRecordClusterTraffic(t *testing.T) {
	out := os.Getenv("VAPC_RECORD_TRAFFIC")
	if out == "" {
		t.Skip("a recording tool: set VAPC_RECORD_TRAFFIC=FILE (and VAPC_E2E=1) to record a cluster's traffic into FILE")
	}
	dur := 90 * time.Second
	if d, err := time.ParseDuration(os.Getenv("VAPC_RECORD_FOR")); err == nil {
		dur = d
	}
	policy, err := writeAuditPolicy(t.TempDir(), productionAuditPolicy)
	if err != nil {
		t.Fatal(err)
	}
	s := harness.Start(t, harness.WithControllers(), harness.WithAPIServerFlags("--audit-policy-file="+policy))
	ctx, cancel := context.WithTimeout(t.Context(), dur+2*time.Minute)
	defer cancel()
	cfg := s.RESTConfig()
	cfg.QPS, cfg.Burst, cfg.WarningHandler = 100, 200, rest.NoWarnings{}
	c, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	nodes := []string{"node-a", "node-b", "node-c"}
	for _, n := range nodes {
		if _, err := c.Resource(nodesGVR).Create(ctx, node(n, map[string]any{"topology.kubernetes.io/zone": "z-" + n}, condition("Ready", "True")), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	kctx, stopKubelets := context.WithCancel(ctx)
	var kubelets sync.WaitGroup
	for _, n := range nodes {
		kubelets.Add(1)
		go func() { defer kubelets.Done(); kubelet(kctx, s, n) }()
	}
	namespaces := []string{"team-a", "team-b"}
	apps := []string{"web", "api", "worker"}
	for _, ns := range namespaces {
		if _, err := c.Resource(namespacesGVR).Create(ctx, obj(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": ns}}), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		for i, app := range apps {
			d := deploymentIn(ns, app, int64(2+i))
			if _, err := c.Resource(deploymentsGVR).Namespace(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	r := rand.New(rand.NewPCG(1, 2))
	end := time.Now().Add(dur)
	steps := 0
	for time.Now().Before(end) && ctx.Err() == nil {
		steps++
		ns, app := namespaces[r.IntN(len(namespaces))], apps[r.IntN(len(apps))]
		deps := c.Resource(deploymentsGVR).Namespace(ns)
		pods := c.Resource(podsGVR).Namespace(ns)
		switch r.IntN(8) {
		case 0, 1: // scale
			body := fmt.Sprintf(`{"spec":{"replicas":%d}}`, 1+r.IntN(5))
			_, _ = deps.Patch(ctx, app, types.MergePatchType, []byte(body), metav1.PatchOptions{}, "scale")
		case 2: // rollout restart
			body := fmt.Sprintf(`{"spec":{"template":{"metadata":{"annotations":{"kubectl.kubernetes.io/restartedAt":%q}}}}}`, time.Now().UTC().Format(time.RFC3339))
			_, _ = deps.Patch(ctx, app, types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{FieldManager: "kubectl-rollout"})
		case 3, 4: // a pod deleted, or evicted
			l, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=" + app})
			if err != nil || len(l.Items) == 0 {
				break
			}
			p := l.Items[r.IntN(len(l.Items))]
			if r.IntN(2) == 0 {
				_ = pods.Delete(ctx, p.GetName(), metav1.DeleteOptions{})
				break
			}
			ev := obj(map[string]any{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": map[string]any{"name": p.GetName(), "namespace": ns}})
			_, _ = pods.Create(ctx, ev, metav1.CreateOptions{}, "eviction")
		case 5: // a node cordoned or uncordoned
			n := nodes[r.IntN(len(nodes))]
			body := fmt.Sprintf(`{"spec":{"unschedulable":%v}}`, r.IntN(2) == 0)
			_, _ = c.Resource(nodesGVR).Patch(ctx, n, types.StrategicMergePatchType, []byte(body), metav1.PatchOptions{})
		case 6: // a configmap written
			cm := configMap(ns, fmt.Sprintf("cfg-%d", r.IntN(5)), nil, map[string]any{"step": fmt.Sprint(steps)})
			if _, err := c.Resource(configMapsGVR).Namespace(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
				_, _ = c.Resource(configMapsGVR).Namespace(ns).Update(ctx, cm, metav1.UpdateOptions{})
			}
		default: // reads
			_, _ = pods.List(ctx, metav1.ListOptions{})
			_, _ = deps.Get(ctx, app, metav1.GetOptions{})
		}
		time.Sleep(time.Duration(100+r.IntN(400)) * time.Millisecond)
	}
	stopKubelets()
	kubelets.Wait()
	time.Sleep(3 * time.Second) // the last requests' events written
	data, err := os.ReadFile(snapshotLog(t, s.AuditLogPath()))
	if err != nil {
		t.Fatal(err)
	}
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	if _, err := zw.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, gz.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %d steps, %d events (%d bytes, %d gzip-compressed) into %s", steps, bytes.Count(data, []byte("\n")), len(data), gz.Len(), out)
}
