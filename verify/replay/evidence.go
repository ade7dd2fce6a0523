package replay

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// The verdicts a log records are evidence of what the server did: which state it decided on
// (informers behind or current, the watch cache's first attempt), which way a patch was sent.
// The verdicts of a policy are evidence only where the log shows that very policy installed:
// the absence of a policy's annotation says nothing when the cluster does not run it (a replay
// of the in-tree guards over a log recorded with other guards). Without --check-recorded, only
// where the log shows it word for word (proven): the replayed policy's create or update, and
// each of its replayed bindings', with the spec the replay gives, and no other binding of it;
// the verdicts of a policy the log shows only by them may be another version's (the user's
// change, replayed before its rollout, of the policy the cluster runs). --check-recorded says
// the replayed policies are the cluster's: their verdicts are evidence wherever the log shows
// them installed, and a prediction they contradict is a disagreement.

// installed follows which of the replayed policies the log shows installed in the cluster, on
// the ordered stage: a policy whose successful create or update the log holds, with the create
// or update of one of its replayed bindings, or whose verdicts (a validation_failure entry, a
// `<policy>/<key>` audit annotation, a denial) the log records. A deletion of the policy ends
// it. Jobs hold the set of the moment (evidenced): it is replaced, never changed, when it
// changes.
type installed struct {
	// loaded are the replayed policies with bindings; bindingOf the policy of each replayed
	// binding.
	loaded    map[string]bool
	bindingOf map[string]string
	// specs are the replayed policies' and bindings' specs as the server stores them
	// (validatingSpecOf, bindingSpecOf), by name.
	specs, bindingSpecs map[string]string
	// differs are the policies whose copy in the cluster (the policy or a replayed binding of
	// it) the log last showed written with another spec than the replayed one: its verdicts
	// are not the replayed policy's. clusterSpecs are the specs
	// the log last showed of each policy and binding (policies by name, bindings by
	// "binding/" and name), and changed when the log last showed one of a policy replaced:
	// kube-apiserver's policy source compiles a change up to two seconds later (policyRefresh).
	differs      map[string]map[string]bool
	clusterSpecs map[string]string
	changed      map[string]time.Time
	// deleted is when the log last deleted each policy or a binding of it, and window the
	// policy source's second and the informers' lag after a change.
	deleted map[string]time.Time
	window  time.Duration
	// seen are the policies and bindings (by key) the log has shown written.
	seen      map[string]bool
	written   map[string]bool // the policies whose create or update the log holds
	bound     map[string]bool // the policies a binding of which the log creates or updates
	recorded  map[string]bool // the policies whose verdicts the log records
	evidenced map[string]bool
	// proven are the evidenced policies the log shows word for word: the policy and each of
	// its replayed bindings written with the replayed spec, no other binding of it (others,
	// by name, the bindings of replayed policies the replay does not give; opaque those of a
	// policy the log does not show).
	proven map[string]bool
	others map[string]string
	opaque map[string]bool
	// touched is when the log last wrote each replayed policy, one of its bindings or another
	// binding of it, a first create included: its policy source may not have compiled it yet,
	// and the absence of its verdict says nothing (provenAt).
	touched map[string]time.Time
	// ever are the policies evidenced at some point of the log.
	ever map[string]bool
}

func newInstalled(loaded map[string]bool, bindings map[string][]string, policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindingList []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) *installed {
	in := &installed{loaded: loaded, bindingOf: map[string]string{}, written: map[string]bool{}, bound: map[string]bool{}, recorded: map[string]bool{}, ever: map[string]bool{},
		specs: map[string]string{}, bindingSpecs: map[string]string{}, differs: map[string]map[string]bool{}, clusterSpecs: map[string]string{}, changed: map[string]time.Time{}, deleted: map[string]time.Time{}, seen: map[string]bool{}, window: policyRefresh + DefaultLag,
		others: map[string]string{}, opaque: map[string]bool{}, touched: map[string]time.Time{}}
	for p, bs := range bindings {
		for _, b := range bs {
			in.bindingOf[b] = p
		}
	}
	for _, p := range policies {
		in.specs[p.Name] = validatingSpecOf(p)
	}
	for _, b := range bindingList {
		in.bindingSpecs[b.Name] = bindingSpecOf(b)
	}
	return in
}

// validatingSpecOf is a ValidatingAdmissionPolicy's spec as the server stores it (defaulted),
// as JSON, without the white space around its CEL expressions (see specOf); "" when it does
// not encode.
func validatingSpecOf(p *admissionregistrationv1.ValidatingAdmissionPolicy) string {
	p = p.DeepCopy()
	for i := range p.Spec.Validations {
		v := &p.Spec.Validations[i]
		v.Expression, v.MessageExpression = trimCEL(v.Expression), trimCEL(v.MessageExpression)
	}
	for i := range p.Spec.AuditAnnotations {
		p.Spec.AuditAnnotations[i].ValueExpression = trimCEL(p.Spec.AuditAnnotations[i].ValueExpression)
	}
	return storedSpec(p, &p.Spec, p.Spec.MatchConditions, p.Spec.Variables)
}

// bindingSpecOf is a ValidatingAdmissionPolicyBinding's spec as the server stores it
// (defaulted), as JSON; "" when it does not encode.
func bindingSpecOf(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) string {
	b = b.DeepCopy()
	return storedSpec(b, &b.Spec, nil, nil)
}

// clusterSpec is the spec of the policy or binding a successful write (ev) of the log left in
// the cluster, or ok false when the log does not show it (a patch at level Request, a level
// without bodies).
func clusterSpec(ev *Event, binding bool) (spec string, ok bool) {
	kind := givenPolicy
	if binding {
		kind = givenBinding
	}
	spec = givenSpecOf(givenKey{kind: kind}, writtenSpecObject(ev, nil))
	return spec, spec != ""
}

// followSpec notes the spec a write of the log (ev) left of a replayed policy's copy in the
// cluster, or of one of its replayed bindings (binding, by key): whether it is the replayed
// one, and when it last changed.
func (in *installed) followSpec(ev *Event, policy, key, replayed string, binding bool) bool {
	spec, ok := clusterSpec(ev, binding)
	was, known := in.clusterSpecs[key]
	// A write whose result the log does not show (a level without bodies) leaves it as the
	// log last showed it: the replayed one unless shown otherwise.
	differs := ok && spec != replayed || !ok && in.differs[policy][key]
	changed := false
	if in.seen[key] && (!known || !ok || spec != was) {
		// It replaced a copy of another spec, or of one the log did not show: the policy
		// source may have admitted requests with that one for a while. (A copy created
		// where there was none only adds verdicts.)
		if done := auditlog.ParseTime(ev.StageTimestamp); !done.IsZero() {
			in.changed[policy] = done
		}
		changed = true
	}
	in.seen[key] = true
	in.touch(policy, ev)
	if ok {
		in.clusterSpecs[key] = spec
	} else {
		delete(in.clusterSpecs, key)
	}
	d := in.differs[policy]
	if d == nil {
		d = map[string]bool{}
		in.differs[policy] = d
	}
	if d[key] != differs {
		changed = true
	}
	if differs {
		d[key] = true
	} else {
		delete(d, key)
	}
	return changed
}

// followDelete notes the deletion (ev) of a replayed policy's copy in the cluster, or of one of
// its replayed bindings (by key): the policy source compiles it up to two seconds later, and a
// copy created again is a change.
func (in *installed) followDelete(ev *Event, policy, key string) bool {
	in.touch(policy, ev)
	delete(in.clusterSpecs, key)
	delete(in.differs[policy], key)
	if done := auditlog.ParseTime(ev.StageTimestamp); !done.IsZero() {
		in.changed[policy] = done
		in.deleted[policy] = done
	}
	return true
}

// at is the evidenced policies for a request received at received: but those a write changed
// within window before it, which kube-apiserver's policy source may not have compiled yet.
func (in *installed) at(received time.Time, window time.Duration) map[string]bool {
	return in.settled(in.evidenced, in.changed, received, window)
}

// provenAt is at's proven policies: but those the log wrote (created, a binding of them
// included) within window of received.
func (in *installed) provenAt(received time.Time, window time.Duration) map[string]bool {
	return in.settled(in.proven, in.touched, received, window)
}

// touch notes when a write (ev) of the policy or a binding of it completed.
func (in *installed) touch(policy string, ev *Event) {
	if done := auditlog.ParseTime(ev.StageTimestamp); !done.IsZero() {
		in.touched[policy] = done
	}
}

// forget makes no replayed policy proven until the log shows it again: what the log lacks
// (a rotated file, a line it cannot read) may have written it.
func (in *installed) forget() {
	clear(in.clusterSpecs)
	in.proven = nil
}

// settled is ev but the policies written (changes) within window of received.
func (in *installed) settled(ev map[string]bool, changes map[string]time.Time, received time.Time, window time.Duration) map[string]bool {
	if len(changes) == 0 || received.IsZero() {
		return ev
	}
	var out map[string]bool
	for p, at := range changes {
		if !ev[p] || received.Sub(at) >= window || received.Before(at.Add(-window)) {
			continue
		}
		if out == nil {
			out = maps.Clone(ev)
		}
		delete(out, p)
	}
	if out == nil {
		return ev
	}
	return out
}

// deleting says whether a request received at received came within the time the policy
// source may take (window, compiledWithin) after the log deleted the policy or a binding of it.
func (in *installed) deleting(policy string, received time.Time) bool {
	at, ok := in.deleted[policy]
	return ok && !received.IsZero() && received.Sub(at) < in.window
}

// observe reads what the final event ev shows of the replayed policies.
func (in *installed) observe(ev *Event) {
	changed := false
	mark := func(m map[string]bool, policy string, on bool) {
		if in.loaded[policy] && m[policy] != on {
			m[policy] = on
			changed = true
		}
	}
	verdict := func(policy string) {
		if !in.loaded[policy] || in.deleting(policy, ev.Received()) {
			// A verdict of the policy moments after a delete of it or its binding: the
			// policy source had not compiled the delete yet, which says nothing of after.
			return
		}
		mark(in.recorded, policy, true)
	}
	other := func(policy, binding string) {
		// A verdict of a binding of a replayed policy that the replay is not given: the
		// cluster has it, whether the log shows it written or not.
		if _, given := in.bindingOf[binding]; binding != "" && !given && in.loaded[policy] && in.others[binding] != policy {
			in.others[binding] = policy
			changed = true
		}
	}
	for k, v := range ev.Annotations {
		switch {
		case k == ValidationFailureAnnotation:
			var fs []validationFailure
			if json.Unmarshal([]byte(v), &fs) == nil {
				for _, f := range fs {
					verdict(f.Policy)
					other(f.Policy, f.Binding)
				}
			}
		default:
			if p, _, ok := strings.Cut(k, "/"); ok {
				verdict(p)
			}
		}
	}
	// Every event of the log comes here: the message is searched only where it may be a
	// policy's denial.
	if msg := ev.Message(); strings.Contains(msg, "ValidatingAdmissionPolicy '") {
		if m := vapDenied.FindStringSubmatch(msg); m != nil {
			verdict(m[1])
			other(m[1], m[2])
		}
	}
	if ref := ev.ObjectRef; ref != nil && ref.APIGroup == "admissionregistration.k8s.io" && ref.Subresource == "" && ev.Code() >= 200 && ev.Code() < 300 && !isDryRun(ev) {
		if ev.Verb == "deletecollection" && (ref.Resource == "validatingadmissionpolicies" || ref.Resource == "validatingadmissionpolicybindings") && !in.opaque[deletedSome] {
			// Which it deleted, the log does not say: none is shown from then on.
			in.opaque[deletedSome] = true
			changed = true
		}
		switch ref.Resource {
		case "validatingadmissionpolicies":
			switch ev.Verb {
			case "create", "update", "patch", "apply":
				mark(in.written, ref.Name, true)
				if in.loaded[ref.Name] && in.followSpec(ev, ref.Name, ref.Name, in.specs[ref.Name], false) {
					changed = true
				}
			case "delete":
				mark(in.written, ref.Name, false)
				mark(in.recorded, ref.Name, false)
				if in.loaded[ref.Name] && in.followDelete(ev, ref.Name, ref.Name) {
					changed = true
				}
			}
		case "validatingadmissionpolicybindings":
			if in.followOther(ev, ref.Name) {
				changed = true
			}
			if p, ok := in.bindingOf[ref.Name]; ok {
				switch ev.Verb {
				case "create", "update", "patch", "apply":
					mark(in.bound, p, true)
					if in.loaded[p] && in.followSpec(ev, p, "binding/"+ref.Name, in.bindingSpecs[ref.Name], true) {
						changed = true
					}
				case "delete":
					// Its verdicts end with it (the policy's other bindings' too, until the log
					// shows them again).
					mark(in.bound, p, false)
					mark(in.recorded, p, false)
					if in.loaded[p] && in.followDelete(ev, p, "binding/"+ref.Name) {
						changed = true
					}
				}
			}
		}
	}
	if !changed {
		return
	}
	next, proven := map[string]bool{}, map[string]bool{}
	for p := range in.loaded {
		if (in.recorded[p] || (in.written[p] && in.bound[p])) && len(in.differs[p]) == 0 {
			next[p] = true
			in.ever[p] = true
			if in.shown(p) {
				proven[p] = true
			}
		}
	}
	in.evidenced, in.proven = next, proven
}

// shown says whether the log shows the replayed policy p in the cluster word for word: p and
// each of its replayed bindings last written with the replayed spec, and no other binding of
// it (nor one whose policy the log does not show).
func (in *installed) shown(p string) bool {
	if !in.written[p] || !in.bound[p] || len(in.differs[p]) > 0 || len(in.opaque) > 0 {
		return false
	}
	if s, ok := in.clusterSpecs[p]; !ok || s != in.specs[p] {
		return false
	}
	for b, q := range in.bindingOf {
		if q != p {
			continue
		}
		if s, ok := in.clusterSpecs["binding/"+b]; !ok || s != in.bindingSpecs[b] {
			return false
		}
	}
	for _, q := range in.others {
		if q == p {
			return false
		}
	}
	return true
}

// deletedSome is opaque's key for a deletecollection of the policies or the bindings.
const deletedSome = "(deletecollection)"

// followOther follows a successful write (ev) of a binding the replay does not give (name):
// one of a replayed policy, or whose policy the log does not show, makes its verdicts no
// longer the replayed bindings' alone. It says whether that changed.
func (in *installed) followOther(ev *Event, name string) bool {
	if _, ok := in.bindingOf[name]; ok || ev.Verb == "deletecollection" {
		return false
	}
	was, wasOpaque := in.others[name], in.opaque[name]
	delete(in.others, name)
	delete(in.opaque, name)
	if ev.Verb != "delete" {
		policy, known := "", false
		if obj := writtenSpecObject(ev, nil); obj != nil {
			policy, known, _ = unstructured.NestedString(obj, "spec", "policyName")
		}
		switch {
		case !known:
			// A write whose result the log does not show: it may bind a replayed policy.
			in.opaque[name] = true
		case in.loaded[policy]:
			in.others[name] = policy
		}
	}
	for _, p := range []string{was, in.others[name]} {
		if p != "" {
			in.touch(p, ev)
		}
	}
	return was != in.others[name] || wasOpaque != in.opaque[name]
}

// byAnnotations says whether the audit annotations the log records for the job's request are
// evidence of what the server did: the replay checks the log, validating admission ran, and
// the log shows some of the replayed policies installed (evidenced).
func (j *job) byAnnotations() bool {
	return len(j.evidenced) > 0 && (j.rec.vapRan || j.ev.Annotations[ValidationFailureAnnotation] != "")
}

// summarize lists in the summary which policies the log showed installed.
func (in *installed) summarize(s *Summary) {
	for p := range in.loaded {
		if in.ever[p] {
			s.CheckedPolicies = append(s.CheckedPolicies, p)
		} else {
			s.UncheckedPolicies = append(s.UncheckedPolicies, p)
		}
	}
	slices.Sort(s.CheckedPolicies)
	slices.Sort(s.UncheckedPolicies)
}

// recordedVerdictOf describes the first verdict of one of the policies the event records: a
// validation_failure entry, a `<policy>/<key>` audit annotation, a denial; "" when it records
// none.
func recordedVerdictOf(ev *Event, policies map[string]bool) string {
	if m := vapDenied.FindStringSubmatch(ev.Message()); m != nil && policies[m[1]] {
		return "a denial by " + m[0][:len(m[0])-len(" denied request: ")]
	}
	for _, k := range slices.Sorted(maps.Keys(ev.Annotations)) {
		if k == ValidationFailureAnnotation {
			var fs []validationFailure
			if json.Unmarshal([]byte(ev.Annotations[k]), &fs) == nil {
				for _, f := range fs {
					if policies[f.Policy] {
						return fmt.Sprintf("the validation failure %s of policy %s, binding %s", ev.Annotations[k], f.Policy, f.Binding)
					}
				}
			}
		} else if p, _, ok := strings.Cut(k, "/"); ok && policies[p] {
			return fmt.Sprintf("the audit annotation %s=%q", k, ev.Annotations[k])
		}
	}
	return ""
}
