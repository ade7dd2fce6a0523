package replay

import (
	"fmt"
	"sort"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// The apiserver's policy source (k8s.io/apiserver/pkg/admission/plugin/policy/generic/
// policy_source.go) resolves a policy's paramKind through the admission REST mapper when it
// compiles its policies (ensureParamsForPolicyLocked): until it finds the kind, the policy fails
// with "failed to find resource referenced by paramKind"; once it does, it starts an informer
// for the kind's objects and keeps it, and the mapping, as long as a policy uses the kind, even
// after the kind's CRD is deleted. The mapper is a discovery REST mapper over a cached discovery
// client that does not refresh a fresh cache on a miss, reset every 30 seconds
// (k8s.io/apiserver/pkg/server/options/admission.go), and the source retries a configuration
// error every second (policyRefreshInterval). So the log does not say when, within about half
// a minute of a CRD being established, the apiserver found a paramKind it serves: the replay
// decides a request of that time both ways, and reports it indeterminate when they differ.

// ParamResolveDelay is how long after a CRD is Established a policy whose paramKind it serves
// may still fail with "failed to find resource referenced by paramKind", or read its params
// from an informer that has not listed them again after the CRD was created again: 31 seconds
// by the apiserver's timers (see above), and a margin for discovery to list the new version on
// a loaded server. The replay holds such decisions indeterminate when they depend on it.
const ParamResolveDelay = 40 * time.Second

// paramKind is a paramKind of the bound policies as the apiserver's policy source resolves it.
type paramKind struct {
	gvk      schema.GroupVersionKind
	policies []string
	// mapping is the REST mapping once found: kept, as the policy source keeps its informer.
	mapping *meta.RESTMapping
	// served says whether the catalog maps the kind now; crd is the CRD that serves it.
	served bool
	crd    string
	// resolving says that the policy source may not have found the kind yet; paramsUnknown
	// that the objects of its informer are not known.
	resolving, paramsUnknown unsettled
}

// unsettled is a state of a paramKind that holds for a request the apiserver received before
// until (zero: until a later change of the log), and why.
type unsettled struct {
	on    bool
	why   string
	until time.Time
}

func (u *unsettled) set(why string) { *u = unsettled{on: true, why: why} }

// activeAt says whether the state holds for a request received at the time.
func (u unsettled) activeAt(received time.Time) bool {
	return u.on && (u.until.IsZero() || received.IsZero() || received.Before(u.until))
}

// reason is why a decision of the policy depends on the state: the detail of a
// ReasonParamKindPending.
func (u unsettled) reason(policy string) string {
	why := u.why
	if !u.until.IsZero() {
		why += fmt.Sprintf(" (until %s, %s after it was Established)", u.until.UTC().Format(time.RFC3339), ParamResolveDelay)
	}
	return fmt.Sprintf("policy %s: %s", policy, why)
}

func (k *paramKind) unsettled() bool { return k.resolving.on || k.paramsUnknown.on }

// initParamKinds finds the paramKinds of the bound policies, resolved as the catalog maps them
// when the replay begins.
func (r *Replayer) initParamKinds() {
	r.cat.paramKinds = map[schema.GroupVersionKind]*paramKind{}
	r.cat.policyParam = map[string]*paramKind{}
	bound := map[string]bool{}
	for _, b := range r.set.scopeBindings {
		bound[b.Spec.PolicyName] = true
	}
	// The mutating policies' paramKinds too (in the scope's policies): their params are read
	// from the State as the validating policies' are.
	for _, p := range r.set.scopePolicies {
		pk := p.Spec.ParamKind
		if pk == nil || !bound[p.Name] || r.cat.policyParam[p.Name] != nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(pk.APIVersion)
		if err != nil {
			continue
		}
		gvk := gv.WithKind(pk.Kind)
		k := r.cat.paramKinds[gvk]
		if k == nil {
			k = &paramKind{gvk: gvk}
			r.cat.paramKinds[gvk] = k
		}
		k.policies = append(k.policies, p.Name)
		r.cat.policyParam[p.Name] = k
	}
	for _, k := range r.cat.paramKinds {
		if m, err := r.cfg.resources.RESTMapper().RESTMapping(k.gvk.GroupKind(), k.gvk.Version); err == nil {
			k.mapping, k.served, k.crd = m, true, r.crdOf(m.Resource)
		}
	}
}

// crdOf is the name of the CRD that serves the resource, or "".
func (r *Replayer) crdOf(gvr schema.GroupVersionResource) string {
	if r.cat.catalog == nil {
		return ""
	}
	info, _ := r.cat.catalog.Resource(gvr, "")
	return info.CRD
}

// followParamKinds follows a change of the catalog the log made at src and the time at. A kind
// a CRD begins to serve is resolving, or, when the policy source found it before the CRD was
// deleted, of unknown params (its informer lists them again after a backoff), until the CRD
// has been Established for ParamResolveDelay: from at when it already is, else from when the
// log shows it (see established). A kind whose CRD is deleted keeps its mapping and has unknown
// params (the apiserver deletes the CRD's objects without the log showing when); one the
// policy source may not have found yet stays resolving too.
func (r *Replayer) followParamKinds(src string, at time.Time) {
	for _, k := range r.sortedParamKinds() {
		for _, u := range []*unsettled{&k.resolving, &k.paramsUnknown} {
			if !u.until.IsZero() && at.After(u.until.Add(time.Minute)) {
				*u = unsettled{} // settled long ago: the log holds no request received before
			}
		}
		m, err := r.cfg.resources.RESTMapper().RESTMapping(k.gvk.GroupKind(), k.gvk.Version)
		now := err == nil
		switch {
		case now && !k.served:
			crd := r.crdOf(m.Resource)
			if crd == "" {
				k.mapping, k.resolving, k.paramsUnknown = m, unsettled{}, unsettled{}
				break
			}
			if k.mapping == nil || k.resolving.on {
				k.resolving.set(fmt.Sprintf("the CustomResourceDefinition %s of paramKind %s began to be served at %s: kube-apiserver finds a paramKind through a discovery cache it renews every 30 seconds, and fails the policy until then",
					crd, gvkString(k.gvk), src))
			}
			if k.mapping != nil {
				k.paramsUnknown.set(fmt.Sprintf("the CustomResourceDefinition %s of paramKind %s was created again at %s: kube-apiserver's param informer lists its objects again after a backoff",
					crd, gvkString(k.gvk), src))
			}
			k.mapping, k.crd = m, crd
			if c := r.cat.crds[crd]; (c == nil || c.established) && !at.IsZero() {
				r.settleAt(k, at.Add(ParamResolveDelay))
			}
		case now:
			k.mapping = m
		case k.served && k.mapping != nil:
			if k.resolving.on && !k.resolving.until.IsZero() && !at.Before(k.resolving.until) {
				k.resolving = unsettled{}
			}
			k.resolving.until = time.Time{} // if the policy source had not found it, it may never
			k.paramsUnknown.set(fmt.Sprintf("the CustomResourceDefinition %s of paramKind %s was deleted at %s: kube-apiserver keeps the param informer, which loses the CRD's objects as they are deleted, without the log showing when",
				k.crd, gvkString(k.gvk), src))
		}
		k.served = now
	}
}

// settleAt sets the time the kind's unsettled states end at, where they have none.
func (r *Replayer) settleAt(k *paramKind, until time.Time) {
	for _, u := range []*unsettled{&k.resolving, &k.paramsUnknown} {
		if u.on && u.until.IsZero() {
			u.until = until
		}
	}
}

// established records that the log shows the CRD Established at the time at: what is unsettled
// of the paramKinds it serves settles ParamResolveDelay later.
func (r *Replayer) established(name string, at time.Time) {
	for _, k := range r.cat.paramKinds {
		if k.crd == name && k.served && !at.IsZero() {
			r.settleAt(k, at.Add(ParamResolveDelay))
		}
	}
}

func (r *Replayer) sortedParamKinds() []*paramKind {
	out := make([]*paramKind, 0, len(r.cat.paramKinds))
	for _, k := range r.cat.paramKinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return gvkString(out[i].gvk) < gvkString(out[j].gvk) })
	return out
}

// resolvingKinds are the kinds the alternative evaluators take as not found (see
// buildEvaluators).
func (r *Replayer) resolvingKinds() map[schema.GroupVersionKind]bool {
	var out map[schema.GroupVersionKind]bool
	for gvk, k := range r.cat.paramKinds {
		if k.resolving.on {
			if out == nil {
				out = map[schema.GroupVersionKind]bool{}
			}
			out[gvk] = true
		}
	}
	return out
}

// unsettledParams is what a request's decision may depend on of the paramKinds of its
// policies that are unsettled when the apiserver received it: resolving is the reason of the
// one kind the policy source may not have found yet, to decide the request both ways;
// unknown the param resources whose objects are not known, as reads of the View that miss;
// indeterminate is set when the replay cannot decide the request both ways: several kinds are
// resolving, or one is resolving and another that the alternative evaluators take as not
// found no longer is.
func (r *Replayer) unsettledParams(policies []string, ev *Event) (resolving undecided, unknown map[schema.GroupResource]string, indeterminate undecided) {
	var received time.Time
	first, stale := true, false
	var kinds []*paramKind
	var reasons []string
	var missing []string
	for _, p := range policies {
		k := r.cat.policyParam[p]
		if k != nil && k.mapping == nil && !k.resolving.on {
			if why := r.paramKindMissing(k); why != "" {
				missing = append(missing, why)
			}
		}
		if k == nil || !k.unsettled() {
			continue
		}
		if first {
			received, first = ev.Received(), false
		}
		if k.paramsUnknown.activeAt(received) && k.mapping != nil {
			if unknown == nil {
				unknown = map[schema.GroupResource]string{}
			}
			unknown[k.mapping.Resource.GroupResource()] = k.paramsUnknown.why
		}
		switch {
		case !k.resolving.on:
		case !k.resolving.activeAt(received):
			stale = true
		case !containsKind(kinds, k):
			kinds = append(kinds, k)
			reasons = append(reasons, k.resolving.reason(p))
		}
	}
	switch {
	case len(missing) > 0:
		indeterminate = because(ReasonParamKindUnknown, strings.Join(state.Dedupe(missing), "; "))
	case len(kinds) == 1 && !stale:
		resolving = because(ReasonParamKindPending, reasons[0])
	case len(kinds) > 0:
		indeterminate = because(ReasonParamKindPending, strings.Join(reasons, "; "))
	}
	return resolving, unknown, indeterminate
}

func containsKind(ks []*paramKind, k *paramKind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

func gvkString(gvk schema.GroupVersionKind) string {
	return gvk.GroupVersion().String() + " " + gvk.Kind
}

// sameOutcome says whether two decisions of a request answer it the same: the response (code,
// message, the refusals the apiserver may choose among, warnings) and the audit annotations,
// without the authorizer, whose answers the log does not hold.
func sameOutcome(a, b *verify.Decision) bool { return outcomeDiff(a, b) == "" }

// outcomeDiff names what of the outcome of b differs from a's (see sameOutcome), for people:
// empty when nothing does.
func outcomeDiff(a, b *verify.Decision) string {
	switch {
	case a.Allowed != b.Allowed || a.Code != b.Code || a.Reason != b.Reason || a.Message != b.Message:
		return "the response"
	case len(verify.Configured(b.Authorizer)) > 0:
		return "authorizer checks"
	case !sameMutation(a.Mutation, b.Mutation):
		return "the mutation"
	}
	sorted := func(d *verify.Decision) ([]string, []string) {
		var ds []string
		for _, x := range d.Denials {
			ds = append(ds, fmt.Sprintf("%d %s %s", x.Code, x.Reason, x.Message))
		}
		ws := append([]string(nil), d.Warnings...)
		sort.Strings(ds)
		sort.Strings(ws)
		return ds, ws
	}
	ad, aw := sorted(a)
	bd, bw := sorted(b)
	switch {
	case strings.Join(ad, "\x00") != strings.Join(bd, "\x00"):
		return "the refusals"
	case strings.Join(aw, "\x00") != strings.Join(bw, "\x00"):
		return "the warnings"
	case len(a.AuditAnnotations) != len(b.AuditAnnotations):
		return "the audit annotations"
	}
	for k, v := range a.AuditAnnotations {
		if w, ok := b.AuditAnnotations[k]; !ok || w != v {
			return "the audit annotations"
		}
	}
	return ""
}
