package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"maps"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/vapc-dev/vapc/verify/e2e/harness"
	"github.com/vapc-dev/vapc/verify/replay"
)

var (
	randomSeed  = flag.Uint64("random-seed", 0, "seed of TestRandomParity (default $VAPC_RANDOM_SEED, else 1)")
	randomSteps = flag.Int("random-steps", 0, "steps TestRandomParity takes (default $VAPC_RANDOM_STEPS, else 300)")
)

// The world of TestRandomParity: namespaces whose labels change, params, users.
const (
	rndA      = "rnd-a"
	rndB      = "rnd-b"
	rndC      = "rnd-c"
	rndD      = "rnd-d" // created and deleted during the run
	rndParams = "rnd-params"
	rndRobot  = "system:serviceaccount:rnd-a:robot"
)

// The custom kinds of TestRandomParity, whose CRDs the scenario creates: ReplicaLimit, a param
// kind, and Widget, which policies match.
const rndGroup = "rnd.vapc.dev"

var (
	replicaLimitsGVR = schema.GroupVersionResource{Group: rndGroup, Version: "v1", Resource: "replicalimits"}
	widgetsGVR       = schema.GroupVersionResource{Group: rndGroup, Version: "v1", Resource: "widgets"}
	widgetsBetaGVR   = schema.GroupVersionResource{Group: rndGroup, Version: "v1beta1", Resource: "widgets"}
	widgetNames      = []string{"wg-a", "wg-bb", "widget-long"}
)

var (
	deploymentsGVR  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	replicaSetsGVR  = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	statefulSetsGVR = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "statefulsets"}
	rcsGVR          = schema.GroupVersionResource{Version: "v1", Resource: "replicationcontrollers"}
	eventsGVR       = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	eventsV1GVR     = schema.GroupVersionResource{Group: "events.k8s.io", Version: "v1", Resource: "events"}
	namespacesGVR   = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	serviceAcctsGVR = schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}

	cmNames   = []string{"c1", "cm-ab", "cm-abc", "cm-x9", "config-long-name", "cm-zz"}
	podNames  = []string{"p1", "pod-a", "pod-bb", "web-1"}
	depNames  = []string{"d1", "dep-a", "dep-bb"}
	nodeNames = []string{"w-0", "w-1", "w-22"}
)

// rndUser is a user the scenario impersonates; the zero user is the administrator.
type rndUser struct {
	name   string
	groups []string
	uid    string
	extra  map[string][]string
}

var rndUsers = []rndUser{
	{name: harness.AdminUser},
	{name: "rnd-alice", groups: []string{"rnd-dev"}, extra: map[string][]string{"team": {"red"}}},
	{name: "rnd-bob", groups: []string{"rnd-ops", "rnd-dev"}, uid: "uid-bob", extra: map[string][]string{"team": {"blue", "red"}, "example.org/level": {"3"}}},
	{name: rndRobot},
	{name: "rnd-carol", groups: []string{"rnd-skip"}, extra: map[string][]string{"Team": {"blue"}}},
}

// randomWorld drives a server through random requests and remembers what it answered.
type randomWorld struct {
	*decisions
	// mutating and mutatingBindings are the cluster's MutatingAdmissionPolicies the replay
	// runs itself.
	mutating         []*admissionregistrationv1.MutatingAdmissionPolicy
	mutatingBindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding
	r                *rand.Rand
	// lag chooses how long after a world change the next request is sent (see settle), apart
	// from r so that the scenario of a seed does not depend on it.
	lag *rand.Rand
	// mr chooses the shape of the random MutatingAdmissionPolicy, apart from r so that a
	// seed's traffic does not depend on it.
	mr *rand.Rand
	// life chooses the binding bindingLife deletes for a while, apart from r for the same
	// reason; unbound is it while it is deleted; respecified the binding bindingRespec
	// patched to other validationActions, until it patches it back.
	life *rand.Rand
	// order puts conditions whose outcome follows map order among the policies' (exprScope),
	// apart from r for the same reason.
	order       *rand.Rand
	unbound     *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	respecified *admissionregistrationv1.ValidatingAdmissionPolicyBinding
	clients     map[string]dynamic.Interface
	raw         map[string]*http.Client
	others      map[string]int // requests refused by someone else than a policy, by reason
	// established is when the test saw the last of its CRDs established.
	established time.Time
	step        int
	nsDone      bool // rnd-d was created (and maybe deleted)
	events      int
	// bound are the pods bound through pods/binding, by namespace/name: the scenario sends no
	// request whose oldObject they are (see podBind).
	bound map[string]bool
	// racing are the audit IDs of raceStep's requests: the only ones of a run without
	// controllers that may run concurrently with a write to their object.
	racing      map[string]bool
	controllers bool // the controllers run beside the server

	// refused are generated policies vapc check refused, and why: the server must refuse them too.
	refused    policySet
	refusedWhy []string
}

// defaultRandomSeed is TestRandomParity's seed in make test: its run logs every resource at
// RequestResponse level (VAPC_RANDOM_LEVELS=all does for any seed, =mixed mixes the levels of
// this one; VAPC_RANDOM_METADATA=pods,nodes logs the resources it lists at Metadata level in a
// mixed run), and its policies use the scenario's features (see checkCoverage). It was 233
// until the scenario wrote CRDs and ran kubectl diff (2026-12-06), after which 233's policies
// decided no request with a ReplicaLimit param.
const defaultRandomSeed = 1521

func randomSettings() (seed uint64, steps int) {
	seed, steps = defaultRandomSeed, 300
	if v, err := strconv.ParseUint(os.Getenv("VAPC_RANDOM_SEED"), 10, 64); err == nil {
		seed = v
	}
	if v, err := strconv.Atoi(os.Getenv("VAPC_RANDOM_STEPS")); err == nil {
		steps = v
	}
	if *randomSeed != 0 {
		seed = *randomSeed
	}
	if *randomSteps != 0 {
		steps = *randomSteps
	}
	return seed, steps
}

// TestRandomParity creates the CRDs of a param kind (ReplicaLimit) and of a kind policies match
// (Widget), which the replay learns from the log alone, installs random policies and bindings
// generated from a seed (-random-seed or $VAPC_RANDOM_SEED), with an observer policy whose
// audit annotations record every request as admission saw it, sends random requests to a real
// kube-apiserver (creates, updates, patches of every type, deletes with options in the body or
// the query, deletecollection, status, scale, eviction, binding, ephemeral container, resize
// and token subresources, dry runs, impersonated users with groups and extra, custom
// resources, and kubectl's everyday commands: kubectlEveryday, kubectlMore),
// changing params and namespace labels between them, then replays the server's own audit log
// (with no --crd) from the moment the policies were in effect:
// zero disagreements, indeterminate requests only for the reasons byDesignIndeterminate lists,
// every denial the server returned predicted with the same code and message, and the policy
// warnings of every response predicted.
//
// The replay sends every write through kube-apiserver's own request pipeline, so the scenario
// writes status through main resources and spec through status subresources (strategyWrite),
// and its policies read fields the server defaults or sets on create (kindAtoms).
func TestRandomParity(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd; skipped with -short")
	}
	seed, steps := randomSettings()
	randomParity(t, seed, steps, withControllers(seed))
}

// TestRandomParityControllers is TestRandomParity with kube-controller-manager and
// kube-scheduler running beside the server, on seed 2 ($VAPC_RANDOM_CONTROLLERS_SEED to
// change it): the controllers' own traffic, which the default seed does not send.
func TestRandomParityControllers(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver, etcd and the controllers; skipped with -short")
	}
	seed, steps := uint64(2), 300
	if v, err := strconv.ParseUint(os.Getenv("VAPC_RANDOM_CONTROLLERS_SEED"), 10, 64); err == nil {
		seed = v
	}
	if v, err := strconv.Atoi(os.Getenv("VAPC_RANDOM_STEPS")); err == nil {
		steps = v
	}
	randomParity(t, seed, steps, true)
}

func randomParity(t *testing.T, seed uint64, steps int, controllers bool) {
	t.Logf("seed %d, %d steps (reproduce with VAPC_RANDOM_SEED=%d VAPC_RANDOM_STEPS=%d)", seed, steps, seed, steps)
	start := time.Now()
	r := rand.New(rand.NewPCG(seed, 0x7661706372616e64))
	w := &randomWorld{r: r, mr: rand.New(rand.NewPCG(seed, 0x6d6170)), lag: rand.New(rand.NewPCG(seed, 0x6c6167)), life: rand.New(rand.NewPCG(seed, 0x6c696665)), order: rand.New(rand.NewPCG(seed, 0x6f72646572)), clients: map[string]dynamic.Interface{}, raw: map[string]*http.Client{}, others: map[string]int{}, bound: map[string]bool{}, racing: map[string]bool{}}
	set := w.genPolicies(t, r, 14)

	// The audit policy of the run: every resource at RequestResponse for the default seed's
	// first run (VAPC_RANDOM_LEVELS=mixed or another seed mixes the levels).
	mixed := (seed != defaultRandomSeed || os.Getenv("VAPC_RANDOM_LEVELS") == "mixed") && os.Getenv("VAPC_RANDOM_LEVELS") != "all"
	admission := admissionLevel(seed, mixed)
	auditPolicy, levels := randomAuditPolicy(r, !mixed, admission)
	policyPath, err := writeAuditPolicy(t.TempDir(), auditPolicy)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("audit levels (mixed %v): %v", mixed, levels)
	opts := []harness.Option{harness.WithAPIServerFlags("--audit-policy-file=" + policyPath)}
	if mixed && chance(r, 0.3) {
		// kube-apiserver's truncating backend drops the objects of the largest events (a
		// ConfigMap with the big key, written at RequestResponse): they read as level Metadata.
		opts = append(opts, harness.WithAPIServerFlags("--audit-log-truncate-enabled=true", "--audit-log-truncate-max-event-size=14000"))
		t.Logf("audit events over 14000 bytes truncated")
	}
	if controllers {
		opts = append(opts, harness.WithControllers())
	}
	t.Logf("controllers: %v", controllers)
	s := harness.Start(t, opts...)
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Minute)
	defer cancel()
	w.decisions = &decisions{cluster: newCluster(t, s), t: t, ctx: ctx}
	w.controllers = controllers
	stopKubelet := func() {}
	if controllers {
		// kubeletNode's kubelet keeps it Ready, for the scheduler to bind pods to, until the
		// random requests are sent.
		kctx, cancel := context.WithCancel(ctx)
		defer cancel()
		stopKubelet = cancel
		go kubelet(kctx, s, kubeletNode)
	}
	w.setupWorld()
	if controllers {
		// Pods for the scheduler to bind to kubeletNode, and for the taint eviction
		// controller to delete once its kubelet stops.
		w.put(ctx, node(kubeletNode, map[string]any{"app": "web"}, condition("Ready", "True")))
		w.put(ctx, ctlWeb(rndA, 3, 2))
	}
	set = w.installRandom(set)
	w.sync(ctx)
	waitForInjector(ctx, t, w.cluster, rndB)
	// The admission plugin finds the paramKind of a new CRD within 30 seconds (the barrier
	// waited for it); for replay.ParamResolveDelay after the CRD was established, the replay
	// decides the requests of the paramKind's policies both ways and holds them indeterminate
	// when the two differ: the random requests begin after it.
	if wait := time.Until(w.established.Add(replay.ParamResolveDelay + time.Second)); wait > 0 {
		t.Logf("waiting %s for the replay to take the ReplicaLimit paramKind as resolved", wait.Round(time.Millisecond))
		time.Sleep(wait)
	}
	// The policies are in effect for every request sent from now on.
	activated := w.lastAuditID()
	t.Logf("setup: %s", time.Since(start).Round(time.Millisecond))

	actions := []struct {
		weight int
		do     func()
	}{
		{12, w.configMapCreate}, {8, w.configMapUpdate}, {9, w.configMapPatch}, {6, w.configMapDelete},
		{2, w.configMapDeleteCollection}, {6, w.podCreate}, {5, w.podUpdate}, {4, w.podStatus},
		{4, w.podEvict}, {4, w.podDelete}, {4, w.nodePatch}, {3, w.nodeStatus}, {2, w.nodeCreateDelete},
		{4, w.deploymentWrite}, {4, w.deploymentScale}, {4, w.workloadScale}, {3, w.eventCreate}, {2, w.secretWrite},
		{3, w.rawDelete}, {4, w.kubectlStep}, {3, w.namespaceLabels}, {4, w.paramChange}, {1, w.namespaceLife},
		{4, w.podBind}, {2, w.podEphemeral}, {3, w.serviceAccountWrite}, {6, w.widgetWrite}, {2, w.widgetStatus},
		{4, w.secretStringData}, {4, w.hpaWrite}, {3, w.serviceWrite}, {3, w.jobWrite}, {5, w.applyStep},
		{4, w.listPatch}, {3, w.strategyWrite}, {3, w.finalizerStep}, {2, w.podDeleteCollection}, {3, w.connectStep},
		{4, w.pvcWrite}, {3, w.ingressWrite}, {3, w.roleBindingWrite}, {3, w.cronJobWrite}, {3, w.leaseWrite},
		{4, w.raceStep}, {3, w.daemonSetWrite}, {3, w.pdbWrite}, {3, w.netPolWrite}, {3, w.priorityWrite}, {3, w.csrWrite},
		{2, w.limitRangeWrite}, {2, w.quotaWrite}, {6, w.kubectlEveryday}, {6, w.kubectlMore}, {3, w.crdWrite}, {3, w.flowcontrolWrite}, {3, w.webhookConfigWrite},
		{3, w.pvWrite}, {2, w.storageClassWrite},
	}
	if controllers {
		actions = append(actions, struct {
			weight int
			do     func()
		}{8, w.controllerStep})
	}
	total := 0
	for _, a := range actions {
		total += a.weight
	}
	var snapFile, snapCut string
	for w.step = 1; w.step <= steps && ctx.Err() == nil; w.step++ {
		if w.step == steps/2 {
			snapFile, snapCut = w.takeSnapshot(set, snapshotStyleOf(seed))
		}
		if w.step == steps/3 || w.step == 2*steps/3 {
			w.bindingLife(set)
		}
		if w.step == 5*steps/6 || w.step == 11*steps/12 {
			w.bindingRespec(set)
		}
		if w.step == 3*steps/4 && seed%2 == 0 {
			w.paramSchemaDefault()
		}
		n := r.IntN(total)
		for _, a := range actions {
			if n < a.weight {
				a.do()
				break
			}
			n -= a.weight
		}
	}
	if controllers {
		// kubeletNode's kubelet stops: the node lifecycle controller marks it Unknown and
		// taints it (after --node-monitor-grace-period), the taint eviction controller deletes
		// the pods that tolerate that for seconds, their ReplicaSets make new ones, which the
		// scheduler finds no node for.
		stopKubelet()
		stopped := time.Now()
		waitForControllers(ctx, t, s.AuditLogPath(), stopped)
		t.Logf("the kubelet of %s stopped; the node lifecycle controller wrote the node after %s", kubeletNode, time.Since(stopped).Round(time.Second))
		time.Sleep(5 * time.Second) // the taint eviction controller's tolerationSeconds, and its deletes
	}
	// A last write of the administrator: once its event is in the log, so is every other.
	w.got("the last write", w.tryCreate(w.dyn, configMapsGVR, configMap(barrierNS, fmt.Sprintf("end-%d", seed), nil, nil), metav1.CreateOptions{}))
	last := w.lastAuditID()
	waitForAuditEvent(ctx, t, s.AuditLogPath(), func(e *auditEvent) bool {
		return string(e.AuditID) == last && e.Stage == "ResponseComplete"
	})
	t.Logf("scenario: %d requests, %d denials by the policies, refused otherwise %v, %s", w.sent, len(w.denied), w.others, time.Since(start).Round(time.Millisecond))
	// The controllers go on writing: the log as it is now, whole lines only, is what the
	// replay and every check read.
	logPath := snapshotLog(t, s.AuditLogPath())
	from := 0
	forEachFinalEventLine(t, logPath, func(line int, e *auditEvent) {
		if string(e.AuditID) == activated {
			from = line + 1
		}
	})
	if from == 0 {
		t.Fatalf("no event of audit ID %s, the last request before the random ones", activated)
	}
	byDesignSeen := map[string]int{}
	byDesignFirst := map[string]string{}
	set.mutating, set.mutatingBindings = w.mutating, w.mutatingBindings
	// VAPC_KEEP_AUDIT=FILE keeps a copy of the run's audit log, and its policies in
	// FILE.policies.yaml, to replay it again by hand (and the snapshot replay's snapshot and
	// tail: checkSnapshotReplay).
	if dst := os.Getenv("VAPC_KEEP_AUDIT"); dst != "" {
		data, err := os.ReadFile(logPath)
		if err == nil {
			err = os.WriteFile(dst, data, 0o644)
		}
		if err != nil {
			errorf(t, "VAPC_KEEP_AUDIT: %v", err)
		}
		if err := os.WriteFile(dst+".policies.yaml", []byte(strings.Join(set.yamlDocs(t), "\n---\n")), 0o644); err != nil {
			errorf(t, "VAPC_KEEP_AUDIT: %v", err)
		}
	}
	accepted := func(reason string, keys []string) bool {
		for _, k := range keys {
			if strings.Contains(reason, k) {
				byDesignSeen[k]++
				if byDesignFirst[k] == "" {
					byDesignFirst[k] = reason
				}
				return true
			}
		}
		return false
	}
	byID := checkReplayFrom(t, logPath, set, w.denied, from, func(rec *replay.Record) bool {
		return accepted(rec.Indeterminate, byDesignIndeterminate) ||
			((controllers || w.racing[rec.AuditID]) && accepted(rec.Indeterminate, racingIndeterminate)) ||
			// What a request or a write before it logged below RequestResponse leaves out.
			(mixed && accepted(rec.Indeterminate, lowerLevelIndeterminate)) ||
			// The cluster's admission policies the log does not show (a MutatingAdmissionPolicy
			// the replay is not given, at level Metadata: what it may change; seed r:1450).
			(admission != "RequestResponse" && accepted(rec.Indeterminate, unshownPolicyIndeterminate)) ||
			// The controllers' audit policy logs CRDs at level Request: the replay learns a
			// CRD's kind from a use, in that use's version, and a request in another version
			// (a v1beta1 Widget) is of a resource it does not know (seed c:511).
			(controllers && accepted(rec.Indeterminate, []string{"unknown-resource: "}))
	})
	if len(w.mutating) > 0 {
		mutated := 0
		for _, rec := range byID {
			if len(rec.Mutations) > 0 {
				mutated++
			}
		}
		t.Logf("requests the replayed MutatingAdmissionPolicy changed: %d", mutated)
	}
	t.Logf("indeterminate by design of the audit log: %v", byDesignSeen)
	for k, reason := range byDesignFirst {
		t.Logf("  %s, first: %s", k, reason)
	}
	w.checkCoverage(byID, from, seed == defaultRandomSeed && steps >= 300)
	w.checkWarnings(byID, from)
	checkAuditResults(t, byID)
	checkSplitReplay(t, logPath, set, byID, from)
	checkStdinReplay(t, logPath, set, byID)
	checkSnapshotReplay(t, logPath, set, byID, from, snapFile, snapCut)
	checkExportReplays(t, logPath, set, byID, from, seed)
	checkLikely(t, logPath, set, byID, from, func(rec *replay.Record) bool { return w.racing[rec.AuditID] || controllers && componentUser(rec.User) })
	t.Logf("%s: %s", t.Name(), time.Since(start).Round(time.Millisecond))
}

// snapshotLog copies the audit log's whole lines into a file of the test's.
func snapshotLog(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if i := bytes.LastIndexByte(data, '\n'); i >= 0 {
		data = data[:i+1]
	}
	out := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(out, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return out
}

// byDesignIndeterminate are the reasons of indeterminate requests TestRandomParity accepts:
// what an audit log cannot tell, by its design (see README.md, vapc replay).
var byDesignIndeterminate = []string{
	// The deletion an eviction makes is not in the log: the replay follows it, but for the
	// clock and the resourceVersion it set.
	"evicted at ",
	"wrote the object, which the log does not",
	// The uid and clock of a refused create, the name it generated when the log does not
	// say, the addresses a refused Service create allocated, the suffix of a token volume.
	"the uid the server generated",
	"the server's clock during the request",
	"the name the server generated",
	"the addresses and ports the server allocated",
	"the random suffix of the token volume",
	// A patch whose content type, which the log does not record, changes the outcome, or
	// the object it wrote (at level Request).
	"patch-type: ",
	"the log does not record the patch's content type",
	// Which versions a deletecollection's deletions read first from kube-apiserver's watch
	// cache, moments after a write to one of its objects (the replay follows them for a
	// single object's update or delete only).
	"are not followed for a deletecollection",
	// The audiences the server gives a TokenRequest that asks for none (its --api-audiences;
	// the controller manager's tokens).
	"the server's --api-audiences",
	// Whether a refused pod DELETE with no grace period left the pod marked deleted.
	"which admission refused, after or before the store marked the pod deleted",
	// Whether a Job's create sent its labels or had them defaulted from its pod template.
	"whether its labels were sent or are its pod template's",
	// The authorizer's answers, but to members of system:masters.
	"which the audit log does not answer",
	// Whether kube-apiserver's policy source had compiled a binding's create or delete
	// moments before (bindingLife).
	"policy-source: ",
	// Whether the cluster's binding was the given one: bindingRespec patches it to others.
	"policy-changed: ",
	// A MutatingAdmissionPolicy leaves no trace in the log.
	"give it among --policies for vapc to run it",
	// Nor does the moment its plugin learns a new CRD's schema.
	"refreshes custom resources' schemas every 5 seconds",
	// Nor the moment its param informer lists the params again through a CRD's new schema
	// (paramSchemaDefault: the CRD's storage torn down after a second, the informer's
	// backoff up to 30 s; seed m:1442, with every resource at RequestResponse, had 22
	// requests between 1.2 and 34 s after the change whose decision the two readings part).
	"its CustomResourceDefinition's schema reads it otherwise now",
	// Nor the order CEL iterated a map in kube-apiserver (Go's map order, by chance), where
	// the log's verdicts do not settle it (a node's patch in one make test run of seed 233,
	// whose log was not kept).
	"map-order: ",
	// Nor the order its informers gave the policies, bindings and params, where another
	// order makes another object (two params of a binding writing one field).
	"in an order no log records, and the order matters here",
	// Not of the log's design but a limit of the replay, listed in README.md: the
	// managedFields of an object rebuilt outside the request pipeline (a custom resource's,
	// a TokenRequest's).
	"which the replay does not compute outside the request pipeline",
	// What LimitRanger's cache of its live lookups (30 s) holds of a namespace whose
	// LimitRanges were written in that time and that its informer holds none of.
	"LimitRanger reads what it looked up live",
	// A field an admission plugin sets from objects the State does not hold complete, the log
	// not showing the cluster's beginning (a pod's kubernetes.io/limit-ranger annotation,
	// which a policy reads: LimitRanger lists the namespace's LimitRanges; seed c:2 with
	// conditions that follow map order).
	"an admission plugin read limitranges",
	// A stored object the log shows without managedFields: the audit policy's
	// omitManagedFields and an object without any read alike (a node created by rnd-alice,
	// seed 233).
	"the stored object's managedFields, which the log omits",
}

// racingIndeterminate are the reasons TestRandomParity accepts of requests that ran
// concurrently with a write to their object, the controllers' and raceStep's: which version of
// the object a request read when the write ran concurrently (the log records each when its
// response completes), and which version its first attempt read from kube-apiserver's watch
// cache when the replay does not know that version (the log's annotations decide the others).
var racingIndeterminate = []string{"they ran concurrently", "which may not yet have held that write", "and the version it replaced is not known",
	// Two or more writes the log holds without their results that ran concurrently: the
	// fields their orders write differently (seed c:614).
	"which the server committed last is not known", "the order the server committed them in is not known",
	// A mutating webhook changed an update whose first attempt may have read the watch cache's
	// older copy: the log holds one attempt's patch, not which (CI, controllers seed 2).
	"and the log holds its patch of one attempt of the request, not which",
	// Not of the log's design but a limit of the replay, listed in README.md: the namespace
	// controller's deletecollection of a custom resource.
	"deletecollection: the items it deleted are not rebuilt one by one outside the request pipeline"}

// lowerLevelIndeterminate are the reasons of indeterminate requests a run that logs some
// resources below RequestResponse accepts: what those levels leave out.
var lowerLevelIndeterminate = []string{
	"no-object: ", "at level Request", "at level Metadata", "the result is not in the log",
	"not in the snapshot or earlier in the log", "param-kind-", "unknown-resource: ",
	"old-object-unknown: ", "param-unknown: ", "namespace-unknown: ", "plugin-input-unknown: ",
	"which the log omits", "state-unknown: ", "rebuild: ", "which the log does not hold", "without a recorded result",
	"which the server committed last is not known", "the order the server committed them in is not known",
	// A CustomResourceDefinition's write at Metadata level: the schema, and the defaults its
	// objects read with, are not known (seed r:1364).
	"changed and the log holds without its result",
	// A custom resource's write at level Request: what the server generated (its uid, the
	// managedFields its field manager wrote) is not known (seed r:1404, a policy reading
	// managedFields).
	"which the log holds without its result",
}

// unshownPolicyIndeterminate are the reasons a run that logs the admission policies and
// bindings below RequestResponse (admissionLevel) gives where the log does not show the
// cluster's: a binding whose policy it does not show, a policy written without its result.
var unshownPolicyIndeterminate = []string{
	"binds a policy the log does not show", "policy-changed: ",
}

// got records the outcome of one request of the scenario.
func (w *randomWorld) got(what string, err error) {
	w.t.Helper()
	w.sent++
	if err == nil {
		return
	}
	st, ok := statusOf(err)
	switch {
	case ok && strings.Contains(st.Message, policyDenied):
		w.denied = append(w.denied, denial{what: fmt.Sprintf("step %d: %s", w.step, what), auditID: w.lastAuditID(), code: st.Code, message: st.Message})
	case ok:
		w.others[fmt.Sprintf("%d %s", st.Code, st.Reason)]++
	case strings.Contains(err.Error(), policyDenied):
		w.others["kubectl denied by a policy"]++
	default:
		w.others["other"]++
		w.t.Logf("step %d: %s: %v", w.step, what, err)
	}
}

// client returns the dynamic client of a user.
func (w *randomWorld) client(u rndUser) dynamic.Interface {
	if u.name == harness.AdminUser {
		return w.dyn
	}
	c, ok := w.clients[u.name]
	if !ok {
		c = w.dynamicFor(rest.ImpersonationConfig{UserName: u.name, Groups: u.groups, UID: u.uid, Extra: u.extra})
		w.clients[u.name] = c
	}
	return c
}

func (w *randomWorld) user() rndUser { return pick(w.r, rndUsers...) }

// setupWorld creates the CRDs and the namespaces, grants the users, and writes the params and
// the first objects before any policy exists.
func (w *randomWorld) setupWorld() {
	ctx := w.ctx
	w.defineCRD(ctx, replicaLimitCRD())
	w.established = w.defineCRD(ctx, widgetCRD())
	w.addBarrier(barrier{
		name: "vapc-barrier-replicalimit", apiVersion: rndGroup + "/v1", kind: "ReplicaLimit", msg: "'replicalimit=' + params.metadata.labels.gen",
		ref: admissionregistrationv1.ParamRef{Name: "vapc-barrier", Namespace: barrierNS},
		param: func(gen string) *unstructured.Unstructured {
			return replicaLimitIn(barrierNS, "vapc-barrier", map[string]any{"gen": gen}, 1, "on", "")
		},
	})
	w.barrierNamespace(ctx)
	w.namespace(ctx, rndA, map[string]string{"tier": "gold", "env": "prod"})
	w.namespace(ctx, rndB, map[string]string{"tier": "silver", "env": "dev", "team": "red"})
	// Pod Security Admission's levels (see namespaceLabels).
	w.namespace(ctx, rndC, map[string]string{"pod-security.kubernetes.io/enforce": "baseline",
		"pod-security.kubernetes.io/warn": "restricted", "pod-security.kubernetes.io/audit": "restricted"})
	w.namespace(ctx, rndParams, map[string]string{"tier": "gold"})
	// A mutating webhook changes pods and ConfigMaps in the namespaces labelled team=red
	// before the policies read them: the replay applies the patches the log records.
	hookURL, caBundle := startInjector(w.t)
	w.put(ctx, toUnstructured(w.t, injectorConfig(hookURL, caBundle, map[string]string{"team": "red"})))
	// A MutatingAdmissionPolicy labels blue and green ConfigMaps mapped=yes: the log does not show it,
	// and the replay must not decide from the object it did not change. Half the seeds also
	// give it to the replay, which then runs it (with an apply configuration or a JSON patch,
	// by the seed) and must decide as the server did on the object it changed.
	// A random MutatingAdmissionPolicy, put first so that the labelling policy's effect shows
	// it is loaded too, sets the annotation the random validations and the observer read, on
	// ConfigMaps of the namespaces with an env label: with or without params (one, or every
	// ConfigMap of a selector, each writing the same field: an order the replay cannot know),
	// a matchCondition, either patch type, either reinvocation policy. Half the seeds give it
	// to the replay.
	rp, rb, shape := randomMutatingPolicy(w.mr)
	if w.mr.IntN(2) == 0 {
		w.mutating = append(w.mutating, rp)
		w.mutatingBindings = append(w.mutatingBindings, rb)
		shape += ", replayed"
	}
	w.t.Logf("MutatingAdmissionPolicy %s: %s", rp.Name, shape)
	w.put(ctx, toUnstructured(w.t, rp))
	w.put(ctx, toUnstructured(w.t, rb))
	mp, mb := labellingPolicy()
	mp.Spec.MatchConstraints.NamespaceSelector = &metav1.LabelSelector{}
	mp.Spec.MatchConstraints.ObjectSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "color", Operator: metav1.LabelSelectorOpIn, Values: []string{"blue", "green"}}}}
	if w.r.IntN(2) == 0 {
		mp.Spec.Mutations = []admissionregistrationv1.Mutation{{
			PatchType: admissionregistrationv1.PatchTypeJSONPatch,
			JSONPatch: &admissionregistrationv1.JSONPatch{Expression: `[JSONPatch{op: "add", path: "/metadata/labels/mapped", value: "yes"}]`},
		}}
	}
	if w.r.IntN(2) == 0 {
		w.mutating = append(w.mutating, mp)
		w.mutatingBindings = append(w.mutatingBindings, mb)
	}
	w.t.Logf("MutatingAdmissionPolicy %s (%s) replayed: %v", mp.Name, mp.Spec.Mutations[0].PatchType, len(w.mutating) > 0 && w.mutating[len(w.mutating)-1] == mp)
	w.put(ctx, toUnstructured(w.t, mp))
	w.put(ctx, toUnstructured(w.t, mb))
	for _, u := range rndUsers[1:] {
		w.grantAll(ctx, u.name)
	}
	for _, p := range []struct {
		name, set string
		data      map[string]any
	}{
		{"p-0", "x", map[string]any{"max": "6", "prefix": "cm-a", "mode": "on"}},
		{"p-1", "x", map[string]any{"max": "x", "mode": "deny-all"}},
		{"p-2", "y", map[string]any{"max": "20", "prefix": "pod", "block-user": "rnd-alice"}},
	} {
		w.put(ctx, configMap(rndParams, p.name, map[string]any{"set": p.set}, p.data))
	}
	w.put(ctx, configMap(rndA, "p-local", nil, map[string]any{"max": "5", "mode": "skip"}))
	w.put(ctx, configMap(rndB, "p-local", nil, map[string]any{"max": "12", "mode": "deny-all"}))
	w.put(ctx, node("pn-0", map[string]any{"set": "x", "limit": "6"}))
	w.put(ctx, node("pn-1", map[string]any{"set": "x", "limit": "x", "mode": "deny-all"}))
	pn2 := node("pn-2", map[string]any{"set": "y", "limit": "10"})
	pn2.Object["spec"] = map[string]any{"unschedulable": true}
	w.put(ctx, pn2)
	for _, n := range nodeNames[:2] {
		w.put(ctx, node(n, map[string]any{"app": "web"}, condition("Ready", "True")))
	}
	w.put(ctx, obj(map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "robot", "namespace": rndA}}))
	// No disruption controller runs: the budget allows no eviction of the db pods of rnd-b.
	w.put(ctx, obj(map[string]any{"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": map[string]any{"name": "db", "namespace": rndB},
		"spec": map[string]any{"minAvailable": int64(1), "selector": map[string]any{"matchLabels": map[string]any{"app": "db"}}}}))
	w.put(ctx, replicaLimitIn(rndParams, "rl-0", map[string]any{"set": "x"}, 3, "on", "cm-a"))
	w.put(ctx, replicaLimitIn(rndParams, "rl-1", map[string]any{"set": "y"}, 1, "deny-all", ""))
	w.put(ctx, replicaLimitIn(rndParams, "rl-2", map[string]any{"set": "x"}, 10, "skip", "wg"))
	w.put(ctx, replicaLimitIn(rndA, "rl-local", nil, 4, "on", ""))
	w.put(ctx, replicaLimitIn(rndB, "rl-local", nil, 2, "deny-all", "pod"))
	for _, ns := range []string{rndA, rndB} {
		w.put(ctx, configMap(ns, "cm-ab", map[string]any{"app": "web", "color": "green"}, map[string]any{"n": "3"}))
		w.put(ctx, podIn(ns, "pod-a", "w-0", "nginx", map[string]any{"app": "db"}))
		w.put(ctx, deploymentIn(ns, "dep-a", 2))
		w.put(ctx, widgetIn(ns, "wg-a", map[string]any{"app": "web"}, 3, "green"))
		w.put(ctx, workloadIn("ReplicaSet", ns, "rs-a", 2))
		w.put(ctx, workloadIn("StatefulSet", ns, "ss-a", 1))
		w.put(ctx, workloadIn("ReplicationController", ns, "rc-a", 3))
	}
	w.setupKinds(ctx)
	w.setupMoreKinds(ctx)
}

// workloadIn is a ReplicaSet, StatefulSet or ReplicationController of the replicas; no
// controller runs to create their pods.
func workloadIn(kind, ns, name string, replicas int64) *unstructured.Unstructured {
	labels := map[string]any{"app": name}
	template := map[string]any{
		"metadata": map[string]any{"labels": labels},
		"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}},
	}
	spec := map[string]any{"replicas": replicas, "template": template}
	apiVersion := "apps/v1"
	switch kind {
	case "ReplicationController":
		apiVersion = "v1"
		spec["selector"] = labels
	case "StatefulSet":
		spec["serviceName"] = name
		spec["selector"] = map[string]any{"matchLabels": labels}
	default:
		spec["selector"] = map[string]any{"matchExpressions": []any{map[string]any{"key": "app", "operator": "In", "values": []any{name, "other"}}}}
	}
	return obj(map[string]any{"apiVersion": apiVersion, "kind": kind,
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"app": "web"}}, "spec": spec})
}

// replicaLimitCRD is the CRD of the ReplicaLimit param kind, as in the examples of
// ValidatingAdmissionPolicy.
func replicaLimitCRD() *unstructured.Unstructured {
	return crdOf("replicalimits", "ReplicaLimit", false, map[string]any{
		"maxReplicas": map[string]any{"type": "integer"},
		"mode":        map[string]any{"type": "string"},
		"prefix":      map[string]any{"type": "string"},
		"tier":        map[string]any{"type": "string"}, // no param sets it (paramSchemaDefault)
	})
}

// paramSchemaDefault gives the ReplicaLimit CRD's spec.tier a default: kube-apiserver tears
// down the CRD's storage, its param informer lists the params again through the new schema
// seconds later, and the policies that read params.spec.tier see it from then on (the
// replay: catalog.ParamRereads).
func (w *randomWorld) paramSchemaDefault() {
	crdsGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	want := crdOf("replicalimits", "ReplicaLimit", false, map[string]any{
		"maxReplicas": map[string]any{"type": "integer"},
		"mode":        map[string]any{"type": "string"},
		"prefix":      map[string]any{"type": "string"},
		"tier":        map[string]any{"type": "string", "default": "std"},
	})
	cur, err := w.dyn.Resource(crdsGVR).Get(w.ctx, want.GetName(), metav1.GetOptions{})
	if err != nil {
		w.t.Fatalf("reading CustomResourceDefinition %s: %v", want.GetName(), err)
	}
	cur.Object["spec"] = want.Object["spec"]
	w.got("giving ReplicaLimit's spec.tier a default", func() error {
		_, err := w.dyn.Resource(crdsGVR).Update(w.ctx, cur, metav1.UpdateOptions{})
		return err
	}())
}

// widgetCRD is the CRD of Widgets, with a status subresource and a default (the server's
// decoder applies it to a request's body and to a patched object), and a scale subresource
// whose replicas are spec.size. It serves v1beta1 too, stored as v1 and converted without a
// webhook (the strategy None): v1beta1's schema has no color, which reading a Widget through
// it prunes, and another default shape.
func widgetCRD() *unstructured.Unstructured {
	crd := crdOf("widgets", "Widget", true, map[string]any{
		"size":  map[string]any{"type": "integer"},
		"color": map[string]any{"type": "string"},
		"shape": map[string]any{"type": "string", "default": "round"},
	})
	beta := crdOf("widgets", "Widget", true, map[string]any{
		"size":  map[string]any{"type": "integer"},
		"shape": map[string]any{"type": "string", "default": "oval"},
	})
	versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
	betaVersions, _, _ := unstructured.NestedSlice(beta.Object, "spec", "versions")
	v := betaVersions[0].(map[string]any)
	v["name"], v["storage"] = "v1beta1", false
	versions = append(versions, v)
	for _, v := range versions {
		// A scale subresource whose replicas are the size: kubectl scale patches it, and the
		// apiextensions apiserver derives the Scale by these paths.
		v := v.(map[string]any)
		_ = unstructured.SetNestedMap(v, map[string]any{"specReplicasPath": ".spec.size", "statusReplicasPath": ".status.ready", "labelSelectorPath": ".status.selector"}, "subresources", "scale")
		status := map[string]any{"phase": map[string]any{"type": "string"}, "ready": map[string]any{"type": "integer"}, "selector": map[string]any{"type": "string"}}
		_ = unstructured.SetNestedMap(v, status, "schema", "openAPIV3Schema", "properties", "status", "properties")
	}
	_ = unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions")
	return crd
}

// widgetVersion is the version a Widget request goes through: mostly v1, the stored one.
func (w *randomWorld) widgetVersion() schema.GroupVersionResource {
	if chance(w.r, 0.3) {
		return widgetsBetaGVR
	}
	return widgetsGVR
}

func crdOf(plural, kind string, status bool, spec map[string]any) *unstructured.Unstructured {
	props := map[string]any{
		"spec":   map[string]any{"type": "object", "properties": spec},
		"status": map[string]any{"type": "object", "properties": map[string]any{"phase": map[string]any{"type": "string"}}},
	}
	version := map[string]any{"name": "v1", "served": true, "storage": true,
		"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "properties": props}}}
	if status {
		version["subresources"] = map[string]any{"status": map[string]any{}}
	}
	return obj(map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": plural + "." + rndGroup},
		"spec": map[string]any{
			"group": rndGroup, "scope": "Namespaced",
			"names":    map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind, "listKind": kind + "List"},
			"versions": []any{version},
		},
	})
}

func replicaLimitIn(ns, name string, labels map[string]any, max int64, mode, prefix string) *unstructured.Unstructured {
	meta := map[string]any{"name": name, "namespace": ns}
	if labels != nil {
		meta["labels"] = labels
	}
	spec := map[string]any{"maxReplicas": max, "mode": mode}
	if prefix != "" {
		spec["prefix"] = prefix
	}
	return obj(map[string]any{"apiVersion": rndGroup + "/v1", "kind": "ReplicaLimit", "metadata": meta, "spec": spec})
}

func widgetIn(ns, name string, labels map[string]any, size int64, color string) *unstructured.Unstructured {
	meta := map[string]any{"name": name, "namespace": ns}
	if labels != nil {
		meta["labels"] = labels
	}
	return obj(map[string]any{"apiVersion": rndGroup + "/v1", "kind": "Widget", "metadata": meta, "spec": map[string]any{"size": size, "color": color}})
}

// installRandom creates the generated policies and bindings; those the server refuses although
// vapc check accepted them are errors of vapc check, and left out. The policies vapc check
// refused are sent in a dry run, which the server must refuse too.
func (w *randomWorld) installRandom(set policySet) policySet {
	for i, p := range w.refused.policies {
		err := w.tryCreate(w.dyn, schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"},
			toUnstructured(w.t, p), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			errorf(w.t, "vapc check refuses policy %s, the server accepts it; vapc check says:\n%s\n%s", p.Name, w.refusedWhy[i], yamlOf(w.t, p))
		}
	}
	var out policySet
	refused := map[string]bool{}
	for _, p := range set.policies {
		if _, err := w.tryPut(w.ctx, toUnstructured(w.t, p)); err != nil {
			errorf(w.t, "vapc check accepts policy %s, the server refuses it: %v\n%s", p.Name, err, yamlOf(w.t, p))
			refused[p.Name] = true
			continue
		}
		out.policies = append(out.policies, p)
	}
	for _, b := range set.bindings {
		if refused[b.Spec.PolicyName] {
			continue
		}
		if _, err := w.tryPut(w.ctx, toUnstructured(w.t, withKind(b))); err != nil {
			errorf(w.t, "vapc check accepts binding %s, the server refuses it: %v\n%s", b.Name, err, yamlOf(w.t, b))
			continue
		}
		out.bindings = append(out.bindings, b)
	}
	return out
}

// bindingLife deletes one of the generated bindings (not the observer's), and, called again,
// creates it again: the requests between are decided without it (the replay follows the
// lifecycle of the policies it is given in the log), those sent moments after each change
// with it or, where it gave a verdict, as policy-source indeterminate (kube-apiserver's policy
// source compiles what its informers hold within two seconds); the snapshot replay's tail begins
// while it is deleted.
func (w *randomWorld) bindingLife(set policySet) {
	gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}
	if b := w.unbound; b != nil {
		// Not through tryPut, after which sync waits out the policy source's second: the
		// requests that follow are meant to fall within it.
		_, err := w.dyn.Resource(gvr).Create(w.ctx, toUnstructured(w.t, withKind(b)), metav1.CreateOptions{})
		w.got("the administrator creates binding "+b.Name+" again", err)
		if err == nil {
			w.unbound = nil
		}
		return
	}
	b := w.lifeBinding(set)
	if b == nil {
		return
	}
	err := w.dyn.Resource(gvr).Delete(w.ctx, b.Name, metav1.DeleteOptions{})
	w.got("the administrator deletes binding "+b.Name, err)
	if err == nil {
		w.unbound = b
	}
}

// lifeBinding picks, from the lifecycle's random stream, one of the generated bindings (not the
// observer's, nor one bindingLife deleted); nil when there is none.
func (w *randomWorld) lifeBinding(set policySet) *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
	var bs []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for _, b := range set.bindings {
		if b.Name != observerName && (w.unbound == nil || b.Name != w.unbound.Name) {
			bs = append(bs, b)
		}
	}
	if len(bs) == 0 {
		return nil
	}
	return bs[w.life.IntN(len(bs))]
}

// bindingRespec patches one of the generated bindings (not the observer's, nor one
// bindingLife deleted) to other validationActions (Deny for Warn and Audit, Warn and Audit for
// Deny), with a merge patch, and, called again, back with a JSON patch: the requests between
// that the binding gives a verdict are policy-changed (the server decided with the log's spec,
// not the given one), those moments after each patch policy-source, the rest decided.
func (w *randomWorld) bindingRespec(set policySet) {
	gvr := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicybindings"}
	quoted := func(actions []admissionregistrationv1.ValidationAction) string {
		var out []string
		for _, a := range actions {
			out = append(out, `"`+string(a)+`"`)
		}
		return "[" + strings.Join(out, ",") + "]"
	}
	if b := w.respecified; b != nil {
		patch := `[{"op":"replace","path":"/spec/validationActions","value":` + quoted(b.Spec.ValidationActions) + `}]`
		_, err := w.dyn.Resource(gvr).Patch(w.ctx, b.Name, types.JSONPatchType, []byte(patch), metav1.PatchOptions{})
		w.got("the administrator patches binding "+b.Name+" back to its validationActions", err)
		if err == nil {
			w.respecified = nil
		}
		return
	}
	b := w.lifeBinding(set)
	if b == nil {
		return
	}
	other := []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}
	if slices.Contains(b.Spec.ValidationActions, admissionregistrationv1.Deny) {
		other = []admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn, admissionregistrationv1.Audit}
	}
	_, err := w.dyn.Resource(gvr).Patch(w.ctx, b.Name, types.MergePatchType, []byte(`{"spec":{"validationActions":`+quoted(other)+`}}`), metav1.PatchOptions{})
	w.got("the administrator patches binding "+b.Name+" to validationActions "+quoted(other), err)
	if err == nil {
		w.respecified = b
	}
}

// Objects of the scenario.

func podIn(ns, name, node, image string, labels map[string]any) *unstructured.Unstructured {
	spec := map[string]any{"containers": []any{map[string]any{"name": "c", "image": image}}}
	if node != "" {
		spec["nodeName"] = node
	}
	meta := map[string]any{"name": name, "namespace": ns}
	if labels != nil {
		meta["labels"] = labels
	}
	return obj(map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec})
}

func deploymentIn(ns, name string, replicas int64) *unstructured.Unstructured {
	sel := map[string]any{"app": name}
	return obj(map[string]any{
		"apiVersion": "apps/v1", "kind": "Deployment",
		"metadata": map[string]any{"name": name, "namespace": ns, "labels": map[string]any{"app": "web"}},
		"spec": map[string]any{
			"replicas": replicas,
			"selector": map[string]any{"matchLabels": sel},
			"template": map[string]any{
				"metadata": map[string]any{"labels": sel},
				"spec":     map[string]any{"containers": []any{map[string]any{"name": "c", "image": "nginx"}}},
			},
		},
	})
}

func (w *randomWorld) labels() map[string]any {
	if chance(w.r, 0.2) {
		return nil
	}
	l := map[string]any{}
	if chance(w.r, 0.6) {
		l["app"] = pick(w.r, "web", "db")
	}
	if chance(w.r, 0.6) {
		l["color"] = pick(w.r, "red", "green", "blue")
	}
	if chance(w.r, 0.15) {
		l["rnd.vapc.dev/skip"] = "yes"
	}
	return l
}

func (w *randomWorld) data() map[string]any {
	if chance(w.r, 0.15) {
		return nil
	}
	d := map[string]any{}
	if chance(w.r, 0.7) {
		d["n"] = pick(w.r, "3", "7", "x", "12")
	}
	if chance(w.r, 0.3) {
		d["mode"] = pick(w.r, "on", "deny-all", "skip")
	}
	if chance(w.r, 0.15) {
		d["password"] = "hunter2"
	}
	if chance(w.r, 0.15) {
		d["big"] = strings.Repeat("b", 6000) + strings.Repeat("c", 6000)
	}
	return d
}

func (w *randomWorld) namespaces() []string {
	if w.nsDone {
		return []string{rndA, rndB, rndC, rndD}
	}
	return []string{rndA, rndB, rndC}
}

// existing picks the name of an existing object of the resource (or, now and then, or when
// there is none, any name of the pool).
func (w *randomWorld) existing(gvr schema.GroupVersionResource, ns string, pool []string) string {
	if gvr == podsGVR {
		pool = slices.DeleteFunc(slices.Clone(pool), func(name string) bool { return w.bound[ns+"/"+name] })
		if len(pool) == 0 {
			return "p-none"
		}
	}
	var ri dynamic.ResourceInterface = w.dyn.Resource(gvr)
	if ns != "" {
		ri = w.dyn.Resource(gvr).Namespace(ns)
	}
	if chance(w.r, 0.95) {
		if l, err := ri.List(w.ctx, metav1.ListOptions{}); err == nil {
			var names []string
			for _, it := range l.Items {
				if slices.Contains(pool, it.GetName()) {
					names = append(names, it.GetName())
				}
			}
			if len(names) > 0 {
				return pick(w.r, names...)
			}
		}
	}
	return pick(w.r, pool...)
}

func (w *randomWorld) createOptions() metav1.CreateOptions {
	o := metav1.CreateOptions{}
	if chance(w.r, 0.15) {
		o.DryRun = []string{metav1.DryRunAll}
	}
	if chance(w.r, 0.15) {
		o.FieldManager = "rnd-tool"
	}
	return o
}

func (w *randomWorld) updateOptions() metav1.UpdateOptions {
	o := metav1.UpdateOptions{}
	if chance(w.r, 0.15) {
		o.DryRun = []string{metav1.DryRunAll}
	}
	if chance(w.r, 0.15) {
		o.FieldManager = "rnd-tool"
	}
	return o
}

func (w *randomWorld) patchOptions() metav1.PatchOptions {
	o := metav1.PatchOptions{}
	if chance(w.r, 0.15) {
		o.DryRun = []string{metav1.DryRunAll}
	}
	if chance(w.r, 0.15) {
		o.FieldManager = "rnd-tool"
	}
	return o
}

// deleteOptions are random options; uid and resourceVersion preconditions are those of the
// stored object (or a wrong resourceVersion now and then).
func (w *randomWorld) deleteOptions(ri dynamic.ResourceInterface, name string) metav1.DeleteOptions {
	o := metav1.DeleteOptions{}
	switch w.r.IntN(8) {
	case 0:
		o.GracePeriodSeconds = ptr.To[int64](0)
	case 1:
		o.GracePeriodSeconds = ptr.To(pick(w.r, int64(5), int64(30), int64(60)))
	case 2, 3:
		if cur, err := ri.Get(w.ctx, name, metav1.GetOptions{}); err == nil {
			if chance(w.r, 0.5) {
				o.Preconditions = &metav1.Preconditions{UID: ptr.To(cur.GetUID())}
			} else if chance(w.r, 0.7) {
				o.Preconditions = &metav1.Preconditions{ResourceVersion: ptr.To(cur.GetResourceVersion())}
			} else {
				o.Preconditions = &metav1.Preconditions{ResourceVersion: ptr.To("1")}
			}
		}
	case 4:
		o.PropagationPolicy = ptr.To(pick(w.r, metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground, metav1.DeletePropagationForeground))
	case 5:
		o.DryRun = []string{metav1.DryRunAll}
	}
	return o
}

// deleteExisting deletes, as u, an existing object of the pool (see existing) with random
// options, and records the outcome; kind names the resource in the record.
func (w *randomWorld) deleteExisting(u rndUser, gvr schema.GroupVersionResource, ns, kind string, pool []string) {
	ri := w.client(u).Resource(gvr).Namespace(ns)
	name := w.existing(gvr, ns, pool)
	o := w.deleteOptions(ri, name)
	w.got(fmt.Sprintf("%s deletes %s %s/%s %s", u.name, kind, ns, name, optionsString(o)), ri.Delete(w.ctx, name, o))
}

// patchExisting patches, as u, an existing object of the pool (see existing) with the patch
// body gives (drawn after the name) and random options, and records the outcome; kind names
// the resource in the record.
func (w *randomWorld) patchExisting(u rndUser, gvr schema.GroupVersionResource, ns, kind string, pool []string, body func() (types.PatchType, string)) {
	name := w.existing(gvr, ns, pool)
	pt, b := body()
	o := w.patchOptions()
	_, err := w.client(u).Resource(gvr).Namespace(ns).Patch(w.ctx, name, pt, []byte(b), o)
	w.got(fmt.Sprintf("%s patches %s %s/%s (%s %s)%s", u.name, kind, ns, name, pt, b, dry(o.DryRun)), err)
}

func (w *randomWorld) tryCreate(c dynamic.Interface, gvr schema.GroupVersionResource, u *unstructured.Unstructured, o metav1.CreateOptions, sub ...string) error {
	var ri dynamic.ResourceInterface = c.Resource(gvr)
	if ns := u.GetNamespace(); ns != "" {
		ri = c.Resource(gvr).Namespace(ns)
	}
	_, err := ri.Create(w.ctx, u, o, sub...)
	return err
}

func dry(dryRun []string) string {
	if len(dryRun) > 0 {
		return " (dry run)"
	}
	return ""
}

// ConfigMaps.

func (w *randomWorld) configMapCreate() {
	u, ns, name := w.user(), pick(w.r, w.namespaces()...), pick(w.r, cmNames...)
	cm := configMap(ns, name, w.labels(), w.data())
	if chance(w.r, 0.15) {
		cm.SetAnnotations(map[string]string{"rnd.vapc.dev/block": "true"})
	}
	if chance(w.r, 0.08) {
		// The server generates the name before validating admission runs.
		name = "gen-*"
		cm.SetName("")
		cm.SetGenerateName("gen-")
	}
	o := w.createOptions()
	w.got(fmt.Sprintf("%s creates configmap %s/%s%s", u.name, ns, name, dry(o.DryRun)), w.tryCreate(w.client(u), configMapsGVR, cm, o))
}

func (w *randomWorld) configMapUpdate() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	name := w.existing(configMapsGVR, ns, cmNames)
	ri := w.client(u).Resource(configMapsGVR).Namespace(ns)
	cur, err := ri.Get(w.ctx, name, metav1.GetOptions{})
	if err != nil {
		return
	}
	switch w.r.IntN(3) {
	case 0:
		cur.SetLabels(toStrings(w.labels()))
	case 1:
		if d := w.data(); d != nil {
			cur.Object["data"] = d
		} else {
			delete(cur.Object, "data")
		}
	default:
		cur.SetAnnotations(map[string]string{"rnd.vapc.dev/block": pick(w.r, "true", "no")})
	}
	how := ""
	if chance(w.r, 0.3) {
		// An unconditional update: no resourceVersion.
		cur.SetResourceVersion("")
		how = " unconditionally"
	}
	o := w.updateOptions()
	_, err = ri.Update(w.ctx, cur, o)
	w.got(fmt.Sprintf("%s updates configmap %s/%s%s%s", u.name, ns, name, how, dry(o.DryRun)), err)
}

func toStrings(m map[string]any) map[string]string {
	if m == nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range m {
		out[k] = v.(string)
	}
	return out
}

// mapPatches are merge patches that give the same object as strategic merge patches (no
// lists), so that a replay can apply them whichever content type the client sent.
var mapPatches = []string{
	`{"metadata":{"labels":{"color":"green"}}}`,
	`{"metadata":{"labels":{"color":"red","app":"db"}}}`,
	`{"metadata":{"labels":{"app":null}}}`,
	`{"metadata":{"labels":{"rnd.vapc.dev/skip":"yes"}}}`,
	`{"metadata":{"annotations":{"rnd.vapc.dev/block":"true"}}}`,
	`{"data":{"n":"9"}}`,
	`{"data":{"n":null}}`,
	`{"data":{"password":"x"}}`,
	`{"data":{"mode":"deny-all","n":"x"}}`,
}

var jsonPatches = []string{
	`[{"op":"add","path":"/data/n","value":"4"}]`,
	`[{"op":"replace","path":"/metadata/labels","value":{"app":"db","color":"blue"}}]`,
	`[{"op":"remove","path":"/metadata/labels/color"}]`,
	`[{"op":"test","path":"/metadata/name","value":"nope"}]`,
	`[{"op":"add","path":"/metadata/annotations","value":{"rnd.vapc.dev/block":"1"}}]`,
}

func (w *randomWorld) configMapPatch() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	w.patchExisting(u, configMapsGVR, ns, "configmap", cmNames, w.patch)
}

func (w *randomWorld) patch() (types.PatchType, string) {
	switch w.r.IntN(3) {
	case 0:
		return types.JSONPatchType, pick(w.r, jsonPatches...)
	case 1:
		return types.MergePatchType, pick(w.r, mapPatches...)
	}
	return types.StrategicMergePatchType, pick(w.r, mapPatches...)
}

func (w *randomWorld) configMapDelete() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	w.deleteExisting(u, configMapsGVR, ns, "configmap", cmNames)
}

func optionsString(o metav1.DeleteOptions) string {
	b, _ := json.Marshal(o)
	return string(b)
}

func (w *randomWorld) configMapDeleteCollection() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	sel := pick(w.r, "color=red", "app=db", "color in (blue,green)", "!app")
	o := metav1.DeleteOptions{}
	if chance(w.r, 0.4) {
		o.DryRun = []string{metav1.DryRunAll}
	}
	lo := metav1.ListOptions{LabelSelector: sel}
	if chance(w.r, 0.3) {
		// One name: the store reads that key alone (ListPredicate's MatchesSingle).
		lo.FieldSelector = "metadata.name=" + pick(w.r, cmNames...)
		if chance(w.r, 0.5) {
			lo.LabelSelector, sel = "", ""
		}
		sel = strings.TrimSpace(sel + " " + lo.FieldSelector)
	}
	err := w.client(u).Resource(configMapsGVR).Namespace(ns).DeleteCollection(w.ctx, o, lo)
	w.got(fmt.Sprintf("%s deletes the configmaps %s of %s%s", u.name, sel, ns, dry(o.DryRun)), err)
}

// Pods.

func (w *randomWorld) podCreate() {
	u, ns, name := w.user(), pick(w.r, w.namespaces()...), pick(w.r, podNames...)
	p := podIn(ns, name, pick(w.r, "", "w-0"), pick(w.r, "nginx", "busybox"), w.labels())
	if chance(w.r, 0.4) {
		// CPU only, a Burstable pod that kubectlMore may resize in place.
		cpu := pick(w.r, "100m", "0.1", "250m")
		c := p.Object["spec"].(map[string]any)["containers"].([]any)[0].(map[string]any)
		c["resources"] = map[string]any{"requests": map[string]any{"cpu": cpu}, "limits": map[string]any{"cpu": cpu}}
	}
	o := w.createOptions()
	w.got(fmt.Sprintf("%s creates pod %s/%s%s", u.name, ns, name, dry(o.DryRun)), w.tryCreate(w.client(u), podsGVR, p, o))
}

func (w *randomWorld) podUpdate() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	name := w.existing(podsGVR, ns, podNames)
	ri := w.client(u).Resource(podsGVR).Namespace(ns)
	switch w.r.IntN(3) {
	case 0:
		pt, body := w.patch()
		if pt == types.JSONPatchType && chance(w.r, 0.5) {
			body = `[{"op":"replace","path":"/spec/containers/0/image","value":"` + pick(w.r, "busybox", "nginx") + `"}]`
		}
		o := w.patchOptions()
		_, err := ri.Patch(w.ctx, name, pt, []byte(body), o)
		w.got(fmt.Sprintf("%s patches pod %s/%s (%s %s)%s", u.name, ns, name, pt, body, dry(o.DryRun)), err)
	default:
		// (Not the status: the pod strategy keeps the stored one, see TestRandomParity.)
		cur, err := ri.Get(w.ctx, name, metav1.GetOptions{})
		if err != nil {
			return
		}
		cur.SetLabels(toStrings(w.labels()))
		o := w.updateOptions()
		_, err = ri.Update(w.ctx, cur, o)
		w.got(fmt.Sprintf("%s updates pod %s/%s%s", u.name, ns, name, dry(o.DryRun)), err)
	}
}

func (w *randomWorld) podStatus() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	name := w.existing(podsGVR, ns, podNames)
	ri := w.client(u).Resource(podsGVR).Namespace(ns)
	switch w.r.IntN(3) {
	case 0:
		body := pick(w.r,
			`[{"op":"add","path":"/status/conditions","value":[{"type":"rnd.vapc.dev/Seen","status":"True"}]}]`,
			`[{"op":"add","path":"/status/phase","value":"Failed"}]`,
			`[{"op":"add","path":"/metadata/labels/color","value":"red"}]`,
		)
		o := w.patchOptions()
		_, err := ri.Patch(w.ctx, name, types.JSONPatchType, []byte(body), o, "status")
		w.got(fmt.Sprintf("%s patches the status of pod %s/%s (%s)%s", u.name, ns, name, body, dry(o.DryRun)), err)
	case 1:
		o := w.patchOptions()
		body := pick(w.r, `{"status":{"phase":"Failed"}}`, `{"status":{"message":"rnd"}}`, `{"metadata":{"labels":{"color":"blue"}}}`)
		_, err := ri.Patch(w.ctx, name, types.MergePatchType, []byte(body), o, "status")
		w.got(fmt.Sprintf("%s patches the status of pod %s/%s (%s)%s", u.name, ns, name, body, dry(o.DryRun)), err)
	default:
		// (Not the spec: the status strategy keeps the stored one, see TestRandomParity.)
		cur, err := ri.Get(w.ctx, name, metav1.GetOptions{})
		if err != nil {
			return
		}
		_ = unstructured.SetNestedField(cur.Object, pick(w.r, "rnd status", "other status"), "status", "message")
		if chance(w.r, 0.3) {
			cur.SetLabels(toStrings(w.labels()))
		}
		o := w.updateOptions()
		_, err = ri.UpdateStatus(w.ctx, cur, o)
		w.got(fmt.Sprintf("%s updates the status of pod %s/%s%s", u.name, ns, name, dry(o.DryRun)), err)
	}
}

func (w *randomWorld) podEvict() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	name := w.existing(podsGVR, ns, podNames)
	ev := obj(map[string]any{"apiVersion": "policy/v1", "kind": "Eviction", "metadata": map[string]any{"name": name, "namespace": ns}})
	if l := w.labels(); l != nil && chance(w.r, 0.5) {
		ev.Object["metadata"].(map[string]any)["labels"] = l
	}
	if chance(w.r, 0.6) {
		opts := map[string]any{"gracePeriodSeconds": pick(w.r, int64(0), int64(10))}
		if chance(w.r, 0.3) {
			opts["dryRun"] = []any{"All"}
		}
		ev.Object["deleteOptions"] = opts
	}
	o := w.createOptions()
	w.got(fmt.Sprintf("%s evicts pod %s/%s%s", u.name, ns, name, dry(o.DryRun)), w.tryCreate(w.client(u), podsGVR, ev, o, "eviction"))
}

func (w *randomWorld) podDelete() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	w.deleteExisting(u, podsGVR, ns, "pod", podNames)
}

// podBind binds a pod to a node through pods/binding, as the scheduler does. The replay knows
// the bound pod only approximately (the binding's new resourceVersion and PodScheduled
// condition are not in the log), so the scenario sends no request whose oldObject it is.
func (w *randomWorld) podBind() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	name := pick(w.r, podNames...)
	if l, err := w.dyn.Resource(podsGVR).Namespace(ns).List(w.ctx, metav1.ListOptions{}); err == nil {
		var unbound []string
		for _, p := range l.Items {
			if node, _, _ := unstructured.NestedString(p.Object, "spec", "nodeName"); node == "" && p.GetDeletionTimestamp() == nil {
				unbound = append(unbound, p.GetName())
			}
		}
		if len(unbound) > 0 {
			name = pick(w.r, unbound...)
		}
	}
	b := obj(map[string]any{"apiVersion": "v1", "kind": "Binding", "metadata": map[string]any{"name": name, "namespace": ns},
		"target": map[string]any{"apiVersion": "v1", "kind": "Node", "name": pick(w.r, "w-0", "w-1")}})
	o := w.createOptions()
	err := w.tryCreate(w.client(u), podsGVR, b, o, "binding")
	w.got(fmt.Sprintf("%s binds pod %s/%s%s", u.name, ns, name, dry(o.DryRun)), err)
	if err == nil && len(o.DryRun) == 0 {
		w.bound[ns+"/"+name] = true
	}
}

// podEphemeral adds an ephemeral container through pods/ephemeralcontainers.
func (w *randomWorld) podEphemeral() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	name := w.existing(podsGVR, ns, podNames)
	ri := w.client(u).Resource(podsGVR).Namespace(ns)
	cur, err := ri.Get(w.ctx, name, metav1.GetOptions{})
	if err != nil {
		return
	}
	ec, _, _ := unstructured.NestedSlice(cur.Object, "spec", "ephemeralContainers")
	ec = append(ec, map[string]any{"name": fmt.Sprintf("dbg-%d", w.step), "image": pick(w.r, "busybox", "nginx"), "targetContainerName": "c"})
	_ = unstructured.SetNestedSlice(cur.Object, ec, "spec", "ephemeralContainers")
	o := w.updateOptions()
	_, err = ri.Update(w.ctx, cur, o, "ephemeralcontainers")
	w.got(fmt.Sprintf("%s adds an ephemeral container to pod %s/%s%s", u.name, ns, name, dry(o.DryRun)), err)
}

// serviceAccountWrite asks for a token of the service account robot (which changes nothing
// stored), or labels it.
func (w *randomWorld) serviceAccountWrite() {
	u := w.user()
	ri := w.client(u).Resource(serviceAcctsGVR).Namespace(rndA)
	if chance(w.r, 0.5) {
		spec := map[string]any{"audiences": []any{pick(w.r, "rnd", "api")}, "expirationSeconds": int64(600)}
		bound := ""
		if chance(w.r, 0.3) {
			// Bound to a pod or secret that is missing or not robot's: TokenREST.Create
			// refuses it (404, 400) after validating admission.
			kind, name := pick(w.r, "Pod", "Secret"), pick(w.r, "pod-a", "nosuch")
			spec["boundObjectRef"] = map[string]any{"apiVersion": "v1", "kind": kind, "name": name}
			bound = " bound to " + kind + " " + name
		}
		tr := obj(map[string]any{"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "metadata": map[string]any{"name": "robot", "namespace": rndA},
			"spec": spec})
		o := w.createOptions()
		_, err := ri.Create(w.ctx, tr, o, "token")
		w.got(fmt.Sprintf("%s asks for a token of %s/robot%s%s", u.name, rndA, bound, dry(o.DryRun)), err)
		return
	}
	body := pick(w.r, mapPatches[:5]...)
	o := w.patchOptions()
	_, err := ri.Patch(w.ctx, "robot", types.MergePatchType, []byte(body), o)
	w.got(fmt.Sprintf("%s patches service account %s/robot (%s)%s", u.name, rndA, body, dry(o.DryRun)), err)
}

// Nodes.

func (w *randomWorld) nodePatch() {
	u := w.user()
	name := w.existing(nodesGVR, "", nodeNames)
	body := pick(w.r, `{"metadata":{"labels":{"color":"red"}}}`, `{"metadata":{"labels":{"color":null,"app":"db"}}}`,
		`{"spec":{"unschedulable":true}}`, `{"spec":{"unschedulable":false}}`, `{"metadata":{"labels":{"limit":"2"}}}`)
	o := w.patchOptions()
	_, err := w.client(u).Resource(nodesGVR).Patch(w.ctx, name, pick(w.r, types.MergePatchType, types.StrategicMergePatchType), []byte(body), o)
	w.got(fmt.Sprintf("%s patches node %s (%s)%s", u.name, name, body, dry(o.DryRun)), err)
}

func (w *randomWorld) nodeStatus() {
	u := w.user()
	name := w.existing(nodesGVR, "", nodeNames)
	body := pick(w.r,
		`[{"op":"replace","path":"/status/conditions/0/status","value":"False"}]`,
		`[{"op":"replace","path":"/status/conditions/0/status","value":"True"}]`,
		`[{"op":"add","path":"/metadata/labels/color","value":"green"}]`,
	)
	o := w.patchOptions()
	_, err := w.client(u).Resource(nodesGVR).Patch(w.ctx, name, types.JSONPatchType, []byte(body), o, "status")
	w.got(fmt.Sprintf("%s patches the status of node %s (%s)%s", u.name, name, body, dry(o.DryRun)), err)
}

func (w *randomWorld) nodeCreateDelete() {
	u := w.user()
	name := pick(w.r, nodeNames...)
	if chance(w.r, 0.5) {
		o := w.createOptions()
		w.got(fmt.Sprintf("%s creates node %s%s", u.name, name, dry(o.DryRun)), w.tryCreate(w.client(u), nodesGVR, node(name, w.labels()), o))
		return
	}
	ri := w.client(u).Resource(nodesGVR)
	o := w.deleteOptions(ri, name)
	w.got(fmt.Sprintf("%s deletes node %s %s", u.name, name, optionsString(o)), ri.Delete(w.ctx, name, o))
}

// Deployments.

func (w *randomWorld) deploymentWrite() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	ri := w.client(u).Resource(deploymentsGVR).Namespace(ns)
	switch w.r.IntN(4) {
	case 0:
		name := pick(w.r, depNames...)
		d := deploymentIn(ns, name, int64(1+w.r.IntN(5)))
		if l := w.labels(); l != nil {
			d.SetLabels(toStrings(l))
		}
		o := w.createOptions()
		w.got(fmt.Sprintf("%s creates deployment %s/%s%s", u.name, ns, name, dry(o.DryRun)), w.tryCreate(w.client(u), deploymentsGVR, d, o))
	case 1, 2:
		name := w.existing(deploymentsGVR, ns, depNames)
		body := pick(w.r, fmt.Sprintf(`{"spec":{"replicas":%d}}`, w.r.IntN(7)), `{"metadata":{"labels":{"color":"red"}}}`, `{"metadata":{"labels":{"app":"db"}}}`)
		o := w.patchOptions()
		_, err := ri.Patch(w.ctx, name, pick(w.r, types.MergePatchType, types.StrategicMergePatchType), []byte(body), o)
		w.got(fmt.Sprintf("%s patches deployment %s/%s (%s)%s", u.name, ns, name, body, dry(o.DryRun)), err)
	default:
		w.deleteExisting(u, deploymentsGVR, ns, "deployment", depNames)
	}
}

func (w *randomWorld) deploymentScale() { w.scale(deploymentsGVR, depNames) }

// workloadScale scales a ReplicaSet, a StatefulSet or a ReplicationController, updates its
// status with a body of the status alone, or labels it: the oldObject of a write after a
// scale is the object the scale left.
func (w *randomWorld) workloadScale() {
	gvr, names := pick(w.r, replicaSetsGVR, statefulSetsGVR, rcsGVR), []string{"rs-a", "rs-b"}
	switch gvr {
	case statefulSetsGVR:
		names = []string{"ss-a", "ss-b"}
	case rcsGVR:
		names = []string{"rc-a", "rc-b"}
	}
	if chance(w.r, 0.7) {
		w.scale(gvr, names)
		return
	}
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	name := w.existing(gvr, ns, names)
	if chance(w.r, 0.35) {
		// A status update whose body holds the status alone (a script's PUT): the status
		// strategy keeps the stored spec, and a ReplicationController's labels the body
		// leaves out are its template's when the server reads it back, not what admission
		// saw (apiserver.DefaultedOnRead).
		cur, err := w.dyn.Resource(gvr).Namespace(ns).Get(w.ctx, name, metav1.GetOptions{})
		if err != nil {
			return
		}
		body := obj(map[string]any{"apiVersion": cur.GetAPIVersion(), "kind": cur.GetKind(),
			"metadata": map[string]any{"name": name, "namespace": ns, "resourceVersion": cur.GetResourceVersion()}, "status": cur.Object["status"]})
		o := w.updateOptions()
		_, err = w.client(u).Resource(gvr).Namespace(ns).UpdateStatus(w.ctx, body, o)
		w.got(fmt.Sprintf("%s updates the status of %s %s/%s with a body of its status alone%s", u.name, gvr.Resource, ns, name, dry(o.DryRun)), err)
		return
	}
	body := pick(w.r, `{"metadata":{"labels":{"color":"red"}}}`, `{"metadata":{"labels":{"app":"db"}}}`)
	o := w.patchOptions()
	_, err := w.client(u).Resource(gvr).Namespace(ns).Patch(w.ctx, name, types.MergePatchType, []byte(body), o)
	w.got(fmt.Sprintf("%s patches %s %s/%s (%s)%s", u.name, gvr.Resource, ns, name, body, dry(o.DryRun)), err)
}

// scale scales an object through its scale subresource, with a patch or with the update of the
// Scale it reads.
func (w *randomWorld) scale(gvr schema.GroupVersionResource, names []string) {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	name := w.existing(gvr, ns, names)
	ri := w.client(u).Resource(gvr).Namespace(ns)
	replicas := w.r.IntN(7)
	if chance(w.r, 0.5) {
		o := w.patchOptions()
		pt, body := types.MergePatchType, fmt.Sprintf(`{"spec":{"replicas":%d}}`, replicas)
		if chance(w.r, 0.3) {
			pt, body = types.JSONPatchType, fmt.Sprintf(`[{"op":"replace","path":"/spec/replicas","value":%d}]`, replicas)
		}
		_, err := ri.Patch(w.ctx, name, pt, []byte(body), o, "scale")
		w.got(fmt.Sprintf("%s scales %s %s/%s to %d (%s)%s", u.name, gvr.Resource, ns, name, replicas, pt, dry(o.DryRun)), err)
		return
	}
	sc, err := ri.Get(w.ctx, name, metav1.GetOptions{}, "scale")
	if err != nil {
		return
	}
	_ = unstructured.SetNestedField(sc.Object, int64(replicas), "spec", "replicas")
	how := ""
	if chance(w.r, 0.3) {
		sc.SetResourceVersion("") // an unconditional update
		how = " unconditionally"
	}
	o := w.updateOptions()
	_, err = ri.Update(w.ctx, sc, o, "scale")
	w.got(fmt.Sprintf("%s scales %s %s/%s to %d (update%s)%s", u.name, gvr.Resource, ns, name, replicas, how, dry(o.DryRun)), err)
}

// Widgets, a custom resource: no strategic merge patch (the apiserver refuses it before
// admission), no update without resourceVersion (a custom resource's strategy refuses it), no
// status through the main resource and nothing else through the status subresource (the
// strategies keep the stored ones).

func (w *randomWorld) widgetWrite() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	gvr := w.widgetVersion()
	ri := w.client(u).Resource(gvr).Namespace(ns)
	switch w.r.IntN(6) {
	case 0, 1:
		name := pick(w.r, widgetNames...)
		o := w.createOptions()
		wg := widgetIn(ns, name, w.labels(), int64(w.r.IntN(8)), pick(w.r, "red", "green", "blue"))
		wg.SetAPIVersion(gvr.GroupVersion().String())
		if chance(w.r, 0.3) {
			// The status subresource's strategy drops it before admission.
			_ = unstructured.SetNestedField(wg.Object, "Sent", "status", "phase")
		}
		w.got(fmt.Sprintf("%s creates widget %s/%s (%s)%s", u.name, ns, name, gvr.Version, dry(o.DryRun)), w.tryCreate(w.client(u), gvr, wg, o))
	case 2:
		name := w.existing(widgetsGVR, ns, widgetNames)
		cur, err := ri.Get(w.ctx, name, metav1.GetOptions{})
		if err != nil {
			return
		}
		if chance(w.r, 0.5) {
			_ = unstructured.SetNestedField(cur.Object, int64(w.r.IntN(8)), "spec", "size")
		} else {
			cur.SetLabels(toStrings(w.labels()))
		}
		o := w.updateOptions()
		_, err = ri.Update(w.ctx, cur, o)
		w.got(fmt.Sprintf("%s updates widget %s/%s (%s)%s", u.name, ns, name, gvr.Version, dry(o.DryRun)), err)
	case 3:
		w.patchExisting(u, gvr, ns, "widget "+gvr.Version, widgetNames, func() (types.PatchType, string) {
			pt, body := types.MergePatchType, pick(w.r, `{"spec":{"size":6}}`, `{"spec":{"color":"red","size":1}}`, `{"metadata":{"labels":{"color":"blue"}}}`, `{"metadata":{"labels":{"app":null}}}`, `{"spec":{"shape":null,"size":2}}`, `{"spec":{"shape":"square"}}`)
			if chance(w.r, 0.4) {
				pt, body = types.JSONPatchType, pick(w.r, `[{"op":"replace","path":"/spec/size","value":7}]`, `[{"op":"add","path":"/metadata/annotations","value":{"rnd.vapc.dev/block":"1"}}]`)
			}
			return pt, body
		})
	case 4:
		// kubectl scale: a merge patch of the scale subresource.
		name := w.existing(widgetsGVR, ns, widgetNames)
		body := fmt.Sprintf(`{"spec":{"replicas":%d}}`, w.r.IntN(8))
		o := w.patchOptions()
		_, err := ri.Patch(w.ctx, name, types.MergePatchType, []byte(body), o, "scale")
		w.got(fmt.Sprintf("%s scales widget %s/%s (%s %s)%s", u.name, ns, name, gvr.Version, body, dry(o.DryRun)), err)
	default:
		w.deleteExisting(u, widgetsGVR, ns, "widget", widgetNames)
	}
}

func (w *randomWorld) widgetStatus() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	name := w.existing(widgetsGVR, ns, widgetNames)
	// A change of the spec through /status is dropped before admission.
	body := fmt.Sprintf(`{"status":{"phase":%q}%s}`, pick(w.r, "Ready", "Failed", "Pending"), pick(w.r, "", "", `,"spec":{"size":9}`))
	o := w.patchOptions()
	_, err := w.client(u).Resource(widgetsGVR).Namespace(ns).Patch(w.ctx, name, types.MergePatchType, []byte(body), o, "status")
	w.got(fmt.Sprintf("%s patches the status of widget %s/%s (%s)%s", u.name, ns, name, body, dry(o.DryRun)), err)
}

// Events, in both APIs: a policy on events.k8s.io with matchPolicy Equivalent sees core ones.

func (w *randomWorld) eventCreate() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	w.events++
	name := fmt.Sprintf("ev-%d", w.events)
	var e *unstructured.Unstructured
	gvr := eventsGVR
	meta := map[string]any{"name": name, "namespace": ns}
	if l := w.labels(); l != nil {
		meta["labels"] = l
	}
	if chance(w.r, 0.5) {
		e = obj(map[string]any{"apiVersion": "v1", "kind": "Event", "metadata": meta,
			"involvedObject": map[string]any{"kind": "ConfigMap", "namespace": ns, "name": "cm-ab"},
			"reason":         "Rnd", "message": "core event", "type": "Normal", "source": map[string]any{"component": "rnd"}})
	} else {
		gvr = eventsV1GVR
		e = obj(map[string]any{"apiVersion": "events.k8s.io/v1", "kind": "Event", "metadata": meta,
			"eventTime": time.Now().UTC().Format("2006-01-02T15:04:05.000000Z07:00"), "reportingController": "rnd.vapc.dev/test",
			"reportingInstance": "rnd", "action": "Test", "reason": "Rnd", "note": "events.k8s.io event", "type": "Normal",
			"regarding": map[string]any{"kind": "ConfigMap", "namespace": ns, "name": "cm-ab"}})
	}
	o := w.createOptions()
	w.got(fmt.Sprintf("%s creates %s event %s/%s%s", u.name, gvr.GroupVersion(), ns, name, dry(o.DryRun)), w.tryCreate(w.client(u), gvr, e, o))
}

func (w *randomWorld) secretWrite() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	name := pick(w.r, "s1", "sec-a")
	if chance(w.r, 0.6) {
		s := obj(map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": name, "namespace": ns, "labels": w.labels()},
			"stringData": map[string]any{"password": "x"}})
		if s.GetLabels() == nil {
			unstructured.RemoveNestedField(s.Object, "metadata", "labels")
		}
		o := w.createOptions()
		w.got(fmt.Sprintf("%s creates secret %s/%s%s", u.name, ns, name, dry(o.DryRun)), w.tryCreate(w.client(u), secretsGVR, s, o))
		return
	}
	ri := w.client(u).Resource(secretsGVR).Namespace(ns)
	o := w.deleteOptions(ri, name)
	w.got(fmt.Sprintf("%s deletes secret %s/%s %s", u.name, ns, name, optionsString(o)), ri.Delete(w.ctx, name, o))
}

// rawDelete deletes a ConfigMap with options in the query rather than a body, as some clients
// do, or with both.
func (w *randomWorld) rawDelete() {
	u, ns := w.user(), pick(w.r, w.namespaces()...)
	name := w.existing(configMapsGVR, ns, cmNames)
	query := pick(w.r, "gracePeriodSeconds=0", "orphanDependents=true", "orphanDependents=yes", "orphanDependents=",
		"propagationPolicy=Orphan", "dryRun=All", "dryRun=All&gracePeriodSeconds=5", "")
	var body []byte
	if chance(w.r, 0.3) {
		body = []byte(`{"apiVersion":"v1","kind":"DeleteOptions","gracePeriodSeconds":3}`)
	}
	err := w.rawRequest(u, http.MethodDelete, fmt.Sprintf("/api/v1/namespaces/%s/configmaps/%s?%s", ns, name, query), body)
	w.got(fmt.Sprintf("%s deletes configmap %s/%s with query %q and body %s", u.name, ns, name, query, body), err)
}

// rawRequest sends a request as the user and returns the API status of a failure.
func (w *randomWorld) rawRequest(u rndUser, method, path string, body []byte) error {
	c, ok := w.raw[u.name]
	if !ok {
		imp := rest.ImpersonationConfig{}
		if u.name != harness.AdminUser {
			imp = rest.ImpersonationConfig{UserName: u.name, Groups: u.groups, UID: u.uid, Extra: u.extra}
		}
		var err error
		if c, err = rest.HTTPClientFor(w.recordingConfig(imp)); err != nil {
			w.t.Fatal(err)
		}
		w.raw[u.name] = c
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(w.ctx, method, w.s.URL()+path, rd)
	if err != nil {
		return err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := c.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	if resp.StatusCode < 300 {
		return nil
	}
	st := metav1.Status{}
	if json.Unmarshal(data, &st) != nil || st.Code == 0 {
		return fmt.Errorf("%s %s: %d %s", method, path, resp.StatusCode, data)
	}
	return &apierrors.StatusError{ErrStatus: st}
}

// kubectlStep sends requests the way kubectl shapes them.
func (w *randomWorld) kubectlStep() {
	u := w.user()
	ns := pick(w.r, w.namespaces()...)
	var args []string
	switch w.r.IntN(6) {
	case 0:
		args = []string{"label", "configmap", "-n", ns, w.existing(configMapsGVR, ns, cmNames), "--overwrite", "color=" + pick(w.r, "red", "blue")}
	case 1:
		args = []string{"annotate", "configmap", "-n", ns, w.existing(configMapsGVR, ns, cmNames), "--overwrite", "rnd.vapc.dev/block=yes"}
	case 2:
		args = []string{"scale", "deployment", "-n", ns, w.existing(deploymentsGVR, ns, depNames), fmt.Sprintf("--replicas=%d", w.r.IntN(6))}
	case 3:
		args = []string{"delete", "configmap", "-n", ns, w.existing(configMapsGVR, ns, cmNames), "--dry-run=server"}
	case 4:
		args = []string{"create", "configmap", "-n", ns, pick(w.r, cmNames...), "--from-literal=n=" + pick(w.r, "1", "x")}
	default:
		args = []string{pick(w.r, "cordon", "uncordon"), w.existing(nodesGVR, "", nodeNames)}
	}
	args = append(args, u.kubectlAs()...)
	w.got("kubectl "+strings.Join(args, " "), w.kubectl(args...))
}

// kubectlAs are kubectl's flags that impersonate the user (none for the administrator), as
// client does.
func (u rndUser) kubectlAs() []string {
	if u.name == harness.AdminUser {
		return nil
	}
	as := []string{"--as=" + u.name}
	for _, g := range u.groups {
		as = append(as, "--as-group="+g)
	}
	if u.uid != "" {
		as = append(as, "--as-uid="+u.uid)
	}
	for _, k := range slices.Sorted(maps.Keys(u.extra)) {
		for _, v := range u.extra[k] {
			as = append(as, "--as-user-extra="+k+"="+v)
		}
	}
	return as
}

// kubectlEveryday runs, as a random user, one of the kubectl commands of everyday work, each
// its own shape of requests: rollout restart, set image and rollout undo (strategic merge
// patches of a Deployment; undo only with the controllers, which keep the history it reads),
// taint (node patches), client-side apply (a create with the last-applied annotation, or a
// patch of it), create deployment, expose, create job --from, autoscale, run, a forced delete,
// create token, certificate approve and deny, drain (cordon, then evictions), and create
// secret.
func (w *randomWorld) kubectlEveryday() {
	u := w.user()
	ns := pick(w.r, w.namespaces()...)
	dep := func() string { return w.existing(deploymentsGVR, ns, depNames) }
	var args []string
	switch n := w.r.IntN(15); {
	case n == 0 || (n == 2 && !w.controllers):
		args = []string{"rollout", "restart", "deployment/" + dep(), "-n", ns}
	case n == 1:
		args = []string{"set", "image", "deployment/" + dep(), "c=" + pick(w.r, "busybox:1.36", "nginx:1.27"), "-n", ns}
	case n == 2:
		args = []string{"rollout", "undo", "deployment/" + dep(), "-n", ns}
	case n == 3:
		taint := pick(w.r, "rnd.vapc.dev/taint=yes:NoSchedule", "rnd.vapc.dev/taint-", "rnd.vapc.dev/evict=now:NoExecute", "rnd.vapc.dev/evict-")
		args = []string{"taint", "node", w.existing(nodesGVR, "", nodeNames), taint, "--overwrite"}
	case n == 4:
		path := filepath.Join(w.t.TempDir(), "cm.yaml")
		body := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s\n  labels:\n    color: %s\ndata:\n  n: %q\n",
			pick(w.r, "cm-applied", "cm-ab"), ns, pick(w.r, "red", "blue"), pick(w.r, "1", "2", "x"))
		if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
			w.t.Fatal(err)
		}
		args = []string{"apply", "-f", path}
	case n == 5:
		args = []string{"create", "deployment", pick(w.r, "kd-a", "kd-b"), "--image=" + pick(w.r, "nginx", "busybox"), "--replicas=" + pick(w.r, "1", "2"), "-n", ns}
	case n == 6:
		args = []string{"expose", "deployment", pick(w.r, "kd-a", dep()), "--port=80", "--name=" + pick(w.r, "svc-k", "svc-l"), "-n", ns}
	case n == 7:
		args = []string{"create", "job", pick(w.r, "jk-a", "jk-b"), "--from=cronjob/" + w.existing(cronJobsGVR, ns, cronNames), "-n", ns}
	case n == 8:
		args = []string{"autoscale", "deployment", dep(), "--min=1", "--max=" + pick(w.r, "3", "5"), "--cpu-percent=" + pick(w.r, "50", "80"), "-n", ns}
	case n == 9:
		args = []string{"run", pick(w.r, podNames...), "--image=" + pick(w.r, "nginx", "busybox"), "--labels=app=" + pick(w.r, "web", "db"), "--restart=" + pick(w.r, "Never", "Always"), "-n", ns}
	case n == 10:
		args = []string{"delete", "pod", w.existing(podsGVR, ns, podNames), "--grace-period=0", "--force", "--wait=false", "-n", ns}
	case n == 11:
		sa := "default"
		if ns == rndA && chance(w.r, 0.5) {
			sa = "robot" // of rnd-a only
		}
		args = []string{"create", "token", sa, "--duration=" + pick(w.r, "10m", "1h"), "-n", ns}
	case n == 12:
		args = []string{"certificate", pick(w.r, "approve", "deny"), w.undecidedCSR()}
	case n == 13:
		args = []string{"drain", pick(w.r, "w-1", "w-22", "w-0"), "--ignore-daemonsets", "--delete-emptydir-data", "--force", "--timeout=3s", "--grace-period=1"}
	default:
		args = []string{"create", "secret", "generic", pick(w.r, "sec-k", "sec-l"), "--from-literal=token=" + pick(w.r, "a", "b"), "-n", ns}
	}
	args = append(args, u.kubectlAs()...)
	w.got("kubectl "+strings.Join(args, " "), w.kubectl(args...))
}

// World changes, each followed by settle so that the next request sees it.

// settle waits until kube-apiserver's policy informers hold what the scenario wrote (sync: the
// ValidatingAdmissionPolicy plugin's), and then 10 to 300 ms more (the admission plugins'
// informers, LimitRanger's, Priority's, follow within a few ms on loopback): the next request
// comes within the replay's informer lag of the write most of the time, where the replay gives
// the decision on the informers as the log's order leaves them as likely, the version before
// the write its alternative.
func (w *randomWorld) settle() {
	w.sync(w.ctx)
	w.settleLag()
}

// settleLag sleeps 10 to 300 ms.
func (w *randomWorld) settleLag() {
	time.Sleep(time.Duration(10+w.lag.IntN(291)) * time.Millisecond)
}

func (w *randomWorld) namespaceLabels() {
	u := pick(w.r, rndUsers[0], rndUsers[0], w.user())
	ns := pick(w.r, w.namespaces()...)
	body := pick(w.r, `{"metadata":{"labels":{"tier":"gold"}}}`, `{"metadata":{"labels":{"tier":"silver"}}}`, `{"metadata":{"labels":{"tier":null}}}`,
		`{"metadata":{"labels":{"env":"prod","team":"blue"}}}`, `{"metadata":{"labels":{"env":"dev","team":null}}}`,
		// Pod Security Admission: the PodSecurity plugin refuses, before the policies, the
		// pods (and ephemeral containers) a namespace's enforce level does not allow, and
		// warns of those its warn level does not.
		`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"baseline","pod-security.kubernetes.io/warn":"restricted"}}}`,
		`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":null,"pod-security.kubernetes.io/audit":"restricted"}}}`,
		`{"metadata":{"labels":{"pod-security.kubernetes.io/enforce":"restricted","pod-security.kubernetes.io/enforce-version":"v1.36"}}}`)
	_, err := w.client(u).Resource(namespacesGVR).Patch(w.ctx, ns, types.MergePatchType, []byte(body), metav1.PatchOptions{})
	w.got(fmt.Sprintf("%s labels namespace %s %s", u.name, ns, body), err)
	w.settle()
}

func (w *randomWorld) paramChange() {
	what, do := w.paramWrite()
	w.got(what, do())
	w.settle()
}

// paramWrite is a random write to the params of the random policies: what it does, and the
// write.
func (w *randomWorld) paramWrite() (string, func() error) {
	ctx := w.ctx
	switch w.r.IntN(8) {
	case 6:
		ns, name := rndParams, pick(w.r, "rl-0", "rl-1", "rl-2", "rl-9")
		if chance(w.r, 0.3) {
			ns, name = pick(w.r, rndA, rndB, rndC), "rl-local"
		}
		rl := replicaLimitIn(ns, name, map[string]any{"set": pick(w.r, "x", "y", "z")}, int64(w.r.IntN(6)), pick(w.r, "on", "deny-all", "skip"), pick(w.r, "", "cm-a", "wg", "dep"))
		return "the administrator writes param replicalimit " + ns + "/" + name, func() error {
			_, err := w.tryPut(ctx, rl)
			return err
		}
	case 7:
		name := pick(w.r, "rl-0", "rl-1", "rl-2")
		return "the administrator deletes param replicalimit " + rndParams + "/" + name, func() error {
			return w.dyn.Resource(replicaLimitsGVR).Namespace(rndParams).Delete(ctx, name, metav1.DeleteOptions{})
		}
	case 0, 1:
		name := pick(w.r, "p-0", "p-1", "p-2", "p-9")
		cm := configMap(rndParams, name, map[string]any{"set": pick(w.r, "x", "y", "z")}, map[string]any{
			"max": pick(w.r, "4", "6", "x", "20"), "mode": pick(w.r, "on", "deny-all", "skip"), "prefix": pick(w.r, "cm-a", "pod", "d"),
		})
		return "the administrator writes param " + rndParams + "/" + name, func() error {
			_, err := w.tryPut(ctx, cm)
			return err
		}
	case 2:
		ns := pick(w.r, rndA, rndB, rndC)
		cm := configMap(ns, "p-local", nil, map[string]any{"max": pick(w.r, "5", "12"), "mode": pick(w.r, "on", "deny-all", "skip")})
		return "the administrator writes param " + ns + "/p-local", func() error {
			_, err := w.tryPut(ctx, cm)
			return err
		}
	case 3:
		name := pick(w.r, "p-0", "p-1", "p-2", "p-9")
		return "the administrator deletes param " + rndParams + "/" + name, func() error {
			return w.dyn.Resource(configMapsGVR).Namespace(rndParams).Delete(ctx, name, metav1.DeleteOptions{})
		}
	case 4:
		name := pick(w.r, "pn-0", "pn-1", "pn-2", "pn-9")
		n := node(name, map[string]any{"set": pick(w.r, "x", "y"), "limit": pick(w.r, "3", "6", "x", "10"), "mode": pick(w.r, "on", "deny-all")})
		if chance(w.r, 0.3) {
			n.Object["spec"] = map[string]any{"unschedulable": true}
		}
		return "the administrator writes param node " + name, func() error {
			_, err := w.tryPut(ctx, n)
			return err
		}
	default:
		name := pick(w.r, "pn-0", "pn-1", "pn-2")
		return "the administrator deletes param node " + name, func() error {
			return w.dyn.Resource(nodesGVR).Delete(ctx, name, metav1.DeleteOptions{})
		}
	}
}

// namespaceLife creates rnd-d (with its service account), or deletes it once it exists: it then
// stays Terminating, unless the controllers run (the namespace controller removes it).
func (w *randomWorld) namespaceLife() {
	u := pick(w.r, rndUsers[0], w.user())
	if !w.nsDone {
		ns := obj(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": rndD, "labels": map[string]any{"tier": pick(w.r, "gold", "silver")}}})
		err := w.tryCreate(w.client(u), namespacesGVR, ns, metav1.CreateOptions{})
		w.got(u.name+" creates namespace "+rndD, err)
		if err == nil {
			w.nsDone = true
			sa := obj(map[string]any{"apiVersion": "v1", "kind": "ServiceAccount", "metadata": map[string]any{"name": "default", "namespace": rndD}})
			w.got("the administrator creates the default service account of "+rndD, w.tryCreate(w.dyn, serviceAcctsGVR, sa, metav1.CreateOptions{}))
		}
	} else {
		o := metav1.DeleteOptions{}
		if chance(w.r, 0.5) {
			o.DryRun = []string{metav1.DryRunAll}
		}
		err := w.client(u).Resource(namespacesGVR).Delete(w.ctx, rndD, o)
		w.got(u.name+" deletes namespace "+rndD+dry(o.DryRun), err)
		if err == nil && o.DryRun == nil && w.controllers {
			// The namespace controller empties and removes it: it may be created again.
			w.nsDone = false
		}
	}
	w.settle()
}

// checkCoverage logs how many requests of the features the scenario exercises the replay
// decided (custom resources, ReplicaLimit params in a result, scale subresources), and, when
// strict (the default seed and steps, whose policies do use them), fails the test when one is
// none: another seed may generate no policy that reads them.
func (w *randomWorld) checkCoverage(byID map[string]*replay.Record, from int, strict bool) {
	w.t.Helper()
	counts := map[string]int{}
	for _, rec := range byID {
		if rec.Line < from || rec.Decision == replay.DecisionIndeterminate {
			continue
		}
		if strings.HasPrefix(rec.Resource, "widgets") {
			counts["widgets"]++
		}
		if rec.Subresource == "scale" {
			counts["scale"]++
		}
		for _, res := range rec.Results {
			if strings.Contains(res.Param, "rl-") {
				counts["ReplicaLimit params"]++
				break
			}
		}
	}
	w.t.Logf("decided: %v", counts)
	for _, k := range []string{"widgets", "scale", "ReplicaLimit params"} {
		if strict && counts[k] == 0 {
			errorf(w.t, "the replay decided no request of %s", k)
		}
	}
}

// checkWarnings holds the replay's predicted warnings to those of every response of the
// scenario: the ValidatingAdmissionPolicy warnings of Warn bindings, in any order (the
// dispatcher follows its informers' order).
func (w *randomWorld) checkWarnings(byID map[string]*replay.Record, from int) {
	w.t.Helper()
	vap := func(ws []string) []string {
		var out []string
		for _, s := range ws {
			if strings.HasPrefix(s, "Validation failed for ValidatingAdmissionPolicy") {
				out = append(out, s)
			}
		}
		sort.Strings(out)
		return out
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	checked, raced := 0, 0
	for _, resp := range w.responses {
		if resp.method == http.MethodGet || resp.auditID == "" {
			continue
		}
		got := vap(resp.warnings)
		var want []string
		rec := byID[resp.auditID]
		if rec != nil {
			if rec.Line < from || rec.Decision == replay.DecisionIndeterminate || rec.Recorded == replay.RecordedUnknown ||
				(rec.Recorded == replay.RecordedDeny && !strings.HasPrefix(rec.RecordedBy, "ValidatingAdmissionPolicy")) ||
				slices.Contains(rec.Notes, replay.UnknownWarningsNote) || slices.Contains(rec.Notes, replay.MapOrderWarningsNote) {
				// Not evaluated, or another admission plugin refused it, maybe before the
				// policies ran; or its warnings are not known (a binding created moments before,
				// a message in map order).
				continue
			}
			want = vap(rec.Warnings)
		} else if (resp.code == http.StatusNotFound || resp.code == http.StatusConflict) && (w.controllers || w.racing[resp.auditID]) {
			// Refused before admission on the live object; the store's first attempt, on its
			// watch cache's copy from before a write that raced it, may have warned all the
			// same. The replay makes no claim on it.
			raced++
			continue
		}
		if len(got) > 0 || len(want) > 0 {
			checked++
		}
		if !slices.Equal(got, want) {
			errorf(w.t, "%s %s (audit ID %s, %s): the server warned %q, the replay predicts %q", resp.method, resp.url, resp.auditID, describeRecord(rec), got, want)
		}
	}
	w.t.Logf("%d responses with policy warnings checked, %d refused after a race not", checked, raced)
}

// randomMutatingPolicy is a MutatingAdmissionPolicy of a random shape that writes the
// annotation rnd.vapc.dev/block, which random validations refuse and the observer records, on
// ConfigMaps of the namespaces with an env label; shape describes it.
func randomMutatingPolicy(r *rand.Rand) (*admissionregistrationv1.MutatingAdmissionPolicy, *admissionregistrationv1.MutatingAdmissionPolicyBinding, string) {
	p := &admissionregistrationv1.MutatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: "rnd-map"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			FailurePolicy:      ptr.To(pick(r, admissionregistrationv1.Fail, admissionregistrationv1.Ignore)),
			ReinvocationPolicy: pick(r, admissionregistrationv1.NeverReinvocationPolicy, admissionregistrationv1.IfNeededReinvocationPolicy),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				NamespaceSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpExists}}},
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
					Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
					Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				}}},
			},
		},
	}
	b := &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "MutatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "rnd-map"},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "rnd-map"},
	}
	shape := []string{string(p.Spec.ReinvocationPolicy), string(*p.Spec.FailurePolicy)}
	value := "'map'"
	allow := admissionregistrationv1.AllowAction
	switch r.IntN(3) {
	case 1:
		p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
		b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Name: "p-0", Namespace: rndParams, ParameterNotFoundAction: &allow}
		value = "params.?data[?'mode'].orValue('none')"
		shape = append(shape, "param p-0")
	case 2:
		p.Spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
		b.Spec.ParamRef = &admissionregistrationv1.ParamRef{Namespace: rndParams, ParameterNotFoundAction: &allow,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"set": "x"}}}
		value = "params.?data[?'mode'].orValue('none')"
		shape = append(shape, "params set=x")
	}
	switch r.IntN(6) {
	case 0, 1, 2:
		p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "red", Expression: "object.metadata.?labels[?'color'].orValue('') == 'red'"}}
		shape = append(shape, "red only")
	case 3:
		// Known for the administrator only (system:masters).
		p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "readers", Expression: "authorizer.group('').resource('secrets').namespace(object.metadata.namespace).check('list').allowed()"}}
		shape = append(shape, "secret readers only")
	case 4:
		// A create with generateName has no name yet when mutating admission runs: the
		// condition fails ("no such key"), which failurePolicy Fail refuses; validating
		// admission sees the name generated.
		p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "cm-names", Expression: "object.metadata.name.startsWith('cm-')"}}
		shape = append(shape, "names cm-* only")
	}
	applyConfiguration := r.IntN(2) == 0
	// The annotation, or a label beside the one wh-map sets on blue and green ConfigMaps:
	// their changes then overlap, and the replay tries both orders.
	field, key, escaped := "annotations", "rnd.vapc.dev/block", "rnd.vapc.dev~1block"
	if r.IntN(3) == 0 {
		field, key, escaped = "labels", "rnd", "rnd"
	}
	shape = append(shape, "sets "+field+"["+key+"]")
	if r.IntN(2) == 0 {
		// Widgets too: a custom resource, typed by its CRD's schema.
		p.Spec.MatchConstraints.ResourceRules = append(p.Spec.MatchConstraints.ResourceRules, admissionregistrationv1.NamedRuleWithOperations{RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{rndGroup}, APIVersions: []string{"v1"}, Resources: []string{"widgets"}},
		}})
		shape = append(shape, "widgets too")
	}
	widgetSpec := len(p.Spec.MatchConstraints.ResourceRules) > 1 && r.IntN(2) == 0
	if applyConfiguration {
		p.Spec.Mutations = []admissionregistrationv1.Mutation{{
			PatchType:          admissionregistrationv1.PatchTypeApplyConfiguration,
			ApplyConfiguration: &admissionregistrationv1.ApplyConfiguration{Expression: "Object{metadata: Object.metadata{" + field + ": {'" + key + "': " + value + "}}}"},
		}}
		shape = append(shape, "apply configuration")
	} else {
		if r.IntN(6) == 0 {
			// A number where the object's type wants a string: the server cannot decode the
			// patched ConfigMap and answers 500 whatever the failurePolicy, without naming the
			// policy; a Widget's metadata takes it as far as its validation.
			value = "1"
			shape = append(shape, "a number for a string")
			// On red objects only: the set-up's ConfigMaps and Widgets are not (seed r:1021),
			// beside the policy's other match condition (seed m:1032).
			if !slices.ContainsFunc(p.Spec.MatchConditions, func(c admissionregistrationv1.MatchCondition) bool { return c.Name == "red" }) {
				p.Spec.MatchConditions = append(p.Spec.MatchConditions, admissionregistrationv1.MatchCondition{Name: "red", Expression: "object.metadata.?labels[?'color'].orValue('') == 'red'"})
				shape = append(shape, "red only")
			}
		}
		p.Spec.Mutations = []admissionregistrationv1.Mutation{{
			PatchType: admissionregistrationv1.PatchTypeJSONPatch,
			JSONPatch: &admissionregistrationv1.JSONPatch{Expression: "has(object.metadata." + field + ") ? " +
				"[JSONPatch{op: 'add', path: '/metadata/" + field + "/" + escaped + "', value: " + value + "}] : " +
				"[JSONPatch{op: 'add', path: '/metadata/" + field + "', value: {'" + key + "': " + value + "}}]"},
		}}
		shape = append(shape, "JSON patch")
		if field == "labels" && r.IntN(3) == 0 {
			// Without the guard, the patch fails on an object without labels: a refusal
			// (failurePolicy Fail) or nothing (Ignore), whichever the server made.
			p.Spec.Mutations[0].JSONPatch.Expression = "[JSONPatch{op: 'add', path: '/metadata/labels/rnd', value: " + value + "}]"
			shape = append(shape, "unguarded")
			if *p.Spec.FailurePolicy == admissionregistrationv1.Fail && len(p.Spec.MatchConditions) == 0 {
				// On ConfigMaps named cm-* only: the refusal would fail the set-up's
				// ConfigMaps without labels (p-local; seed c:902).
				p.Spec.MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "cm-names", Expression: "object.metadata.name.startsWith('cm-')"}}
				shape = append(shape, "names cm-* only")
			}
		}
	}
	if widgetSpec {
		// A Widget's spec and status changed too: the server's store prepares the object
		// after mutating admission (a spec change bumps the generation, a status set on a
		// create or on the main resource is dropped) and before validating admission.
		p.Spec.Mutations = append(p.Spec.Mutations, admissionregistrationv1.Mutation{
			PatchType: admissionregistrationv1.PatchTypeJSONPatch,
			JSONPatch: &admissionregistrationv1.JSONPatch{Expression: "object.kind != 'Widget' ? [] : " +
				"[JSONPatch{op: 'add', path: '/spec/color', value: 'mapped'}, JSONPatch{op: 'add', path: '/status', value: {'phase': 'Mapped'}}]"},
		})
		shape = append(shape, "widget spec and status")
	}
	return p, b, strings.Join(shape, ", ")
}
