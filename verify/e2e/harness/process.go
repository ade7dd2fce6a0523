package harness

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"k8s.io/client-go/kubernetes"
)

// process is a server the harness started, in a process group of its own.
type process struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	done    chan struct{} // closed when the process has exited
	err     error         // what Wait returned, once done is closed
}

// startProcess starts path with args, its output going to name.log in dir,
// and registers its stop with t.Cleanup before anything else can fail.
func (s *Server) startProcess(name, path string, args []string, stopTimeout time.Duration) *process {
	s.t.Helper()
	logPath := s.path(name + ".log")
	logFile, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		s.t.Fatalf("harness: %v", err)
	}
	defer logFile.Close()
	fmt.Fprintf(logFile, "+ %s %s\n", path, strings.Join(args, " "))

	cmd := exec.Command(path, args...)
	cmd.Dir = s.dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.SysProcAttr = sysProcAttr()
	if err := cmd.Start(); err != nil {
		s.t.Fatalf("harness: starting %s: %v", name, err)
	}
	p := &process{name: name, cmd: cmd, logPath: logPath, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	s.t.Cleanup(func() {
		if p.exited() {
			// A server that stops on its own takes the test's ground with it: say so.
			s.t.Errorf("harness: %s exited during the test: %v\nlast lines of %s:\n%s", p.name, p.err, p.logPath, tail(p.logPath, 60))
			return
		}
		if err := p.stop(stopTimeout); err != nil {
			s.t.Errorf("harness: %v", err)
		}
		if s.t.Failed() {
			s.t.Logf("harness: last lines of %s:\n%s", p.logPath, tail(p.logPath, 60))
		}
	})
	return p
}

func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM to the process group, and SIGKILL when it has not
// exited after timeout.
func (p *process) stop(timeout time.Duration) error {
	if p.exited() {
		return nil
	}
	pgid := p.cmd.Process.Pid // Setpgid: the group is the process's own
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
		return nil
	case <-time.After(timeout):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	select {
	case <-p.done:
		return fmt.Errorf("%s did not stop within %v of SIGTERM; killed it", p.name, timeout)
	case <-time.After(10 * time.Second):
		return fmt.Errorf("%s (pid %d) survived SIGKILL", p.name, pgid)
	}
}

// failed reports that p did not start, with the end of its log.
func (s *Server) failed(p *process, format string, args ...any) {
	s.t.Helper()
	s.t.Fatalf("harness: %s: %s\nlast lines of %s:\n%s", p.name, fmt.Sprintf(format, args...), p.logPath, tail(p.logPath, 60))
}

// startEtcd starts etcd on a Unix socket in the server's directory and waits
// until it is healthy. It returns the socket's client URL.
func (s *Server) startEtcd(ctx context.Context, stopTimeout time.Duration) string {
	s.t.Helper()
	socket := s.path("etcd.sock")
	args := []string{
		"--name=e2e",
		"--data-dir=" + s.path("etcd"),
		"--listen-client-urls=unix://" + socket,
		// Nothing connects to the advertised URL; etcd insists on host:port.
		"--advertise-client-urls=http://127.0.0.1:0",
		// A single member: the kernel picks the peer port, no peer connects.
		"--listen-peer-urls=http://127.0.0.1:0",
		"--log-level=warn",
		// A test's etcd dies with the test: durability only costs time.
		"--unsafe-no-fsync",
		"--quota-backend-bytes=" + strconv.Itoa(4<<30),
	}
	p := s.startProcess("etcd", s.bin.etcd, args, stopTimeout)

	client := &http.Client{
		Timeout: 2 * time.Second,
		Transport: &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			var d net.Dialer
			return d.DialContext(ctx, "unix", socket)
		}},
	}
	defer client.CloseIdleConnections()
	var lastErr error
	for {
		if lastErr = etcdHealthy(ctx, client); lastErr == nil {
			return "unix://" + socket
		}
		if p.exited() {
			s.failed(p, "exited before it was healthy: %v", p.err)
		}
		select {
		case <-ctx.Done():
			s.failed(p, "not healthy in time: %v", lastErr)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func etcdHealthy(ctx context.Context, client *http.Client) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://etcd/health", nil)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	var body bytes.Buffer
	_, _ = body.ReadFrom(resp.Body)
	if resp.StatusCode != http.StatusOK || !bytes.Contains(body.Bytes(), []byte(`"health":"true"`)) {
		return fmt.Errorf("GET /health: %s: %s", resp.Status, strings.TrimSpace(body.String()))
	}
	return nil
}

// startAPIServer starts kube-apiserver on a free loopback port and waits
// until its /readyz passes. A port another process took between the harness
// choosing it and the apiserver binding it is retried with another port.
func (s *Server) startAPIServer(ctx context.Context, etcdURL string, extraFlags []string, stopTimeout time.Duration) {
	s.t.Helper()
	certDir := s.path("certs")
	for attempt := 1; ; attempt++ {
		port, err := freePort()
		if err != nil {
			s.t.Fatalf("harness: %v", err)
		}
		s.url = "https://127.0.0.1:" + strconv.Itoa(port)
		// The apiserver makes a self-signed CA and serving certificate for
		// localhost and 127.0.0.1 in --cert-dir; the certificate file holds
		// the CA after the serving certificate, so it serves as the CA file.
		s.caFile = filepath.Join(certDir, "apiserver.crt")
		args := []string{
			"--etcd-servers=" + etcdURL,
			"--bind-address=127.0.0.1",
			// The endpoint reconcilers refuse a loopback advertise address,
			// and nothing in a test reaches the "kubernetes" service: keep
			// its Endpoints empty rather than advertise a routable address.
			"--endpoint-reconciler-type=none",
			"--secure-port=" + strconv.Itoa(port),
			"--cert-dir=" + certDir,
			"--token-auth-file=" + s.path("tokens.csv"),
			"--authorization-mode=Node,RBAC",
			"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
			"--service-account-key-file=" + s.path("sa.pub"),
			"--service-account-signing-key-file=" + s.path("sa.key"),
			"--service-cluster-ip-range=10.0.0.0/24",
			"--audit-policy-file=" + s.path("audit-policy.yaml"),
			"--audit-log-path=" + s.auditLog,
			"--audit-log-format=json",
			"--audit-log-mode=blocking",
			"--audit-log-maxsize=0", // 0: one plain file, never rotated
			"--audit-log-maxbackup=0",
			"--profiling=false",
		}
		p := s.startProcess("kube-apiserver", s.bin.apiserver, append(args, extraFlags...), stopTimeout)
		err = s.waitReady(ctx, p)
		if err == nil {
			return
		}
		if errors.Is(err, errPortTaken) && attempt < 3 {
			s.t.Logf("harness: kube-apiserver could not bind port %d, retrying with another", port)
			continue
		}
		s.failed(p, "%v", err)
	}
}

var errPortTaken = errors.New("port taken")

// waitReady polls GET /readyz as AdminUser until it passes, p exits, or ctx
// ends.
func (s *Server) waitReady(ctx context.Context, p *process) error {
	var lastErr error
	for {
		if p.exited() {
			if bytes.Contains([]byte(tail(p.logPath, 30)), []byte("address already in use")) {
				return errPortTaken
			}
			return fmt.Errorf("exited before it was ready: %v", p.err)
		}
		// The CA file appears once the apiserver has made its certificates.
		if _, err := os.Stat(s.caFile); err == nil {
			if lastErr = s.readyz(ctx); lastErr == nil {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("not ready in time: %v", lastErr)
		case <-time.After(250 * time.Millisecond):
		}
	}
}

func (s *Server) readyz(ctx context.Context) error {
	cfg := s.RESTConfig()
	cfg.Timeout = 5 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").Param("verbose", "true").DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("GET /readyz: %w: %s", err, failingChecks(body))
	}
	return nil
}

// failingChecks picks the failing checks out of a verbose /readyz body.
func failingChecks(body []byte) string {
	var failing []string
	for line := range strings.Lines(string(body)) {
		if strings.HasPrefix(line, "[-]") {
			failing = append(failing, strings.TrimSpace(line))
		}
	}
	return strings.Join(failing, "; ")
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("finding a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// tail returns the last n lines of the file at path.
func tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(%v)", err)
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{fmt.Sprintf("... (%d lines before)", len(lines)-n)}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}

// command returns an exec.Cmd for a short-lived helper such as kubectl: in
// a process group of its own, killed with its group when ctx ends, and (on
// Linux) when the test binary dies.
func command(ctx context.Context, path string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.SysProcAttr = sysProcAttr()
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

const (
	tempDirPrefix = "vapc-e2e-"
	ownerFile     = "owner.pid" // the pid of the test binary that made the directory
)

// removeAbandonedDirs removes the directories of servers whose test binary
// died without running its cleanups, as one that times out does. The kernel
// has killed their servers (see sysProcAttr).
func removeAbandonedDirs() {
	dirs, _ := filepath.Glob(filepath.Join(os.TempDir(), tempDirPrefix+"*"))
	for _, dir := range dirs {
		data, err := os.ReadFile(filepath.Join(dir, ownerFile))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(string(data))
		if err != nil || pid <= 0 {
			continue
		}
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			_ = os.RemoveAll(dir)
		}
	}
}
