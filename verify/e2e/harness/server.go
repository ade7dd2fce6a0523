// Package harness runs a real kube-apiserver on a real etcd for end-to-end
// tests, so that what vapc decides offline can be checked against what the
// apiserver decides.
//
// The binaries are kube-apiserver, kube-controller-manager, kube-scheduler and
// kubectl v1.37.0 and etcd v3.6, built from the modules pinned in
// verify/e2e/tools by hack/e2e-tools.sh (make e2e-tools); Start refuses to run
// without them. Every server is private
// to its test: its own etcd on a Unix socket, its own data, certificates,
// tokens and audit log in a temporary directory, and its own loopback port.
package harness

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// AdminUser is the user of Kubeconfig, RESTConfig and Clientset. It is in the
// group system:masters, so it may do anything, impersonation included:
// kubectl --as=system:serviceaccount:kube-system:node-controller.
const AdminUser = "admin"

// User is a user the apiserver authenticates by a static bearer token
// (--token-auth-file). The apiserver adds the group system:authenticated.
type User struct {
	// Name is the user name, as request.userInfo.username sees it.
	Name string
	// Groups are the groups the token file gives the user.
	Groups []string
}

// DefaultUsers are the token users every server has besides AdminUser:
// alice in the group developers, and bob in no group of his own. RBAC
// grants neither of them anything until a test does.
var DefaultUsers = []User{
	{Name: "alice", Groups: []string{"developers"}},
	{Name: "bob"},
}

// Option configures Start.
type Option func(*config)

type config struct {
	binDir         string
	users          []User
	apiserverFlags []string
	// controllers runs kube-controller-manager and kube-scheduler too, with these flags.
	controllers     bool
	controllerFlags []string
	startTimeout    time.Duration
	stopTimeout     time.Duration
}

// WithBinDir runs the binaries in dir instead of those hack/e2e-tools.sh
// builds into <repo>/.cache/e2e/bin. The environment variable VAPC_E2E_BIN does the same
// for every server.
func WithBinDir(dir string) Option {
	return func(c *config) { c.binDir = dir }
}

// WithUsers adds token users; KubeconfigFor and RESTConfigFor accept their
// names. A user of the same name as one already configured replaces it.
func WithUsers(users ...User) Option {
	return func(c *config) {
		for _, u := range users {
			c.users = slices.DeleteFunc(c.users, func(old User) bool { return old.Name == u.Name })
			c.users = append(c.users, u)
		}
	}
}

// WithAPIServerFlags appends flags to the kube-apiserver command line, after
// the harness's own, so that they override them: for example
// "--feature-gates=...", or "--emulated-version=1.36".
func WithAPIServerFlags(flags ...string) Option {
	return func(c *config) { c.apiserverFlags = append(c.apiserverFlags, flags...) }
}

// WithStartTimeout bounds how long Start waits for etcd and then for the
// apiserver's /readyz; the default is two minutes.
func WithStartTimeout(d time.Duration) Option {
	return func(c *config) { c.startTimeout = d }
}

// Server is a running kube-apiserver and its etcd. Start stops both when the
// test ends.
type Server struct {
	t        testing.TB
	dir      string
	bin      binaries
	url      string
	caFile   string
	tokens   map[string]string // user name to bearer token
	auditLog string
	version  string

	mu         sync.Mutex
	kubeconfig map[string]string // user name to kubeconfig path, written on demand
}

// Start starts etcd and kube-apiserver for t, waits until the apiserver's
// /readyz passes, and registers their stop with t.Cleanup. Unless the
// environment variable VAPC_E2E (EnvE2E) is set, as make test and make e2e set
// it, it skips t: go test ./... does not run real servers. With it, it fails t,
// never skips it, when the binaries are missing or stale (with the command that
// builds them: make e2e-tools) or the servers do not start.
//
// The apiserver runs as a kubeadm control plane's would, without the
// controller manager and the scheduler unless WithControllers asks for them
// (and then only theirs, not a kubelet's): serving certificates it makes itself in --cert-dir,
// static token authentication, --authorization-mode=Node,RBAC, service
// account tokens signed with a key of its own, and the default admission
// plugins, ValidatingAdmissionPolicy among them. It runs no endpoint
// reconciler (the "kubernetes" service has no endpoints), since the
// reconcilers refuse the loopback address it listens on. Since no controller
// may create service accounts, Start creates the ServiceAccount "default" in
// the namespaces default and kube-system; a test that creates pods in a
// namespace of its own must create that namespace's first.
//
// The audit log (AuditLogPath) records every request at level
// RequestResponse in every stage, RequestReceived included, as JSON lines
// without rotation: the whole life of the server, as replay tests need it.
func Start(t testing.TB, opts ...Option) *Server {
	t.Helper()
	requireE2E(t)
	cfg := config{
		binDir:       os.Getenv("VAPC_E2E_BIN"),
		users:        slices.Clone(DefaultUsers),
		startTimeout: 2 * time.Minute,
		stopTimeout:  15 * time.Second,
	}
	for _, opt := range opts {
		opt(&cfg)
	}
	users := append([]User{{Name: AdminUser, Groups: []string{"system:masters"}}}, cfg.users...)
	if cfg.controllers {
		// The scheduler's own identity, which the RBAC bootstrap policy binds.
		users = append(users, User{Name: schedulerUser})
	}

	bin := ensureBinaries(t, cfg.binDir)

	// The directory holds etcd's Unix socket, whose path may not exceed 108
	// bytes; t.TempDir's names grow with the test's name.
	removeAbandonedDirs()
	dir, err := os.MkdirTemp("", tempDirPrefix)
	if err != nil {
		t.Fatalf("harness: %v", err)
	}
	if err := os.WriteFile(filepath.Join(dir, ownerFile), []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
		t.Fatalf("harness: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() && os.Getenv("VAPC_E2E_KEEP") != "" {
			_ = os.Remove(filepath.Join(dir, ownerFile)) // not abandoned: kept
			t.Logf("harness: keeping %s (VAPC_E2E_KEEP is set)", dir)
			return
		}
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("harness: %v", err)
		}
	})

	s := &Server{
		t:          t,
		dir:        dir,
		bin:        bin,
		tokens:     map[string]string{},
		auditLog:   filepath.Join(dir, "audit.log"),
		kubeconfig: map[string]string{},
	}
	if err := s.writeConfig(users); err != nil {
		t.Fatalf("harness: %v", err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), cfg.startTimeout)
	defer cancel()
	start := time.Now()
	etcd := s.startEtcd(ctx, cfg.stopTimeout)
	s.startAPIServer(ctx, etcd, cfg.apiserverFlags, cfg.stopTimeout)
	if err := s.bootstrap(ctx); err != nil {
		t.Fatalf("harness: %v", err)
	}
	if cfg.controllers {
		s.startControllers(ctx, cfg.controllerFlags, cfg.stopTimeout)
	}
	t.Logf("harness: kube-apiserver %s at %s ready after %v (dir %s)", s.version, s.url, time.Since(start).Round(time.Millisecond), dir)
	return s
}

// bootstrap does what a cluster's controllers would have done by now and
// records the server's version.
func (s *Server) bootstrap(ctx context.Context) error {
	cs := s.Clientset()
	info, err := cs.Discovery().ServerVersion()
	if err != nil {
		return fmt.Errorf("reading the server version: %w", err)
	}
	s.version = info.GitVersion
	for _, ns := range []string{metav1.NamespaceDefault, metav1.NamespaceSystem} {
		sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}}
		_, err := cs.CoreV1().ServiceAccounts(ns).Create(ctx, sa, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating service account %s/default: %w", ns, err)
		}
	}
	return nil
}

// URL returns the apiserver's address, https://127.0.0.1:PORT.
func (s *Server) URL() string { return s.url }

// Version returns the gitVersion the apiserver's /version reports, v1.37.0.
func (s *Server) Version() string { return s.version }

// AuditLogPath returns the path of the apiserver's audit log: JSON lines of
// audit.k8s.io/v1 Events. The apiserver writes an event after it has begun
// the response, so a test that reads it right after a request must poll.
func (s *Server) AuditLogPath() string { return s.auditLog }

// Kubeconfig returns the path of a kubeconfig for AdminUser.
func (s *Server) Kubeconfig() string { return s.KubeconfigFor(AdminUser) }

// KubeconfigFor returns the path of a kubeconfig for the token user named
// user. It fails the test if there is no such user.
func (s *Server) KubeconfigFor(user string) string {
	s.t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if path, ok := s.kubeconfig[user]; ok {
		return path
	}
	path, err := s.writeKubeconfig(user, s.token(user))
	if err != nil {
		s.t.Fatalf("harness: %v", err)
	}
	s.kubeconfig[user] = path
	return path
}

// RESTConfig returns a new client configuration for AdminUser.
func (s *Server) RESTConfig() *rest.Config { return s.RESTConfigFor(AdminUser) }

// RESTConfigFor returns a new client configuration for the token user named
// user. It fails the test if there is no such user.
func (s *Server) RESTConfigFor(user string) *rest.Config {
	s.t.Helper()
	return &rest.Config{
		Host:            s.url,
		BearerToken:     s.token(user),
		TLSClientConfig: rest.TLSClientConfig{CAFile: s.caFile},
		UserAgent:       "vapc-e2e",
		QPS:             -1, // no client-side throttling
	}
}

// Clientset returns a clientset for AdminUser.
func (s *Server) Clientset() kubernetes.Interface {
	s.t.Helper()
	cs, err := kubernetes.NewForConfig(s.RESTConfig())
	if err != nil {
		s.t.Fatalf("harness: %v", err)
	}
	return cs
}

// Kubectl runs kubectl v1.37.0 as AdminUser with args and returns what it
// wrote. err is non-nil when kubectl fails; it then carries the exit status
// and stderr.
func (s *Server) Kubectl(ctx context.Context, args ...string) (stdout, stderr string, err error) {
	args = append([]string{"--kubeconfig=" + s.Kubeconfig()}, args...)
	var out, errOut strings.Builder
	cmd := command(ctx, s.bin.kubectl, args...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	// kubectl caches discovery under $HOME unless told otherwise.
	cmd.Env = append(os.Environ(), "KUBECACHEDIR="+filepath.Join(s.dir, "kubectl-cache"))
	if err := cmd.Run(); err != nil {
		return out.String(), errOut.String(), fmt.Errorf("kubectl %s: %w: %s", strings.Join(args[1:], " "), err, strings.TrimSpace(errOut.String()))
	}
	return out.String(), errOut.String(), nil
}

func (s *Server) token(user string) string {
	s.t.Helper()
	token, ok := s.tokens[user]
	if !ok {
		s.t.Fatalf("harness: no token user %q (see WithUsers)", user)
	}
	return token
}
