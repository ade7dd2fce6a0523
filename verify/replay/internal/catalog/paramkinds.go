package catalog

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	vapcschema "github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
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
	// respecified is when and where the log last changed the spec of the kind's CRD while it
	// served the kind, and respecifiedBefore when it did the time before (see ParamRereads).
	respecified       time.Time
	respecifiedWhere  string
	respecifiedBefore time.Time
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

// reason is why a decision of the policy depends on the state.
func (u unsettled) reason(policy string) string {
	why := u.why
	if !u.until.IsZero() {
		why += fmt.Sprintf(" (until %s, %s after it was Established)", u.until.UTC().Format(time.RFC3339), ParamResolveDelay)
	}
	return fmt.Sprintf("policy %s: %s", policy, why)
}

func (k *paramKind) unsettled() bool { return k.resolving.on || k.paramsUnknown.on }

// InitParamKinds finds the paramKinds of the bound policies (validating, and mutating ones
// in a validating policy's shape: their params are read as the validating policies' are),
// resolved as the catalog maps them now: from the start of the replay.
func (c *Catalog) InitParamKinds(policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	c.paramKinds = map[schema.GroupVersionKind]*paramKind{}
	c.policyParam = map[string]*paramKind{}
	bound := map[string]bool{}
	for _, b := range bindings {
		bound[b.Spec.PolicyName] = true
	}
	for _, p := range policies {
		pk := p.Spec.ParamKind
		if pk == nil || !bound[p.Name] || c.policyParam[p.Name] != nil {
			continue
		}
		gv, err := schema.ParseGroupVersion(pk.APIVersion)
		if err != nil {
			continue
		}
		gvk := gv.WithKind(pk.Kind)
		k := c.paramKinds[gvk]
		if k == nil {
			k = &paramKind{gvk: gvk}
			c.paramKinds[gvk] = k
		}
		k.policies = append(k.policies, p.Name)
		c.policyParam[p.Name] = k
	}
	for _, k := range c.paramKinds {
		if m, err := c.resources.RESTMapper().RESTMapping(k.gvk.GroupKind(), k.gvk.Version); err == nil {
			k.mapping, k.served, k.crd = m, true, c.crdOf(m.Resource)
		}
	}
}

// crdOf is the name of the CRD that serves the resource, or "".
func (c *Catalog) crdOf(gvr schema.GroupVersionResource) string {
	if c.schema == nil {
		return ""
	}
	info, _ := c.schema.Resource(gvr, "")
	return info.CRD
}

// followParamKinds follows a change of the catalog the log made at src and the time at. A kind
// a CRD begins to serve is resolving, or, when the policy source found it before the CRD was
// deleted, of unknown params (its informer lists them again after a backoff), until the CRD
// has been Established for ParamResolveDelay: from at when it already is, else from when the
// log shows it (see established). A kind whose CRD is deleted keeps its mapping and has unknown
// params (the apiserver deletes the CRD's objects without the log showing when); one the
// policy source may not have found yet stays resolving too.
func (c *Catalog) followParamKinds(src string, at time.Time) {
	for _, k := range c.sortedParamKinds() {
		for _, u := range []*unsettled{&k.resolving, &k.paramsUnknown} {
			if !u.until.IsZero() && at.After(u.until.Add(time.Minute)) {
				*u = unsettled{} // settled long ago: the log holds no request received before
			}
		}
		m, err := c.resources.RESTMapper().RESTMapping(k.gvk.GroupKind(), k.gvk.Version)
		now := err == nil
		switch {
		case now && !k.served:
			crd := c.crdOf(m.Resource)
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
			if served := c.crds[crd]; (served == nil || served.established) && !at.IsZero() {
				k.settleAt(at.Add(ParamResolveDelay))
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
func (k *paramKind) settleAt(until time.Time) {
	for _, u := range []*unsettled{&k.resolving, &k.paramsUnknown} {
		if u.on && u.until.IsZero() {
			u.until = until
		}
	}
}

// established records that the log shows the CRD Established at the time at: what is unsettled
// of the paramKinds it serves settles ParamResolveDelay later.
func (c *Catalog) established(name string, at time.Time) {
	for _, k := range c.paramKinds {
		if k.crd == name && k.served && !at.IsZero() {
			k.settleAt(at.Add(ParamResolveDelay))
		}
	}
}

// respecified records that the log changed the spec (or the accepted names) of the CRD of the
// name, which served it before, at where and the time at.
func (c *Catalog) respecified(name, where string, at time.Time) {
	for _, k := range c.paramKinds {
		if k.crd == name && k.served && !at.IsZero() {
			k.respecifiedBefore, k.respecified, k.respecifiedWhere = k.respecified, at, where
		}
	}
}

func (c *Catalog) sortedParamKinds() []*paramKind {
	out := make([]*paramKind, 0, len(c.paramKinds))
	for _, k := range c.paramKinds {
		out = append(out, k)
	}
	sort.Slice(out, func(i, j int) bool { return gvkString(out[i].gvk) < gvkString(out[j].gvk) })
	return out
}

// ResolvingKinds are the paramKinds the policy source may not have found yet: an alternative
// evaluator takes them as not found (see ParamResources); nil when there are none.
func (c *Catalog) ResolvingKinds() map[schema.GroupVersionKind]bool {
	var out map[schema.GroupVersionKind]bool
	for gvk, k := range c.paramKinds {
		if k.resolving.on {
			if out == nil {
				out = map[schema.GroupVersionKind]bool{}
			}
			out[gvk] = true
		}
	}
	return out
}

// Unsettled is what a request's decision may depend on of the paramKinds of its policies that
// are unsettled when the apiserver received it.
type Unsettled struct {
	// Resolving is why the one kind the policy source may not have found yet may not have
	// been found: the request is decided both ways.
	Resolving string
	// Unknown are the param resources whose objects are not known, and why: reads of the
	// View that miss.
	Unknown map[schema.GroupResource]string
	// Pending is set when the request cannot be decided both ways: several kinds are
	// resolving, or one is resolving and another that the alternative evaluators take as not
	// found no longer is. Missing is set when a paramKind the catalog does not map may be
	// served by a CRD the replay does not know.
	Pending, Missing string
	// Until is when the last of the kinds resolving at the request's receipt is found for
	// sure (zero when one may never be): received after it, the request is neither Resolving
	// nor Pending.
	Until time.Time
}

// UnsettledFor is what is unsettled of the paramKinds of the policies for a request received
// at the time received gives (called only when some is); allSince says that the log holds
// every write since the cluster began (so every CRD write).
func (c *Catalog) UnsettledFor(policies []string, received func() time.Time, allSince bool) Unsettled {
	var out Unsettled
	var at time.Time
	first, stale, never := true, false, false
	var kinds []*paramKind
	var reasons, missing []string
	for _, p := range policies {
		k := c.policyParam[p]
		if k != nil && k.mapping == nil && !k.resolving.on {
			if why := c.missing(k, allSince); why != "" {
				missing = append(missing, why)
			}
		}
		if k == nil || !k.unsettled() {
			continue
		}
		if first {
			at, first = received(), false
		}
		if k.paramsUnknown.activeAt(at) && k.mapping != nil {
			if out.Unknown == nil {
				out.Unknown = map[schema.GroupResource]string{}
			}
			out.Unknown[k.mapping.Resource.GroupResource()] = k.paramsUnknown.why
		}
		switch {
		case !k.resolving.on:
		case !k.resolving.activeAt(at):
			stale = true
		case !containsKind(kinds, k):
			kinds = append(kinds, k)
			reasons = append(reasons, k.resolving.reason(p))
			switch {
			case k.resolving.until.IsZero():
				never = true
			case k.resolving.until.After(out.Until):
				out.Until = k.resolving.until
			}
		}
	}
	switch {
	case len(missing) > 0:
		out.Missing = strings.Join(slices.Compact(missing), "; ")
	case len(kinds) == 1 && !stale:
		out.Resolving = reasons[0]
	case len(kinds) > 0:
		out.Pending = strings.Join(reasons, "; ")
	}
	if never {
		out.Until = time.Time{}
	}
	return out
}

// missing says why a paramKind the catalog does not map makes a decision indeterminate, or ""
// when the kind is missing for sure.
func (c *Catalog) missing(k *paramKind, allSince bool) string {
	group := k.gvk.Group
	if group == "" || kubescheme.Scheme.IsGroupRegistered(group) {
		return "" // a built-in group: no CRD serves it
	}
	if where, ok := c.opaque[group]; ok {
		return fmt.Sprintf("paramKind %s may be served by a CustomResourceDefinition of %s the log wrote at %s without its object: give the CRD with --crd or --snapshot", gvkString(k.gvk), group, where)
	}
	if allSince {
		return "" // the log holds every CRD write since the cluster began
	}
	return fmt.Sprintf("paramKind %s is served by no CustomResourceDefinition the replay knows, and the log does not begin with the cluster: give the CRD with --crd or --snapshot", gvkString(k.gvk))
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

// ParamResources returns the catalog's resources as the replay's scope and evaluators see
// them: the REST mapping of a paramKind is the one the apiserver's policy source found for it
// (ensureParamsForPolicyLocked, k8s.io/apiserver/pkg/admission/plugin/policy/generic/policy_source.go),
// which it keeps, with the param informer it started, as long as a policy uses the paramKind:
// after its CRD is deleted too. The kinds of notFound are not found, as before the policy
// source found them.
func (c *Catalog) ParamResources(notFound map[schema.GroupVersionKind]bool) verify.Resources {
	params := map[schema.GroupVersionKind]*meta.RESTMapping{}
	for gvk, pk := range c.paramKinds {
		if pk.mapping != nil && !notFound[gvk] {
			params[gvk] = pk.mapping
		}
	}
	return paramResources{Resources: c.resources, mapper: paramMapper{RESTMapper: c.resources.RESTMapper(), params: params, notFound: notFound}}
}

type paramResources struct {
	verify.Resources
	mapper meta.RESTMapper // a paramMapper, made once: RESTMapper is called for every request
}

func (p paramResources) RESTMapper() meta.RESTMapper { return p.mapper }

// Catalog implements verify.CatalogHolder.
func (p paramResources) Catalog() *vapcschema.Catalog { return verify.CatalogOf(p.Resources) }

type paramMapper struct {
	meta.RESTMapper
	params   map[schema.GroupVersionKind]*meta.RESTMapping
	notFound map[schema.GroupVersionKind]bool
}

func (m paramMapper) RESTMapping(gk schema.GroupKind, versions ...string) (*meta.RESTMapping, error) {
	if len(versions) == 1 {
		gvk := gk.WithVersion(versions[0])
		if m.notFound[gvk] {
			return nil, &meta.NoKindMatchError{GroupKind: gk, SearchedVersions: versions}
		}
		if pm := m.params[gvk]; pm != nil {
			out := *pm
			return &out, nil
		}
	}
	return m.RESTMapper.RESTMapping(gk, versions...)
}

// kube-apiserver's crdHandler tears down a CRD's storage when the CRD's spec or accepted names
// change (k8s.io/apiextensions-apiserver/pkg/apiserver/customresource_handler.go
// updateCustomResourceDefinition, tearDown): a second after, once the requests in flight have
// drained, it destroys the storage's watch cache, which ends the param informer's watch. The
// informer's reflector watches again from its resourceVersion, which the new watch cache
// refuses as too old, and lists the params again, after its backoff, through the new
// storage, whose codec defaults and prunes them by the CRD's schema as it is now. So the params
// a policy reads are the stored ones read through the schema before the change until a second
// after it, and through the new one seconds after (helper exAK measured 0.35 s: before; 2.6 s:
// after), or up to a minute after: the reflector's backoff (client-go's tools/cache
// reflector.go: 800 ms doubling to 30 s, with as much jitter, reset after 2 minutes without a
// retry) grows with every list and watch that ended within the last two minutes, which the
// log does not show (random parity seed r:1360: the params read through the schema before the
// change 24 s after it).
const (
	// ParamRereadAfter is how long after a CRD's change its storage still serves the param
	// informer's watch for certain (tearDown's second, less what the request that changed it
	// may have taken after the change).
	ParamRereadAfter = 900 * time.Millisecond
	// ParamRereadBy bounds when the informer has read its params again: the teardown's
	// second, its backoff (up to 1.6 s the first time, under 60 s at its cap: 30 s and as much
	// jitter) and the list, with a margin for a loaded server.
	ParamRereadBy = 65 * time.Second
)

// ParamReread is how the param informer of a paramKind holds the params after the log changed
// the kind's CRD (see ParamRereads).
type ParamReread struct {
	// Kind is the paramKind; CRD the CRD that serves it.
	Kind schema.GroupVersionKind
	CRD  string
	// Racing, when set, says why the informer may hold the params read through the schema
	// before the change, or through the new one: a param the new schema reads otherwise than
	// the State holds it is not known. Otherwise it holds them read through the new schema.
	Racing string
	// Thrice is set with Racing when the CRD changed twice within the window: the informer
	// may hold the params read through the schema between the changes too, which neither
	// the State's nor the new schema's reading shows.
	Thrice bool
	// storage is what the catalog knew of the CRD's storage version changes then.
	storage servedCRD
}

// StorageChanged is Catalog.StorageChanged of the kind's CRD when ParamRereads gave rr: safe
// to call while the catalog changes.
func (rr ParamReread) StorageChanged(rv uint64) (where, was string) {
	return rr.storage.storageChangedFor(rv)
}

// ParamRereads are the paramKinds of the policies whose CRD the log changed, by resource, for
// a request the apiserver received at received and completed at completed (either zero when
// the log does not say); nil when there are none.
func (c *Catalog) ParamRereads(policies []string, received, completed time.Time) map[schema.GroupResource]ParamReread {
	var out map[schema.GroupResource]ParamReread
	for _, p := range policies {
		k := c.policyParam[p]
		if k == nil || k.respecified.IsZero() || k.mapping == nil || !k.served {
			continue
		}
		gr := k.mapping.Resource.GroupResource()
		if _, ok := out[gr]; ok {
			continue
		}
		rr := ParamReread{Kind: k.gvk, CRD: k.crd}
		if cur := c.crds[k.crd]; cur != nil {
			rr.storage = servedCRD{storageChanged: cur.storageChanged, storageRV: cur.storageRV, storageWas: cur.storageWas}
		}
		switch {
		case !completed.IsZero() && completed.Before(k.respecified.Add(ParamRereadAfter)) && k.respecifiedBefore.IsZero():
			continue // read through the schema before, as the State holds them
		case completed.IsZero() && received.IsZero(), !received.IsZero() && received.Before(k.respecified.Add(ParamRereadBy)),
			received.IsZero() && completed.Before(k.respecified.Add(ParamRereadBy)):
			rr.Racing = fmt.Sprintf("the CustomResourceDefinition %s of paramKind %s changed at %s, %s before: kube-apiserver's param informer lists the params again through the new schema (its defaults, what it prunes) between %s and about %s after the change, which the log does not show",
				k.crd, gvkString(k.gvk), k.respecifiedWhere, sinceChange(received, completed, k.respecified), ParamRereadAfter, ParamRereadBy)
			if !k.respecifiedBefore.IsZero() && k.respecified.Sub(k.respecifiedBefore) < ParamRereadBy {
				rr.Racing += ", and it changed " + k.respecified.Sub(k.respecifiedBefore).Round(time.Millisecond).String() + " before that too"
				rr.Thrice = true
			}
		}
		if out == nil {
			out = map[schema.GroupResource]ParamReread{}
		}
		out[gr] = rr
	}
	return out
}

// sinceChange is how long after the change at the request was received (or completed).
func sinceChange(received, completed, at time.Time) string {
	t := received
	if t.IsZero() {
		t = completed
	}
	if t.IsZero() {
		return "an unknown time"
	}
	return t.Sub(at).Round(time.Millisecond).String()
}
