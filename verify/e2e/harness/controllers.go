package harness

import (
	"bytes"
	"context"
	"os"
	"time"
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
// controller manager has built its controllers and started one.
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
	for {
		// The controller manager builds every controller, making each one's service account
		// and client, before it runs any (BuildControllers, then RunControllers, which logs
		// each start at -v=1): once one runs, no policy the test installs can stop the others
		// from being built.
		built, err := os.ReadFile(cm.logPath)
		switch {
		case err != nil:
			s.t.Fatalf("harness: waiting for the controller manager: %v", err)
		case bytes.Contains(built, []byte("Controller starting...")):
			return
		case cm.exited():
			s.failed(cm, "exited before it started its controllers: %v", cm.err)
		case sched.exited():
			s.failed(sched, "exited: %v", sched.err)
		}
		select {
		case <-ctx.Done():
			s.failed(cm, "started no controller in time")
		case <-time.After(250 * time.Millisecond):
		}
	}
}
