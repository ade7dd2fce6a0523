package replay

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vapc-dev/vapc/verify"
)

// State is the cluster as a replay knows it at a point of the log: a snapshot, then every write
// the log shows, for the resources some policy can read (params, namespaces, old objects). It
// implements verify.ObjectStore for params and namespaces, synchronously, and records every
// read it could not answer for sure, so that a decision that rests on a guess is reported as
// indeterminate.
//
// An object's state is known (its JSON), unknown (a write the log shows without the result, an
// object changed by a subresource whose result the log does not hold), or absent. A resource is
// complete when every object of it is known: it came in a snapshot, or the log begins with the
// cluster's creation. A miss in a resource that is not complete is not evidence of absence.
//
// State is used by one goroutine at a time (the replay's ordered stage); the evaluator reads it
// synchronously from that goroutine.
type State struct {
	mapper meta.RESTMapper
	keep   func(schema.GroupResource) bool
	// typed holds params and namespaces in the form the evaluator reads them.
	typed      *verify.MemoryStore
	typedKinds func(schema.GroupResource) bool

	objects  map[schema.GroupResource]map[objectKey]*entry
	unknowns map[schema.GroupResource]int // entries whose state is not known, by resource
	complete map[schema.GroupResource]string
	allSince string // "the log begins with the cluster's creation" or a reason; empty if not

	misses []string
	// readsNamespaces says whether some policy reads namespaces: only then is an unknown
	// namespace a miss (the evaluator otherwise assumes the namespace exists, as it must).
	readsNamespaces bool
}

type objectKey struct{ namespace, name string }

type entry struct {
	raw []byte // JSON of the object; nil when unknown
	// unknown says why the object's state is not known.
	unknown string
	// labels of a known object, for selectors.
	labels labels.Set
	// source says where the state came from (a line of the log, the snapshot).
	source string
}

var _ verify.ObjectStore = (*State)(nil)

// NewState returns an empty State for the resources keep accepts; typedKinds are the resources
// the evaluator reads (params and namespaces).
func NewState(mapper meta.RESTMapper, keep, typedKinds func(schema.GroupResource) bool) *State {
	return &State{
		mapper: mapper, keep: keep, typedKinds: typedKinds,
		typed:    verify.NewMemoryStore(mapper),
		objects:  map[schema.GroupResource]map[objectKey]*entry{},
		unknowns: map[schema.GroupResource]int{},
		complete: map[schema.GroupResource]string{},
	}
}

// MarkComplete records that every object of the resource is known from now on.
func (s *State) MarkComplete(gr schema.GroupResource, why string) {
	if _, ok := s.complete[gr]; !ok {
		s.complete[gr] = why
	}
}

// MarkAllComplete records that every object of every resource is known from now on.
func (s *State) MarkAllComplete(why string) {
	if s.allSince == "" {
		s.allSince = why
	}
}

// Complete says whether every object of the resource is known.
func (s *State) Complete(gr schema.GroupResource) bool {
	_, ok := s.complete[gr]
	return ok || s.allSince != ""
}

// Keeps says whether the State keeps objects of the resource.
func (s *State) Keeps(gr schema.GroupResource) bool { return s.keep(gr) }

// Put records the object as the current state of its key.
func (s *State) Put(gr schema.GroupResource, u *unstructured.Unstructured, source string) error {
	if !s.keep(gr) {
		return nil
	}
	raw, err := json.Marshal(u.Object)
	if err != nil {
		return err
	}
	return s.putRaw(gr, u, raw, nil, source)
}

// putRaw is Put with the object's JSON already made, and for the resources the evaluator
// reads, optionally its typed form (prepared by prepareTyped).
func (s *State) putRaw(gr schema.GroupResource, u *unstructured.Unstructured, raw []byte, typed *preparedTyped, source string) error {
	if !s.keep(gr) {
		return nil
	}
	k := objectKey{u.GetNamespace(), u.GetName()}
	s.set(gr, k, &entry{raw: raw, labels: labels.Set(u.GetLabels()), source: source})
	if s.typedKinds(gr) {
		if typed == nil {
			typed = s.prepareTyped(u)
		}
		if typed.err != nil {
			_ = s.typed.Delete(u.GroupVersionKind(), k.namespace, k.name)
			s.set(gr, k, &entry{unknown: fmt.Sprintf("%s: %v", source, typed.err), source: source})
			return typed.err
		}
		s.typed.PutPrepared(typed.p)
	}
	return nil
}

// preparedTyped is an object in the form the evaluator reads it, or why it has none.
type preparedTyped struct {
	p   *verify.Prepared
	err error
}

// prepareTyped converts an object of a resource the evaluator reads to the form it reads. It
// changes nothing and may run on any goroutine.
func (s *State) prepareTyped(u *unstructured.Unstructured) *preparedTyped {
	p, err := s.typed.Prepare(u)
	return &preparedTyped{p: p, err: err}
}

// set stores the entry of an object, counting the entries whose state is not known.
func (s *State) set(gr schema.GroupResource, k objectKey, e *entry) {
	b := s.bucket(gr)
	if old, ok := b[k]; ok && old.raw == nil {
		s.unknowns[gr]--
	}
	if e.raw == nil {
		s.unknowns[gr]++
	}
	b[k] = e
}

// Forget records that the object's state is not known from now on, and why.
func (s *State) Forget(gr schema.GroupResource, gvk schema.GroupVersionKind, namespace, name, why string) {
	if !s.keep(gr) {
		return
	}
	s.set(gr, objectKey{namespace, name}, &entry{unknown: why, source: why})
	if s.typedKinds(gr) && !gvk.Empty() {
		_ = s.typed.Delete(gvk, namespace, name)
	}
}

// Delete records that the object no longer exists.
func (s *State) Delete(gr schema.GroupResource, gvk schema.GroupVersionKind, namespace, name string) {
	if !s.keep(gr) {
		return
	}
	k := objectKey{namespace, name}
	if old, ok := s.objects[gr][k]; ok && old.raw == nil {
		s.unknowns[gr]--
	}
	delete(s.objects[gr], k)
	if s.typedKinds(gr) && !gvk.Empty() {
		_ = s.typed.Delete(gvk, namespace, name)
	}
}

// ForgetAll records that no object of the resource in the namespace ("" for all) is known,
// after a write whose effect the log does not show (a deletecollection without a response).
func (s *State) ForgetAll(gr schema.GroupResource, namespace, why string) {
	if !s.keep(gr) {
		return
	}
	for k, e := range s.objects[gr] {
		if namespace == "" || k.namespace == namespace {
			if e.raw != nil {
				s.unknowns[gr]++
			}
			*e = entry{unknown: why, source: why}
		}
	}
	delete(s.complete, gr)
	s.allSince = ""
}

func (s *State) bucket(gr schema.GroupResource) map[objectKey]*entry {
	m := s.objects[gr]
	if m == nil {
		m = map[objectKey]*entry{}
		s.objects[gr] = m
	}
	return m
}

// Lookup returns the stored object: found is false when there is no such object (for sure
// when complete is true), and unknown says why the object's state is not known.
func (s *State) Lookup(gr schema.GroupResource, namespace, name string) (u *unstructured.Unstructured, source, unknown string, found bool) {
	e, ok := s.objects[gr][objectKey{namespace, name}]
	if !ok {
		return nil, "", "", false
	}
	if e.raw == nil {
		return nil, e.source, e.unknown, true
	}
	u = &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(e.raw); err != nil {
		return nil, e.source, fmt.Sprintf("stored object does not decode: %v", err), true
	}
	return u, e.source, "", true
}

// Len is the number of objects the State holds.
func (s *State) Len() int {
	n := 0
	for _, m := range s.objects {
		n += len(m)
	}
	return n
}

// BeginReads forgets the misses of the previous decision.
func (s *State) BeginReads() { s.misses = s.misses[:0] }

// Misses returns the reads since BeginReads that the State could not answer for sure, sorted.
func (s *State) Misses() []string {
	out := append([]string(nil), s.misses...)
	sort.Strings(out)
	return dedupe(out)
}

func (s *State) miss(format string, args ...any) {
	s.misses = append(s.misses, fmt.Sprintf(format, args...))
}

// Get implements verify.ObjectStore.
func (s *State) Get(gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	gr := gvr.GroupResource()
	if e, ok := s.objects[gr][objectKey{namespace, name}]; ok && e.raw == nil {
		if gr != namespacesGR || s.needNamespaces() {
			s.miss("%s %s unknown: %s", gr, joinKey(namespace, name), e.unknown)
		}
		return nil, apierrors.NewNotFound(gr, name)
	}
	o, err := s.typed.Get(gvr, namespace, name)
	if apierrors.IsNotFound(err) && !s.Complete(gr) && (gr != namespacesGR || s.needNamespaces()) {
		s.miss("%s %s not known (not in the snapshot or the log)", gr, joinKey(namespace, name))
	}
	return o, err
}

// List implements verify.ObjectStore.
func (s *State) List(gvr schema.GroupVersionResource, namespace string, selector labels.Selector) ([]runtime.Object, error) {
	gr := gvr.GroupResource()
	if gr != namespacesGR || s.needNamespaces() {
		if !s.Complete(gr) {
			s.miss("%s incomplete: objects that existed before the log are not known (give --snapshot)", gr)
		}
		if s.unknowns[gr] > 0 {
			for k, e := range s.objects[gr] {
				if e.raw == nil && (namespace == "" || k.namespace == namespace) {
					s.miss("%s %s unknown: %s", gr, joinKey(k.namespace, k.name), e.unknown)
				}
			}
		}
	}
	return s.typed.List(gvr, namespace, selector)
}

// needNamespaces is set by the replay: whether a policy reads namespaces.
func (s *State) needNamespaces() bool { return s.readsNamespaces }

var namespacesGR = schema.GroupResource{Resource: "namespaces"}

func joinKey(namespace, name string) string {
	if namespace == "" {
		return name
	}
	return namespace + "/" + name
}

func dedupe(s []string) []string {
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}

// shortReason trims a reason to its first line.
func shortReason(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}
