package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify"
)

// podsPolicy is the policy of the pods workload: two rules, every container's image pinned to a
// tag other than latest, and every container with a memory limit.
const podsPolicy = `apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicy
metadata: {name: pod-rules}
spec:
  failurePolicy: Fail
  matchConstraints:
    resourceRules:
    - {apiGroups: [""], apiVersions: [v1], operations: [CREATE], resources: [pods]}
  validations:
  - expression: "object.spec.containers.all(c, c.image.contains(':') && !c.image.endsWith(':latest'))"
    message: images must be pinned to a tag other than latest
  - expression: "object.spec.containers.all(c, has(c.resources.limits) && 'memory' in c.resources.limits)"
    message: every container needs a memory limit
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingAdmissionPolicyBinding
metadata: {name: pod-rules}
spec: {policyName: pod-rules, validationActions: [Deny]}
`

// runPods writes the workload peers (kat, kaptest, Kyverno) are measured on: N pod CREATEs,
// half of them violating one rule of a policy with two, as the audit log of a cluster that does
// not run the policy yet (each created, the response the stored pod), and the policy.
func runPods(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("pods", "usage: vapc-bench pods --count N --policy FILE [-o FILE]", stderr)
	count := fs.Int("count", 10000, "how many pods")
	policy := fs.String("policy", "", "the file to write the policy and its binding to")
	out := fs.String("o", "-", "the audit log to write (- for standard output)")
	if _, err := parseFlags(fs, args); err != nil {
		return err
	}
	if *policy == "" || *count < 1 {
		fs.Usage()
		return usagef("pods: give --policy and a --count of 1 or more")
	}
	if err := os.WriteFile(*policy, []byte(podsPolicy), 0o644); err != nil {
		return fmt.Errorf("pods: %w", err)
	}
	var w io.Writer = stdout
	if *out != "-" {
		f, err := os.Create(*out)
		if err != nil {
			return fmt.Errorf("pods: %w", err)
		}
		defer f.Close()
		w = f
	}
	bw := bufio.NewWriterSize(w, 1<<20)
	enc := json.NewEncoder(bw)
	start := time.Date(2026, 11, 1, 8, 0, 0, 0, time.UTC)
	for i := 0; i < *count; i++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		at := start.Add(time.Duration(i) * 10 * time.Millisecond)
		name := fmt.Sprintf("web-%05d", i)
		image, limits := "registry.example.com/web:1.4.2", map[string]any{"memory": "256Mi", "cpu": "500m"}
		switch i % 4 {
		case 1:
			image = "registry.example.com/web:latest" // violates the first rule
		case 3:
			limits = map[string]any{"cpu": "500m"} // violates the second
		}
		container := map[string]any{"name": "web", "image": image, "resources": map[string]any{"limits": limits, "requests": limits},
			"imagePullPolicy": "IfNotPresent", "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}
		req := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": name, "namespace": "shop", "labels": map[string]any{"app": "web"}},
			"spec": map[string]any{"containers": []any{container}}}
		resp := map[string]any{"apiVersion": "v1", "kind": "Pod",
			"metadata": map[string]any{"name": name, "namespace": "shop", "labels": map[string]any{"app": "web"}, "uid": fmt.Sprintf("00000000-0000-4000-8000-%012d", i),
				"resourceVersion": fmt.Sprint(1000 + i), "creationTimestamp": at.Format(time.RFC3339)},
			"spec": map[string]any{"containers": []any{container}, "restartPolicy": "Always", "terminationGracePeriodSeconds": 30, "dnsPolicy": "ClusterFirst",
				"serviceAccountName": "default", "serviceAccount": "default", "securityContext": map[string]any{}, "schedulerName": "default-scheduler",
				"enableServiceLinks": true, "preemptionPolicy": "PreemptLowerPriority", "priority": 0},
			"status": map[string]any{"phase": "Pending", "qosClass": "Guaranteed"}}
		ev := map[string]any{"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse",
			"auditID": fmt.Sprintf("%08x-0000-4000-8000-000000000000", i), "stage": "ResponseComplete",
			"requestURI": "/api/v1/namespaces/shop/pods", "verb": "create",
			"user":      map[string]any{"username": "system:serviceaccount:kube-system:replicaset-controller", "groups": []any{"system:serviceaccounts", "system:authenticated"}},
			"sourceIPs": []any{"10.0.0.2"}, "userAgent": "kube-controller-manager/v1.37.0",
			"objectRef":      map[string]any{"resource": "pods", "namespace": "shop", "name": name, "apiVersion": "v1"},
			"responseStatus": map[string]any{"metadata": map[string]any{}, "code": 201},
			"requestObject":  req, "responseObject": resp,
			"requestReceivedTimestamp": at.Format("2006-01-02T15:04:05.000000Z"), "stageTimestamp": at.Add(3 * time.Millisecond).Format("2006-01-02T15:04:05.000000Z"),
			"annotations": map[string]any{"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": ""}}
		if err := enc.Encode(ev); err != nil {
			return fmt.Errorf("pods: %w", err)
		}
	}
	return bw.Flush()
}

// runLibraryFloor is the floor of the pods workload: the policy compiled once, and each pod of
// the log's creates validated by kube-apiserver's validating dispatcher (through vapc's
// evaluator, which calls it and records which binding decided), one after the other, with no
// replay around it: no State, no request pipeline, no decoding of the audit events' envelopes
// but the pods'.
func runLibraryFloor(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("library-floor", "usage: vapc-bench library-floor --policy FILE AUDIT.LOG", stderr)
	policy := fs.String("policy", "", "the policy and its binding")
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if *policy == "" || len(rest) != 1 {
		fs.Usage()
		return usagef("library-floor: give --policy and one audit log")
	}
	set, diags := cel.ReadPaths(nil, *policy)
	if diags.HasErrors() {
		return fmt.Errorf("library-floor: %v", diags)
	}
	var ps []*admissionregistrationv1.ValidatingAdmissionPolicy
	var bs []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, p := range set.Policies {
		ps = append(ps, p.ValidatingAdmissionPolicy)
	}
	for _, b := range set.Bindings {
		bs = append(bs, b.ValidatingAdmissionPolicyBinding)
	}
	began := time.Now()
	e, err := verify.New(ps, bs)
	if err != nil {
		return fmt.Errorf("library-floor: %w", err)
	}
	f, err := os.Open(rest[0])
	if err != nil {
		return fmt.Errorf("library-floor: %w", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 16<<20)
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	n, denied := 0, 0
	for sc.Scan() {
		var ev struct {
			RequestObject json.RawMessage `json:"requestObject"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			return fmt.Errorf("library-floor: line %d: %w", n+1, err)
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(ev.RequestObject); err != nil {
			return fmt.Errorf("library-floor: line %d: %w", n+1, err)
		}
		dec, err := e.Evaluate(ctx, verify.Request{Operation: admission.Create, Resource: pods, Namespace: obj.GetNamespace(), Name: obj.GetName(), Object: obj})
		if err != nil {
			return fmt.Errorf("library-floor: line %d: %w", n+1, err)
		}
		n++
		if !dec.Allowed {
			denied++
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("library-floor: %w", err)
	}
	secs := max(time.Since(began).Seconds(), 1e-9)
	fmt.Fprintf(stdout, "library-floor: %d pods, %d denied, in %.2fs: %.0f pods/s\n", n, denied, secs, float64(n)/secs)
	return nil
}
