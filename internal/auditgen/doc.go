// Package auditgen generates realistic kube-apiserver audit logs (audit.k8s.io/v1 Event JSON
// lines) of any size, deterministically from a seed, for benchmarks and scale tests of replay.
//
// A generated log is a day in a large cluster as its audit policy records it (RequestResponse
// for pod and node writes, Metadata otherwise; see /work/shared/samples/synthetic/audit-policy.yaml
// and the recorded kosmos-basic log for the shapes copied): mostly reads and kubelet lease
// updates, kubelet node and pod status patches, controller writes, pod churn across many nodes
// and namespaces, Kosmos leaf nodes flapping (the node lifecycle controller setting Ready to
// Unknown, tainting the node and, after the pods' tolerationSeconds, the taint-eviction
// DisruptionTarget patch and DELETE), node-problem-detector reporting KernelDeadlock and Draino
// cordoning and evicting (some evictions refused with 429), and authentication and authorization
// failures.
//
// The writes are consistent with one another and with the snapshot Generate can write first (a
// `kubectl get -o yaml` List of the initial namespaces, nodes and pods): every pod a request
// names exists, was created earlier in the log or is in the snapshot, so a replay of the log
// can answer params and old objects from its state.
package auditgen
