package e2e

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/vapc-dev/vapc/verify/e2e/harness"
	"github.com/vapc-dev/vapc/verify/replay"
)

// TestLagMeasured measures what replay.DefaultLag stands for: how long after a write completed
// kube-apiserver's admission reads it, at rest and under a load of writes. The informer lag: a
// param written, then creates sent back to back until the ValidatingAdmissionPolicy plugin's
// informer holds the new version (the policy compares the object with the param). The watch
// cache lag: an object updated, then unconditional updates sent back to back until their first
// attempt no longer reads the watch cache's copy of the version before (a Warn binding warns
// with the old object's value; the response carries the warnings of both attempts). It logs the
// percentiles (recorded in BENCHMARKS.md) and fails only when a write is never seen.
func TestLagMeasured(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd; skipped with -short")
	}
	s := harness.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cs := s.Clientset()
	warnings := &warningCollector{}
	cfg := s.RESTConfig()
	cfg.QPS, cfg.Burst = 1000, 1000
	cfg.WarningHandler = warnings
	probe, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, ns := range []string{"lag", "load"} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		must(err)
	}
	_, err = cs.CoreV1().ConfigMaps("lag").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Data: map[string]string{"v": "0"}}, metav1.CreateOptions{})
	must(err)
	_, err = cs.CoreV1().ConfigMaps("lag").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "o"}, Data: map[string]string{"v": "0"}}, metav1.CreateOptions{})
	must(err)
	inLag := &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": "lag"}}}
	rule := func(op admissionregistrationv1.OperationType) *admissionregistrationv1.MatchResources {
		return &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{op},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
		}}}}
	}
	policies := []*admissionregistrationv1.ValidatingAdmissionPolicy{{
		ObjectMeta: metav1.ObjectMeta{Name: "lag-informer"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: ptr.To(admissionregistrationv1.Fail), MatchConstraints: rule(admissionregistrationv1.Create),
			ParamKind:   &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
			Validations: []admissionregistrationv1.Validation{{Expression: "object.data.v == params.data.v"}}},
	}, {
		ObjectMeta: metav1.ObjectMeta{Name: "lag-watch-cache"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{FailurePolicy: ptr.To(admissionregistrationv1.Fail), MatchConstraints: rule(admissionregistrationv1.Update),
			Validations: []admissionregistrationv1.Validation{{Expression: "false", MessageExpression: "'old v=' + oldObject.data.v"}}},
	}}
	bindings := []*admissionregistrationv1.ValidatingAdmissionPolicyBinding{{
		ObjectMeta: metav1.ObjectMeta{Name: "lag-informer"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "lag-informer", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			MatchResources: inLag, ParamRef: &admissionregistrationv1.ParamRef{Name: "p", Namespace: "lag", ParameterNotFoundAction: ptr.To(admissionregistrationv1.DenyAction)}},
	}, {
		ObjectMeta: metav1.ObjectMeta{Name: "lag-watch-cache"},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "lag-watch-cache", ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn}, MatchResources: inLag},
	}}
	for _, p := range policies {
		_, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, p, metav1.CreateOptions{})
		must(err)
	}
	for _, b := range bindings {
		_, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, b, metav1.CreateOptions{})
		must(err)
	}
	dryRun := []string{metav1.DryRunAll}
	// seenBy sends requests back to back until admitted says the server read the version at
	// least as new as the write it follows; the lag is from the write's completion to the send
	// of that request.
	seenBy := func(what string, wrote time.Time, admitted func() (bool, error)) time.Duration {
		t.Helper()
		for time.Since(wrote) < 10*time.Second {
			sent := time.Now()
			ok, err := admitted()
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if ok {
				return sent.Sub(wrote)
			}
		}
		t.Fatalf("%s: not seen 10 s after the write", what)
		return 0
	}
	informer := func(i int) time.Duration {
		v := strconv.Itoa(i)
		_, err := cs.CoreV1().ConfigMaps("lag").Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "lag"}, Data: map[string]string{"v": v}}, metav1.UpdateOptions{})
		must(err)
		wrote := time.Now()
		return seenBy("the param's informer", wrote, func() (bool, error) {
			_, err := probe.CoreV1().ConfigMaps("lag").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"v": v}}, metav1.CreateOptions{DryRun: dryRun})
			if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
				return false, nil
			}
			return err == nil, err
		})
	}
	watchCache := func(i int) time.Duration {
		v := strconv.Itoa(i)
		_, err := cs.CoreV1().ConfigMaps("lag").Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "o", Namespace: "lag"}, Data: map[string]string{"v": v}}, metav1.UpdateOptions{})
		must(err)
		wrote := time.Now()
		return seenBy("the watch cache", wrote, func() (bool, error) {
			warnings.reset()
			_, err := probe.CoreV1().ConfigMaps("lag").Update(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "o", Namespace: "lag"}, Data: map[string]string{"v": v}}, metav1.UpdateOptions{DryRun: dryRun})
			got := warnings.list() // "Validation failed for ValidatingAdmissionPolicy ...: old v=V"
			return err == nil && len(got) == 1 && strings.HasSuffix(got[0], ": old v="+v), err
		})
	}
	// The policies in effect: the first samples wait for them.
	informer(1)
	watchCache(1)
	const samples = 40
	measure := func(name string) {
		var inf, wc []time.Duration
		for i := 2; i < samples+2; i++ {
			inf = append(inf, informer(i))
			wc = append(wc, watchCache(i))
		}
		t.Logf("%s: informer lag %s; watch cache lag %s (the replay's default lag: %s)", name, percentiles(inf), percentiles(wc), replay.DefaultLag)
	}
	measure("at rest")

	// Under load: writers create and delete configmaps of another namespace as fast as the
	// server takes them, and list them, on the test's two cores with the server and etcd.
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			c, _ := kubernetes.NewForConfig(rest.CopyConfig(cfg))
			for n := 0; loadCtx.Err() == nil; n++ {
				name := fmt.Sprintf("l-%d-%d", g, n%20)
				_, _ = c.CoreV1().ConfigMaps("load").Create(loadCtx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}, Data: map[string]string{"x": strings.Repeat("x", 2048)}}, metav1.CreateOptions{})
				_ = c.CoreV1().ConfigMaps("load").Delete(loadCtx, name, metav1.DeleteOptions{})
				if n%10 == 0 {
					_, _ = c.CoreV1().ConfigMaps("load").List(loadCtx, metav1.ListOptions{})
				}
			}
		}(g)
	}
	time.Sleep(2 * time.Second)
	measure("under load (8 writers)")
	stopLoad()
	wg.Wait()
}

// percentiles describes the durations: p50, p90, p99 and the largest.
func percentiles(ds []time.Duration) string {
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(p float64) time.Duration {
		return s[min(len(s)-1, int(p*float64(len(s))))].Round(10 * time.Microsecond)
	}
	return fmt.Sprintf("p50 %s, p90 %s, p99 %s, max %s of %d", at(0.5), at(0.9), at(0.99), s[len(s)-1].Round(10*time.Microsecond), len(s))
}

// warningCollector keeps the warnings of the last responses.
type warningCollector struct {
	mu sync.Mutex
	ws []string
}

func (c *warningCollector) HandleWarningHeader(code int, agent, text string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ws = append(c.ws, text)
}

func (c *warningCollector) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ws = nil
}

func (c *warningCollector) list() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := slices.Clone(c.ws)
	slices.Sort(out)
	return slices.Compact(out)
}
