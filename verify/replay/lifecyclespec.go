package replay

import (
	"bytes"
	"encoding/json"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// The given ValidatingAdmissionPolicies and bindings take the place of the cluster's of their
// names, taken to be the cluster's own where the log does not show otherwise. A write of the
// log that leaves one other than the given (kubectl patch of a binding's validationActions
// from Deny to Warn, an edit of a policy's expression) shows the server decided with the log's
// from then on: a verdict of that pair is not the server's, and the request is
// policy-changed, with the given one's decision as the alternative, until a write leaves it
// the given one again (patched back, deleted and created again), and policy-source within
// the second the policy source takes to compile either. The spec is compared as
// the server stores it (defaulted: evidence.go's validatingSpecOf, bindingSpecOf). A write
// whose result the log does not show (a patch at level Request is applied to the copy the
// log last showed, as a merge patch: the fields of these kinds are atomic, so a strategic
// merge patch merges alike; a level without bodies) may have changed it: policy-changed
// too. A create whose body the log does not hold is taken as the given one. The given
// MutatingAdmissionPolicies and their bindings are followed alike: a request their copy may
// have changed (one the given pair ran on, or any, where what selects the requests differs)
// is policy-changed.

// specCopy is the cluster's copy of a given policy or binding as the log last showed it.
type specCopy struct {
	// obj is its object, nil when the log does not show it; spec its spec (givenSpecOf), ""
	// when not known.
	obj  map[string]any
	spec string
	// changed says how it differs, or may differ, from the given one (no why when it is the
	// given one).
	changed changedPair
	// held are the copies before it that differed from the given one, each with when the
	// write that replaced it completed, within lifecycle.band before its own write: the
	// policy source may still decide with any of them for as long after it was replaced.
	held []heldCopy
}

// heldCopy is a copy the policy source may still hold: how it differed from the given one,
// and when the write that replaced it completed.
type heldCopy struct {
	changed    changedPair
	replacedAt time.Time
}

// sameAs says whether the copy is the one o was: both the given one, or the same known spec
// (a write that leaves it as it was is no change the policy source compiles).
func (c specCopy) sameAs(o specCopy) bool {
	return c.changed.why == "" && o.changed.why == "" || c.spec != "" && c.spec == o.spec
}

// changedPair is why a copy in the cluster differs, or may, from the given one, and whether
// what selects the requests it decides (a policy's match constraints, match conditions,
// failure policy and paramKind, a binding's policy, match resources and paramRef) may differ
// too: a request the given pair does not match, or does not run on, may be the copy's.
type changedPair struct {
	why        string
	anyRequest bool
	// policy says what differs (or may) is the policy's own selection (its match constraints,
	// match conditions, failure policy): a request its given rules do not match may be its
	// copy's. A binding's selection narrows its policy's: the given policy's rules still
	// bound the requests its copy decides.
	policy bool
	// actionsOnly says the copy is a binding that differs from the given one only in its
	// validationActions, which act on failed validations alone: a request the given pair
	// admits without a failure its copy admits alike.
	actionsOnly bool
	// selectedAny says the copy's params (a policy's paramKind, a binding's paramRef) may
	// differ: a request the given pair selects, whether it ran on it or not, may be the
	// copy's.
	selectedAny bool
}

// givenSpecs are the specs of the given policies and bindings the lifecycle compares the
// log's writes with, and their objects (to apply a patch to).
type givenSpecs struct {
	spec map[givenKey]string
	obj  map[givenKey]map[string]any
}

func newGivenSpecs(policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding,
	mutating []*admissionregistrationv1.MutatingAdmissionPolicy, mutatingBindings []*admissionregistrationv1.MutatingAdmissionPolicyBinding) givenSpecs {
	g := givenSpecs{spec: map[givenKey]string{}, obj: map[givenKey]map[string]any{}}
	add := func(k givenKey, spec string, o runtime.Object) {
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if spec == "" || err != nil {
			return
		}
		g.spec[k], g.obj[k] = spec, u
	}
	for _, p := range policies {
		add(givenKey{givenPolicy, p.Name}, validatingSpecOf(p), p)
	}
	for _, b := range bindings {
		add(givenKey{givenBinding, b.Name}, bindingSpecOf(b), b)
	}
	for _, p := range mutating {
		add(givenKey{givenMutating, p.Name}, specOf(p), p)
	}
	for _, b := range mutatingBindings {
		add(givenKey{givenMutatingBinding, b.Name}, mutatingBindingSpecOf(b), b)
	}
	return g
}

// mutatingBindingSpecOf is a MutatingAdmissionPolicyBinding's spec as the server stores it
// (defaulted), as JSON; "" when it does not encode.
func mutatingBindingSpecOf(b *admissionregistrationv1.MutatingAdmissionPolicyBinding) string {
	b = b.DeepCopy()
	return storedSpec(b, &b.Spec, nil, nil)
}

// followSpec notes what a successful write of a given policy or binding (not a delete) left
// of its spec in the cluster.
func (l *lifecycle) followSpec(k givenKey, ev *Event, by string) {
	given, tracked := l.specs.spec[k]
	if !tracked {
		return
	}
	cur := l.specs.obj[k]
	if c, ok := l.copies[k]; ok {
		cur = c.obj
	}
	obj := writtenSpecObject(ev, cur)
	prev := l.copies[k]
	done := auditlog.ParseTime(ev.StageTimestamp)
	c := specCopy{obj: obj, held: l.stillHeld(prev.held, done)}
	if obj != nil {
		c.spec = givenSpecOf(k, obj)
	}
	switch spec := c.spec; {
	case obj == nil && ev.Verb == "create":
		// Its body not in the log: taken as the given one.
		c.obj, c.spec = l.specs.obj[k], given
	case obj == nil:
		c.changed = changedPair{k.String() + " was written at " + by + ", whose result the log does not show: it may differ from the given one", true, k.policy(), false, false}
	case spec != given:
		any := !sameSelection(k, given, spec, false)
		c.changed = changedPair{k.String() + " was written at " + by + " other than the given one", any, any && k.policy(), k.kind == givenBinding && sameButActions(given, spec), false}
		// What decides whether a pair runs on a request it selects, or refuses it without
		// running: its params (a binding whose paramRef finds none skips the request, or
		// refuses it with parameterNotFoundAction Deny; helper exAJ: a
		// MutatingAdmissionPolicyBinding patched to Deny refused pods the given one, which
		// allowed, did not run on).
		c.changed.selectedAny = !any && !sameSelection(k, given, spec, true)
		if ev.Loss.Lost.Has(auditlog.LostDryRun) {
			c.changed.why += " (unless it was a dry run, which the export does not say)"
		}
	}
	if !c.sameAs(prev) {
		l.steady = nil
		if ev.Verb != "create" {
			// The policy source compiles the change up to a second later (a create is a
			// change already); a verdict of the pair is no evidence it had (soon): the
			// other spec may give it too.
			l.setChange(k, givenChange{done: done, received: ev.Received(), by: by, soon: true, spec: true})
		}
		if prev.changed.why != "" {
			// The copy before this write, when it differed from the given one, is what the
			// policy source may still decide with for a while (lifecycle.band).
			c.held = append(c.held, heldCopy{changed: prev.changed, replacedAt: done})
		}
	}
	l.copies[k] = c
}

// band is how long after a write of a given policy or binding the policy source may still
// decide without it, or with the copy it replaced: the window, and as long again, which a
// loaded server takes (compiledWithin of the informers' lag).
func (l *lifecycle) band() time.Duration {
	return l.window + policyRefresh
}

// stillHeld are the held copies the policy source may still have decided a request the log
// records after a write that completed at done with: replaced within the band before that
// request was received (changedAt), which may be up to --request-timeout before done (a
// request received within the band, logged after a later write that completed past it).
func (l *lifecycle) stillHeld(held []heldCopy, done time.Time) []heldCopy {
	var out []heldCopy
	for _, h := range held {
		if !done.IsZero() && done.Sub(h.replacedAt) < l.band()+auditlog.MaxRequestDuration {
			out = append(out, h)
		}
	}
	return out
}

// changedAt is how the cluster's copy of k differed, or may have, from the given one when a
// request received at received was decided; false when it did not.
func (l *lifecycle) changedAt(k givenKey, received time.Time) (changedPair, bool) {
	c := l.copies[k]
	// held: the earlier copies the policy source may still decide with, together.
	held := changedPair{actionsOnly: true}
	for _, h := range c.held {
		if !received.IsZero() && !h.replacedAt.IsZero() && received.Sub(h.replacedAt) >= l.band() {
			continue
		}
		held.why = joinWhy(held.why, h.changed.why)
		held.anyRequest = held.anyRequest || h.changed.anyRequest
		held.policy = held.policy || h.changed.policy
		held.actionsOnly = held.actionsOnly && h.changed.actionsOnly
		held.selectedAny = held.selectedAny || h.changed.selectedAny
	}
	switch {
	case c.changed.why != "" && !c.changed.anyRequest && held.anyRequest:
		// A copy before the latest write selected other requests, and the policy source
		// may not have compiled the writes after it yet (exU: a binding's namespaceSelector
		// patched back, a request in the namespace it selected before refused by it 494ms
		// later).
		return changedPair{c.changed.why + "; " + held.why + ", which kube-apiserver's policy source may still have decided with: the write after it completed moments before the request was received", true, held.policy, false, false}, true
	case c.changed.why != "" && held.why != "":
		out := c.changed
		out.actionsOnly = out.actionsOnly && held.actionsOnly
		out.selectedAny = out.selectedAny || held.selectedAny
		return out, true
	case c.changed.why != "":
		return c.changed, true
	case held.why != "":
		return changedPair{held.why + ", and the write that left it the given one again completed moments before the request was received, which kube-apiserver's policy source may not have compiled yet", held.anyRequest, held.policy, held.actionsOnly, held.selectedAny}, true
	}
	return changedPair{}, false
}

// sameButActions says whether two stored specs of a ValidatingAdmissionPolicyBinding are the
// same but for their validationActions.
func sameButActions(a, b string) bool {
	var am, bm map[string]any
	if json.Unmarshal([]byte(a), &am) != nil || json.Unmarshal([]byte(b), &bm) != nil {
		return false
	}
	delete(am, "validationActions")
	delete(bm, "validationActions")
	return state.ValuesEqual(am, bm)
}

// joinWhy joins two reasons with "; ", either of which may be "".
func joinWhy(a, b string) string {
	if a == "" || b == "" {
		return a + b
	}
	return a + "; " + b
}

// sameSelection says whether two stored specs of k select the same requests: a policy's match
// constraints, match conditions and failure policy, a binding's policy and match resources.
func sameSelection(k givenKey, a, b string, params bool) bool {
	var am, bm map[string]any
	if json.Unmarshal([]byte(a), &am) != nil || json.Unmarshal([]byte(b), &bm) != nil {
		return false
	}
	fields := []string{"matchConstraints", "matchConditions", "failurePolicy"}
	param := "paramKind"
	if k.kind == givenBinding || k.kind == givenMutatingBinding {
		fields, param = []string{"policyName", "matchResources"}, "paramRef"
	}
	if params {
		fields = append(fields, param)
	}
	for _, f := range fields {
		if !state.ValuesEqual(am[f], bm[f]) {
			return false
		}
	}
	return true
}

// forgetSpec notes the delete (ev) of a given policy or binding: created again, it is taken as
// the given one unless the log shows otherwise. A copy that differed from the given one is held
// as a replaced one (and those it held still), as a spec change's: while the delete is unsure
// (the policy source may not have compiled it), the pair is decided with, and the server
// decided with that copy.
func (l *lifecycle) forgetSpec(k givenKey, ev *Event) {
	c, ok := l.copies[k]
	if !ok {
		return
	}
	if c.changed.why != "" {
		l.steady = nil
	}
	done := auditlog.ParseTime(ev.StageTimestamp)
	held := l.stillHeld(c.held, done)
	if c.changed.why != "" {
		held = append(held, heldCopy{changed: c.changed, replacedAt: done})
	}
	if len(held) == 0 {
		delete(l.copies, k)
		return
	}
	l.copies[k] = specCopy{obj: l.specs.obj[k], spec: l.specs.spec[k], held: held}
}

// givenSpecOf is the stored spec of a policy's or binding's object (of k's kind); "" when it
// does not convert.
func givenSpecOf(k givenKey, obj map[string]any) string {
	switch k.kind {
	case givenPolicy:
		return convertedSpec(obj, validatingSpecOf)
	case givenBinding:
		return convertedSpec(obj, bindingSpecOf)
	case givenMutating:
		return convertedSpec(obj, specOf)
	case givenMutatingBinding:
		return convertedSpec(obj, mutatingBindingSpecOf)
	}
	return ""
}

// convertedSpec is spec of obj converted to T; "" when obj is nil or does not convert.
func convertedSpec[T any](obj map[string]any, spec func(*T) string) string {
	var v T
	if obj == nil || runtime.DefaultUnstructuredConverter.FromUnstructured(obj, &v) != nil {
		return ""
	}
	return spec(&v)
}

// writtenSpecObject is the object a successful write left, as far as the log shows it: its
// response's, a create's or update's body, or a patch applied to cur (the copy before it);
// nil when it does not show it.
func writtenSpecObject(ev *Event, cur map[string]any) map[string]any {
	if obj := auditlog.DecodeAnyObject(ev.ResponseObject); obj != nil && obj.GetKind() != "Status" {
		return obj.Object
	}
	body := bytes.TrimSpace(ev.RequestObject)
	if len(body) == 0 {
		return nil
	}
	if ev.Verb != "patch" && ev.Verb != "apply" {
		if obj := auditlog.DecodeAnyObject(body); obj != nil && obj.GetKind() != "Status" {
			return obj.Object
		}
		return nil
	}
	if cur == nil {
		return nil
	}
	curJSON, err := json.Marshal(cur)
	if err != nil {
		return nil
	}
	var out []byte
	switch {
	case body[0] == '[':
		p, err := jsonpatch.DecodePatch(body)
		if err != nil {
			return nil
		}
		if out, err = p.Apply(curJSON); err != nil {
			return nil
		}
	case body[0] == '{':
		var patch map[string]any
		if json.Unmarshal(body, &patch) != nil {
			return nil
		}
		if _, ok := patch["spec"]; !ok {
			return cur // its spec untouched (labels, annotations, finalizers)
		}
		if _, ok := patch["kind"]; ok {
			// A server-side apply's configuration (or a whole object): the fields it
			// sets are the spec, but for those another manager set, which these kinds'
			// writers do not share.
			return patch
		}
		if bytes.Contains(body, []byte(`"$`)) {
			return nil // a strategic merge patch's directive
		}
		if out, err = jsonpatch.MergePatch(curJSON, body); err != nil {
			return nil
		}
	default:
		return nil
	}
	var obj map[string]any
	if json.Unmarshal(out, &obj) != nil {
		return nil
	}
	return obj
}
