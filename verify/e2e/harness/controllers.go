package harness

import (
	"context"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WithControllers also runs kube-controller-manager and kube-scheduler against the server, as
// a kubeadm control plane does, so that its audit log holds the controllers' own traffic: the
// node lifecycle and taint eviction controllers, the workload controllers, the garbage and
// namespace collectors, the scheduler's bindings. Each controller acts as its own service
// account (--use-service-account-credentials), system:serviceaccount:kube-system:node-controller
// and the others, and the scheduler as system:kube-scheduler, as in a real cluster. No kubelet runs: pods stay Pending, and a node stays
// Ready only while the test renews its status. The flags are appended to
// kube-controller-manager's, to override them (for example "--node-monitor-grace-period=20s").
func WithControllers(flags ...string) Option {
	return func(c *config) {
		c.controllers = true
		c.controllerFlags = append(c.controllerFlags, flags...)
	}
}

// schedulerUser is the user kube-scheduler authenticates as, by a token of its own.
const schedulerUser = "system:kube-scheduler"

// startControllers starts kube-controller-manager, with the administrator's kubeconfig, and
// kube-scheduler, as system:kube-scheduler, without serving (--secure-port=0) or leader election, and waits until the
// controller manager has made its first controller's service account.
func (s *Server) startControllers(ctx context.Context, flags []string, stopTimeout time.Duration) {
	s.t.Helper()
	kubeconfig := s.Kubeconfig()
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--secure-port=0",
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + s.path("sa.key"),
		"--root-ca-file=" + s.caFile,
		"--cluster-name=vapc-e2e",
		// A node without a kubelet turns Unknown soon, and is tainted at once.
		"--node-monitor-period=2s",
		"--node-monitor-grace-period=20s",
		"--v=1",
	}
	cm := s.startProcess("kube-controller-manager", s.bin.controllerManager, append(args, flags...), stopTimeout)
	sched := s.startProcess("kube-scheduler", s.bin.scheduler, []string{
		"--kubeconfig=" + s.KubeconfigFor(schedulerUser),
		"--secure-port=0",
		"--leader-elect=false",
		"--v=1",
	}, stopTimeout)
	cs := s.Clientset()
	for {
		_, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceSystem).Get(ctx, "node-controller", metav1.GetOptions{})
		switch {
		case err == nil:
			return
		case !apierrors.IsNotFound(err):
			s.t.Fatalf("harness: waiting for the controller manager: %v", err)
		case cm.exited():
			s.failed(cm, "exited before it made its service accounts: %v", cm.err)
		case sched.exited():
			s.failed(sched, "exited: %v", sched.err)
		}
		select {
		case <-ctx.Done():
			s.failed(cm, "made no service account for node-controller in time")
		case <-time.After(250 * time.Millisecond):
		}
	}
}
