package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/vapc-dev/vapc/verify/replay/exporttest"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// The logs of testdata/races were recorded by a real kube-apiserver v1.37.0 with the policies
// of their folder installed (those of testdata/races/policies.yaml where the folder has none),
// while clients raced each other on one object (cut to the events of that object). The
// verdicts in them are the server's.
const races = "testdata/races"

// TestRaceRecordings replays the race recordings (see replayRecordings).
func TestRaceRecordings(t *testing.T) {
	t.Parallel()
	replayRecordings(t, races, []recordingCase{
		// A merge patch that changed nothing (received while kubectl scale ran, logged after
		// it) answered with the version before the scale: it read that version, where the
		// log's order has it read the scale's, and was not the write that stored it.
		{name: "no-op patch", dir: "noop-patch", want: map[int]string{15: "admit certain", 16: "admit certain"}},
		{name: "no-op patch checked", dir: "noop-patch", check: true, want: map[int]string{15: "admit certain", 16: "admit certain"}},
		// The binding of the cluster's MutatingAdmissionPolicy (not replayed) that adds the
		// label the replayed policy denies deleted 468 ms before a create the server refused:
		// its policy source compiles what its informers hold within two seconds.
		{name: "cluster MAP unbound", dir: "cluster-map-unbound", want: map[int]string{40: "indeterminate indeterminate"}},
		// The log patches the replayed policy and its binding to another spec (another
		// expression, Warn and Audit, another param): the server decided with that one
		// (it admitted line 178, which the replayed one denies): policy-changed, the replayed
		// one's deny its alternative.
		{name: "policy respecified", dir: "policy-respecified", want: map[int]string{178: "indeterminate indeterminate"}},
		{name: "policy respecified checked", dir: "policy-respecified", check: true, want: map[int]string{178: "indeterminate indeterminate"}},
		// A blind update received while another update of the ConfigMap ran, and logged
		// before it: its first attempt read the version before and published its annotation,
		// conflicted with the other's commit, and its retry on what that stored was refused.
		{name: "conflict retry", dir: "conflict-retry", want: map[int]string{25: "admit likely"}},
		{name: "conflict retry checked", dir: "conflict-retry", check: true, want: map[int]string{25: "deny certain"}},
		// Two graceful DELETEs of one pod: the one logged first was refused on its retry, on
		// the pod the other had marked deleted (its annotation is the first attempt's).
		// Line 84: the other DELETE marked the pod after this one's Get read it unmarked; the
		// retry of its update ran admission on the marked pod (not a pending deletion).
		{name: "delete retry", dir: "delete-retry", want: map[int]string{37: "admit likely", 84: "admit likely"}},
		{name: "delete retry checked", dir: "delete-retry", check: true, want: map[int]string{37: "deny certain", 84: "deny certain"}},
		// Four clients update one ConfigMap: a 409 Conflict whose first attempt ran admission
		// on the version it asked for, which four writes logged since replaced.
		{name: "conflict on a version asked for", dir: "conflict-asked", want: map[int]string{26: "admit certain"}},
		// kubectl apply --server-side's migration of a client-side apply's fields: a JSON
		// patch that sets /metadata/resourceVersion to the version the log's patch at line 14
		// answered with, 409 Conflict after its first attempt ran admission (a deployment
		// controller's status update committed in between): decided on that version.
		{name: "conflict on a version a JSON patch asks for", dir: "conflict-asked-json-patch", check: true, want: map[int]string{16: "admit certain"}},
		// An update raced by another that completed while it ran: on the version before that
		// one its refusal is the log's, and its annotation the first attempt's, on an older
		// copy the watch cache held.
		{name: "raced, first attempt", dir: "raced-first-attempt", check: true, want: map[int]string{67: "deny certain"}},
		// Patches of a ConfigMap the only policy of its resource skips on a matchCondition
		// of its name, racing writes of it: whichever version a first attempt read, the
		// policy skipped it.
		// The log creates the replayed policies after configmaps they deny, and requests
		// follow at once; deletes a binding, then a policy, and creates them again. The
		// server decided with them only while they were installed, from up to a second
		// after each create (kube-apiserver's policy source compiles within two seconds): the
		// denial at line 47, 876 ms after the create, shows the policy compiled for it and
		// the requests received after it; the admits at lines 38 and 60, moments after a
		// create, show by their own response that it had not compiled it yet for them. Line
		// 66, 4.05 s after the audit policy's delete (which a loaded server may compile that
		// late), is decided with and without it alike: its audit annotation not claimed.
		{name: "policy lifecycle", dir: "policy-lifecycle", want: map[int]string{27: "", 28: "", 38: "admit certain", 47: "deny certain", 49: "deny certain",
			53: "deny certain", 56: "admit certain", 60: "admit certain", 63: "admit certain", 64: "admit certain", 66: "admit certain", 71: "deny certain"}},
		{name: "policy lifecycle checked", dir: "policy-lifecycle", check: true, want: map[int]string{27: "", 28: "", 53: "deny certain", 63: "admit certain", 66: "admit certain", 71: "deny certain"}},
		// The binding applied server-side before its policy; dry-run probes until the policy
		// denies, then requests at once (the probe's denial shows it compiled); a replayed
		// MutatingAdmissionPolicy applied moments before creates it labels (the response
		// holds its change: decided on it); the binding deleted and applied again at once.
		// The first probe's admit (line 35) shows the policy not compiled yet for it; the
		// denial at line 57, moments after the binding's delete and create, is its own. Line
		// 70, 3.05 s after the mutating binding's delete, which a loaded server may compile
		// that late, is policy-source: with the binding in effect, its label would have
		// been admitted (the replay does not decide it again without the binding to find
		// the log's denial).
		{name: "policy lifecycle, applied", dir: "policy-lifecycle-apply", want: map[int]string{6: "", 30: "", 35: "admit certain", 42: "deny certain",
			46: "indeterminate indeterminate", 49: "admit certain", 57: "deny certain", 61: "deny certain", 70: "indeterminate indeterminate"}},
		// As GKE's log sink exports it, without when each request was received: a request
		// that completed seconds after the policy's create is decided with it, likely
		// (received a minute earlier, as far as the export says, it may not have been). Line
		// 38 reads the namespace's labels, whose patch may have been a dry run on GKE but for
		// the later resourceVersion it answered with: decided as from the log.
		{name: "policy lifecycle, GKE", dir: "policy-lifecycle", wrap: exporttest.GKESink, want: map[int]string{27: "", 38: "admit certain", 56: "admit certain"}},
		{name: "excluded by a condition", dir: "excluded-by-condition", want: map[int]string{13: "admit certain", 15: "admit certain", 17: "admit certain", 19: "admit certain"}},
	})
}

// TestCutRecordings replays recordings cut as a log that lacks some of the server's events
// is (an audit policy's None rule, the log of one apiserver of several; see replayRecordings).
func TestCutRecordings(t *testing.T) {
	t.Parallel()
	replayRecordings(t, "testdata/cut", []recordingCase{
		// A pod's create, a kubelet's status patch at Metadata level and the ReplicaSet
		// controller's DELETE, without the scheduler's binding: the DELETE's response holds
		// the node the State's version lacks.
		{name: "missing binding", dir: "missing-binding", want: map[int]string{3: "indeterminate indeterminate"}},
		// Pods logged at level Request (a production audit policy): the ReplicaSet
		// controller's create of a pod with generateName, whose name the log does not hold,
		// leaves the pods the snapshot holds as they are, the kubelet's DELETE of one decided.
		{name: "generated name at Request", dir: "generated-name-at-request", snapshot: true, want: map[int]string{3: "admit certain"}},
		// The kubernetes.io example audit policy (pods at RequestResponse, their status at
		// Metadata), without the binding: a kubelet's status patch ran concurrently with the
		// ReplicaSet controller's graceful DELETE logged after it, whose response is the pod
		// marked; the status patch keeps all but the status, so the kubelet's final DELETE is
		// decided on what the DELETE stored whichever was committed last.
		{name: "status write and delete", dir: "status-write-and-delete", want: map[int]string{3: "indeterminate indeterminate", 5: "admit certain"}},
		// Nodes at level Request: `kubectl cordon` and the node lifecycle controller's taint
		// patch ran concurrently; either committed last, the node is the same, and the writes
		// after them are followed and decided.
		{name: "cordon and taint", dir: "cordon-and-taint", snapshot: true, want: map[int]string{9: "admit certain", 10: "admit certain", 11: "admit certain"}},
		// One kube-apiserver's log of two: the other wrote the node's status. A cordon's own
		// response holds the status the store kept of the node it read, not the State's.
		{name: "status of another server", dir: "status-of-another-server", want: map[int]string{3: "indeterminate indeterminate"}},
		// Two kube-apiservers' logs, one after the other: two graceful DELETEs of one pod, one
		// through each, 77 µs apart; the one that found the pod marked ran admission on the
		// other's mark, which changes no field the policy reads.
		{name: "two servers' graceful deletes", dir: "two-servers-graceful-deletes", snapshot: true, want: map[int]string{3: "admit certain"}},
		// Random parity seed m:1065, the tail after a kubectl snapshot, cut to one Deployment's
		// events: an update of its scale that the replay's pipeline changes nothing of, on the
		// version it rebuilt from the update before, whose Scale answered with its
		// resourceVersion; the server wrote it (a new resourceVersion), which the patches
		// after it read.
		{name: "scale restated", dir: "scale-restated", snapshot: true, check: true, want: map[int]string{20: "deny certain", 26: "deny certain"}},
		// Random parity seed c:2, cut to one pod: the scheduler's binding ran across a second
		// (05:43:03.993 to 05:43:04.018), so the second its PodScheduled condition took is not
		// known until the ReplicaSet controller's DELETE, whose response is the pod it read,
		// marked: the DELETE is decided on that second, and the grace period the pod strategy
		// gave it rests on no other.
		{name: "binding across a second, then a delete", dir: "binding-second-delete", want: map[int]string{6: "admit certain"}},
		// A helper's recording (exW) of two kube-apiservers, cut to a param's writes at level
		// Request: two concurrent merge patches of its one key, one of which changes nothing
		// of the version before the other (the value it held already), then patches of the
		// key alone: what each stores is known, and the request after them is decided.
		{name: "concurrent patches, one changing nothing", dir: "concurrent-noop-patch", check: true, want: map[int]string{10: "deny certain"}},
		// The same, two concurrent patches of the key leave it unknown, and a third sets it to
		// the value the replay's copy holds (a patch that changes nothing of it): what it holds
		// after that patch is known. (The request is a probe added to the recording.)
		{name: "a patch that sets an unknown field to the value the copy holds", dir: "noop-patch-sets-unknown", want: map[int]string{7: "deny certain"}},
		// A helper's recording (exV) at the kubernetes.io example audit policy: a pod's
		// graceful DELETE, a kubelet's status patch at level Metadata (which may change its
		// labels), then the kubelet's DELETE, answered with the pod: its labels are the
		// answer's, which a policy's objectSelector does not select (no record).
		{name: "a DELETE's answer gives what a status write at Metadata left unknown", dir: "delete-after-status-at-metadata", snapshot: true, want: map[int]string{5: ""}},
		// A helper's recording (exY) at level Request: a server-side apply received moments
		// before a DELETE of its object completed created it again (201); its first attempt
		// had run admission as an UPDATE on the object the DELETE removed, whose annotations
		// the audit event keeps: they are not known (the decision is the create's).
		{name: "an apply that created its object after a racing DELETE", dir: "apply-create-after-delete", check: true, want: map[int]string{3: "admit certain"}},
		{name: "an apply that created its object after a racing DELETE, known before", dir: "apply-create-after-delete-cm", check: true, want: map[int]string{4: "admit certain"}},
		// Random parity seed c:645: a server-side apply created a ConfigMap again after its
		// DELETE; as GKE exports it (without the 201), the patch is not taken as an UPDATE of
		// the deleted version, whose uid is not the result's (a MutatingAdmissionPolicy's
		// objectSelector matched that version's labels: a refusal the server did not make).
		{name: "an apply that created its object after a DELETE", dir: "apply-create-after-delete-gke", want: map[int]string{5: ""}},
		{name: "an apply that created its object after a DELETE, GKE", dir: "apply-create-after-delete-gke", wrap: exporttest.GKESink, want: map[int]string{5: "indeterminate indeterminate"}},
		// A helper's recording (exZ) at level Request: a custom resource created (followed
		// from its body: its uid, which the server generated, not known), then replaced with
		// `kubectl replace`, whose body holds the uid it read: the strategy's check that the
		// uid did not change passes on the server's, as the update's success shows.
		{name: "a custom resource replaced after its create at Request", dir: "cr-replace-after-request-create", check: true, want: map[int]string{10: "admit certain"}},
		// A helper's recording (exY) at level Request: three concurrent merge patches of one
		// key of a ConfigMap (one received before the other two completed): the order the
		// server committed them in is not known, so neither is the key; the rest of the
		// object is, and the patches after them, which set the key, are followed.
		{name: "three concurrent patches of one key", dir: "three-concurrent-patches", check: true, want: map[int]string{7: "admit certain", 8: "admit certain"}},
		// Random parity seed r:1274, cut to one Secret: a patch of its stringData, which the
		// strategy writes into its data: the response's data differs from the version the
		// State holds because of the patch, not of a write the log lacks.
		{name: "a Secret's stringData patched", dir: "secret-stringdata-patch", check: true, want: map[int]string{13: "admit certain"}},
		// A helper's recording (exV) whose audit policy logs the scheduler's bindings at level
		// None: a kubelet's status patch answered with the pod bound to its node, which the
		// State holds unbound. The status strategy keeps the spec of the version it read: a
		// policy on the old object's nodeName is not decided on the State's (it denied it).
		{name: "a status write's response shows a binding the log lacks", dir: "status-write-shows-binding", want: map[int]string{2: "indeterminate indeterminate"}},
		// The same recording: a kubelet's status patch of a node whose labels a write logged
		// only as its RequestReceived stage changed; its response holds the labels of the
		// version it read, which an observer's annotation reads.
		{name: "a status patch's response shows labels the log lacks", dir: "status-patch-shows-labels", check: true, want: map[int]string{2: "indeterminate indeterminate"}},
		// A helper's recording (exV) at the kubernetes.io example audit policy (pods at
		// RequestResponse, their status at Metadata): a kubelet's status patch, whose result
		// is not in the log, then a label patch answered with the pod: its object is the
		// response, which the status write's unknowns do not reach (its old object's they do).
		{name: "a patch answered after a status write at Metadata", dir: "status-at-metadata-then-patch", snapshot: true, check: true, want: map[int]string{4: "admit certain"}},
		// A helper's recording (exT) at a production audit policy: CRDs, their status and
		// their custom resources at level Request. The CRDs are followed from their
		// requests (a create's body, the status writes that establish them, kubectl apply's
		// merge patches, one of which stops serving v1alpha1, which a policy of v1alpha1
		// with matchPolicy Equivalent then no longer sees), and the custom resources' creates,
		// updates and patches from theirs, through each CRD's strategy.
		{name: "CRDs and custom resources at Request", dir: "crd-at-request", want: map[int]string{17: "admit certain", 18: "admit certain", 27: "deny likely",
			41: "deny certain", 42: "admit certain", 53: "deny certain", 54: "admit certain"}},
		{name: "CRDs and custom resources at Request, checked", dir: "crd-at-request", check: true, want: map[int]string{17: "admit certain", 18: "admit certain", 27: "deny certain",
			41: "deny certain", 42: "admit certain", 53: "deny certain", 54: "admit certain"}},
		// A helper's recording (exU): a label patch of a node that changed nothing, received
		// before a cordon completed and logged after the cordon and a taint patch: its result
		// is the cordon's version, which its last attempt read; its first attempt read the
		// version before the cordon, which the audit event's annotations show. Without the
		// log's verdicts those annotations are the alternative of a likely record.
		// The log shows the policy and its binding created word for word: their verdicts
		// choose as --check-recorded's do (WithLogEvidence).
		{name: "no-op patch across a write, first attempt", dir: "first-attempt-noop-patch", noEvidence: true, want: map[int]string{6: "admit likely"}},
		{name: "no-op patch across a write, first attempt, the log's verdicts", dir: "first-attempt-noop-patch", want: map[int]string{6: "admit certain"}},
		{name: "no-op patch across a write, first attempt checked", dir: "first-attempt-noop-patch", check: true, want: map[int]string{6: "admit certain"}},
		// A helper's recording: `kubectl apply --server-side` of a Service that did not exist,
		// which the server created (admission's CREATE) with the clusterIP it allocated, and a
		// policy denied for it: what the server allocated and stamped is not known, as of a
		// POST's create (line 14).
		{name: "server-side apply that creates", dir: "ssa-create-allocated", want: map[int]string{13: "indeterminate indeterminate", 14: "indeterminate indeterminate"}},
		// A helper's recording at level Request as gcloud hands it over: the ReplicaSet
		// controller's pod create, refused (422) by a policy; the export drops the message, and
		// the namespace is not known (a patch of it may have been a dry run), which the
		// pipeline's NamespaceLifecycle plugin reads: not a refusal before admission.
		{name: "GKE refusal over an unknown namespace", dir: "gke-refused-namespace-unknown", want: map[int]string{2: "indeterminate indeterminate"}},
		// A helper's recording: a scale patch and a label patch of one Deployment ran
		// concurrently; the Scale the server answered carries the resourceVersion it stored
		// (1068), the label patch's response the one after (1069): the label patch was
		// committed last, and the patch after both is decided on its response (the requests
		// other policies denied left out).
		{name: "a scale patch ordered by its Scale's resourceVersion", dir: "scale-then-patch-ordered", want: map[int]string{225: "admit certain"}},
		// A helper's recording: a CRD patch gave a field a default after a Widget was created;
		// kube-apiserver reads the stored Widget defaulted by the CRD as it is now, and a
		// policy on oldObject's field denied the next patch.
		{name: "a default the CRD gained after the object was written", dir: "crd-default-on-read", check: true, want: map[int]string{6: "deny certain"}},
		// A helper's recording (exZ), CRDs at level Request: a Widget's create refused (422)
		// by an x-kubernetes-validations rule the CRD's last patch added, before admission.
		// Through GKE's sink the refusal's message is lost, and the JSON patch of the CRD
		// before it (a body GKE's entry cannot hold) leaves the schema unknown: whether the
		// policy, which denies the Widget, ran is not known, where the replay claimed it
		// denied it, certain. The log's own message says what refused it.
		// A helper's recording (exAB), the server running NodeRestriction: a node's
		// TokenRequests refused by it, not bound to a pod (token-unbound line 14) or bound to
		// a pod on another node (line 20), which the replay, building a TokenRequest outside
		// the request pipeline, decided as the policy would have; and a node's DELETE of its
		// pod (line 18), the pod NodeRestriction looks up in its informer, which the replay's
		// did not hold (pods were not among the plugins' inputs).
		{name: "a node's TokenRequest NodeRestriction refused", dir: "node-token-unbound", enable: []string{"NodeRestriction"}, want: map[int]string{14: ""}},
		{name: "a node's requests under NodeRestriction", dir: "node-token-noderestriction", enable: []string{"NodeRestriction"}, want: map[int]string{17: "deny certain", 18: "deny likely", 20: ""}},
		// A helper's recording (exAA), mutating webhooks beside the policies: a pod a mutating
		// webhook denied (403, line 2) and one whose mutating webhook's call timed out (500,
		// failurePolicy Fail, line 3), before validating admission: the event's mutation
		// annotations name the webhook, which the replay took for a validating one, after the
		// policies, and decided as the policies would have.
		{name: "refused by a mutating webhook", dir: "mutating-webhook-refused", want: map[int]string{2: "", 3: ""}},
		// The same through GKE's sink, a ConfigMap whose mutating webhook's call failed (500):
		// the message is lost, and the replay took the failure for one after validating
		// admission, and the policy's denial (a 422) as certain.
		{name: "a mutating webhook's failed call", dir: "webhook-500-message-lost", want: map[int]string{3: ""}},
		{name: "a mutating webhook's failed call, GKE", dir: "webhook-500-message-lost", wrap: exporttest.GKESink, want: map[int]string{3: "indeterminate indeterminate"}},
		// A helper's recording (exAA): a mutating webhook's patch of a Widget removed a field
		// its CRD's schema defaults (line 1), or added an object without one of its defaulted
		// fields (line 2); the webhook dispatcher defaults what a patch gives, and the policy
		// denied on the defaults, which the replay did not give (admit, certain).
		{name: "a webhook's patch of a custom resource, defaulted", dir: "webhook-patch-crd-defaults", snapshot: true, want: map[int]string{1: "deny certain", 2: "deny certain"}},
		// A helper's recording (exAA): a mutating webhook whose rules name autoscaling/v1
		// HorizontalPodAutoscalers and core/v1 Events, matchPolicy Equivalent, called with
		// the object in that version for a request through autoscaling/v2 or events.k8s.io/v1:
		// its recorded patch is of that version (targetCPUUtilizationPercentage, message), and
		// the replay applied it to the request's, which drops what it does not have, and
		// admitted, certain, what the policy denied on the converted change.
		{name: "a webhook's patch of another version, HPA", dir: "webhook-other-version-hpa", want: map[int]string{2: "indeterminate indeterminate"}},
		{name: "a webhook's patch of another version, Event", dir: "webhook-other-version-events", want: map[int]string{2: "indeterminate indeterminate"}},
		// A helper's recording (exAA), level Request: merge patches of one ConfigMap at once,
		// a mutating webhook writing the count of its keys. The patch at line 5, received
		// before those at lines 3 and 4 committed, was tried again on what they left, and
		// called the webhook again; the log holds the first attempt's patch (audit
		// annotations keep the first value), and the replay decided on it, deny likely, with
		// no alternative the server's (admit).
		{name: "a webhook's patch of a first attempt", dir: "webhook-patch-first-attempt", want: map[int]string{5: "indeterminate indeterminate"}},
		// A helper's recording (exAB): a policy whose matchConditions are a label test, false
		// for the ConfigMap a service account created, and an authorizer check the log does
		// not answer: whatever the authorizer answered, the policy did not match (the
		// dispatcher evaluates every condition, and a false one excludes the request), where
		// the replay left it indeterminate on the check.
		{name: "an authorizer check beside a false matchCondition", dir: "authz-false-matchcondition", want: map[int]string{10: "admit certain"}},
		// The same ConfigMap and a policy whose only binding audits, its validation an
		// authorizer check: the server admitted it whatever the check answered; only its
		// validation_failure annotation rests on the answer, which is not claimed.
		{name: "an authorizer check of a binding that audits", dir: "authz-audit-only", want: map[int]string{10: "admit certain"}},
		// A helper's recording (exAB), leases at level Metadata: a Lease update a policy refused
		// (its audit annotation's error under failurePolicy Fail), whose old object the replay
		// does not know, and whose policy reads neither object: stand-ins for both decide it,
		// as for a successful write (was old-object-unknown).
		{name: "an update at Metadata a policy refused", dir: "metadata-update-denied", want: map[int]string{1: "deny certain"}},
		{name: "a custom resource refused before admission, GKE", dir: "gke-crd-rule-refused", wrap: exporttest.GKESink, want: map[int]string{11: "indeterminate indeterminate"}},
		{name: "a custom resource refused before admission", dir: "gke-crd-rule-refused", want: map[int]string{11: ""}},
		// A helper's recording, CRDs logged at level Metadata: a patch of the CRD, whose result
		// the log does not hold, leaves its schema not known after it, which a
		// MutatingAdmissionPolicy on its objects needs (the replay took the schema before,
		// which refused the field the patch gave: deny certain, where the server admitted).
		{name: "a CRD written at level Metadata", dir: "crd-metadata-stale-schema", want: map[int]string{5: "indeterminate indeterminate"}},
		// Random parity seed r:1153, cut to one Widget: its scale patched through v1beta1, a
		// version its CRD serves but does not store (conversion None), is followed as the
		// apiextensions apiserver writes it, read and stored back converted.
		{name: "a custom resource scaled through another version", dir: "cr-scale-other-version", want: map[int]string{9: "admit certain"}},
		// Random parity seed r:1155, cut to the params, namespaces and one namespace's
		// ConfigMaps: a deletecollection refused (422) at the first ConfigMap it listed, as
		// the log shows, while ConfigMap params were written within the informers' lag; in
		// every state the informers may have held, the pipeline refused it there, so it
		// deleted nothing, and the DELETE of that ConfigMap after it is decided.
		// A helper's recording (RequestResponse): a Deployment's template annotated by a
		// MutatingAdmissionPolicy bound with a paramRef selector that two ConfigMaps match;
		// kube-apiserver runs the binding once per param in its informer's order, which no log
		// records, and the two write the same field. The stored object holds the result in
		// the server's order: the patches are decided on it, their annotations as the log's.
		{name: "mutating policies' order in the object stored", dir: "map-order-stored", check: true, want: map[int]string{49: "admit certain", 51: "admit certain", 55: "admit certain"}},
		// A helper's recording, cut to a MutatingAdmissionPolicy's param and a pod create: the
		// param's patch (floor 12 -> 20) completed 6 ms after the create was received and
		// before the middle of its span. The MutatingAdmissionPolicies run as the handler
		// has decoded the request, and the informer holds a write only after it completed:
		// the likely mutation is the floor before the patch, 12, which the pod's status
		// patch after shows the server stored (20 the alternative's).
		// A helper's recording, cut to a Job create the server admitted, its response holding
		// the Job: a Job's response is not the object admission saw (the defaults of a read
		// give it its template's labels), so the pipeline rebuilds it, with a uid of its own;
		// the uid the store gave it before admission, and the strategy copied into the
		// template's labels, is the response's. The policy compares the two.
		{name: "a Job create's uid, answered", dir: "job-uid-answered", check: true, want: map[int]string{2: "admit certain"}},
		// A helper's recording, cut to four Services patched into types that allocate (a
		// ClusterIP service to NodePort, an ExternalName one to ClusterIP): the service
		// registry allocated a node port or an address before validating admission (its
		// BeginUpdate), which the policies read, and refused them. The replay's pipeline
		// allocates from ranges of its own: admitted one, denied the others on its own
		// address (10.96.0.1), both certain; what the server allocated is not known.
		// A helper's recording: a LimitRange created while pods were created in its namespace
		// (LimitRanger, its informer holding none yet, looked it up live, logged at line 1563,
		// and keeps what it found for 30 s), deleted a second later; the pods created 0.7 and
		// 4.4 s after the deletion got its defaults, which a policy denied. The replay, which
		// held no LimitRange then, admitted them, certain.
		{name: "LimitRanger's live lookups, cached", dir: "limitranger-live-lookup-cached", want: map[int]string{1630: "indeterminate indeterminate", 1654: "indeterminate indeterminate"}},
		// A helper's recording at a production audit policy, cut to a namespace's claims and
		// the StorageClasses (written at level Request: the default one's annotation not
		// known): DefaultStorageClass set each claim's class in mutating admission, which
		// the answer of an admitted create holds (a claim's answer is not its admission object,
		// but for its status), and a policy read it.
		// A helper's recording at a production audit policy, cut to its bootstrap, the
		// PriorityClasses (written at level Request: their resourceVersions not known) and a
		// namespace's pods: the Priority plugin reads a class's value, policy and default
		// flag, not its resourceVersion, and a policy reads the priority it set. Three pods
		// were refused after validating admission by a quota, two by another policy.
		{name: "a PriorityClass written at level Request", dir: "priorityclass-at-request", want: map[int]string{306: "admit certain", 310: "deny certain"}},
		{name: "a claim's storage class, answered", dir: "pvc-class-answered", want: map[int]string{2: "indeterminate indeterminate", 5: "admit certain", 10: "admit certain", 13: "admit certain"}},
		// A helper's recording: a policy whose only rule is "pods/*" matches the pods
		// themselves (rules.Matcher); a DELETE it refused (of a pod the log never showed) and a
		// create are the policy's, not requests no policy matches.
		{name: `a rule of "pods/*"`, dir: "pods-star-main", want: map[int]string{1: "indeterminate indeterminate", 2: "admit certain"}},
		// A helper's recording: a pods/proxy CONNECT the proxied backend answered 403 after
		// admission, which the policies' annotations in the event show ran.
		{name: "a CONNECT forbidden after admission", dir: "connect-forbidden-after-admission", check: true, want: map[int]string{1: "admit certain"}},
		// A helper's recordings: a CRD of two versions (conversion None) stores v1; creates
		// and patches through v2 and v1alpha1, whose defaults the storage version lacks, were
		// admitted on the object their version gives (the answer, read back from storage, is
		// not it): a Deny policy that reads those fields, and a Warn and Audit one.
		{name: "a custom resource stored in another version", dir: "crd-stored-other-version", check: true, want: map[int]string{4: "admit certain", 5: "admit certain", 6: "admit certain", 7: "admit certain"}},
		{name: "a custom resource stored in another version, audited", dir: "crd-stored-other-version-audit", check: true, want: map[int]string{4: "admit certain", 5: "admit certain", 8: "admit certain"}},
		// A helper's recordings: a binding's namespaceSelector and paramRef patched (at level
		// Request) while requests stream in. Its policy matches ConfigMap creates only: a
		// pod's create after the patch is no request its copy can decide. A patch that puts
		// the namespaceSelector back leaves the copy before it, which selected another
		// namespace, what kube-apiserver's policy source may still decide with for a second:
		// a ConfigMap created there 494ms later, which that copy refused, is not decided.
		{name: "a binding changed, a request of another resource", dir: "binding-changed-other-resource", want: map[int]string{39: "admit certain"}},
		{name: "a binding's selection changed back moments before", dir: "binding-changed-back-recently", check: true, want: map[int]string{11: "indeterminate indeterminate"}},
		// A helper's recording at a production audit policy: two concurrent patches of a
		// param's one key at level Request (which committed last is not known: the key is,
		// the rest of the ConfigMap not), then patches that set the key: the scale after
		// them is decided on it.
		{name: "concurrent patches of a param", dir: "concurrent-patches-of-a-param", check: true, want: map[int]string{39: "admit certain"}},
		{name: "a Service update that allocates", dir: "service-update-allocated", want: map[int]string{5: "indeterminate indeterminate", 7: "indeterminate indeterminate", 11: "indeterminate indeterminate", 13: "indeterminate indeterminate"}},
		{name: "a mutating policy's param written after the request was received", dir: "map-param-written-after-receipt", want: map[int]string{4: "admit likely"}, mutated: map[int]string{4: `"value":12`}},
		// A helper's recording at level Metadata: Events (core and events.k8s.io) and a Lease
		// created, which the policy's excludeResourceRules exclude whatever the object's
		// labels, which its binding's objectSelector reads: not matched, though the log
		// holds no object.
		{name: "excluded at level Metadata", dir: "excluded-at-metadata", want: map[int]string{5: "", 6: "", 7: ""}},
		// A helper's recording cut to one namespace's pod DELETEs, without the pods' writes:
		// the State does not know them, and each DELETE's response is the pod it read, which
		// admission saw (marked by the DELETE itself where the options ask for no grace
		// period: the ReplicaSet controller's and the garbage collector's, graceful; the
		// kubelet's, removed). The policy reads oldObject's labels and the grace period the
		// pod strategy gives; the log's annotations agree.
		{name: "a DELETE of an object the State does not know", dir: "delete-answered-unknown", check: true, want: map[int]string{9: "admit certain", 18: "admit certain", 29: "admit certain", 25: "indeterminate indeterminate"}},
		// The same pod as GKE's log sink exports it: whether the scheduler's binding was a dry
		// run is not known, so neither is the pod after it; the kubelet's status patch is
		// decided on its response (the strategy keeps all but the status from the pod it
		// read before validating admission), as no policy reads oldObject; the DELETEs read
		// the requester's groups, which the export lost.
		{name: "GKE: a status patch of a pod the State does not know", dir: "gke-status-old-unknown", check: true, want: map[int]string{49: "admit certain", 48: "indeterminate indeterminate"}},
		// A helper's recording at a production audit policy: kube-controller-manager's status
		// patch of a ValidatingAdmissionPolicy, written at level Request, and a policy whose
		// rule covers */*: kube-apiserver keeps the policies' own resources from the
		// policies the API defines, so none matches it, whatever the log lacks.
		{name: "a policy's status patch", dir: "policy-status-excluded", want: map[int]string{2: ""}},
		// Random parity seed r:1161, cut to the params, namespaces and ConfigMaps: a
		// deletecollection refused (403) by one of several policies that refuse its first
		// ConfigMap, in the order of kube-apiserver's informer caches, as the log shows, where
		// the replay's order refuses it with another (422): the item each order refuses is the
		// same, so it deleted nothing, and the dry-run deletecollection after it is decided.
		{name: "a deletecollection refused in any order of the policies", dir: "deletecollection-refused-in-any-order", check: true, want: map[int]string{217: "deny certain", 355: "deny certain"}},
		// A helper's recording: the node controller's DELETE of a pod answered 404 while the
		// kubelet's final DELETE of it, logged after it, ran: the pod was gone when the store
		// last read it. Admission would have run only on a first attempt on the watch cache's
		// copy, whose annotations the log would hold (the policy annotates every DELETE): it
		// was refused before admission, not admitted likely.
		{name: "a DELETE answered 404", dir: "delete-404-not-admitted", want: map[int]string{2: "", 3: "admit certain"}},
		// Random parity seed c:2 (CI's; it failed on this once in about a dozen runs), cut to
		// the params, namespaces and policies: the ReplicaSet controller's Event create ran
		// while param node pn-1 was relabelled from set=x to set=y; its binding on set=y read
		// the node before the write and its binding on set=x after it (the dispatcher reads
		// each binding's params as it evaluates it), so neither selected pn-1, which no state
		// of the whole informer gives: the log's verdicts contradict every state evaluated,
		// and the record says so instead of claiming the likely one.
		{name: "params read across a write", dir: "params-read-across-a-write", check: true, want: map[int]string{236: "indeterminate indeterminate"}},
		// A helper's recording cut to a param ConfigMap written at level Request (its new
		// resourceVersion not known) and DELETEs of ConfigMaps: the policy's messageExpression
		// names the param's resourceVersion, and a message is used only where its validation
		// fails: the admitted DELETEs are decided.
		{name: "a param read only in a message", dir: "param-read-in-message", check: true, want: map[int]string{13: "admit certain", 15: "admit certain"}},
		{name: "a deletecollection refused while params lagged", dir: "deletecollection-refused-lagged", check: true, want: map[int]string{169: "deny certain", 170: "deny certain"}},
		// A create with generateName that the server refused, cut from a helper's recording:
		// a MutatingAdmissionPolicy that stamps an object without a name stamped it (mutating
		// admission runs before the name is generated), and a validating one denied what it
		// stamped, naming the generated name (validating admission runs after).
		{name: "mutating policy before the generated name", dir: "map-generated-name", want: map[int]string{2: "deny certain"}},
		{name: "mutating policy before the generated name, checked", dir: "map-generated-name", check: true, want: map[int]string{2: "deny certain"}},
		// The ReplicaSet controller's pod create with generateName, which the server admitted,
		// replayed with a MutatingAdmissionPolicy bound to its namespace that reads
		// object.metadata.name (what if): on the server it would read no name (an error:
		// failurePolicy Fail refuses); the log's object is the stored one, named.
		{name: "mutating policy reads the name stored", dir: "map-generated-name-stored", want: map[int]string{2: "indeterminate indeterminate"}},
		// A helper's recording: a merge patch of a ConfigMap the cluster's MutatingAdmissionPolicy
		// (replayed) annotates with its object.metadata.generation, which a ConfigMap lacks,
		// before and after: the object stored is what the policies saw (not one kube-apiserver
		// prepared after them).
		{name: "mutating policy reads the generation", dir: "map-reads-generation", want: map[int]string{3: "admit certain"}},
		{name: "mutating policy reads the generation, checked", dir: "map-reads-generation", check: true, want: map[int]string{3: "admit certain"}},
		// Cut from a helper's recording: kubectl patch of a Deployment's scale to 15 replicas,
		// which a MutatingAdmissionPolicy of the cluster capped at 3 (the Scale answered has
		// 3), then a patch to 4, whose policy annotates "3->4": the State follows the first
		// patch through the pipeline (15) and takes the replicas the server answered.
		{name: "scale answered", dir: "scale-answered", want: map[int]string{4: "admit certain", 5: "admit certain"}},
		{name: "scale answered, checked", dir: "scale-answered", check: true, want: map[int]string{4: "admit certain", 5: "admit certain"}},
		// A helper's recording: a MutatingAdmissionPolicy of the cluster bound to
		// deployments/scale, a patch of the scale, then the deployment controller's status
		// update: the object takes only the replicas of the Scale the server answered,
		// whatever the policy changed of the Scale.
		{name: "scale mutated", dir: "scale-mutated", want: map[int]string{9: "admit certain"}},
		// A helper's recording (exAE), cut: a ConfigMap labelled locked=true (line 7, cut short
		// as a log being written is, before its URI is whole), then a patch the policy refused
		// on the lock (line 8). The malformed line was a write the replay cannot read: what it
		// may have written is not known (everything, where it does not name the object; the
		// object, where its URI does).
		// A helper's recording (exAC), cut: validations whose value is a ConfigMap's data
		// keys in the order CEL iterates the map (the first key, the first filtered one):
		// kube-apiserver refused two of eight label patches of alike ConfigMaps, by chance.
		// The replay evaluates again until it gives the log's verdicts: each as the server.
		{name: "validations in map order", dir: "map-order-validation", want: map[int]string{13: "admit certain", 14: "deny certain", 18: "deny certain", 20: "admit certain"}},
		{name: "validations in map order, checked", dir: "map-order-validation", check: true, want: map[int]string{13: "admit certain", 14: "deny certain", 18: "deny certain", 20: "admit certain"}},
		// A helper's recording (exAF), cut: an observer's audit annotation joins the labels of
		// a variable (the object, or the old object of a DELETE), which the lint types dyn: the
		// replay takes it as a map, and the annotation is the log's order.
		{name: "an annotation in map order, of a variable", dir: "map-order-variable", check: true, want: map[int]string{2: "admit certain"}},
		// A helper's recording (exAC), cut: widgets whose ratio (type: number) was sent as 2.0
		// (w6, line 18) or 1 (w4, line 14); the log writes both as integers, and a policy
		// multiplies it by 2.0 (an error on an int, kube-apiserver's denial of w4). Which the
		// client sent is not in the log: indeterminate, but where the log's verdicts (checked)
		// show it. A whole count (type: integer) is an int, as its schema says (line 10).
		{name: "a custom resource's whole numbers", dir: "crd-float-create", noEvidence: true, want: map[int]string{10: "admit certain", 14: "indeterminate indeterminate", 18: "indeterminate indeterminate", 20: "admit certain"}},
		{name: "a custom resource's whole numbers, the log's verdicts", dir: "crd-float-create", want: map[int]string{10: "admit certain", 14: "deny certain", 18: "admit certain", 20: "admit certain"}},
		{name: "a custom resource's whole numbers, checked", dir: "crd-float-create", check: true, want: map[int]string{10: "admit certain", 14: "deny certain", 18: "admit certain", 20: "admit certain"}},
		// The same at level Request (exAC, a production audit policy): a dry-run create of
		// ratio 2.0 (line 16), a preserve-unknown field's 1.0 (line 17), an additionalProperties
		// number's 2.0 (line 20), 1.0E0 (line 21).
		{name: "a custom resource's whole numbers at level Request", dir: "crd-float-request", noEvidence: true, want: map[int]string{16: "indeterminate indeterminate", 17: "indeterminate indeterminate", 20: "indeterminate indeterminate", 21: "indeterminate indeterminate"}},
		{name: "a custom resource's whole numbers at level Request, the log's verdicts", dir: "crd-float-request", want: map[int]string{16: "admit certain", 17: "deny certain", 20: "admit certain", 21: "admit certain"}},
		{name: "a custom resource's whole numbers at level Request, checked", dir: "crd-float-request", check: true, want: map[int]string{16: "admit certain", 17: "deny certain", 20: "admit certain", 21: "admit certain"}},
		// A helper's recording (exAK), cut: `kubectl create --raw` of a widget with ratio 2.0 and
		// weight 3.0 (line 4), then `kubectl replace --raw` with ratio 3.0 and weight 2 (line 5):
		// kubectl's user agent, but the file's bytes as written, doubles the server's policies
		// saw (an Audit binding's validation_failure entries). Decided where the log's verdicts
		// show one way of sending them (the create), not where none does (the replace, which
		// sent one as an int, the other as a double).
		// A helper's recording (exAK), cut: a widget created at level Request (line 4: the
		// resourceVersion the server gave it is not in the log), then patched through its
		// scale subresource (--crd) and labelled (line 5 both): a policy that reads
		// has(oldObject.metadata.resourceVersion), which every stored object has, claimed it
		// unset. Its value is not known, and the replay's copy does not hold it.
		{name: "a custom resource's resourceVersion followed at level Request, scaled", dir: "crd-request-resourceversion", crd: true, want: map[int]string{5: "indeterminate indeterminate"}},
		{name: "a custom resource's resourceVersion followed at level Request, labelled", dir: "crd-request-resourceversion-main", want: map[int]string{5: "indeterminate indeterminate"}},
		// A helper's recording (exAJ), cut: `kubectl create deployment` (line 28) whose
		// MutatingAdmissionPolicy reads a param the replay does not know (param-unknown): the
		// record claimed an observer's audit annotations of the object without that policy's
		// labels, which the server's had. The param is known since (param-namespace-lag: the
		// lag of its namespace's labels did not matter), and the record claims the server's.
		{name: "annotations of a request whose mutating policy's param is unknown", dir: "map-param-unknown-annotations", check: true, want: map[int]string{28: "admit certain"}},
		// A helper's recording (exAK), cut: params (a cluster-scoped custom resource) deleted at
		// level Request (lines 15, 18, 19): the event's responseStatus is the Status of Success
		// naming the uid, which the store answers only a DELETE that removed the object; the
		// create moments after (line 20) found no param, refused (parameterNotFoundAction
		// Deny), likely: the informer may not yet have seen the last deletes.
		{name: "params removed by DELETEs at level Request", dir: "delete-removed-at-request", crd: true, want: map[int]string{20: "deny likely"}},
		// A helper's recording (exAK), cut: a CRD logged at level Metadata (its schema not
		// known: the replay learns the resource from its use), then `kubectl create` of a
		// widget at level Request (line 4): the body the log holds is the object as the CRD's
		// handler decoded it, pruned and defaulted, which a policy reading its spec reads.
		{name: "a learned custom resource's create body", dir: "crd-learned-body", want: map[int]string{4: "admit certain"}},
		// A helper's recording (exAK), cut: a widget created through v1, its CRD's storage
		// version (line 4), then the CRD changed to store v1beta1, whose schema has no
		// spec.tags (line 5), then a label patch (line 6): etcd still holds the widget as
		// v1, which the server decodes by v1's schema: its tags are there for the policies
		// (observers' audit annotations, checked), not pruned by v1beta1's.
		{name: "a custom resource written before its storage version changed", dir: "crd-storage-version-changed", check: true, want: map[int]string{6: "admit certain"}},
		// A helper's recording (exAK), cut: a param's CRD gains a default for
		// spec.minReplicas (line 8); kube-apiserver's param informer lists the params again
		// through the new schema a few seconds after: before it (line 9, +0.35 s) the policy
		// reads gold1 without it, from about 2.6 s after with it (lines 10 to 12, +2.6 s,
		// +8.9 s, +28 s: the log's audit annotations say gold1=2). In prune/, the CRD drops
		// spec.knobs, which the param silver1 holds: read without it after (line 11, +13.8 s).
		// The informer's backoff may put its list as late as a minute after the change (random
		// parity seed r:1360: 24 s), which the log does not show: within ParamRereadBy the
		// params the schemas read otherwise are not known.
		// A helper's recording (exAJ), cut: five MutatingAdmissionPolicy bindings match a pod
		// by their constraints; aj-rs's match condition reads request.userInfo only and is false
		// for admin, so it runs in no order, and the four others are few enough to try in
		// every order: the refusal (line 34) is certain.
		{name: "a mutating policy whose match condition is false on the request", dir: "map-order-false-matchcondition", want: map[int]string{34: "deny certain"}},
		// A helper's recording (exAJ, production levels), cut: a pod created (line 32) after a
		// forced server-side apply of the MutatingAdmissionPolicy's param at level Request
		// (line 31), which the replay does not know: the policy is the cluster's own and
		// changed nothing in the replay, the pod's response is what it stored, and the
		// validating observer reads that.
		// A helper's recording (exAJ, writes at level Request), cut: the namespace ajx labelled
		// (line 18) 177 ms before the param ConfigMap's create (line 19), which the cluster's
		// MutatingAdmissionPolicy aj-cm may have selected by its namespace's labels, or not:
		// its match condition excludes the param whichever, so the ordered stage knows what
		// the create stored, and the deployment's create (line 20) reads it.
		// A helper's recording (exAL), cut: namespace a-1 removed by a finalize PUT (line 27)
		// while its ConfigMaps stayed in etcd: kube-apiserver's validating admission fails a
		// request a policy matches there with NotFound (a delete, line 28: 404), and a
		// deletecollection there deletes nothing though its response lists every item
		// (line 30: 200): the ConfigMaps are as they were after the namespace is created
		// again (line 34, a refused delete; line 38, a patch whose observer reads the
		// oldObject's deletionTimestamp, unset).
		{name: "requests in a namespace removed by its finalize", dir: "namespace-removed-by-finalize", check: true, want: map[int]string{28: "indeterminate indeterminate", 30: "indeterminate indeterminate", 34: "deny certain", 38: "admit certain"}},
		{name: "a param created moments after its namespace's labels changed", dir: "param-namespace-lag", check: true, want: map[int]string{20: "admit certain"}},
		{name: "a pod stored after its mutating policy's param was applied", dir: "param-apply-answered", check: true, want: map[int]string{32: "admit certain"}},
		{name: "a param's CRD gains a default", dir: "crd-param-default-changed", check: true, want: map[int]string{9: "admit certain", 10: "indeterminate indeterminate", 11: "indeterminate indeterminate", 12: "indeterminate indeterminate"}},
		{name: "a param's CRD drops a field", dir: "crd-param-default-changed/prune", check: true, want: map[int]string{10: "indeterminate indeterminate", 11: "indeterminate indeterminate"}},
		// The same recording, a policy that reads of the param none of what the new default
		// changes: the fields where the two readings part are not known, the rest is.
		{name: "a param's CRD gains a default another field's policy does not read", dir: "crd-param-default-changed/unchanged-fields", want: map[int]string{9: "admit certain", 10: "admit certain", 11: "admit certain", 12: "admit certain"}},
		{name: "a custom resource's whole numbers sent raw by kubectl", dir: "crd-float-raw", want: map[int]string{4: "indeterminate indeterminate", 5: "indeterminate indeterminate"}},
		{name: "a custom resource's whole numbers sent raw by kubectl, checked", dir: "crd-float-raw", check: true, want: map[int]string{4: "admit certain", 5: "indeterminate indeterminate"}},
		// The same written by patches (exAC): a merge patch and a JSON patch whose body writes
		// ratio 2.0 (lines 13, 14), whose response writes 2: the patch applied to the stored
		// object keeps the double; a PUT (line 15) is the create's case.
		{name: "a custom resource's whole numbers patched", dir: "crd-float-patch", noEvidence: true, want: map[int]string{13: "admit certain", 14: "admit certain", 15: "indeterminate indeterminate"}},
		{name: "a custom resource's whole numbers patched, the log's verdicts", dir: "crd-float-patch", want: map[int]string{13: "admit certain", 14: "admit certain", 15: "admit certain"}},
		// A helper's recording (exAC, a production audit policy), cut: ConfigMaps created at
		// level Request (lines 87, 89) that the cluster's MutatingAdmissionPolicy exac-mut-cm
		// labelled with the size of their data, then patched (lines 88, 90). The replayed
		// policy is the cluster's, bound alike: the ordered stage runs it as it follows the
		// creates, and the patches are decided on the objects stored (follow-check, a policy of
		// the test's, reads the label). A replayed policy other than the cluster's leaves the
		// objects unknown.
		{name: "a MutatingAdmissionPolicy the cluster runs, followed", dir: "map-follow-request", want: map[int]string{87: "admit certain", 88: "deny certain", 89: "admit certain", 90: "admit certain"}},
		{name: "a MutatingAdmissionPolicy the cluster runs otherwise", dir: "map-follow-request-other", want: map[int]string{88: "indeterminate indeterminate", 90: "indeterminate indeterminate"}},
		// A helper's recording (exAI), cut: a Namespace's create, the log not from the
		// cluster's start, by an observer that reads namespaceObject: a Namespace's request is
		// in the namespace of its own name, which the dispatcher does not look up (null).
		{name: "a Namespace's create, its namespace not looked up", dir: "namespace-create-own", check: true, want: map[int]string{1: "admit certain"}},
		// A helper's recording (exAI), cut: the namespace controller's deletecollection of
		// pods whose response lists none (a log that does not hold every pod of the
		// namespace): the store deleted nothing and admitted nothing, as the pipeline would not
		// tell over the State.
		{name: "a deletecollection that listed nothing", dir: "deletecollection-listed-none", want: map[int]string{1: ""}},
		{name: "a deletecollection that listed nothing, from GKE", dir: "deletecollection-listed-none", wrap: exporttest.GKESink, want: map[int]string{1: ""}},
		// A helper's recording (exAH), cut: a deployment's patch answered 409 Conflict after
		// admission ran on the watch cache's copy (line 11), whose binding selects its params
		// by label, one of which a server-side apply at level Request changed moments before
		// (line 8): what the first attempt read is not known, as the live decision's would not be.
		{name: "a conflict after a first attempt that read an unknown param", dir: "conflict-first-attempt-param-unknown", check: true, want: map[int]string{9: "indeterminate indeterminate", 11: "indeterminate indeterminate"}},
		// A helper's recording (exAH), cut: a ReplicaSet's pod the server refused, by a policy
		// whose variable joins the containers and init containers (the Pod Security and Kyverno
		// idiom) and reads their images: the token volume's mount, whose name's suffix the log
		// does not hold, is not read.
		{name: "containers and init containers joined", dir: "containers-concatenated", want: map[int]string{3: "deny certain"}},
		// A helper's recording (exAH), cut: a custom resource param merge-patched at level
		// Request (line 8), then a deployment's patch its binding selects the param for (line
		// 9; in the rows, 386): followed from AKS's Log Analytics rows too, which lose who
		// impersonated whom, not what the patch stored.
		{name: "a custom resource's patch followed from an export", dir: "custom-patch-export-lost", wrap: export.AzureLogAnalytics, want: map[int]string{386: "admit certain"}},
		// A helper's recording (exAF), cut: the garbage collector's metadata patch of an
		// object an Orphan delete left with its finalizers (line 4) answers the
		// PartialObjectMetadata: its finalizers are those a merge patch writes (the list
		// replaced), not a strategic merge patch (merged): sent as a merge patch, so the patch
		// and the next one (line 5) are decided.
		{name: "the garbage collector's metadata patch", dir: "gc-metadata-patch", want: map[int]string{4: "admit certain", 5: "admit certain"}},
		{name: "the garbage collector's metadata patch, checked", dir: "gc-metadata-patch", check: true, want: map[int]string{4: "admit certain", 5: "admit certain"}},
		// A helper's recording (exAF), cut: a dry-run create whose request crossed a second of
		// the server's clock, refused; an observer lists the managedFields' managers. One
		// entry has no order that follows the clock: decided.
		{name: "one managedFields entry", dir: "managedfields-one-entry", check: true, want: map[int]string{2: "deny certain"}},
		// A helper's recording (exAF, production-like levels), cut: a ConfigMap created at level
		// Request (its resourceVersion not known), then Flux's cleanup JSON patch, which tests
		// /metadata/resourceVersion: the server applied it, so the stored object had that
		// version, and the patch is decided (it was refused in the pipeline on the version the
		// replay stood in, rebuild).
		{name: "a JSON patch that tests the resourceVersion", dir: "json-patch-test-version", want: map[int]string{39: "admit certain"}},
		// A helper's recording (exAG), cut: a ClusterRoleBinding to a role that does not exist,
		// by a user who may not bind it: the RBAC storage looks the role up before admission
		// and answers 404 naming it; no policy ran.
		{name: "a binding of a role that does not exist", dir: "rbac-binding-missing-role", want: map[int]string{1: ""}},
		// A helper's recording (exAG), cut: an aggregated ClusterRole applied with rules: [],
		// which admission saw empty and the response holds null (the storage's round trip of
		// a field without omitempty): decided on the request's empty list.
		{name: "a ClusterRole's empty rules", dir: "clusterrole-empty-rules", want: map[int]string{1: "admit certain"}},
		// A helper's recording (exAG, production-like levels), cut: a CSR created at level
		// Metadata, then its approval by a user the CertificateApproval plugin refuses, which
		// runs before ValidatingAdmissionPolicy whatever the object: skipped, though the
		// replay does not know the CSR.
		{name: "a CSR's approval a certificate plugin refused", dir: "csr-approval-refused", want: map[int]string{2: ""}},
		{name: "a malformed line, a write", dir: "malformed-write", want: map[int]string{8: "indeterminate indeterminate"}},
		{name: "a malformed line, a write of the object its URI names", dir: "malformed-write-uri", want: map[int]string{8: "indeterminate indeterminate"}},
	})
}

// recordingCase is a recording (dir, under the root) replayed checking the log or not, and
// the decisions of the requests it names (line: decision certainty).
type recordingCase struct {
	name  string
	dir   string
	check bool
	// noEvidence replays WithLogEvidence(false): no verdict of the log chooses.
	noEvidence bool
	snapshot   bool // the folder's snapshot.yaml is the replay's --snapshot
	crd        bool // the folder's crds.yaml is the replay's --crd
	// wrap, when set, replays the log as that export holds it (exporttest.Wrap).
	wrap export.Format
	want map[int]string
	// mutated names lines whose mutations, as JSON, hold the text (the server's stored value).
	mutated map[int]string
	// enable are admission plugins the server ran that kube-apiserver does not enable by
	// default (--enable-admission-plugins).
	enable []string
}

// replayRecordings replays each case: a certain decision is the server's, a likely one has the
// server's (or indeterminate) among its alternatives, none checked against the log disagrees
// with it, and the requests named decide as given.
func replayRecordings(t *testing.T, root string, cases []recordingCase) {
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := filepath.Join(root, tc.dir)
			plugins, err := AdmissionPlugins(tc.enable, []string{"ServiceAccount"})
			if err != nil {
				t.Fatal(err)
			}
			opts := []Option{WithCheckRecorded(tc.check), WithLogEvidence(!tc.noEvidence), WithAdmissionPlugins(plugins)}
			if tc.snapshot {
				opts = append(opts, WithSnapshot(filepath.Join(dir, "snapshot.yaml")))
			}
			if tc.crd {
				opts = append(opts, WithResources(catalogWithCRDs(t, filepath.Join(dir, "crds.yaml"))))
			}
			policies := filepath.Join(dir, "policies.yaml")
			if _, err := os.Stat(policies); errors.Is(err, fs.ErrNotExist) {
				policies = filepath.Join(root, "policies.yaml") // the recording's shared ones
			}
			log := filepath.Join(dir, "audit.log.gz")
			if tc.wrap != "" {
				data, err := exporttest.Wrap(tc.wrap, exporttest.ReadLog(t, log))
				if err != nil {
					t.Fatal(err)
				}
				log = filepath.Join(t.TempDir(), exporttest.Name(tc.wrap, 0))
				if err := os.WriteFile(log, data, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			recs := replayRecording(t, policies, log, opts...)
			got := map[int]string{}
			for _, rec := range recs {
				if _, ok := tc.want[rec.Line]; ok {
					got[rec.Line] = fmt.Sprintf("%s %s", rec.Decision, rec.Certainty)
				}
				if want, ok := tc.mutated[rec.Line]; ok {
					if m, _ := json.Marshal(rec.Mutations); !strings.Contains(string(m), want) {
						t.Errorf("line %d: mutations %s, want them to hold %s", rec.Line, m, want)
					}
				}
				if rec.Decision == DecisionIndeterminate && (len(rec.AuditAnnotations) > 0 || len(rec.Warnings) > 0) {
					t.Errorf("line %d: indeterminate, yet claims audit annotations %v and warnings %q", rec.Line, rec.AuditAnnotations, rec.Warnings)
				}
				if tc.check && len(rec.Disagreements) > 0 {
					t.Errorf("line %d: %s %s disagrees with the log: %v", rec.Line, rec.Decision, rec.Certainty, rec.Disagreements)
				}
				if rec.Decision == DecisionIndeterminate || (rec.Recorded != string(DecisionAdmit) && rec.Recorded != string(DecisionDeny)) ||
					rec.Recorded == RecordedDeny && !rec.recordedByVAP {
					continue // a refusal by something else (a quota after validating admission) stands whatever the policies decide
				}
				alternatives := []string{string(rec.Decision)}
				for _, a := range rec.Alternatives {
					alternatives = append(alternatives, string(a.Decision))
				}
				switch {
				case rec.Certainty == CertaintyCertain && string(rec.Decision) != rec.Recorded:
					t.Errorf("line %d: %s certain, the server %s: a wrong claim", rec.Line, rec.Decision, rec.Recorded)
				case rec.Certainty == CertaintyLikely && !slices.Contains(alternatives, rec.Recorded) && !slices.Contains(alternatives, string(DecisionIndeterminate)):
					t.Errorf("line %d: %s likely, alternatives %v, the server %s: not among them", rec.Line, rec.Decision, alternatives[1:], rec.Recorded)
				}
			}
			for line, want := range tc.want {
				if got[line] != want {
					t.Errorf("line %d: %q, want %q", line, got[line], want)
				}
			}
		})
	}
}
