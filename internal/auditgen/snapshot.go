package auditgen

import (
	"bufio"
	"bytes"
	"io"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// writeSnapshot writes the initial cluster as `kubectl get namespaces,nodes,pods -A -o yaml`
// does (a v1 List), plus the eviction-toleration-floor policy's ConfigMap.
func (g *generator) writeSnapshot(w io.Writer) (int, error) {
	bw := bufio.NewWriterSize(w, 1<<20)
	c := g.cluster
	n := 0
	if _, err := io.WriteString(bw, "apiVersion: v1\nitems:\n"); err != nil {
		return n, err
	}
	var buf bytes.Buffer
	item := func(obj any) error {
		buf.Reset()
		if err := appendYAMLItem(&buf, obj); err != nil {
			return err
		}
		n++
		_, err := bw.Write(buf.Bytes())
		return err
	}
	for _, ns := range c.namespaces {
		o := &corev1.Namespace{
			TypeMeta: metav1.TypeMeta{Kind: "Namespace", APIVersion: "v1"},
			ObjectMeta: metav1.ObjectMeta{Name: ns.name, UID: types.UID(ns.uid), ResourceVersion: ns.rv, CreationTimestamp: metav1.NewTime(ns.created),
				Labels: map[string]string{"kubernetes.io/metadata.name": ns.name}},
			Spec:   corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
			Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive},
		}
		if !ns.system {
			o.Labels["pod-security.kubernetes.io/enforce"] = "baseline"
		}
		if err := item(o); err != nil {
			return n, err
		}
	}
	for _, nd := range c.nodes {
		if err := item(g.nodeObject(nd)); err != nil {
			return n, err
		}
	}
	for _, p := range c.live {
		if err := item(g.podObject(p, podStored)); err != nil {
			return n, err
		}
	}
	cm := &corev1.ConfigMap{
		TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Name: "eviction-toleration-floor", Namespace: "kube-system", UID: types.UID(c.floorConfigUID), ResourceVersion: c.floorConfigRV,
			CreationTimestamp: metav1.NewTime(g.cfg.Start.Add(-30 * 24 * time.Hour))},
		Data: map[string]string{"minTolerationSeconds": "60"},
	}
	if err := item(cm); err != nil {
		return n, err
	}
	if _, err := io.WriteString(bw, "kind: List\nmetadata:\n  resourceVersion: \"\"\n"); err != nil {
		return n, err
	}
	return n, bw.Flush()
}
