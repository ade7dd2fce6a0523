package auditgen

import (
	"fmt"

	authnv1 "k8s.io/api/authentication/v1"
)

// identity is who makes a request, as the audit event shows it.
type identity struct {
	user   authnv1.UserInfo
	ua     string
	ips    []string
	reason string // authorization.k8s.io/reason
}

// Versions in user agents.
const (
	kubeVersion = "v1.37.0"
	kubeCommit  = "4f2a9c1"
	controlIP   = "10.20.0.10"
)

// identities are the cluster's well-known clients.
type identities struct {
	nodeController, replicaSet, deployment, endpointSlice, statefulSet, hpa, gc *identity
	scheduler, kcm, apiserver                                                   *identity
	clustertree, draino, npd, deployer, admin, jane, ciReader, prometheus       *identity
	nodeControllerImpersonated                                                  *authnv1.UserInfo
}

func newIdentities(g *generator) identities {
	controller := func(name string) *identity {
		return serviceAccount(g, "kube-system", name,
			fmt.Sprintf("kube-controller-manager/%s (linux/amd64) kubernetes/%s/system:serviceaccount:kube-system:%s", kubeVersion, kubeCommit, name),
			controlIP, fmt.Sprintf("RBAC: allowed by ClusterRoleBinding \"system:controller:%s\" of ClusterRole \"system:controller:%s\" to ServiceAccount \"%s/kube-system\"", name, name, name), nil)
	}
	ids := identities{
		nodeController: controller("node-controller"),
		replicaSet:     controller("replicaset-controller"),
		deployment:     controller("deployment-controller"),
		endpointSlice:  controller("endpointslice-controller"),
		statefulSet:    controller("statefulset-controller"),
		hpa:            controller("horizontal-pod-autoscaler"),
		gc:             controller("generic-garbage-collector"),
		scheduler: &identity{
			user:   authnv1.UserInfo{Username: "system:kube-scheduler", Groups: []string{"system:authenticated"}},
			ua:     fmt.Sprintf("kube-scheduler/%s (linux/amd64) kubernetes/%s/scheduler", kubeVersion, kubeCommit),
			ips:    []string{controlIP},
			reason: `RBAC: allowed by ClusterRoleBinding "system:kube-scheduler" of ClusterRole "system:kube-scheduler" to User "system:kube-scheduler"`,
		},
		kcm: &identity{
			user:   authnv1.UserInfo{Username: "system:kube-controller-manager", Groups: []string{"system:authenticated"}},
			ua:     fmt.Sprintf("kube-controller-manager/%s (linux/amd64) kubernetes/%s/leader-election", kubeVersion, kubeCommit),
			ips:    []string{controlIP},
			reason: `RBAC: allowed by ClusterRoleBinding "system:kube-controller-manager" of ClusterRole "system:kube-controller-manager" to User "system:kube-controller-manager"`,
		},
		apiserver: &identity{
			user: authnv1.UserInfo{Username: "system:apiserver", UID: g.uuid(), Groups: []string{"system:authenticated", "system:masters"}},
			ua:   "kube-apiserver/" + kubeVersion + " (linux/amd64) kubernetes/" + kubeCommit,
			ips:  []string{"::1"},
		},
		clustertree: serviceAccount(g, "kosmos-system", "clustertree", "clustertree-cluster-manager/v0.0.0 (linux/amd64) kubernetes/$Format", "10.244.1.23",
			`RBAC: allowed by ClusterRoleBinding "clustertree" of ClusterRole "clustertree" to ServiceAccount "clustertree/kosmos-system"`,
			map[string]authnv1.ExtraValue{
				"authentication.kubernetes.io/node-name": {"worker-0001"},
				"authentication.kubernetes.io/pod-name":  {"clustertree-cluster-manager-7c9d6b5f8-m2x4q"},
			}),
		draino: serviceAccount(g, "kube-system", "draino", "draino/v0.0.0 (linux/amd64) kubernetes/$Format", "10.244.1.31",
			`RBAC: allowed by ClusterRoleBinding "draino" of ClusterRole "draino" to ServiceAccount "draino/kube-system"`,
			map[string]authnv1.ExtraValue{
				"authentication.kubernetes.io/node-name": {"worker-0001"},
				"authentication.kubernetes.io/pod-name":  {"draino-6d5f8c7b9-hv4tq"},
			}),
		npd: serviceAccount(g, "kube-system", "node-problem-detector", "node-problem-detector/v0.8.21", "",
			`RBAC: allowed by ClusterRoleBinding "npd-binding" of ClusterRole "system:node-problem-detector" to ServiceAccount "node-problem-detector/kube-system"`, nil),
		deployer: serviceAccount(g, "ci", "deployer", "argocd-application-controller/v2.14.2 (linux/amd64) kubernetes/$Format", "10.244.7.40",
			`RBAC: allowed by RoleBinding "deployer" of ClusterRole "edit" to ServiceAccount "deployer/ci"`, nil),
		admin: &identity{
			user:   authnv1.UserInfo{Username: "kubernetes-admin", Groups: []string{"kubeadm:cluster-admins", "system:authenticated"}},
			ua:     "kubectl/v1.37.0 (linux/amd64) kubernetes/" + kubeCommit,
			ips:    []string{"10.20.0.5"},
			reason: `RBAC: allowed by ClusterRoleBinding "kubeadm:cluster-admins" of ClusterRole "cluster-admin" to Group "kubeadm:cluster-admins"`,
		},
		jane: &identity{
			user:   authnv1.UserInfo{Username: "jane@example.com", Groups: []string{"platform-team", "system:authenticated"}, Extra: map[string]authnv1.ExtraValue{"authentication.kubernetes.io/credential-id": {"X509SHA256=3f9a1c0e7b"}}},
			ua:     "kubectl/v1.36.2 (darwin/arm64) kubernetes/7c1d2e0",
			ips:    []string{"192.0.2.44"},
			reason: `RBAC: allowed by ClusterRoleBinding "platform-team" of ClusterRole "cluster-admin" to Group "platform-team"`,
		},
		prometheus: serviceAccount(g, "monitoring", "prometheus-k8s", "Prometheus/3.2.1", "10.244.5.17",
			`RBAC: allowed by ClusterRoleBinding "prometheus-k8s" of ClusterRole "prometheus-k8s" to ServiceAccount "prometheus-k8s/monitoring"`, nil),
		ciReader: serviceAccount(g, "ci", "reader", "python-requests/2.32.3", "10.244.7.41", "", nil),
		nodeControllerImpersonated: &authnv1.UserInfo{
			Username: "system:serviceaccount:kube-system:node-controller",
			Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"},
		},
	}
	ids.npd.ips = nil // per node; set by the caller
	return ids
}

// serviceAccount is a service account's identity with a bound token.
func serviceAccount(g *generator, ns, name, ua, ip, reason string, extra map[string]authnv1.ExtraValue) *identity {
	ex := map[string]authnv1.ExtraValue{"authentication.kubernetes.io/credential-id": {"JTI=" + g.uuid()}}
	for k, v := range extra {
		ex[k] = v
	}
	id := &identity{
		user: authnv1.UserInfo{
			Username: "system:serviceaccount:" + ns + ":" + name,
			UID:      g.uuid(),
			Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + ns, "system:authenticated"},
			Extra:    ex,
		},
		ua:     ua,
		reason: reason,
	}
	if ip != "" {
		id.ips = []string{ip}
	}
	return id
}

// kubelet is a node's kubelet (the node authorizer gives no reason).
func (n *node) kubelet() *identity {
	if n.kubeletID == nil {
		n.kubeletID = &identity{
			user: authnv1.UserInfo{Username: "system:node:" + n.name, Groups: []string{"system:nodes", "system:authenticated"}},
			ua:   "kubelet/" + kubeVersion + " (linux/amd64) kubernetes/" + kubeCommit,
			ips:  []string{n.ip},
		}
	}
	return n.kubeletID
}

// problemDetector is the node-problem-detector pod on a node.
func (g *generator) problemDetector(n *node) *identity {
	id := *g.idents.npd
	id.ips = []string{n.podIP(2)}
	return &id
}
