package replay

import (
	"bytes"
	"encoding/json"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// A DELETE logged at level Metadata (the level most audit policies give pods, and the one a
// truncated event falls back to) has no body: its delete options are not known. What
// admission sees of it is known all the same: the stored object, which the State may hold,
// is its oldObject, and the user, resource and name are the event's. The request pipeline
// decides it over the State as it decides a DELETE whose options the log holds, with what
// the options can change unknown (optionsUnknowns):
//
//   - request.options and request.dryRun, which a policy may read;
//   - the deletion marks of oldObject: a grace period of zero deletes the object at once,
//     and the store validates that deletion again on the object it has just marked deleted
//     (Store.Delete, deleteWithoutFinalizers after updateForGracefulDeletionAndFinalizers).
//
// What the options decide before admission or instead of it is not decided either:
//
//   - an object whose graceful deletion is pending is validated again only when the options
//     shorten its grace period (rest.BeforeDelete): whether admission ran is not known
//     (optionsUndecided);
//   - a DELETE kube-apiserver refused where the log does not show a policy ran may have been
//     refused by its options (their preconditions, 409; their validation, 422) before
//     admission, or after it: the replay does not say admission ran (optionsUndecided).

// optionsNotLogged says whether the event is a DELETE of one object whose body, the delete
// options, the log does not hold because of its level.
func optionsNotLogged(ev *Event, t target) bool {
	return ev.Verb == "delete" && t.op == admission.Delete && t.sub == "" && !levelLogsBody(ev.Level)
}

// deleteMaybeDryRun says why what a successful DELETE whose options the log does not hold
// (optionsNotLogged, at src) did is not known: client-go sends a DELETE's options, dryRun with
// them, in the body, and a dry run answers as the DELETE it tries would have (the Status of
// the object's removal, or the object marked deleted), storing nothing.
func deleteMaybeDryRun(ev *Event, src string) string {
	return "the DELETE at " + src + ", " + unlogged(ev) + ", may have been a dry run, which stores nothing and answers as the DELETE would have: its options, which say, are in the body client-go sends, which the log does not hold (an audit policy that logs deletes at level Request does)"
}

// A pod's eviction logged at level Metadata is decided the same way: its body is an Eviction
// whose name and namespace the eviction's handler requires to be the pod's
// (EvictionREST.Create: a name that differs is refused, 400, before admission; the create
// handler gives it the request's namespace), and the rest of which, its delete options and
// whatever else of its metadata a client sent, is not known (optionsUnknowns). A refusal the
// log gives neither to a policy nor to what follows admission (a disruption budget's 429, a
// pod not found) may have come from the body before admission (optionsUndecided).

// evictionNotLogged says whether the event is a pod's eviction whose body, the Eviction, the
// log does not hold because of its level.
func evictionNotLogged(ev *Event, t target) bool {
	return ev.Verb == "create" && t.sub == "eviction" && t.gvr.GroupResource() == podsGR && !levelLogsBody(ev.Level)
}

// bodyNotLogged says whether the event is a request the pipeline decides without the body the
// log does not hold: a DELETE, or a pod's eviction.
func bodyNotLogged(ev *Event, t target) bool {
	return optionsNotLogged(ev, t) || evictionNotLogged(ev, t)
}

// evictionBody is the Eviction the pipeline is sent for a pod's eviction the log does not hold
// the body of: the pod's name and namespace.
func evictionBody(t target) []byte {
	b, _ := json.Marshal(map[string]any{"apiVersion": "policy/v1", "kind": "Eviction",
		"metadata": map[string]any{"name": t.name, "namespace": t.namespace}})
	return b
}

// atLevel says at what level the event was logged, for what it does not hold: "at level
// Metadata", or that the audit backend truncated it (which the reader takes as level Metadata,
// and which an audit policy does not change).
func atLevel(ev *Event) string {
	if ev.Truncated() {
		return "truncated by the audit backend (" + auditlog.AnnotationTruncated + ": the objects of an event larger than --audit-log-truncate-max-event-size dropped)"
	}
	return "at level " + orNone(ev.Level)
}

// unlogged says why the event does not hold the request's body: its level, or the audit
// backend's truncation (which the reader takes as level Metadata).
func unlogged(ev *Event) string {
	if ev.Truncated() {
		return "the audit backend truncated (" + auditlog.AnnotationTruncated + ": it dropped the objects of an event larger than --audit-log-truncate-max-event-size)"
	}
	return "logged at level " + orNone(ev.Level)
}

// levelLogsBody says whether an event at the level logs the request's body.
func levelLogsBody(level string) bool {
	return level != auditlog.LevelMetadata && level != auditlog.LevelNone && level != ""
}

// optionsUnknowns are the fields of a DELETE's admission that its options, which the log does
// not hold, can change; none when the log holds them.
func optionsUnknowns(ev *Event, t target) []vapccel.Unknown {
	if evictionNotLogged(ev, t) {
		why := "the Eviction sent, " + unlogged(ev)
		out := []vapccel.Unknown{{Path: objectPath("deleteOptions"), Why: why}}
		for _, f := range metaFields() {
			if f != "name" && f != "namespace" {
				out = append(out, vapccel.Unknown{Path: objectPath("metadata", f), Why: why})
			}
		}
		return out
	}
	if !optionsNotLogged(ev, t) {
		return nil
	}
	why := "the delete options of a DELETE " + unlogged(ev)
	return []vapccel.Unknown{
		{Path: vapccel.FieldPath{Root: "request", Steps: []string{"options"}}, Why: why},
		{Path: vapccel.FieldPath{Root: "request", Steps: []string{"dryRun"}}, Why: why + " (their dryRun)"},
		{Path: vapccel.FieldPath{Root: "oldObject", Steps: []string{"metadata", "deletionTimestamp"}}, Why: why + " (a grace period of zero validates the deletion again once the store has marked the object deleted)"},
		{Path: vapccel.FieldPath{Root: "oldObject", Steps: []string{"metadata", "deletionGracePeriodSeconds"}}, Why: why + " (a grace period of zero validates the deletion again once the store has marked the object deleted)"},
	}
}

// optionsUndecided says why a DELETE whose options the log does not hold cannot be decided
// from what the pipeline did over the State without them (s): it completed the DELETE
// without admission (a graceful deletion pending, which options with a shorter grace period
// validate again), or admission ran and kube-apiserver refused the request where the log
// shows no policy ran (the options may have refused it before admission).
func optionsUndecided(j *job, s served) undecided {
	ev := j.ev
	if !bodyNotLogged(ev, j.t) || s.resp == nil {
		return undecided{}
	}
	level := "the event " + unlogged(ev)
	switch {
	case evictionNotLogged(ev, j.t):
		if len(s.calls) > 0 && ev.Code() >= 300 && !j.rec.vapRan && j.rec.outcome != RecordedAdmit {
			return because(ReasonNoObject, "kube-apiserver refused the eviction ("+httpCode(ev.Code())+") where the log shows no policy ran, and "+level+" does not hold the Eviction, which its handler checks before admission")
		}
	case len(s.calls) == 0 && s.unknown == nil && s.resp.Code < 300 && ev.Code() < 300:
		return because(ReasonNoObject, "the object's graceful deletion was pending, and the store validates the DELETE only when its options shorten the grace period: "+level+" does not hold them")
	case len(s.calls) > 0 && ev.Code() >= 300 && !j.rec.vapRan:
		return because(ReasonNoObject, "kube-apiserver refused the DELETE ("+httpCode(ev.Code())+") where the log shows no policy ran, and "+level+" does not hold its options, which the server checks before admission (their preconditions, their validation)")
	}
	return undecided{}
}

// graceReads are the fields of a pod the pod strategy sets a DELETE's grace period from
// (podStrategy.CheckGracefulDeletion): none when it is not scheduled, none when it has
// terminated, its terminationGracePeriodSeconds otherwise; and its deletion marks, as a pod
// already being deleted does not get one.
var graceReads = vapccel.Reads{Reads: []vapccel.Read{
	{Path: vapccel.FieldPath{Root: "object", Steps: []string{"spec", "nodeName"}}},
	{Path: vapccel.FieldPath{Root: "object", Steps: []string{"spec", "terminationGracePeriodSeconds"}}},
	{Path: vapccel.FieldPath{Root: "object", Steps: []string{"status", "phase"}}},
	// A pod already being deleted keeps the options asked for: with a grace period of zero
	// (rest.BeforeDelete), or its deletion pending.
	{Path: vapccel.FieldPath{Root: "object", Steps: []string{"metadata", "deletionTimestamp"}}},
	{Path: vapccel.FieldPath{Root: "object", Steps: []string{"metadata", "deletionGracePeriodSeconds"}}},
}}

// graceUnknowns are what the grace period of a pod's DELETE changes when the State does not
// know what the pod strategy sets it from (p, the stored pod: its status written at level
// Metadata, say): the options admission sees, and whether the store validates the deletion
// again on the pod it has marked deleted (a grace period of zero).
func graceUnknowns(ev *Event, t target, p state.Prior) []vapccel.Unknown {
	if t.gvr.GroupResource() != podsGR || t.sub != "" || t.op != admission.Delete {
		return nil
	}
	if g, ok := optionsGrace(ev); ok && g == 0 {
		// A grace period of zero asked for stays zero, and marks the pod deleted before the
		// store validates the deletion again, whatever the pod holds (rest.BeforeDelete, and
		// the pod strategy only ever lowers one to zero).
		return nil
	}
	_, u, ok := graceReads.DependsOn(p.Unknowns)
	if !ok {
		return nil
	}
	why := "the grace period the pod strategy gives the DELETE, from " + u.Path.String() + ", which is not known: " + u.Why
	return []vapccel.Unknown{
		{Path: vapccel.FieldPath{Root: "request", Steps: []string{"options", "gracePeriodSeconds"}}, Why: why},
		{Path: vapccel.FieldPath{Root: "oldObject", Steps: []string{"metadata", "deletionTimestamp"}}, Why: why + " (a grace period of zero validates the deletion again once the store has marked the pod deleted)"},
		{Path: vapccel.FieldPath{Root: "oldObject", Steps: []string{"metadata", "deletionGracePeriodSeconds"}}, Why: why + " (a grace period of zero validates the deletion again once the store has marked the pod deleted)"},
	}
}

// optionsGrace is the grace period a DELETE's options ask for, and whether they do.
func optionsGrace(ev *Event) (int64, bool) {
	o, err := deleteOptions(ev.RequestObject, ev.Query())
	if err != nil {
		return 0, false
	}
	switch g := o.Object["gracePeriodSeconds"].(type) {
	case int64:
		return g, true
	case float64:
		if g == float64(int64(g)) {
			return int64(g), true
		}
	}
	return 0, false
}

// A create, update or patch of a built-in resource logged at level Metadata has no object: its
// object is the one thing admission sees that the log does not hold. It is decided for the
// policies that do not read it: rebuilt outside the pipeline (which needs a body), with a
// stand-in for the object holding its kind, namespace and name (standInObject), every other
// field of it unknown (objectUnknowns), the oldObject of an update the State's, the options
// the query's. A refusal the log gives neither to a policy nor to what follows admission may
// have come before admission, from what the object holds (its validation, a quota): it is not
// decided.

// objectNotLogged says whether the event is a create, update or patch of a built-in resource
// (not a subresource) whose object the log does not hold because of its level.
func objectNotLogged(ev *Event, t target) bool {
	switch {
	case levelLogsBody(ev.Level) || t.sub != "" || t.connect:
		return false
	case ev.Verb != "create" && ev.Verb != "update" && ev.Verb != "patch" && ev.Verb != "apply":
		return false
	}
	return kubescheme.Knows(t.reqKind)
}

// bodyLost says why the request's body is not known where its level logs it: the export it
// was read from infers the level from the objects it holds (GKE's entry holds a JSON patch's
// array nowhere: its request is an object), and holds a write's response without its request.
// The response is what the last attempt wrote; what the body made of another version (a first
// attempt's on an older copy: random parity controllers seed c:787, whose annotations the log
// keeps, claimed to be the last attempt's) is not known, and the body is not to be sent as
// empty, which fails before admission and publishes nothing. Not an undecided when the log
// holds it.
func bodyLost(ev *Event) undecided {
	switch ev.Verb {
	case "update", "patch", "apply":
	default:
		return undecided{}
	}
	body := bytes.TrimSpace(ev.RequestObject)
	if !ev.Loss.Lost.Has(auditlog.LostLevel) || !levelLogsBody(ev.Level) || len(body) > 0 && string(body) != "null" {
		return undecided{}
	}
	return because(ReasonNoObject, "the "+ev.Verb+"'s body: the "+ev.Loss.Export+" export does not carry it (a JSON patch's), and its response is what its last attempt wrote")
}

// standInObject gives b a stand-in for the object of a write whose object the log does not
// hold, and what is not known of it: all but its kind, namespace and name (its name too when
// the log does not say it: a create's generated name); or, for a refusal rec does not give to
// a policy or to what follows admission, why it is not decided.
func (b *rebuilt) standInObject(ev *Event, t target, rec recording) {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetGroupVersionKind(t.reqKind)
	u.SetNamespace(t.namespace)
	u.SetName(t.name)
	b.req.Object, b.objectSource = u, SourceUnknown
	why := "the object of a " + ev.Verb + " " + unlogged(ev)
	for _, f := range jsonFields(t.reqKind) {
		if f != "apiVersion" && f != "kind" && f != "metadata" {
			b.unknowns = append(b.unknowns, vapccel.Unknown{Path: objectPath(f), Why: why})
		}
	}
	for _, f := range metaFields() {
		if f != "namespace" && (f != "name" || t.name == "") {
			b.unknowns = append(b.unknowns, vapccel.Unknown{Path: objectPath("metadata", f), Why: why})
		}
	}
	if t.name == "" {
		b.unknowns = append(b.unknowns, vapccel.Unknown{Path: vapccel.FieldPath{Root: "request", Steps: []string{"name"}}, Why: why + " (the name the server generated)"})
	}
	if ev.Code() >= 300 && !rec.vapRan && rec.outcome != RecordedAdmit {
		b.indeterminate = because(ReasonNoObject, "kube-apiserver refused the "+ev.Verb+" ("+httpCode(ev.Code())+"), and the event "+unlogged(ev)+" does not hold its object, which the server checks before validating admission")
	}
}

// bodyUnknown says whether an unknown field of a request is one the body its level leaves out
// makes unknown: its object (a write's, an eviction's), a DELETE's options and what they
// decide of the oldObject. A decision that depends on it is ReasonNoObject: the level.
func bodyUnknown(ev *Event, t target, u vapccel.Unknown) bool {
	switch root := u.Path.Root; {
	case objectNotLogged(ev, t) || evictionNotLogged(ev, t):
		return root == "object" || (root == "request" && len(u.Path.Steps) > 0 && u.Path.Steps[0] == "name")
	case optionsNotLogged(ev, t):
		return root == "request" && len(u.Path.Steps) > 0 && (u.Path.Steps[0] == "options" || u.Path.Steps[0] == "dryRun") ||
			root == "oldObject" && len(u.Path.Steps) == 2 && u.Path.Steps[0] == "metadata" && strings.HasPrefix(u.Path.Steps[1], "deletion")
	}
	return false
}

// requestUnknowns are what the log does not hold of a request served through the pipeline on
// the stored version p, for every pass alike: what the export it was read from lost
// (exportloss.go), what its level left out of a DELETE's options, and what a pod's unknown
// phase makes of its DELETE's grace period.
func requestUnknowns(j *job, p state.Prior) []vapccel.Unknown {
	return slices.Concat(exportUnknowns(j.ev, j.t.op), optionsUnknowns(j.ev, j.t), graceUnknowns(j.ev, j.t, p), namespaceUIDUnknowns(j.ev, j.t, p))
}

// namespaceUIDUnknowns are the options of a namespace's DELETE that the replay does not know
// because it does not know the namespace's uid (p, the stored namespace: created at level
// Request, say): the namespace REST gives options without a uid precondition the
// namespace's uid as one before admission (admissionDeleteOptions). Random parity m:1240: an
// observer policy's annotation of the options read the uid the replay had generated.
func namespaceUIDUnknowns(ev *Event, t target, p state.Prior) []vapccel.Unknown {
	if t.gvr.GroupResource() != state.NamespacesGR || t.sub != "" || t.op != admission.Delete {
		return nil
	}
	if o, err := deleteOptions(ev.RequestObject, ev.Query()); err == nil {
		if _, given, _ := unstructured.NestedString(o.Object, "preconditions", "uid"); given {
			return nil // the request gave it: the namespace's, or the store refused it
		}
	}
	for _, u := range p.Unknowns {
		if state.FieldUnder(u.Path.Steps, "metadata", "uid") {
			return []vapccel.Unknown{{Path: vapccel.FieldPath{Root: "request", Steps: []string{"options", "preconditions", "uid"}}, ValueOnly: u.ValueOnly,
				Why: "the namespace's uid, which the namespace REST gives the DELETE's options as their precondition: " + u.Why}}
		}
	}
	return nil
}
