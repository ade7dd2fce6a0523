package state

import (
	"cmp"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// The evaluator reads params and namespaces; a replay evaluates requests on several goroutines
// while its ordered stage moves the State on. So the State keeps the objects the evaluator
// reads in copy-on-write buckets, one per resource, and a View is the buckets of one point of
// the log: once a View holds a bucket, the next write to that resource copies it first.

// bucket is the objects of one resource the evaluator reads, in the form it reads them, and
// the objects of it whose state is not known. A bucket a View holds (frozen) never changes.
type bucket struct {
	objs     objMap
	unknowns int
	frozen   bool
	// members indexes the known objects each selector of the params' bindings matches, by the
	// selector's string, so that listing them does not match every object.
	members map[string]*selectorIndex
	// labelsUnknown counts the known objects whose labels are not (see labelsNotKnown): a
	// list by a selector their labels as stored do not match misses them.
	labelsUnknown int

	// lists caches List on a frozen bucket: params are listed by the same selector for
	// every request.
	mu    sync.Mutex
	lists map[listKey]cachedList
}

type typedEntry struct {
	gvr     schema.GroupVersionResource // as stored
	Obj     *lazyObject                 // nil when unknown
	labels  labels.Set
	unknown string
	// exists says an unknown object exists all the same (ForgetWritten).
	exists bool
	// Unknowns are the fields of a known object whose values are not known (see partialUse).
	Unknowns []vapccel.Unknown
}

// PartialUse is an object the evaluator read some of whose fields are not known: a decision
// stands only if no policy reads them (see Replayer.dependsOnPartial).
type PartialUse struct {
	GR       schema.GroupResource
	Obj      ObjectKey // the object
	Unknowns []vapccel.Unknown
}

// Key is the object's namespace/name, for people.
func (pu PartialUse) Key() string { return JoinKey(pu.Obj.Namespace, pu.Obj.Name) }

// lazyObject is an object the evaluator may read, converted to the form it reads it (typed,
// as an informer holds it) the first time it does: most writes to params and namespaces (node
// status updates) are never read before the next one.
type lazyObject struct {
	raw     []byte // the object's JSON; never changed
	prepare *verify.MemoryStore

	once sync.Once
	obj  runtime.Object
	err  error
}

func (l *lazyObject) get() (runtime.Object, error) {
	l.once.Do(func() {
		u, err := auditlog.DecodeObject(l.raw)
		if err != nil {
			l.err = err
			return
		}
		p, err := l.prepare.Prepare(u)
		if err != nil {
			l.err = err
			return
		}
		l.obj = p.Object()
	})
	return l.obj, l.err
}

type listKey struct {
	namespace, version, selector string
}

type cachedList struct {
	selector labels.Selector
	objs     []runtime.Object
	failed   []miss // objects that do not convert
	partials []PartialUse
}

type selectorIndex struct {
	sel  labels.Selector
	keys map[ObjectKey]struct{}
}

func newBucket(selectors []labels.Selector) *bucket {
	b := &bucket{members: map[string]*selectorIndex{}}
	for _, sel := range selectors {
		b.members[sel.String()] = &selectorIndex{sel: sel, keys: map[ObjectKey]struct{}{}}
	}
	return b
}

// clone copies the bucket, for a write to it once a View holds it.
func (b *bucket) clone() *bucket {
	c := &bucket{objs: b.objs.clone(), unknowns: b.unknowns, labelsUnknown: b.labelsUnknown, members: make(map[string]*selectorIndex, len(b.members))}
	for s, idx := range b.members {
		keys := make(map[ObjectKey]struct{}, len(idx.keys))
		for k := range idx.keys {
			keys[k] = struct{}{}
		}
		c.members[s] = &selectorIndex{sel: idx.sel, keys: keys}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for lk, l := range b.lists {
		c.keepList(lk, l)
	}
	return c
}

// invalidate drops the cached lists that the object k was in (old, when had) or will be in
// (new, when has): the others stay valid through the write.
func (b *bucket) invalidate(k ObjectKey, old typedEntry, had bool, new typedEntry, has bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for lk, l := range b.lists {
		if lk.namespace != "" && lk.namespace != k.Namespace {
			continue
		}
		if (had && old.Obj != nil && l.selector.Matches(old.labels)) || (has && new.Obj != nil && l.selector.Matches(new.labels)) {
			delete(b.lists, lk)
		}
	}
}

func (b *bucket) keepList(k listKey, l cachedList) {
	if b.lists == nil {
		b.lists = map[listKey]cachedList{}
	}
	b.lists[k] = l
}

// set stores the entry of the object k; drop deletes it. Neither keeps the cached lists
// valid: see invalidate.
func (b *bucket) set(k ObjectKey, e typedEntry) {
	b.drop(k)
	if e.Obj == nil {
		b.unknowns++
	} else if labelsNotKnown(e.Unknowns) {
		b.labelsUnknown++
	}
	b.objs.set(k, e)
	for _, idx := range b.members {
		if e.Obj != nil && idx.sel.Matches(e.labels) {
			idx.keys[k] = struct{}{}
		}
	}
}

// setUnknowns stores the entry of the known object k, whose labels are as they were, with
// more of its fields not known (e.Unknowns).
func (b *bucket) setUnknowns(k ObjectKey, e typedEntry) {
	old, had := b.objs.get(k)
	if had && old.Obj != nil && labelsNotKnown(old.Unknowns) {
		b.labelsUnknown--
	}
	if labelsNotKnown(e.Unknowns) {
		// Every cached list of its namespace lacks its miss, whatever it selected.
		b.labelsUnknown++
		b.mu.Lock()
		for lk := range b.lists {
			if lk.namespace == "" || lk.namespace == k.Namespace {
				delete(b.lists, lk)
			}
		}
		b.mu.Unlock()
	} else {
		// A cached list that selected k lacks its new partial use.
		b.invalidate(k, old, had, e, true)
	}
	b.objs.set(k, e)
}

func (b *bucket) drop(k ObjectKey) {
	if old, ok := b.objs.get(k); ok {
		if old.Obj == nil {
			b.unknowns--
		} else if labelsNotKnown(old.Unknowns) {
			b.labelsUnknown--
		}
		b.objs.delete(k)
		for _, idx := range b.members {
			delete(idx.keys, k)
		}
	}
}

// list returns the known objects of the version in the namespace ("" for all) that the
// selector matches, sorted by namespace and name, and the misses of those that do not convert.
// Only Views list, and their buckets are frozen: the answer is cached.
func (b *bucket) list(gvr schema.GroupVersionResource, namespace string, selector labels.Selector) ([]runtime.Object, []miss, []PartialUse) {
	if selector == nil {
		selector = labels.Everything()
	}
	key := listKey{namespace: namespace, version: gvr.Version, selector: selector.String()}
	b.mu.Lock()
	l, ok := b.lists[key]
	b.mu.Unlock()
	if ok {
		return append([]runtime.Object(nil), l.objs...), l.failed, l.partials
	}
	var keys []ObjectKey
	if idx := b.members[key.selector]; idx != nil {
		for k := range idx.keys {
			if e, _ := b.objs.get(k); e.gvr == gvr && (namespace == "" || k.Namespace == namespace) {
				keys = append(keys, k)
			}
		}
	} else {
		for k, e := range b.objs.all() {
			if e.Obj != nil && e.gvr == gvr && (namespace == "" || k.Namespace == namespace) && selector.Matches(e.labels) {
				keys = append(keys, k)
			}
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].Namespace != keys[j].Namespace {
			return keys[i].Namespace < keys[j].Namespace
		}
		return keys[i].Name < keys[j].Name
	})
	out := make([]runtime.Object, 0, len(keys))
	var failed []miss
	var partials []PartialUse
	if b.labelsUnknown > 0 && !selector.Empty() {
		// Left out by labels that are not known: it may be selected.
		for k, e := range b.objs.all() {
			if e.Obj != nil && e.gvr == gvr && (namespace == "" || k.Namespace == namespace) && labelsNotKnown(e.Unknowns) {
				failed = append(failed, labelsMiss(gvr.GroupResource(), k, selector, labelsWhy(e.Unknowns)))
			}
		}
		sort.Slice(failed, func(i, j int) bool { return failed[i].text < failed[j].text })
	}
	for _, k := range keys {
		e, _ := b.objs.get(k)
		o, err := e.Obj.get()
		if err != nil {
			failed = append(failed, miss{GR: gvr.GroupResource(), k: k, text: fmt.Sprintf("%s %s unknown: %v", gvr.GroupResource(), JoinKey(k.Namespace, k.Name), err)})
			continue
		}
		out = append(out, o)
		if len(e.Unknowns) > 0 {
			partials = append(partials, PartialUse{GR: gvr.GroupResource(), Obj: k, Unknowns: e.Unknowns})
		}
	}
	b.mu.Lock()
	if len(b.lists) < 64 {
		b.keepList(key, cachedList{selector: selector, objs: out, failed: failed, partials: partials})
	}
	b.mu.Unlock()
	return append([]runtime.Object(nil), out...), failed, partials
}

// labelsNotKnown says whether unknowns leave an object's labels not known: one of them holds
// metadata.labels, or is within it, and none of its Known paths holds the labels whole.
func labelsNotKnown(unknowns []vapccel.Unknown) bool {
	return labelsWhy(unknowns) != ""
}

// labelsMiss is the miss of a list by selector of an object whose labels are not known (why).
func labelsMiss(gr schema.GroupResource, k ObjectKey, selector labels.Selector, why string) miss {
	return miss{GR: gr, k: k, text: fmt.Sprintf("%s %s unknown: its labels are not known, and selector %s may or may not select it: %s", gr, JoinKey(k.Namespace, k.Name), selector, why)}
}

// labelsWhy is why an object's labels are not known (see labelsNotKnown), "" when they are.
func labelsWhy(unknowns []vapccel.Unknown) string {
	labelsPath := []string{"metadata", "labels"}
	for _, u := range unknowns {
		n := min(len(u.Path.Steps), len(labelsPath))
		if !slices.Equal(u.Path.Steps[:n], labelsPath[:n]) {
			continue
		}
		known := slices.ContainsFunc(u.Known, func(k []string) bool {
			return len(k) <= len(labelsPath) && slices.Equal(labelsPath[:len(k)], k)
		})
		if !known {
			return cmp.Or(u.Why, "a write left them unknown")
		}
	}
	return ""
}

// StateView, a View, is the params and namespaces of a replay's State at one point of the
// log. It implements verify.ObjectStore for one evaluation at a time, and records every read it
// could not answer for sure (see State).
type StateView struct {
	buckets    map[schema.GroupResource]*bucket
	complete   map[schema.GroupResource]string
	incomplete map[schema.GroupResource]string // why
	allSince   string
	// readsNamespaces says whether a policy of the request reads namespaces: only then is an
	// unknown namespace a miss (the evaluator otherwise assumes the namespace exists, as it
	// must).
	readsNamespaces bool
	// NamespaceNames says that a namespace the View does not know is known by its name all
	// the same, when no policy takes namespaces as params: a Get of it is a partial use
	// (namespaceSkeleton), not a miss, and the evaluator reads it as a namespace of its name
	// and label alone (verify's implicit namespace).
	NamespaceNames bool
	// Unknown are the resources none of whose objects are known, and why: every read of them
	// is a miss.
	Unknown map[schema.GroupResource]string
	// Reread are the resources whose objects the evaluator reads through their CRD's schema
	// as it is now, not as the State holds them (see Reread).
	Reread map[schema.GroupResource]Reread

	misses   []miss
	Partials []PartialUse
	// standIns, when set, answer for params the View does not have (see
	// decidedWithoutMissing).
	standIns map[schema.GroupResource]runtime.Object
	// secrets are the Secrets the View and every copy of it (Fresh, Before, WithStandIns: an
	// informer lag's states) served evaluations: a policy's params, whose values the replay's
	// outputs scrub (Secrets).
	secrets *servedSecrets

	// gets and lists are the reads of evaluations over the View, recorded when track is set
	// (see Replayer.informerLag).
	Track bool
	Gets  []readKey
	Lists []listRead
	// looked are the gets through lookup (the admission plugins', and the namespace the policy
	// matcher reads), also among gets: not CollectParams' (see readOtherThanByName).
	looked []readKey
	// early are the runs of Gets and Lists the MutatingAdmissionPolicies made (MutatingReads):
	// the handler runs them as it has decoded the request, before the store runs validating
	// admission (see ReadWhen).
	early []readSpan
	// overrides, when set, are objects the View holds as they were before writes: each
	// write's entry, or absent when !had.
	overrides map[readKey]TypedWrite
	// overrideKeys are the keys of overrides, in order (resource, namespace, name).
	overrideKeys []readKey
	// liveLookupDone is the State's when the View was made (see State.liveLookupDone).
	liveLookupDone map[ReplacedKey]time.Time
}

// LiveLookupDone is when the latest write to an object of the namespace of a resource an
// admission plugin looks up live (LiveLookupCached) completed, as the View was made; the zero
// time when the log showed none.
func (v *StateView) LiveLookupDone(gr schema.GroupResource, namespace string) time.Time {
	if v == nil {
		return time.Time{}
	}
	return v.liveLookupDone[ReplacedKey{StorageOf(gr), ObjectKey{Namespace: namespace}}]
}

// Reread is how kube-apiserver's param informer holds the objects of a custom resource after
// the log changed its CRD (see catalog.ParamRereads): Read gives an object read again through
// the CRD's schema as it is now, nil where that leaves it as the State holds it, or why it
// cannot tell; it is called by evaluations at once. When Racing is set, the informer may hold
// either: the fields where the two readings of an object part are not known, and Racing is
// why.
type Reread struct {
	Read   func(runtime.Object) (runtime.Object, string)
	Racing string
	// Thrice says a third reading may be the informer's (catalog.ParamReread.Thrice): an
	// object Read changes is not known whole.
	Thrice bool
}

// reread is the object o of the key as the View gives it under rr, with the fields of it
// that are not known (where the two readings of a racing informer part), or why it is not
// known.
func (rr Reread) reread(o runtime.Object) (runtime.Object, []vapccel.Unknown, string) {
	again, why := rr.Read(o)
	switch {
	case why != "":
		return nil, nil, why
	case again == nil:
		return o, nil, ""
	case rr.Racing != "":
		why := "its CustomResourceDefinition's schema reads it otherwise now: " + rr.Racing
		before, ok := o.(*unstructured.Unstructured)
		after, ok2 := again.(*unstructured.Unstructured)
		if !ok || !ok2 || rr.Thrice {
			return nil, nil, why
		}
		return o, Differing(before.Object, after.Object, nil, why), ""
	}
	return again, nil, ""
}

type readKey struct {
	gr schema.GroupResource
	k  ObjectKey
}

type listRead struct {
	gr        schema.GroupResource
	namespace string
	selector  labels.Selector
}

// Read says whether an evaluation over the View read the object of w, or listed what it was
// in with its labels before or after w.
func (v *StateView) Read(w *TypedWrite) bool {
	return slices.Contains(v.Gets, readKey{w.GR, w.Obj}) || v.listedWith(w)
}

// readSpan is a run of a View's reads: Gets[gets[0]:gets[1]] and Lists[lists[0]:lists[1]].
type readSpan struct{ gets, lists [2]int }

// MutatingReads marks the reads of evaluations over the View until end is called as the
// MutatingAdmissionPolicies' (see ReadWhen).
func (v *StateView) MutatingReads() (end func()) {
	gets, lists := len(v.Gets), len(v.Lists)
	return func() {
		v.early = append(v.early, readSpan{[2]int{gets, len(v.Gets)}, [2]int{lists, len(v.Lists)}})
	}
}

// ReadWhen says whether an evaluation over the View read the object of w, or listed what it
// was in, through the MutatingAdmissionPolicies (early: see MutatingReads), and otherwise
// (late: as validating admission, or an admission plugin, ran).
func (v *StateView) ReadWhen(w *TypedWrite) (early, late bool) {
	k := readKey{w.GR, w.Obj}
	for i, g := range v.Gets {
		if g == k {
			e := v.earlyRead(i, func(s readSpan) [2]int { return s.gets })
			early, late = early || e, late || !e
		}
	}
	for i := range v.listing(w) {
		e := v.earlyRead(i, func(s readSpan) [2]int { return s.lists })
		early, late = early || e, late || !e
	}
	return early, late
}

// earlyRead says whether the read at index i of Gets or Lists (span picks which) is in a
// span of early.
func (v *StateView) earlyRead(i int, span func(readSpan) [2]int) bool {
	return slices.ContainsFunc(v.early, func(s readSpan) bool { r := span(s); return r[0] <= i && i < r[1] })
}

// ReadOtherThanByName says whether an evaluation over the View read the object of w otherwise
// than by its name through the policies' param lister (CollectParams, which reads a param its
// informer does not hold yet from storage): in a list, or through an admission plugin.
func (v *StateView) ReadOtherThanByName(w *TypedWrite) bool {
	return slices.Contains(v.looked, readKey{w.GR, w.Obj}) || v.listedWith(w)
}

// listedWith says whether an evaluation over the View listed what the object of w was in with
// its labels before or after w.
func (v *StateView) listedWith(w *TypedWrite) bool {
	for range v.listing(w) {
		return true
	}
	return false
}

// listing are the indexes in Lists of the lists that listed what the object of w was in with
// its labels before or after w. Most writes are of a resource the View did not list (a request
// whose export lost when it was received is asked about every write of a minute): the
// object's entry is looked up once a list of its resource and namespace is found.
func (v *StateView) listing(w *TypedWrite) iter.Seq[int] {
	return func(yield func(int) bool) {
		looked := false
		var after, before listed
		for i := range v.Lists {
			l := &v.Lists[i]
			if l.gr != w.GR || l.namespace != "" && l.namespace != w.Obj.Namespace {
				continue
			}
			if !looked {
				e, has := v.entry(w.GR, w.Obj)
				after, before = listedAs(e, has), listedAs(w.Prev, w.Had)
				looked = true
			}
			if (after.by(l.selector) || before.by(l.selector)) && !yield(i) {
				return
			}
		}
	}
}

// listed is what a list by selector reads of one version of an object: whether it is there,
// its labels, and whether they are known (labelsNotKnown, looked at once however many lists).
type listed struct {
	there, labelsUnknown bool
	labels               labels.Set
}

func listedAs(e typedEntry, had bool) listed {
	if !had || e.Obj == nil {
		return listed{}
	}
	return listed{there: true, labels: e.labels, labelsUnknown: labelsNotKnown(e.Unknowns)}
}

// by says whether a list by selector may have listed it: an object whose labels are not
// known may have been listed whatever they are.
func (o listed) by(selector labels.Selector) bool {
	return o.there && (selector.Matches(o.labels) || o.labelsUnknown && !selector.Empty())
}

// Reads says whether an evaluation over the View read an object of gr, or listed some.
func (v *StateView) Reads(gr schema.GroupResource) bool {
	return slices.ContainsFunc(v.Gets, func(k readKey) bool { return k.gr == gr }) ||
		slices.ContainsFunc(v.Lists, func(l listRead) bool { return l.gr == gr })
}

// Before returns a copy of the View that holds the objects of the writes as they were before
// them (the oldest write of an object gives its version), recording what evaluations read.
func (v *StateView) Before(writes []TypedWrite) *StateView {
	c := v.Fresh()
	c.Track = true
	c.overrides = map[readKey]TypedWrite{}
	for _, w := range writes {
		k := readKey{w.GR, w.Obj}
		if _, ok := c.overrides[k]; !ok {
			c.overrideKeys = append(c.overrideKeys, k)
		}
		c.overrides[k] = w // writes are newest first: the last is the oldest
	}
	slices.SortFunc(c.overrideKeys, func(a, b readKey) int {
		return cmp.Or(strings.Compare(a.gr.String(), b.gr.String()), strings.Compare(a.k.Namespace, b.k.Namespace), strings.Compare(a.k.Name, b.k.Name))
	})
	return c
}

// overridden are the keys of the View's overrides of gr, in order (namespace, name).
func (v *StateView) overridden(gr schema.GroupResource) []readKey {
	var out []readKey
	for _, rk := range v.overrideKeys {
		if rk.gr == gr {
			out = append(out, rk)
		}
	}
	return out
}

// entry is the View's entry of the object k of gr.
func (v *StateView) entry(gr schema.GroupResource, k ObjectKey) (typedEntry, bool) {
	if w, ok := v.overrides[readKey{gr, k}]; ok {
		return w.Prev, w.Had
	}
	return v.buckets[gr].get(k)
}

// Fresh returns a copy of the View without what evaluations over it missed, to evaluate a
// request again.
func (v *StateView) Fresh() *StateView { return v.WithStandIns(v.standIns) }

// WithStandIns returns a copy of the View that answers a read of a param it does not have with
// the resource's stand-in.
func (v *StateView) WithStandIns(standIns map[schema.GroupResource]runtime.Object) *StateView {
	c := *v
	c.misses, c.Partials, c.standIns, c.Gets, c.Lists, c.looked, c.overrides, c.overrideKeys = nil, nil, standIns, nil, nil, nil, nil, nil
	c.early = nil
	return &c
}

// complete says whether every object of the resource is known.
func (v *StateView) isComplete(gr schema.GroupResource) bool {
	_, ok := v.complete[gr]
	return v.incomplete[gr] == "" && (ok || v.allSince != "")
}

func (v *StateView) counts(gr schema.GroupResource) bool {
	return gr != NamespacesGR || v.readsNamespaces
}

// Get implements verify.ObjectStore.
func (v *StateView) Get(gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	gr := gvr.GroupResource()
	if why, ok := v.Unknown[gr]; ok {
		v.miss(gr, "%s unknown: %s", JoinKey(namespace, name), why)
		if o, ok := v.standIns[gr]; ok {
			return o, nil
		}
		return nil, apierrors.NewNotFound(gr, name)
	}
	if v.Track {
		v.Gets = append(v.Gets, readKey{gr, ObjectKey{namespace, name}})
	}
	e, ok := v.entry(gr, ObjectKey{namespace, name})
	if w, over := v.overrides[readKey{gr, ObjectKey{namespace, name}}]; over && !w.Had && !w.UnknownBefore {
		return nil, apierrors.NewNotFound(gr, name) // before the write created it
	}
	switch {
	case ok && e.Obj == nil && e.exists && v.knownByName(gr):
		if v.counts(gr) {
			v.Partials = append(v.Partials, PartialUse{GR: gr, Obj: ObjectKey{namespace, name}, Unknowns: namespaceSkeleton(e.unknown)})
		}
	case ok && e.Obj == nil:
		if v.counts(gr) {
			v.miss(gr, "%s unknown: %s", JoinKey(namespace, name), e.unknown)
		}
	case ok && e.gvr != gvr:
		v.miss(gr, "%s is known as %s, not %s (vapc does not convert versions)", JoinKey(namespace, name), e.gvr.Version, gvr.Version)
	case ok:
		o, err := e.Obj.get()
		why := ""
		var parts []vapccel.Unknown
		if rr, ok := v.Reread[gr]; ok && err == nil {
			o, parts, why = rr.reread(o)
		}
		switch {
		case err != nil:
			v.miss(gr, "%s unknown: %v", JoinKey(namespace, name), err)
		case why != "":
			v.miss(gr, "%s unknown: %s", JoinKey(namespace, name), why)
		default:
			if us := append(slices.Clip(e.Unknowns), parts...); len(us) > 0 {
				v.Partials = append(v.Partials, PartialUse{GR: gr, Obj: ObjectKey{namespace, name}, Unknowns: us})
			}
			if gr == SecretsGR {
				v.secrets.add(o)
			}
			return o, nil
		}
	case !v.isComplete(gr) && v.counts(gr) && v.knownByName(gr):
		v.Partials = append(v.Partials, PartialUse{GR: gr, Obj: ObjectKey{namespace, name}, Unknowns: namespaceSkeleton("not in the snapshot or the log")})
	case !v.isComplete(gr) && v.counts(gr):
		v.miss(gr, "%s not known (not in the snapshot or the log)", JoinKey(namespace, name))
	}
	if o, ok := v.standIns[gr]; ok {
		return o, nil
	}
	return nil, apierrors.NewNotFound(gr, name)
}

// knownByName says whether an object of gr the View does not know is known by its name all
// the same: a namespace, where NamespaceNames says so.
func (v *StateView) knownByName(gr schema.GroupResource) bool {
	return gr == NamespacesGR && v.NamespaceNames
}

// namespaceSkeleton is what is not known of a namespace the View does not know (one the log
// and the snapshot do not hold, or one a write left in place that the log holds without its
// result: not one a deletion may have removed), read by a request in it: all but its name and
// its kubernetes.io/metadata.name label, which is its
// name (kube-apiserver's namespace strategy sets it on every create and update, and the
// defaulting of v1 on every read: SetDefaults_Namespace), and its apiVersion and kind. That
// it exists the request shows: one in a namespace that does not exist fails before
// validating admission (the NamespaceLifecycle plugin), and the evaluator reads it as a
// namespace of that name and label only. A namespace selector on the label (NotIn
// kube-system, the commonest) then decides.
func namespaceSkeleton(why string) []vapccel.Unknown {
	return []vapccel.Unknown{{Why: why, Known: [][]string{
		{"apiVersion"}, {"kind"}, {"metadata", "name"}, {"metadata", "labels", corev1.LabelMetadataName},
	}}}
}

// List implements verify.ObjectStore.
func (v *StateView) List(gvr schema.GroupVersionResource, namespace string, selector labels.Selector) ([]runtime.Object, error) {
	gr := gvr.GroupResource()
	if why, ok := v.Unknown[gr]; ok {
		v.miss(gr, "unknown: %s", why)
		if o, ok := v.standIns[gr]; ok {
			return []runtime.Object{o}, nil
		}
		return nil, nil
	}
	b := v.buckets[gr]
	if v.counts(gr) {
		if !v.isComplete(gr) {
			v.miss(gr, "incomplete: %s", v.incompleteWhy(gr))
		}
		for _, why := range v.unknownEntries(gr, namespace) {
			v.miss(gr, "%s", why)
		}
	}
	if selector == nil {
		selector = labels.Everything()
	}
	objs, failed, partials := v.listed(b, gvr, namespace, selector)
	v.misses = append(v.misses, failed...)
	v.Partials = append(v.Partials, partials...)
	if rr, ok := v.Reread[gr]; ok {
		objs = v.rereadList(gr, rr, objs)
	}
	if gr == SecretsGR {
		v.secrets.add(objs...)
	}
	if o, ok := v.standIns[gr]; ok && len(objs) == 0 {
		return []runtime.Object{o}, nil
	}
	return objs, nil
}

// rereadList is the list objs of gr read under rr: an object whose read is not known is left
// out, a miss; the fields of one that are not known are a partial use.
func (v *StateView) rereadList(gr schema.GroupResource, rr Reread, objs []runtime.Object) []runtime.Object {
	out := objs[:0:0]
	for _, o := range objs {
		again, parts, why := rr.reread(o)
		var key ObjectKey
		if m, err := meta.Accessor(o); err == nil {
			key = ObjectKey{m.GetNamespace(), m.GetName()}
		}
		if why != "" {
			v.miss(gr, "%s unknown: %s", JoinKey(key.Namespace, key.Name), why)
			continue
		}
		if len(parts) > 0 {
			v.Partials = append(v.Partials, PartialUse{GR: gr, Obj: key, Unknowns: parts})
		}
		out = append(out, again)
	}
	return out
}

// unknownEntries are why the objects of gr in namespace ("" for all) the View holds but does
// not know are not known, each "namespace/name unknown: why".
func (v *StateView) unknownEntries(gr schema.GroupResource, namespace string) []string {
	var out []string
	if b := v.buckets[gr]; b != nil && b.unknowns > 0 {
		for k, e := range b.objs.all() {
			if _, over := v.overrides[readKey{gr, k}]; !over && e.Obj == nil && (namespace == "" || k.Namespace == namespace) {
				out = append(out, JoinKey(k.Namespace, k.Name)+" unknown: "+e.unknown)
			}
		}
		slices.Sort(out) // in a fixed order, not the map's
	}
	for _, rk := range v.overridden(gr) { // as they were before the writes
		if w := v.overrides[rk]; w.Had && w.Prev.Obj == nil && (namespace == "" || rk.k.Namespace == namespace) {
			out = append(out, JoinKey(rk.k.Namespace, rk.k.Name)+" unknown: "+w.Prev.unknown)
		}
	}
	return out
}

// listed lists the objects of the bucket b of gvr the selector selects as the View holds
// them (see withOverrides), recording the read when the View tracks them.
func (v *StateView) listed(b *bucket, gvr schema.GroupVersionResource, namespace string, selector labels.Selector) ([]runtime.Object, []miss, []PartialUse) {
	if v.Track {
		v.Lists = append(v.Lists, listRead{gvr.GroupResource(), namespace, selector})
	}
	var objs []runtime.Object
	var failed []miss
	var partials []PartialUse
	if b != nil { // none when the State holds no object of the resource: a read all the same
		objs, failed, partials = b.list(gvr, namespace, selector)
	}
	if len(v.overrides) > 0 {
		objs, failed, partials = v.withOverrides(gvr, namespace, selector, objs, failed, partials)
	}
	return objs, failed, partials
}

// withOverrides is a list of the View's bucket with the objects of its overrides as they were:
// their versions after the writes left out, those before put in their places when the
// selector selects them, in the bucket's order (namespace, name).
func (v *StateView) withOverrides(gvr schema.GroupVersionResource, namespace string, selector labels.Selector, objs []runtime.Object, failed []miss, partials []PartialUse) ([]runtime.Object, []miss, []PartialUse) {
	gr := gvr.GroupResource()
	mine := func(k ObjectKey) bool {
		_, ok := v.overrides[readKey{gr, k}]
		return ok
	}
	var out []runtime.Object
	changed := false
	for _, obj := range objs {
		if a, err := meta.Accessor(obj); err == nil && mine(ObjectKey{a.GetNamespace(), a.GetName()}) {
			changed = true
			continue
		}
		out = append(out, obj)
	}
	failed = slices.DeleteFunc(slices.Clone(failed), func(m miss) bool { return m.k != (ObjectKey{}) && mine(m.k) })
	partials = slices.DeleteFunc(slices.Clone(partials), func(p PartialUse) bool { return mine(p.Obj) })
	for _, rk := range v.overridden(gr) {
		w := v.overrides[rk]
		e := w.Prev
		if (namespace != "" && rk.k.Namespace != namespace) || !w.Had || e.Obj == nil || e.gvr != gvr {
			continue
		}
		key := JoinKey(rk.k.Namespace, rk.k.Name)
		if why := labelsWhy(e.Unknowns); why != "" && !selector.Empty() {
			failed = append(failed, labelsMiss(gr, rk.k, selector, why))
		}
		if !selector.Matches(e.labels) {
			continue
		}
		obj, err := e.Obj.get()
		if err != nil {
			failed = append(failed, miss{GR: gr, k: rk.k, text: fmt.Sprintf("%s %s unknown: %v", gr, key, err)})
			continue
		}
		out, changed = append(out, obj), true
		if len(e.Unknowns) > 0 {
			partials = append(partials, PartialUse{GR: gr, Obj: rk.k, Unknowns: e.Unknowns})
		}
	}
	if changed {
		slices.SortFunc(out, func(a, b runtime.Object) int {
			am, _ := meta.Accessor(a)
			bm, _ := meta.Accessor(b)
			if c := strings.Compare(am.GetNamespace(), bm.GetNamespace()); c != 0 {
				return c
			}
			return strings.Compare(am.GetName(), bm.GetName())
		})
	}
	return out, failed, partials
}

func (b *bucket) get(k ObjectKey) (typedEntry, bool) {
	if b == nil {
		return typedEntry{}, false
	}
	return b.objs.get(k)
}

// miss is a read a View could not answer for sure: of which resource, and why, for people.
type miss struct {
	GR   schema.GroupResource
	k    ObjectKey // the object it is about, if one (zero if none)
	text string
}

// miss records a read of the resource the View could not answer for sure; the text begins
// with the resource.
func (v *StateView) miss(gr schema.GroupResource, format string, args ...any) {
	v.misses = append(v.misses, miss{GR: gr, text: fmt.Sprintf("%s "+format, append([]any{gr}, args...)...)})
}

// ReadMark is how many misses and partial uses a View had recorded (Mark).
type ReadMark struct{ misses, partials int }

// Mark is the View's misses and partial uses so far, for DropSince.
func (v *StateView) Mark() ReadMark { return ReadMark{len(v.misses), len(v.Partials)} }

// DropSince forgets the misses and partial uses recorded since the mark m: what an evaluation
// read that the decision turned out not to rest on.
func (v *StateView) DropSince(m ReadMark) {
	v.misses, v.Partials = v.misses[:m.misses:m.misses], v.Partials[:m.partials:m.partials]
}

// Misses returns the reads the View could not answer for sure, sorted by their text, each
// once.
func (v *StateView) Misses() []miss {
	out := slices.Clone(v.misses)
	slices.SortFunc(out, func(a, b miss) int { return strings.Compare(a.text, b.text) })
	return slices.CompactFunc(out, func(a, b miss) bool { return a.text == b.text })
}

// MissedResources are the resources of the misses.
func MissedResources(ms []miss) map[schema.GroupResource]bool {
	out := make(map[schema.GroupResource]bool, len(ms))
	for _, m := range ms {
		out[m.GR] = true
	}
	return out
}

// MissText is the misses for people, joined by "; ".
func MissText(ms []miss) string {
	texts := make([]string, len(ms))
	for i, m := range ms {
		texts[i] = m.text
	}
	return strings.Join(texts, "; ")
}

// Lookup reads an object as kube-apiserver's built-in admission plugins read it, without
// recording a miss: the object, or absent when it does not exist for sure, or why it is not
// known.
func (v *StateView) Lookup(gvr schema.GroupVersionResource, namespace, name string) (obj runtime.Object, absent bool, unknown string, partial []vapccel.Unknown) {
	gr := gvr.GroupResource()
	if why, ok := v.Unknown[gr]; ok {
		return nil, false, why, nil
	}
	if v.Track {
		v.Gets = append(v.Gets, readKey{gr, ObjectKey{namespace, name}})
		v.looked = append(v.looked, readKey{gr, ObjectKey{namespace, name}})
	}
	e, ok := v.entry(gr, ObjectKey{namespace, name})
	if w, over := v.overrides[readKey{gr, ObjectKey{namespace, name}}]; over && !w.Had && !w.UnknownBefore {
		return nil, true, "", nil // before the write created it
	}
	switch {
	case ok && e.Obj == nil:
		return nil, false, e.unknown, nil
	case ok && e.gvr != gvr:
		return nil, false, fmt.Sprintf("known as %s, not %s", e.gvr.Version, gvr.Version), nil
	case ok:
		o, err := e.Obj.get()
		if err != nil {
			return nil, false, err.Error(), nil
		}
		return o, false, "", e.Unknowns
	case v.isComplete(gr):
		return nil, true, "", nil
	}
	return nil, false, "not in the snapshot or earlier in the log", nil
}

// incompleteWhy says why the View does not know every object of a resource it does not hold
// complete.
func (v *StateView) incompleteWhy(gr schema.GroupResource) string {
	if why := v.incomplete[gr]; why != "" {
		return "not every object is known since " + why
	}
	return "objects that existed before the log are not known (give --snapshot with their List, as vapc snapshot takes it)"
}

// ListFor lists the objects of a resource in a namespace ("" for all) as the admission plugins
// list them: the known ones, why they may not be all, and the fields not known of those it
// lists (partials), which the plugins may not read.
func (v *StateView) ListFor(gvr schema.GroupVersionResource, namespace string) (objs []runtime.Object, unknown string, partials []PartialUse) {
	gr := gvr.GroupResource()
	if why, ok := v.Unknown[gr]; ok {
		return nil, why, nil
	}
	if !v.isComplete(gr) {
		unknown = v.incompleteWhy(gr)
	}
	b := v.buckets[gr]
	if whys := v.unknownEntries(gr, namespace); len(whys) > 0 {
		unknown = whys[0]
	}
	objs, failed, partials := v.listed(b, gvr, namespace, labels.Everything())
	if len(failed) > 0 && unknown == "" {
		unknown = failed[0].text
	}
	return objs, unknown, partials
}

// NamespaceLabels returns the labels of a namespace, and whether they are known.
func (v *StateView) NamespaceLabels(name string) (labels.Set, bool) {
	if v == nil {
		return nil, false
	}
	obj, _, unknown, partial := v.Lookup(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}, "", name)
	if obj == nil || unknown != "" {
		return nil, false
	}
	for _, u := range partial {
		if labelsUnder(u.Path.Steps) {
			return nil, false
		}
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, false
	}
	return labels.Set(m.GetLabels()), true
}

// servedSecrets are the Secrets a View and its copies served, each once: the same object, or
// an equal one (versions the replay rebuilt share the pipeline's resourceVersion, and differ in
// their content only).
type servedSecrets struct {
	mu    sync.Mutex
	byKey map[ObjectKey][]runtime.Object
	objs  []runtime.Object
}

func (s *servedSecrets) add(objs ...runtime.Object) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range objs {
		var k ObjectKey
		if m, err := meta.Accessor(o); err == nil {
			k = ObjectKey{m.GetNamespace(), m.GetName()}
		}
		if slices.ContainsFunc(s.byKey[k], func(x runtime.Object) bool { return x == o || reflect.DeepEqual(x, o) }) {
			continue
		}
		if s.byKey == nil {
			s.byKey = map[ObjectKey][]runtime.Object{}
		}
		s.byKey[k] = append(s.byKey[k], o)
		s.objs = append(s.objs, o)
	}
}

// Secrets are the Secrets the View and every copy of it served evaluations (Get, List), each
// version once: a policy's params, whose values the replay's outputs scrub.
func (v *StateView) Secrets() []runtime.Object {
	if v.secrets == nil {
		return nil
	}
	v.secrets.mu.Lock()
	defer v.secrets.mu.Unlock()
	return slices.Clone(v.secrets.objs)
}
