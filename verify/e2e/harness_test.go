// Package e2e holds vapc's end-to-end tests, which run a real kube-apiserver
// v1.37.0 on a real etcd through package harness.
package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/vapc-dev/vapc/verify/e2e/harness"
)

const (
	nodeController        = "system:serviceaccount:kube-system:node-controller"
	validationFailureAnno = "validation.policy.admission.k8s.io/validation_failure"
	kosmosDenial          = "node-controller may not delete pod web-a on NotReady Kosmos node kosmos-cluster7"
)

// TestKosmosBasic replays the scenario of shared/samples/kosmos-basic on a
// real apiserver: the policy denies node-controller deleting a pod on a
// NotReady Kosmos node with 422, and the audit log records the failure.
func TestKosmosBasic(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd; skipped with -short")
	}
	s := harness.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()

	info, err := s.Clientset().Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("GET /version: %v", err)
	}
	if got, want := [3]string{info.GitVersion, info.Major, info.Minor}, [3]string{"v1.37.0", "1", "37"}; got != want {
		t.Errorf("GET /version = gitVersion, major, minor %q, want %q", got, want)
	}
	stdout, _, err := s.Kubectl(ctx, "version", "--client", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	var kubectlVersion struct {
		ClientVersion struct{ GitVersion string } `json:"clientVersion"`
	}
	if err := json.Unmarshal([]byte(stdout), &kubectlVersion); err != nil {
		t.Fatalf("kubectl version -o json: %v\n%s", err, stdout)
	}
	if got := kubectlVersion.ClientVersion.GitVersion; got != "v1.37.0" {
		t.Errorf("kubectl version: clientVersion.gitVersion = %q, want v1.37.0", got)
	}

	for _, file := range []string{"testdata/kosmos-basic/policy.yaml", "testdata/kosmos-basic/objects.yaml"} {
		if _, _, err := s.Kubectl(ctx, "apply", "-f", file); err != nil {
			t.Fatal(err)
		}
	}
	for _, node := range []string{"kosmos-cluster7", "worker-1"} {
		now := time.Now().UTC().Format(time.RFC3339)
		patch := `{"status":{"conditions":[{"type":"Ready","status":"Unknown","reason":"NodeStatusUnknown",` +
			`"message":"Kubelet stopped posting node status.","lastHeartbeatTime":"` + now + `","lastTransitionTime":"` + now + `"}]}}`
		if _, _, err := s.Kubectl(ctx, "patch", "node", node, "--subresource=status", "-p", patch); err != nil {
			t.Fatal(err)
		}
	}

	// The policy, its binding and its params reach the admission plugin
	// through informers; a server-side dry run shows when they have.
	waitForDenial(ctx, t, s, "web-a", kosmosDenial)

	asNodeController := s.RESTConfig()
	asNodeController.Impersonate.UserName = nodeController
	nodeControllerClient, err := kubernetes.NewForConfig(asNodeController)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		pod      string
		client   kubernetes.Interface
		as       string
		wantCode int32 // 0: allowed
	}{
		{pod: "web-a", client: nodeControllerClient, as: nodeController, wantCode: http.StatusUnprocessableEntity},
		{pod: "web-b", client: nodeControllerClient, as: nodeController},
		{pod: "web-c", client: s.Clientset(), as: harness.AdminUser},
	} {
		err := tc.client.CoreV1().Pods("default").Delete(ctx, tc.pod, metav1.DeleteOptions{})
		var status apierrors.APIStatus
		switch {
		case tc.wantCode == 0 && err != nil:
			t.Errorf("delete pod %s as %s: %v, want allowed", tc.pod, tc.as, err)
		case tc.wantCode == 0:
		case !errors.As(err, &status):
			t.Errorf("delete pod %s as %s: %v, want a %d denial", tc.pod, tc.as, err, tc.wantCode)
		case status.Status().Code != tc.wantCode || !strings.Contains(status.Status().Message, kosmosDenial):
			t.Errorf("delete pod %s as %s: %d %q, want %d with %q", tc.pod, tc.as, status.Status().Code, status.Status().Message, tc.wantCode, kosmosDenial)
		}
	}

	event := waitForAuditEvent(ctx, t, s.AuditLogPath(), func(e *auditv1.Event) bool {
		return e.Stage == auditv1.StageResponseComplete && e.Verb == "delete" &&
			e.ObjectRef != nil && e.ObjectRef.Resource == "pods" && e.ObjectRef.Name == "web-a" &&
			!strings.Contains(e.RequestURI, "dryRun") &&
			// kubectl sends the dry runs of waitForDenial in the body.
			(e.RequestObject == nil || !strings.Contains(string(e.RequestObject.Raw), "dryRun"))
	})
	if event.ImpersonatedUser == nil || event.ImpersonatedUser.Username != nodeController {
		t.Errorf("audit event of the denied delete: impersonatedUser = %+v, want %s", event.ImpersonatedUser, nodeController)
	}
	if event.ResponseStatus == nil || event.ResponseStatus.Code != http.StatusUnprocessableEntity {
		t.Errorf("audit event of the denied delete: responseStatus = %+v, want code 422", event.ResponseStatus)
	}
	var failures []map[string]any
	if err := json.Unmarshal([]byte(event.Annotations[validationFailureAnno]), &failures); err != nil {
		t.Fatalf("audit event of the denied delete: annotation %s = %q: %v", validationFailureAnno, event.Annotations[validationFailureAnno], err)
	}
	want := []map[string]any{{
		"message":           kosmosDenial,
		"policy":            "kosmos-node-not-ready",
		"binding":           "kosmos-node-not-ready",
		"expressionIndex":   float64(0),
		"validationActions": []any{"Deny", "Audit"},
	}}
	if diff := cmp.Diff(want, failures); diff != "" {
		t.Errorf("audit annotation %s mismatch (-want +got):\n%s", validationFailureAnno, diff)
	}
}

// waitForDenial polls a server-side dry run of deleting pod as node-controller
// until the apiserver denies it with message.
func waitForDenial(ctx context.Context, t *testing.T, s *harness.Server, pod, message string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		_, _, err := s.Kubectl(ctx, "delete", "pod", pod, "--dry-run=server", "--as="+nodeController)
		if err != nil && strings.Contains(err.Error(), message) {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("the policy did not deny deleting pod %s within 30s; last dry run: %v", pod, err)
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// waitForAuditEvent polls the audit log at path for the first event that
// match accepts: the apiserver writes an event after it has answered.
func waitForAuditEvent(ctx context.Context, t *testing.T, path string, match func(*auditv1.Event) bool) *auditv1.Event {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	for {
		event, err := findAuditEvent(path, match)
		if err != nil {
			t.Fatal(err)
		}
		if event != nil {
			return event
		}
		select {
		case <-ctx.Done():
			t.Fatalf("no matching event in %s within 10s", path)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func findAuditEvent(path string, match func(*auditv1.Event) bool) (*auditv1.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		var e auditv1.Event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// The apiserver may be writing the last line right now.
			continue
		}
		if match(&e) {
			return &e, nil
		}
	}
	return nil, sc.Err()
}
