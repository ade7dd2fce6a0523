package replay

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/source"
)

// The policies and bindings --policies gives take the place of the cluster's of their names.
// Where the log writes one of them (the cluster's policies applied after it started, a
// binding deleted and created again), kube-apiserver decided with it only while it was in the
// cluster: a request before the log's create of the policy, or after the delete of its
// binding, was not decided by it, whatever it would have decided. The replay follows that
// lifecycle:
//   - where the policy or binding was at the log's start is what the log's first write (or
//     quorum GET) of it says (a create that succeeded: not there; an update, a patch or a
//     delete that did: there; a create refused as AlreadyExists: there), which scanLifecycle
//     reads from the log's files before the replay begins; one the log does not write was
//     there throughout (from its creationTimestamp, where the log shows one moments before);
//   - the ordered stage follows each write after it (observe; reads are no change), and a
//     request is decided with the policy-binding pairs that were there when it was received
//     (at); a write that does not say where the object is after it (a delete that may have
//     been a dry run, or that finalizers hold) leaves it unknown until one that does;
//   - kube-apiserver's policy source compiles what its informers hold a second after its last
//     refresh, and compiling takes time (policyRefresh: two seconds): a request received within them (and the informers' lag) after
//     a pair came or went is decided with the pair, and is indeterminate (policy-source) when
//     the pair gave it a verdict (a denial, an error, an audit annotation, a mutation, not a
//     warning alone): the server may have decided it with or without; one server's log shows
//     when its policy source had compiled a create by a verdict of it (compiledBy); an export
//     that lost when the request was received (GKE) has it decided with a create, likely,
//     where it completed well after; and the request's own response says which way it went
//     where it can: a verdict of the pair (shownCompiled, deniedByOwn: in effect), or an admit
//     where only such pairs with the Deny action refused it (admittedWithoutPairs: not).
// --policies-throughout decides every request with the given policies, as if installed
// throughout the log (a what-if over the whole log).

// ReasonPolicySource: a given policy or binding was created or deleted moments before the
// request (within the second kube-apiserver's policy source takes to compile a change), and
// it gave the request a verdict: the server may have decided it with or without.
const ReasonPolicySource Reason = "policy-source"

// ReasonPolicyChanged: the log wrote a given policy or binding other than the given one (or
// in a way whose result it does not show), and it gave the request a verdict: kube-apiserver
// decided with the log's copy (lifecyclespec.go).
const ReasonPolicyChanged Reason = "policy-changed"

// givenKind is which of the given admission objects a givenKey names.
type givenKind uint8

const (
	givenPolicy givenKind = iota
	givenBinding
	givenMutating
	givenMutatingBinding
)

// givenResources are the resources of the given objects, and givenKinds their kinds, by
// givenKind.
var (
	givenResources = [...]string{
		givenPolicy:          "validatingadmissionpolicies",
		givenBinding:         "validatingadmissionpolicybindings",
		givenMutating:        "mutatingadmissionpolicies",
		givenMutatingBinding: "mutatingadmissionpolicybindings",
	}
	givenKinds = [...]string{
		givenPolicy:          "ValidatingAdmissionPolicy",
		givenBinding:         "ValidatingAdmissionPolicyBinding",
		givenMutating:        "MutatingAdmissionPolicy",
		givenMutatingBinding: "MutatingAdmissionPolicyBinding",
	}
)

// givenKey names a given policy or binding.
type givenKey struct {
	kind givenKind
	name string
}

// policy says whether k is a policy (validating or mutating), not a binding.
func (k givenKey) policy() bool { return k.kind == givenPolicy || k.kind == givenMutating }

func (k givenKey) String() string {
	return givenKinds[k.kind] + " " + k.name
}

// givenPair is a policy and one of its bindings: the dispatcher decides with it when both are
// in the cluster.
type givenPair struct{ policy, binding givenKey }

// lifecycle follows where the given policies and bindings were in the cluster along the log.
// It is the ordered stage's; jobs hold what at returns.
type lifecycle struct {
	// off: every given pair is decided with throughout (--policies-throughout, or nothing
	// given).
	off bool
	// pairs are each scope name's policy-binding pairs (a MutatingAdmissionPolicy under its
	// scope name, mutatingName).
	pairs map[string][]givenPair
	// given are the keys of the given policies and bindings.
	given map[givenKey]bool
	// absent are the given ones not in the cluster at this point of the log; unknown those
	// where the log does not say (a deletecollection without its result), with why.
	absent  map[givenKey]bool
	unknown map[givenKey]string
	// changes are the latest creates and deletes of each, for the policy source's second;
	// compiled when the log's verdicts show the policy source had compiled the latest
	// create of one (see compiledBy).
	changes  map[givenKey]givenChange
	compiled map[givenKey]compiledIn
	// latest is the latest completion among changes; undated says one's is not known.
	latest  time.Time
	undated bool
	// finalizers are the given ones the log last showed with finalizers (a delete of one
	// leaves it there until they are removed).
	finalizers map[givenKey]bool
	// plain are the log's files that are one kube-apiserver's log (source.PlainLogs): a
	// server's verdicts say what its own policy source compiled, not another's.
	plain map[string]bool
	// merged are the files the log backend's lines of several servers (serverIdentities),
	// with their servers' identities.
	merged []string
	// notAtStart, created and deleted count what the log showed of them, each with its
	// first (a given one not there at the log's start, a create, a delete); late the creates
	// of ones taken as there because the log could not be read again (scanLifecycle).
	notAtStart, created, deleted, late counted
	// unscanned says scanLifecycle could not read the log again.
	unscanned bool
	// window is the policy source's second and the informers' lag.
	window time.Duration
	// steady is what at returns while no change is within the policy source's second,
	// until the next change (nil: not computed).
	steady *givenAt
	// specs are the given policies' and bindings' specs; copies what the log's writes left
	// of them in the cluster, where it showed one (lifecyclespec.go).
	specs  givenSpecs
	copies map[givenKey]specCopy
}

// compiledIn is when a server's log (file) shows its policy source had compiled a create.
type compiledIn struct {
	at   time.Time
	file string
}

// givenChange is a create or delete of a given policy or binding: when it completed, and where
// the log records it.
type givenChange struct {
	// done is when the write completed, received when the server received it.
	done, received time.Time
	by             string
	// soon says it came within the policy source's time after the change before it (a
	// delete and a create again; its window and as long again, compiledWithin), which the
	// policy source may not have compiled either.
	soon bool
	// spec says it changed the spec of a pair there before and after (lifecyclespec.go),
	// not whether it is there.
	spec bool
}

// change is a create or delete of k by the write ev, at by.
func (l *lifecycle) change(k givenKey, ev *Event, by string) {
	done := auditlog.ParseTime(ev.StageTimestamp)
	prev, had := l.changes[k]
	l.setChange(k, givenChange{done: done, received: ev.Received(), by: by, soon: had && !prev.done.IsZero() && !done.IsZero() && done.Sub(prev.done) < l.band()})
}

// setChange makes c the latest change of k.
func (l *lifecycle) setChange(k givenKey, c givenChange) {
	l.changes[k] = c
	delete(l.compiled, k)
	l.steady = nil
	if c.done.IsZero() {
		l.undated = true
	} else if c.done.After(l.latest) {
		l.latest = c.done
	}
}

// givenFirst is what the log's first informative write of a given policy or binding says of
// its start: whether it was there, and the write.
type givenFirst struct {
	there bool
	by    string
}

func newLifecycle(policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding,
	mutating []*admissionregistrationv1.MutatingAdmissionPolicy, mutatingBindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding, off bool) *lifecycle {
	l := &lifecycle{off: off, pairs: map[string][]givenPair{}, given: map[givenKey]bool{}, absent: map[givenKey]bool{}, unknown: map[givenKey]string{},
		changes: map[givenKey]givenChange{}, compiled: map[givenKey]compiledIn{}, finalizers: map[givenKey]bool{},
		specs: newGivenSpecs(policies, bindings, mutating, mutatingBindings), copies: map[givenKey]specCopy{}}
	// bind pairs a binding with its policy, under the policy's scope name.
	bind := func(scope string, policy, binding givenKey) {
		if l.given[policy] {
			l.given[binding] = true
			l.pairs[scope] = append(l.pairs[scope], givenPair{policy, binding})
		}
	}
	for _, p := range policies {
		l.given[givenKey{givenPolicy, p.Name}] = true
	}
	for _, p := range mutating {
		l.given[givenKey{givenMutating, p.Name}] = true
	}
	for _, b := range bindings {
		bind(b.Spec.PolicyName, givenKey{givenPolicy, b.Spec.PolicyName}, givenKey{givenBinding, b.Name})
	}
	for _, b := range mutatingBindings {
		bind(mutatingName(b.Spec.PolicyName), givenKey{givenMutating, b.Spec.PolicyName}, givenKey{givenMutatingBinding, b.Name})
	}
	l.off = l.off || len(l.given) == 0
	l.window = policyRefresh + DefaultLag
	return l
}

// lifecycleNeedle is in every line of the log that writes an admission policy or binding (the
// resources' names, in an objectRef, a URI or an export's method name: "admissionpolic"
// without its "ad", whose "a" is so common in JSON that a search for it is half as fast).
var lifecycleNeedle = []byte("missionpolic")

// scanLifecycle reads the log's files for the first write of each given policy and binding
// that says whether it was in the cluster at the log's start, and starts the lifecycle there.
// It reads only until each has one; a log that writes none of them is read to its end. Where
// the log cannot be read again (standard input), each is taken as there from the start, and
// the summary says so.
func (r *Replayer) scanLifecycle(ctx context.Context) {
	l := r.lifecycle
	if l.off {
		return
	}
	srcs := r.cat.ahead.readable()
	if len(srcs) == 0 {
		// Each is taken as there from the start; a create the log shows later says where
		// that was wrong (observe).
		l.unscanned = true
		return
	}
	l.plain = source.PlainLogs(srcs)
	for _, src := range srcs {
		if !l.plain[src.Name] {
			continue
		}
		if ids := serverIdentities(ctx, src, r.cfg.maxLine); len(ids) > 1 {
			// Several servers' logs merged in one file (a log shipper's): one's verdicts
			// are no evidence of what another's policy source compiled.
			l.plain[src.Name] = false
			l.merged = append(l.merged, src.Name+" ("+strings.Join(ids, ", ")+")")
		}
	}
	// initial is what the log's first informative write of each says of its start; born
	// the creationTimestamps the log shows of those there then.
	initial := map[givenKey]givenFirst{}
	born := map[givenKey]bornAt{}
	_ = source.Lines(ctx, source.Filtered(srcs, lifecycleNeedle), r.cfg.maxLine, func(line auditlog.Line) bool {
		if line.Err != nil || line.Skip != "" || line.Duplicate || !bytes.Contains(line.Data, lifecycleNeedle) {
			return true
		}
		ev, err := auditlog.Decode(line.Data)
		if err != nil || !ev.Final() {
			return true
		}
		ev.Loss = line.Loss
		if ref := ev.ObjectRef; ref != nil && ref.APIGroup == "admissionregistration.k8s.io" && ev.Verb == "deletecollection" && ev.Code() >= 200 && ev.Code() < 300 {
			// It may have deleted any of its resource's: those the log has not written yet
			// may have been there (observe makes them unknown).
			for k := range l.given {
				if _, found := initial[k]; !found && givenResources[k.kind] == ref.Resource {
					initial[k] = givenFirst{there: true, by: lineRef{line.File, line.Num, line.Item}.String()}
				}
			}
			return len(initial) < len(l.given)
		}
		if k, at, ok := l.creationOf(ev); ok {
			if _, found := initial[k]; !found {
				if _, seen := born[k]; !seen {
					born[k] = bornAt{at: at, by: lineRef{line.File, line.Num, line.Item}.String()}
				}
			}
		}
		k, ok := l.keyOf(ev)
		if !ok {
			return true
		}
		if _, found := initial[k]; found {
			return true
		}
		if there, says := thereBefore(ev); says {
			initial[k] = givenFirst{there: there, by: lineRef{line.File, line.Num, line.Item}.String()}
		}
		return len(initial) < len(l.given)
	})
	for _, k := range slices.SortedFunc(maps.Keys(initial), compareGivenKeys) {
		if f := initial[k]; !f.there {
			l.absent[k] = true
			l.notAtStart.add(fmt.Sprintf("%s, created at %s", k, f.by))
		}
	}
	for k, b := range born {
		if f, found := initial[k]; found && !f.there {
			continue
		}
		// Created before the log began, as late as the end of its creationTimestamp's
		// second: a request of the log's first moments may have come before the policy
		// source compiled it.
		l.setChange(k, givenChange{done: b.at.Add(time.Second), received: b.at, by: "its creationTimestamp, which " + b.by + " shows (to the second)"})
	}
}

// identityScan bounds what serverIdentities reads of a log: each kube-apiserver renews its
// identity Lease every 10 seconds, which a log of a few minutes holds many times over.
const identityScan = 64 << 20

// serverIdentities are the kube-apiservers whose identity Leases (kube-system/apiserver-<hash>,
// which each renews as system:apiserver every 10 seconds: APIServerIdentity) the log's first
// identityScan bytes show written, sorted: more than one in one file is several servers' logs
// (helper exW: two servers' logs merged in time order, as a log shipper writes them, where one
// server's denial was taken as evidence that the other's policy source had compiled a binding:
// 37 certain claims). None where the audit policy does not log them.
func serverIdentities(ctx context.Context, src source.Source, maxLine int) []string {
	ids := map[string]bool{}
	read := 0
	_ = source.Lines(ctx, []source.Source{src}, maxLine, func(line auditlog.Line) bool {
		read += line.Size
		if line.Err != nil || line.Data == nil || !bytes.Contains(line.Data, identityNeedle) {
			return read < identityScan
		}
		ev, err := auditlog.Decode(line.Data)
		if err == nil && ev.Final() && ev.ObjectRef != nil && ev.ObjectRef.Resource == "leases" && ev.ObjectRef.Namespace == "kube-system" &&
			strings.HasPrefix(ev.ObjectRef.Name, "apiserver-") && ev.User.Username == "system:apiserver" && ev.Code() >= 200 && ev.Code() < 300 &&
			(ev.Verb == "update" || ev.Verb == "create" || ev.Verb == "patch") {
			ids[ev.ObjectRef.Name] = true
		}
		return read < identityScan && len(ids) < 2
	})
	return slices.Sorted(maps.Keys(ids))
}

var identityNeedle = []byte(`"apiserver-`)

// bornAt is a creationTimestamp the log shows of a given policy or binding, and where.
type bornAt struct {
	at time.Time
	by string
}

// creationOf reads the creationTimestamp an event shows of a given policy or binding (its
// response's object, or a create's or update's request), of any subresource (the status a
// policy's type checking writes).
func (l *lifecycle) creationOf(ev *Event) (givenKey, time.Time, bool) {
	ref := ev.ObjectRef
	if ref == nil || ref.APIGroup != "admissionregistration.k8s.io" || ref.Name == "" || ev.Code() < 200 || ev.Code() >= 300 {
		return givenKey{}, time.Time{}, false
	}
	for kind, res := range givenResources {
		if ref.Resource != res {
			continue
		}
		k := givenKey{givenKind(kind), ref.Name}
		if !l.given[k] {
			return givenKey{}, time.Time{}, false
		}
		o := auditlog.DecodeAnyObject(ev.ResponseObject)
		if o == nil || o.GetKind() == "Status" {
			o = auditlog.DecodeAnyObject(ev.RequestObject)
		}
		if o == nil {
			return givenKey{}, time.Time{}, false
		}
		at := o.GetCreationTimestamp().Time
		return k, at, !at.IsZero()
	}
	return givenKey{}, time.Time{}, false
}

func compareGivenKeys(a, b givenKey) int {
	if a.kind != b.kind {
		return int(a.kind) - int(b.kind)
	}
	return strings.Compare(a.name, b.name)
}

// keyOf is the given policy or binding a final event writes, if it writes one.
func (l *lifecycle) keyOf(ev *Event) (givenKey, bool) {
	ref := ev.ObjectRef
	if ref == nil || ref.APIGroup != "admissionregistration.k8s.io" || ref.Subresource != "" || ref.Name == "" || isDryRun(ev) {
		return givenKey{}, false
	}
	for kind, res := range givenResources {
		if ref.Resource == res {
			k := givenKey{givenKind(kind), ref.Name}
			return k, l.given[k]
		}
	}
	return givenKey{}, false
}

// thereBefore says whether the object a write (ev) of a policy or binding was about was there
// when the server received it, where the write says (says false: a write refused for another
// reason says nothing). A dry run says it as well as a write.
func thereBefore(ev *Event) (there, says bool) {
	code := ev.Code()
	switch ev.Verb {
	case "create":
		switch {
		case code >= 200 && code < 300:
			return false, true
		case code == 409:
			return true, true // AlreadyExists
		}
	case "get":
		// kubectl apply reads the object before it creates or patches it (a quorum read): a
		// create the server then refused leaves the log no other write of it. A read with a
		// resourceVersion may be the watch cache's, behind.
		if strings.Contains(ev.RequestURI, "resourceVersion") {
			return false, false
		}
		switch {
		case code >= 200 && code < 300:
			return true, true
		case notFound(ev):
			return false, true
		}
	case "update", "patch", "apply", "delete":
		switch {
		case code >= 200 && code < 300 && ev.Verb != "delete" && ev.Loss.Lost.Has(auditlog.LostCode):
			return false, false // a 201 (created) the export does not tell from a 200 (GKE)
		case code == 201:
			return false, true // a server-side apply (or an update) that created it
		case code >= 200 && code < 300:
			return true, true
		case notFound(ev):
			return false, true
		}
	}
	return false, false
}

// notFound says whether a write was answered 404 because its object is not there: its status
// says so of its name ("... \"NAME\" not found"), not of a path the server does not serve
// (a version it does not serve answers 404 too).
func notFound(ev *Event) bool {
	return ev.Code() == 404 && ev.ObjectRef != nil && ev.ObjectRef.Name != "" && strings.Contains(ev.Message(), `"`+ev.ObjectRef.Name+`" not found`)
}

// thereAfter says whether the object a write (ev, at by) of a policy or binding was about is
// there after it, where the write says; unsure says why the write may not have done what it
// seems to (a delete answered while finalizers keep the object, one that may have been a dry
// run).
func thereAfter(ev *Event, by string, finalizers bool) (there, says bool, unsure string) {
	code := ev.Code()
	switch {
	case code >= 200 && code < 300 && ev.Verb == "delete":
		switch {
		case code == 202 || deletionPending(ev):
			return true, true, "its delete at " + by + " left it there, deleted once its finalizers are removed"
		case !hasBody(ev.ResponseObject) && (finalizers || keepsDeleted(ev)):
			// Its response, which would show it marked deleted, is not in the log.
			return true, true, "its delete at " + by + " may have left it there (finalizers, or its propagation policy), deleted once they are removed"
		case !hasBody(ev.RequestObject) && ev.Loss.Lost.Has(auditlog.LostDryRun) || ev.Level == auditlog.LevelMetadata || ev.Level == auditlog.LevelNone:
			return false, true, "its delete at " + by + ", which the log does not hold the options of, may have been a dry run"
		}
		return false, true, ""
	case code >= 200 && code < 300:
		if ev.Verb != "deletecollection" && ev.Verb != "create" && ev.Loss.Lost.Has(auditlog.LostDryRun) {
			return true, true, "its write at " + by + " may have been a dry run"
		}
		if o := auditlog.DecodeAnyObject(ev.ResponseObject); o != nil && o.GetKind() != "Status" && o.GetDeletionTimestamp() != nil {
			if len(o.GetFinalizers()) == 0 {
				return false, true, "" // the write that removed its last finalizer deleted it
			}
			return true, true, "its write at " + by + " left it marked deleted, deleted once its finalizers are removed"
		}
		return true, ev.Verb != "deletecollection", ""
	case notFound(ev):
		return false, ev.Verb != "create", ""
	case code == 409 && ev.Verb == "create":
		return true, true, ""
	}
	return false, false, ""
}

// keepsDeleted says whether a delete's options keep the object there, marked deleted, until
// the garbage collector has done (propagationPolicy Foreground or Orphan, orphanDependents).
func keepsDeleted(ev *Event) bool {
	if !hasBody(ev.RequestObject) {
		return false
	}
	var o struct {
		PropagationPolicy string `json:"propagationPolicy"`
		OrphanDependents  *bool  `json:"orphanDependents"`
	}
	_ = json.Unmarshal(ev.RequestObject, &o)
	return o.PropagationPolicy == "Foreground" || o.PropagationPolicy == "Orphan" || o.OrphanDependents != nil && *o.OrphanDependents
}

// noteFinalizers follows whether a given policy or binding has finalizers, where a write's
// request or response shows its whole object (not a patch's request).
func (l *lifecycle) noteFinalizers(k givenKey, ev *Event) {
	if ev.Code() < 200 || ev.Code() >= 300 || ev.Verb == "delete" {
		return
	}
	raw := ev.ResponseObject
	if !hasBody(raw) && (ev.Verb == "create" || ev.Verb == "update") {
		raw = ev.RequestObject
	}
	o := auditlog.DecodeAnyObject(raw)
	switch {
	case o != nil && o.GetKind() != "Status":
		if len(o.GetFinalizers()) > 0 {
			l.finalizers[k] = true
		} else {
			delete(l.finalizers, k)
		}
	case ev.Verb == "create":
		delete(l.finalizers, k) // at level Metadata: taken as created without (a policy rarely has any)
	}
}

// deletedItems are the names a deletecollection's response lists as deleted; listed false
// when the log does not hold its response.
func deletedItems(ev *Event) (names map[string]bool, listed bool) {
	if !hasBody(ev.ResponseObject) {
		return nil, false
	}
	var list struct {
		Items *[]struct {
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if json.Unmarshal(ev.ResponseObject, &list) != nil || list.Items == nil {
		return nil, false
	}
	names = map[string]bool{}
	for _, it := range *list.Items {
		names[it.Metadata.Name] = true
	}
	return names, true
}

// deletionPending says whether a delete's response shows its object still there, marked
// deleted (finalizers, a foreground deletion).
func deletionPending(ev *Event) bool {
	if !hasBody(ev.ResponseObject) || !bytes.Contains(ev.ResponseObject, []byte(`"deletionTimestamp"`)) {
		return false
	}
	o := auditlog.DecodeAnyObject(ev.ResponseObject)
	return o != nil && o.GetKind() != "Status" && o.GetDeletionTimestamp() != nil
}

// clockBack notes that the clock of a log file went back (a file not read in parts: standard
// input, a compressed log): it may be another server's log from there on (several servers'
// logs concatenated), whose policy source compiled otherwise; the file's verdicts are no
// evidence of what one server's compiled any more (compiledBy), and what they showed is
// dropped.
func (l *lifecycle) clockBack(file string) {
	if !l.plain[file] {
		return
	}
	l.plain[file] = false
	for k, c := range l.compiled {
		if c.file == file {
			delete(l.compiled, k)
		}
	}
}

// observe follows a final event of the log (on the ordered stage): a write of a given policy
// or binding, or a deletecollection of their resource, which may have deleted some.
func (l *lifecycle) observe(d decoded, ev *Event) {
	if l.off {
		return
	}
	if len(l.changes) > len(l.compiled) && l.plain[d.file] && l.changedWithin(ev.Received(), l.band()) {
		l.compiledBy(d.file, ev)
	}
	if ev.ObjectRef == nil || ev.ObjectRef.APIGroup != "admissionregistration.k8s.io" {
		return
	}
	by := d.ref().String()
	if ev.Verb == "deletecollection" && ev.Code() >= 200 && ev.Code() < 300 && !isDryRun(ev) {
		deleted, listed := deletedItems(ev)
		for k := range l.given {
			if givenResources[k.kind] != ev.ObjectRef.Resource || l.absent[k] {
				continue
			}
			switch {
			case !listed:
				l.unknown[k] = "the deletecollection at " + by + ", whose result the log does not hold, may have deleted it"
				l.steady = nil
			case deleted[k.name]:
				l.absent[k] = true
				delete(l.unknown, k)
				l.change(k, ev, by)
				l.deleted.add(fmt.Sprintf("%s at %s", k, by))
			}
		}
		return
	}
	switch ev.Verb {
	case "create", "update", "patch", "apply", "delete":
	default:
		return // a read says nothing of a change (a watch cache's may be stale)
	}
	k, ok := l.keyOf(ev)
	if !ok {
		return
	}
	l.noteFinalizers(k, ev)
	there, says, unsure := thereAfter(ev, by, l.finalizers[k])
	if !says {
		return
	}
	switch code := ev.Code(); {
	case !there && unsure == "":
		l.forgetSpec(k, ev)
	case code >= 200 && code < 300 && ev.Verb != "delete":
		l.followSpec(k, ev, by)
	}
	if why, was := l.unknown[k]; was && ev.Verb != "create" && ev.Verb != "delete" && ev.Code() != 201 && !hasBody(ev.ResponseObject) {
		// An update the log does not hold the result of: it may have removed the last
		// finalizer of one marked deleted, and so deleted it.
		l.unknown[k] = why
		return
	}
	delete(l.unknown, k)
	l.steady = nil
	if unsure != "" {
		// Where it is after the write is not known: decided with it, unsure, until a write
		// says (observe).
		delete(l.absent, k)
		l.unknown[k] = unsure
		l.change(k, ev, by)
		return
	}
	if there && l.absent[k] && ev.Verb != "create" && ev.Code() != 201 {
		// An update of one the replay took as not there (a delete that left it, a log
		// that misses a create): where it was between is not known.
		delete(l.absent, k)
		l.unknown[k] = "its write at " + by + " updated it where the replay took it as not there"
		l.change(k, ev, by)
		return
	}
	if there == !l.absent[k] {
		if l.unscanned && ev.Verb == "create" && there {
			if _, changed := l.changes[k]; !changed {
				l.late.add(fmt.Sprintf("%s, created at %s", k, by))
			}
		}
		if ev.Verb != "create" || ev.Code() < 200 || ev.Code() >= 300 {
			return
		}
		// Created where the replay took it as there (the log not read again, or missing
		// the delete): the policy source compiles it as any create.
		l.change(k, ev, by)
		return
	}
	l.steady = nil
	if there {
		delete(l.absent, k)
	} else {
		l.absent[k] = true
	}
	l.change(k, ev, by)
	if there {
		l.created.add(fmt.Sprintf("%s at %s", k, by))
	} else {
		l.deleted.add(fmt.Sprintf("%s at %s", k, by))
	}
}

// counted is how many of something, and the first.
type counted struct {
	n     int
	first string
}

func (c *counted) add(what string) {
	if c.n == 0 {
		c.first = what
	}
	c.n++
}

// notes are what the summary says of the lifecycle the log showed.
// selectedBy says whether the given pair p selects the job's request: a validating policy
// that matched it (its binding's matchResources aside), a mutating one whose rules and a
// binding's matched it (verify.Mutation.Selected), or any when the request was not
// evaluated.
func selectedBy(j *job, p givenPair) bool {
	d := j.result.dec
	if d == nil {
		return true
	}
	if p.policy.kind == givenMutating {
		return d.Mutation == nil || d.Mutation.Selected(p.policy.name)
	}
	return slices.Contains(j.policies, p.policy.name)
}

func (l *lifecycle) notes() []string {
	var out []string
	if l.notAtStart.n > 0 || l.deleted.n > 0 {
		what := []string{}
		if l.notAtStart.n > 0 {
			what = append(what, fmt.Sprintf("%d not installed at its start (the first: %s)", l.notAtStart.n, l.notAtStart.first))
		}
		what = append(what, fmt.Sprintf("%d creates", l.created.n))
		if l.deleted.n > 0 {
			what = append(what, fmt.Sprintf("%d deletes (the first: %s)", l.deleted.n, l.deleted.first))
		}
		out = append(out, "the log shows given policies and bindings come and go: "+strings.Join(what, ", ")+"; a request is decided with each only while it was installed (--policies-throughout decides every request with them)")
	}
	for _, m := range l.merged {
		out = append(out, "the file "+m+" holds the logs of several kube-apiservers (it shows their identity leases): one server's verdicts are not taken as evidence of what another's policy source had compiled; give each server's log as its own file")
	}
	if l.late.n > 0 {
		out = append(out, fmt.Sprintf("the log creates %d of the given policies and bindings (the first: %s), which were taken as installed before: the log was not read from files, which the replay reads again for where they were at its start (give the log as files)", l.late.n, l.late.first))
	}
	return out
}

// compiledBy notes what a final event's verdicts (a validation failure, a denial, an audit
// annotation) show of kube-apiserver's policy source: a verdict of a given policy (and
// binding) created moments before, in a request completed after the create (a policy not there
// before gives no verdict), shows the policy source had compiled the create when the request
// completed, and for every request received after that (what it compiles it keeps until a
// delete). Not for a create moments after a delete of it, which the verdict may be of.
func (l *lifecycle) compiledBy(file string, ev *Event) {
	done := auditlog.ParseTime(ev.StageTimestamp)
	l.shownCompiled(ev, done, func(k givenKey) {
		if c, ok := l.compiled[k]; !ok || c.file == file && done.Before(c.at) {
			l.compiled[k] = compiledIn{at: done, file: file}
			l.steady = nil
		}
	})
}

// shownCompiled calls mark with each given policy and binding whose create (moments before)
// the event's verdicts show the policy source had compiled by the time the request completed
// at done: the ones it names, and with them every create and delete of their resource that
// completed before that create was received, which the informer held before it (its watch
// gives the writes in the order they were stored).
func (l *lifecycle) shownCompiled(ev *Event, done time.Time, mark func(givenKey)) {
	fails := ev.Annotations[ValidationFailureAnnotation]
	if done.IsZero() || fails == "" && (ev.Code() < 400 || !strings.Contains(ev.Message(), "ValidatingAdmissionPolicy")) && !l.annotates(ev) {
		return
	}
	shows := func(k givenKey) {
		c, ok := l.changes[k]
		if !ok || l.absent[k] || c.soon || !done.After(c.done) {
			return
		}
		mark(k)
		if c.received.IsZero() || ev.Loss.Lost.Has(auditlog.LostReceived) {
			return
		}
		for other, oc := range l.changes {
			if other.kind == k.kind && other != k && oc.done.Before(c.received) {
				mark(other)
			}
		}
	}
	if fails != "" {
		var fs []validationFailure
		if json.Unmarshal([]byte(fails), &fs) == nil {
			for _, f := range fs {
				shows(givenKey{givenPolicy, f.Policy})
				shows(givenKey{givenBinding, f.Binding})
			}
		}
	}
	if m := vapDenied.FindStringSubmatch(ev.Message()); m != nil {
		shows(givenKey{givenPolicy, m[1]})
		if m[2] != "" {
			shows(givenKey{givenBinding, m[2]})
		}
	}
	for k := range ev.Annotations {
		if p, _, ok := strings.Cut(k, "/"); ok && l.given[givenKey{givenPolicy, p}] {
			shows(givenKey{givenPolicy, p})
			if pairs := l.pairs[p]; len(pairs) == 1 {
				// An audit annotation names its policy, not its binding: the policy's one
				// binding gave it.
				shows(pairs[0].binding)
			}
		}
	}
}

// annotates says whether an event has an audit annotation of a given policy's
// (`<policy>/<key>`).
func (l *lifecycle) annotates(ev *Event) bool {
	for k := range ev.Annotations {
		if p, _, ok := strings.Cut(k, "/"); ok && l.given[givenKey{givenPolicy, p}] {
			return true
		}
	}
	return false
}

// givenAt is where the given policies and bindings were when a request was received: the
// evaluator to decide it with (absent: the given ones not there, key their names), and the
// pairs the policy source may not have compiled the change of yet (unsure), with why.
type givenAt struct {
	key    string
	absent map[givenKey]bool
	unsure map[givenPair]string
	// changed are the pairs the log left other than the given ones (or may have), with
	// why: the server decided with the log's (lifecyclespec.go).
	changed map[givenPair]changedPair
	// likely are the pairs created moments before the request completed, unsure only
	// because the export lost when it was received: decided with, likely.
	likely map[givenPair]string
}

// at is where the given policies and bindings were for a request of the log's file received at
// received. A pair created or deleted within the window (l.window) before it is unsure, and
// decided with, unless that server's log showed it compiled (compiledBy).
func (l *lifecycle) at(file string, ev *Event) givenAt {
	if l.off || (len(l.absent) == 0 && len(l.unknown) == 0 && len(l.changes) == 0 && len(l.copies) == 0) {
		return givenAt{}
	}
	received := ev.Received()
	// Past the window, a create is in effect likely, not surely, for as long again: the policy
	// source's refresh waits for the compile before it, which a loaded server takes longer for
	// (random parity controllers seed c:787: an observer binding not in effect 2.8 s after its
	// create completed, on a 2-core machine running two clusters).
	window, band := l.window, l.band()
	steady := len(l.unknown) == 0 && !l.changedWithin(received, band)
	if steady && l.steady != nil {
		return *l.steady
	}
	completed := auditlog.ParseTime(ev.StageTimestamp)
	// The request's own verdicts show what its server had compiled when it admitted it: of
	// any server's (an export's too).
	var own map[givenKey]bool
	if !steady {
		l.shownCompiled(ev, completed, func(k givenKey) {
			if own == nil {
				own = map[givenKey]bool{}
			}
			own[k] = true
		})
	}
	rc := recency{l: l, file: file, received: received, completed: completed, lostReceived: ev.Loss.Lost.Has(auditlog.LostReceived), window: window, band: band, own: own}
	var g givenAt
	for k := range l.absent {
		if _, how := rc.of(k); how == recentUnsure {
			continue // decided with, and unsure
		}
		if g.absent == nil {
			g.absent = map[givenKey]bool{}
		}
		g.absent[k] = true
	}
	for _, ps := range l.pairs {
		for _, p := range ps {
			if g.absent[p.policy] || g.absent[p.binding] {
				continue
			}
			for _, k := range []givenKey{p.policy, p.binding} {
				if c, ok := l.changedAt(k, received); ok {
					if g.changed == nil {
						g.changed = map[givenPair]changedPair{}
					}
					c.anyRequest = c.anyRequest || g.changed[p].anyRequest
					c.policy = c.policy || g.changed[p].policy
					c.selectedAny = c.selectedAny || g.changed[p].selectedAny
					g.changed[p] = c
				}
			}
			why, how := rc.of(p.policy)
			if w, h := rc.of(p.binding); h > how && how != recentUnsure || h == recentUnsure {
				why, how = w, h
			}
			switch how {
			case recentUnsure:
				if g.unsure == nil {
					g.unsure = map[givenPair]string{}
				}
				g.unsure[p] = why
			case recentLikely:
				if g.likely == nil {
					g.likely = map[givenPair]string{}
				}
				g.likely[p] = why
			}
		}
	}
	if len(g.absent) > 0 {
		names := make([]string, 0, len(g.absent))
		for _, k := range slices.SortedFunc(maps.Keys(g.absent), compareGivenKeys) {
			names = append(names, k.String())
		}
		g.key = strings.Join(names, ",")
	}
	if steady {
		l.steady = &g
	}
	return g
}

// howRecent is what a request may assume of the latest change of a given policy or binding:
// settled (in effect, or gone, as the log's order has it), unsure (the policy source may not
// have compiled it), or likely (compiled, unsure only because an export lost when the request
// was received, or past the window, within as long again after a create).
type howRecent int

const (
	recentSettled howRecent = iota
	recentUnsure
	recentLikely
)

// recency is how recent the changes of the given policies and bindings are for a request of
// the log's file received at received and completed at completed (lifecycle.at): within window
// after one, the policy source may not have compiled it; a create within band, likely has;
// own are those the request's own verdicts show compiled.
type recency struct {
	l                   *lifecycle
	file                string
	received, completed time.Time
	lostReceived        bool
	window, band        time.Duration
	own                 map[givenKey]bool
}

// of is what the request may assume of k's latest change, and why when not settled.
func (rc recency) of(k givenKey) (string, howRecent) {
	l, received := rc.l, rc.received
	if why, ok := l.unknown[k]; ok {
		return why, recentUnsure
	}
	c, ok := l.changes[k]
	if !ok {
		return "", recentSettled
	}
	if received.IsZero() || c.done.IsZero() {
		// When the request was received (a long-running one an export lost the time of),
		// or when the change completed, is not known.
		return fmt.Sprintf("%s was created or deleted at %s, and when the request was received is not known", k, c.by), recentUnsure
	}
	// A request received before the change completed (logged after it) is unsure too.
	since := received.Sub(c.done)
	if since >= rc.band || since >= rc.window && c.spec {
		// (Past the window a spec change is settled here: changedAt holds the copy it
		// replaced for the band, lifecyclespec.go.)
		return "", recentSettled
	}
	if c, ok := l.compiled[k]; ok && c.file == rc.file && !received.Before(c.at) || rc.own[k] {
		return "", recentSettled // the server's log shows it compiled
	}
	what := "deleted"
	if !l.absent[k] {
		what = "created"
	}
	if since >= rc.window {
		slow := fmt.Sprintf("%s was %s at %s, %s: kube-apiserver's policy source compiles what its informers hold a second after its last refresh, and a loaded server takes longer to compile", k, what, c.by, rc.since(c.done))
		if l.absent[k] {
			// A delete the policy source compiles late leaves the pair in effect: decided
			// with it, unsure, as within the window (the replay does not also decide
			// without it to give the likely outcome).
			return slow, recentUnsure
		}
		return slow, recentLikely
	}
	if rc.lostReceived && !l.absent[k] && !rc.completed.IsZero() && rc.completed.Sub(c.done) >= rc.window {
		// The request completed well after the create: received then too, likely (the
		// export gives the earliest it may have been received, a minute before).
		return fmt.Sprintf("%s was created at %s, %s: within the second kube-apiserver's policy source takes to compile it, it was decided without it", k, c.by, rc.since(c.done)), recentLikely
	}
	return fmt.Sprintf("%s was %s at %s, %s, and kube-apiserver's policy source compiles what its informers hold a second after its last refresh, and compiling takes time", k, what, c.by, rc.since(c.done)), recentUnsure
}

// since says when a change that completed at done did against the request: before it was
// received, or, where its export lost when it was received (received is then the earliest it
// can have been, a minute before it completed), before it completed.
func (rc recency) since(done time.Time) string {
	if rc.lostReceived && !rc.completed.IsZero() {
		return rc.completed.Sub(done).Round(time.Millisecond).String() + " before the request completed, and the export does not say when it was received"
	}
	if rc.received.Before(done) {
		return "after the request was received"
	}
	return rc.received.Sub(done).Round(time.Millisecond).String() + " before the request was received"
}

// changedWithin says whether a given policy or binding came or went within window before a
// request received at received (or after it).
func (l *lifecycle) changedWithin(received time.Time, window time.Duration) bool {
	return len(l.changes) > 0 && (received.IsZero() || l.undated || received.Sub(l.latest) < window)
}

// filter keeps the scope's policies a request received at g may be decided with: each with a
// pair there (or unsure).
func (g givenAt) filter(l *lifecycle, policies []string) []string {
	if len(g.absent) == 0 {
		return policies
	}
	var out []string
	for _, name := range policies {
		ps, given := l.pairs[name]
		if !given {
			out = append(out, name)
			continue
		}
		for _, p := range ps {
			if !g.absent[p.policy] && !g.absent[p.binding] {
				out = append(out, name)
				break
			}
		}
	}
	return out
}

// admittedWithout says whether a decision's results of the pair (of a validating policy) are
// admits only, without a failure, an error or an audit annotation: what a binding's
// validationActions do not change.
func admittedWithout(d *verify.Decision, p givenPair) bool {
	if d == nil || p.policy.kind != givenPolicy {
		return false
	}
	for _, res := range d.Results {
		if res.Policy == p.policy.name && res.Binding == p.binding.name && (res.Result != verify.ResultAdmit || len(res.AuditAnnotations) > 0) {
			return false
		}
	}
	return true
}

// UnknownWarningsNote is the note of a record whose response's warnings from a policy or
// binding created or deleted moments before are left out, not known.
const UnknownWarningsNote = "the warnings of a policy or binding created or deleted moments before are not known, and left out: kube-apiserver's policy source compiles what its informers hold a second after its last refresh, and compiling takes time"

// settleUnsure makes a job's record indeterminate where a pair the policy source may not have
// compiled the change of gave it a verdict: a result other than an admit, an audit
// annotation, a mutation.
func (j *job) settleUnsure() {
	out := j.result.out
	if len(j.given.unsure) == 0 && len(j.given.likely) == 0 && len(j.given.changed) == 0 || out == nil || out.Decision == DecisionIndeterminate || j.result.skip != "" || j.result.notMatched {
		return
	}
	if changed := j.changedWhy(); len(changed) > 0 {
		// The server decided with the log's copy, which the replay does not: the given
		// one's decision is what it would have been with the given one.
		alt := Alternative{Decision: out.Decision, Code: out.Code, Message: out.Message, If: "the cluster's policies and bindings were the given ones"}
		out.indeterminate(because(ReasonPolicyChanged, strings.Join(changed, "; ")))
		out.Alternatives = append(out.Alternatives, alt)
		return
	}
	unsure, why := j.gaveOf(j.given.unsure)
	likely, likelyWhy := j.gaveOf(j.given.likely)
	// The warnings of the pairs that only warned are not claimed: a warning alone decides
	// nothing and leaves no trace in the log (random parity seed c:633: the server gave none).
	var warned givenPairs
	for _, m := range []map[givenPair]string{j.given.unsure, j.given.likely} {
		for p := range m {
			if j.onlyWarned(p) {
				warned = append(warned, p)
			}
		}
	}
	if len(unsure) == 0 {
		out.unclaimWarnings(warned)
	} else if !j.settledAnyway(out, unsure, warned, why) {
		// The decision is with each pair as the given one: created, its create compiled;
		// deleted, its delete not yet.
		alt := Alternative{Decision: out.Decision, Code: out.Code, Message: out.Message, If: "kube-apiserver's policy source had compiled the create of each pair created, and not yet the delete of each deleted"}
		out.indeterminate(because(ReasonPolicySource, strings.Join(why, "; ")))
		out.Alternatives = append(out.Alternatives, alt)
		return
	}
	// Decided with the pairs created past the policy source's window, or moments before the
	// request completed where an export lost when it was received: likely, unless settled so.
	if len(likely) > 0 && !j.settledAnyway(out, likely, nil, likelyWhy) {
		out.likely(Alternative{Decision: DecisionIndeterminate, Reason: ReasonPolicySource, Detail: strings.Join(likelyWhy, "; "),
			If: "kube-apiserver's policy source had not compiled the create yet when it admitted the request"})
	}
}

// settledAnyway settles a record that pairs the policy source may not have compiled the
// change of (why) gave a verdict, where it is known whichever way: the same with them or
// without (job.withoutRefusingPairs: what they gave not claimed), or the request's own response
// shows whether the server had them in effect (an admit they would have refused:
// job.admittedWithoutPairs; the one pair's denial: job.deniedByOwn), or a pair settled long
// before denies it too (job.deniedBySettled). warned are the pairs that only warned, whose
// warnings are not claimed. It says whether it settled the record.
func (j *job) settledAnyway(out *Record, pairs, warned givenPairs, why []string) bool {
	switch {
	case j.withoutRefusingPairs(out, pairs, warned, why) || j.admittedWithoutPairs(out, pairs, warned, why):
	case out.Decision == DecisionDeny && j.deniedByOwn(pairs):
		// The response is the pair's denial, as the evaluation words it: the server had it
		// in effect (a delete not compiled yet), and decided as the replay did with it.
		out.Notes = append(out.Notes, "denied by a policy and binding created or deleted moments before, which the request's own response shows in effect for it: "+strings.Join(why, "; "))
		out.unclaimWarnings(warned)
	case out.Decision == DecisionDeny && j.deniedBySettled():
		// A pair the policy source compiled long before denies the request too: denied
		// whichever way; which refusal the server answered with is its informers' choice
		// (the record's refusal alternatives).
		out.Notes = append(out.Notes, "denied whether or not kube-apiserver's policy source had compiled the change: "+strings.Join(why, "; "))
		out.unclaimWarnings(warned)
	default:
		return false
	}
	return true
}

// gave says whether the pair gave the job's request a verdict: a validating policy's result
// other than an admit or a warning alone (an error of a mutating one under failurePolicy Fail
// too), an admit with audit annotations (which the record's results leave out: the log shows
// them or not), or a MutatingAdmissionPolicy's change (one that changed nothing had no effect).
func (j *job) gave(p givenPair) bool {
	out := j.result.out
	of := func(policy, binding string) bool { return policy == p.policy.name && binding == p.binding.name }
	if slices.ContainsFunc(out.Results, func(res RecordResult) bool {
		return of(res.Policy, res.Binding) && !slices.Equal(res.Actions, []string{"Warn"})
	}) {
		return true
	}
	if d := j.result.dec; d != nil && slices.ContainsFunc(d.Results, func(res verify.Result) bool { return of(res.Policy, res.Binding) && len(res.AuditAnnotations) > 0 }) {
		return true
	}
	return p.policy.kind == givenMutating && slices.ContainsFunc(out.Mutations, func(c verify.Change) bool { return of(c.Policy, c.Binding) })
}

// onlyWarned says whether the pair gave the job's request warnings and no verdict (gave).
func (j *job) onlyWarned(p givenPair) bool {
	return !j.gave(p) && slices.ContainsFunc(j.result.out.Results, func(res RecordResult) bool {
		return res.Policy == p.policy.name && res.Binding == p.binding.name
	})
}

// gaveOf are the pairs of m that gave the job's request a verdict (gave), and why each may not
// have been compiled (m's), sorted, once each.
func (j *job) gaveOf(m map[givenPair]string) (givenPairs, []string) {
	var pairs givenPairs
	var why []string
	for p, w := range m {
		if j.gave(p) {
			pairs = append(pairs, p)
			why = append(why, w)
		}
	}
	slices.Sort(why)
	return pairs, slices.Compact(why)
}

// changedWhy are why the pairs the log left other than the given ones (lifecycleSpec's changed
// pairs) decide the job's request in the server, sorted, once each: a changed copy decides
// the requests it selects, those the given pair matches, or any where what selects them
// differs too.
func (j *job) changedWhy() []string {
	var changed []string
	for p, c := range j.given.changed {
		matched := j.result.dec == nil
		if d := j.result.dec; d != nil {
			of := func(res verify.Result) bool { return res.Policy == p.policy.name && res.Binding == p.binding.name }
			matched = slices.ContainsFunc(d.Results, of)
			if m := d.Mutation; m != nil {
				matched = matched || slices.ContainsFunc(m.Refusals, of) || slices.ContainsFunc(m.Invoked, func(c verify.Change) bool { return c.Policy == p.policy.name && c.Binding == p.binding.name })
			}
		}
		if c.actionsOnly && admittedWithout(j.result.dec, p) {
			// Its copy's validationActions act on failures, of which it gave none.
			continue
		}
		// Another request than the given pair's may be its copy's, but within the given
		// policy's rules when only the binding's selection differs.
		anyRequest := c.anyRequest && (c.policy || p.policy.kind != givenPolicy || slices.Contains(j.policies, p.policy.name))
		// Where only its params may differ, the requests the given pair selects, whether
		// it ran on them or not (its param not found).
		selected := c.selectedAny && selectedBy(j, p)
		if anyRequest || selected || matched || j.gave(p) {
			changed = append(changed, c.why)
		}
	}
	slices.Sort(changed)
	return slices.Compact(changed)
}

// givenPairs are pairs of given policies and bindings.
type givenPairs []givenPair

// has says whether the pairs hold the policy's binding.
func (ps givenPairs) has(policy, binding string) bool {
	return slices.ContainsFunc(ps, func(p givenPair) bool { return p.policy.name == policy && p.binding.name == binding })
}

// hasPolicy says whether a pair of the pairs is the policy's.
func (ps givenPairs) hasPolicy(policy string) bool {
	return slices.ContainsFunc(ps, func(p givenPair) bool { return p.policy.name == policy })
}

// withoutRefusingPairs settles a record whose unsure pairs (the policy source may not have
// compiled their change: why) gave it a verdict, where each is a validating policy's binding
// that refused nothing: each of its results is an admit, or one of a binding without the Deny
// action (an audited or warned failure; a configuration error under failurePolicy Fail refuses
// whatever the actions). A validating pair's evaluation does not change another's: with or
// without such pairs, the verdict is the same; what they gave (their results, their policies'
// audit annotations, the validation_failure annotation, their warnings, and those of the
// unsure pairs that only warned) is not claimed, and a note says so. It says whether it
// settled the record: not one the log's verdicts contradict in what is claimed
// (--check-recorded).
func (j *job) withoutRefusingPairs(out *Record, pairs, warned givenPairs, why []string) bool {
	if j.result.dec == nil || slices.ContainsFunc(pairs, func(p givenPair) bool { return p.policy.kind != givenPolicy }) {
		return false
	}
	if slices.ContainsFunc(j.result.dec.Results, func(r verify.Result) bool {
		return pairs.has(r.Policy, r.Binding) && r.Result != verify.ResultAdmit && slices.Contains(r.Actions, admissionregistrationv1.Deny)
	}) {
		// It refused, or would have where it cannot be configured under failurePolicy
		// Fail (its params not found where parameterNotFoundAction is Deny: the
		// dispatcher's addConfigError, whatever its binding's actions).
		return false
	}
	if !j.checkedWithout(out, *j.result.dec, pairs) {
		return false
	}
	out.unclaim(pairs, warned)
	out.Notes = append(out.Notes, "decided whether or not kube-apiserver's policy source had compiled the change, whose bindings refused nothing here: "+strings.Join(why, "; ")+"; what they gave (their results, audit annotations and validation_failure entries, warnings) is not claimed")
	return true
}

// admittedWithoutPairs settles a record denied only by unsure pairs (the policy source may not
// have compiled their change: why) whose request the log shows admitted (a 2xx response, which
// a validating binding the server had compiled and that denied would have made a refusal): the
// server had not compiled the create of those pairs, or had compiled the delete, and the
// decision is the admit it gave. What the pairs gave (their results, their policies' audit
// annotations, the validation_failure annotation, their warnings, and those of the unsure pairs
// that only warned) is not claimed, and a note says so. Not where anything else refused the
// request in the evaluation (a settled pair's denial, a mutating policy's refusal), or the
// record is already not certain. It says whether it settled the record.
func (j *job) admittedWithoutPairs(out *Record, pairs, warned givenPairs, why []string) bool {
	dec := j.result.dec
	if dec == nil || dec.Allowed || out.Decision != DecisionDeny || out.Certainty != CertaintyCertain || j.rec.outcome != RecordedAdmit ||
		dec.Mutation != nil && !dec.Mutation.Allowed || slices.ContainsFunc(out.Alternatives, func(a Alternative) bool { return !a.refusal }) ||
		slices.ContainsFunc(pairs, func(p givenPair) bool { return p.policy.kind != givenPolicy }) {
		return false
	}
	refused := false
	for _, r := range dec.Results {
		if r.Result == verify.ResultAdmit || !slices.Contains(r.Actions, admissionregistrationv1.Deny) {
			continue
		}
		if !pairs.has(r.Policy, r.Binding) {
			return false // refused by a pair the policy source had compiled: the log says otherwise
		}
		refused = true
	}
	admitted := *dec
	admitted.Allowed, admitted.Code, admitted.Message, admitted.Denials = true, 0, "", nil
	if !refused || !j.checkedWithout(out, admitted, pairs) {
		return false
	}
	out.Decision, out.Code, out.Message, out.Alternatives = DecisionAdmit, 0, "", nil
	out.unclaim(pairs, warned)
	out.changed()
	out.Notes = append(slices.Clip(out.Notes), "admitted without what kube-apiserver's policy source had not compiled yet (a create) or had compiled already (a delete), as the request's own response shows: a binding in effect would have refused it: "+strings.Join(why, "; ")+"; what those gave here (their results, audit annotations and validation_failure entries, warnings) is not claimed")
	return true
}

// checkedWithout says whether a record checked against the log's verdicts (--check-recorded)
// agrees with them once what the pairs gave is not claimed (dec, the decision to claim, with
// their results, their policies' audit annotations and the validation_failure annotation
// forgotten), and then drops its disagreements; a disagreement left stands. A record not
// checked, or without disagreements, agrees.
func (j *job) checkedWithout(out *Record, dec verify.Decision, pairs givenPairs) bool {
	if len(out.Disagreements) == 0 {
		return true
	}
	dec.UnknownAnnotations = maps.Clone(dec.UnknownAnnotations)
	dec.Results = slices.DeleteFunc(slices.Clone(dec.Results), func(r verify.Result) bool { return pairs.has(r.Policy, r.Binding) })
	dec.Forget(ValidationFailureAnnotation, "not claimed")
	for k := range dec.AuditAnnotations {
		if policy, _, _ := strings.Cut(k, "/"); pairs.hasPolicy(policy) {
			dec.Forget(k, "not claimed")
		}
	}
	if len(check(j.ev, j.rec, &dec, j.evidenced)) > 0 {
		return false
	}
	out.Disagreements = nil
	return true
}

// unclaim takes out of the record what the pairs gave (their results, their policies' audit
// annotations, the validation_failure annotation, their warnings) and the warnings of the
// pairs that only warned, with a note.
func (r *Record) unclaim(pairs, warned givenPairs) {
	r.Results = slices.DeleteFunc(slices.Clone(r.Results), func(res RecordResult) bool { return pairs.has(res.Policy, res.Binding) })
	r.AuditAnnotations = maps.Clone(r.AuditAnnotations)
	maps.DeleteFunc(r.AuditAnnotations, func(k, _ string) bool {
		policy, _, _ := strings.Cut(k, "/")
		return k == ValidationFailureAnnotation || pairs.hasPolicy(policy)
	})
	r.unclaimWarnings(append(slices.Clip(pairs), warned...))
}

// unclaimWarnings takes out of the record the warnings of the pairs the policy source may not
// have compiled, with a note; nothing where there are none.
func (r *Record) unclaimWarnings(pairs givenPairs) {
	if len(pairs) == 0 {
		return
	}
	r.Warnings = slices.DeleteFunc(slices.Clone(r.Warnings), func(w string) bool {
		return slices.ContainsFunc(pairs, func(p givenPair) bool {
			return strings.HasPrefix(w, verify.WarningPrefix(p.policy.name, p.binding.name))
		})
	})
	r.Notes = append(slices.Clip(r.Notes), UnknownWarningsNote)
}

// deniedByOwn says whether the response the log records for the job's request is the denial,
// as the evaluation words it, of the one unsure pair that gave the request a verdict (pairs):
// the server had that validating policy and binding in effect for the request (for a delete,
// the policy source had not compiled it yet; for a create, shownCompiled has already said so),
// and the decision with it is the server's.
func (j *job) deniedByOwn(pairs givenPairs) bool {
	if len(pairs) != 1 || j.result.dec == nil || j.rec.outcome != RecordedDeny {
		return false
	}
	p := pairs[0]
	return p.policy.kind == givenPolicy && j.rec.policy == p.policy.name && j.rec.binding == p.binding.name &&
		j.result.dec.Refuses(j.ev.Code(), j.ev.Message())
}

// deniedBySettled says whether the decision of the job's request stands whether or not the
// policy source had compiled the changes of the pairs it may not have: a binding with the Deny
// action of a pair whose last change is settled denied it, and the others' results are denials
// of the Deny action alone, which leave nothing else in the response or the log (no warning,
// no audit annotation or validation failure).
func (j *job) deniedBySettled() bool {
	dec := j.result.dec
	if dec == nil {
		return false
	}
	unsettled := func(res verify.Result) bool {
		of := func(p givenPair) bool { return p.policy.name == res.Policy || p.binding.name == res.Binding }
		return slices.ContainsFunc(slices.Collect(maps.Keys(j.given.unsure)), of) || slices.ContainsFunc(slices.Collect(maps.Keys(j.given.likely)), of) ||
			slices.ContainsFunc(slices.Collect(maps.Keys(j.given.changed)), of)
	}
	settled := false
	for _, res := range dec.Results {
		switch {
		case !unsettled(res):
			settled = settled || res.Result == verify.ResultDeny && slices.Contains(res.Actions, admissionregistrationv1.Deny)
		case res.Result == verify.ResultAdmit && len(res.AuditAnnotations) == 0:
		case res.Result != verify.ResultDeny || !slices.Equal(res.Actions, []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}) || len(res.AuditAnnotations) > 0:
			return false
		}
	}
	return settled
}
