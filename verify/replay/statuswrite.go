package replay

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/internal/apiserver"
	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// A write to an object's status subresource that the log holds without its result (level
// Metadata: a kubelet's status patches, a controller's status updates, as many production
// audit policies log them) changes only what the subresource's registry strategy lets a body
// change: a pod's status may change, its spec may not (podStatusStrategy.PrepareForUpdate
// puts the stored spec back), and a policy that reads a pod's spec.nodeName when the pod is
// deleted can still be decided. The replay does not list those fields by hand: it asks the
// request pipeline, which runs the strategies of k8s.io/kubernetes (statusProbe). It writes
// the status subresource of an object it knows with the stored object as the body, then once
// for each field a body may change, with a body that changes that field alone. A field every
// write stores as the registry read it is one no body changes; every other field is not known
// after the write (nor are its status, resourceVersion and managedFields, which the probes do
// not ask about). What the pipeline answers holds for every object of the resource (the
// strategies decide by resource and field, not by object): it is asked once a resource.

// statusKept is what writes to a resource's status subresource leave as they were: the
// object's top-level fields and metadata fields no body changes. ok is false when the
// pipeline could not say (the probe failed): such a write leaves the object unknown.
type statusKept struct {
	top, meta map[string]bool
	ok        bool
}

// probeMark is what the probe's second body writes where it changes a field.
const probeMark = "vapc.dev/status-probe"

// statusWritten keeps in the State what a status write whose result the log does not hold
// left of an object the State knows: the fields no body of the subresource changes, the
// others unknown. It says whether it did; when it did not, the caller forgets the object.
func (r *Replayer) statusWritten(ctx context.Context, sw stateWrite) bool {
	ev, t, gr := sw.ev, sw.t, sw.gr
	if t.sub != "status" || t.op != admission.Update || t.name == "" || ev.Verb == "create" {
		return false
	}
	p := r.state.Prior(gr, t.namespace, t.name)
	if !p.Found || p.Raw == nil || p.Unknown != "" {
		return false
	}
	u, err := auditlog.DecodeObject(p.Raw)
	if err != nil || u.GroupVersionKind() != t.mainKind {
		return false
	}
	kept, probed := r.statusKeeps[statusKey{gr, t.mainKind}]
	if !probed {
		if len(p.Unknowns) > 0 {
			return false // probed on an object the State knows in full
		}
		var answered bool
		if kept, answered = r.statusProbe(ctx, ev, t, p, u); !answered {
			return false // this object's write did not go through: another may
		}
		if r.statusKeeps == nil {
			r.statusKeeps = map[statusKey]statusKept{}
		}
		r.statusKeeps[statusKey{gr, t.mainKind}] = kept
	}
	if !kept.ok {
		return false
	}
	why := "written through " + describe(t.gvr, t.sub) + " at " + sw.src + " " + atLevel(ev) + ": the result is not in the log"
	unknowns := append(slices.Clip(p.Unknowns), kept.unknowns(u, t.mainKind, why)...)
	_ = r.state.PutKept(gr, u, unknowns, sw.src+" ("+describe(t.gvr, t.sub)+": what it does not change, as it was)")
	return true
}

// statusKey is the resource, and the version the State holds its objects in, of a probe.
type statusKey struct {
	gr   schema.GroupResource
	kind schema.GroupVersionKind
}

// unknowns are the fields of u a status write leaves unknown: every top-level field of its
// kind and of its metadata but those kept, its name, namespace and uid.
func (k statusKept) unknowns(u *unstructured.Unstructured, kind schema.GroupVersionKind, why string) []vapccel.Unknown {
	var out []vapccel.Unknown
	top := slices.Clone(jsonFields(kind))
	for f := range u.Object {
		top = append(top, f)
	}
	slices.Sort(top)
	for _, f := range slices.Compact(top) {
		if f == "apiVersion" || f == "kind" || f == "metadata" || k.top[f] {
			continue
		}
		out = append(out, vapccel.Unknown{Path: objectPath(f), Why: why})
	}
	for _, f := range metaFields() {
		if f == "name" || f == "namespace" || f == "uid" || k.meta[f] {
			continue
		}
		out = append(out, vapccel.Unknown{Path: objectPath("metadata", f), ValueOnly: f == "resourceVersion", Why: why})
	}
	return out
}

// statusProbe asks the request pipeline what writes to the status subresource of t's resource
// leave as they were, writing u (the object the State holds, p) as it is, then once for each
// field a body may change but its status, changed in that field alone (fieldProbes). A field
// is kept when the first write stores it as the registry read it, and so does the write that
// changed it; a write the pipeline refuses keeps nothing it says. answered is false when the
// object's own write did not go through (the object, or the request's URI, is not one the
// pipeline takes): what the pipeline says of the resource is then not known yet.
func (r *Replayer) statusProbe(ctx context.Context, ev *Event, t target, p state.Prior, u *unstructured.Unstructured) (kept statusKept, answered bool) {
	srv, err := pipelineServer()
	if err != nil {
		return statusKept{}, true
	}
	// The object as the registry reads it (defaulted): what each write starts from.
	obj, err := srv.Stored(t.gvr.GroupResource(), p.Raw)
	stored := versioned(obj, t.mainKind)
	if err != nil || stored == nil {
		return statusKept{}, false
	}
	path, _, _ := strings.Cut(ev.RequestURI, "?")
	same, err := r.probeWrite(ctx, srv, path, t, p, u, stored)
	if err != nil {
		return statusKept{}, false
	}
	asStored := func(in *unstructured.Unstructured, steps []string) bool {
		was, _, _ := unstructured.NestedFieldNoCopy(stored.Object, steps...)
		now, _, _ := unstructured.NestedFieldNoCopy(in.Object, steps...)
		return equality.Semantic.DeepEqual(was, now)
	}
	k := statusKept{top: map[string]bool{}, meta: map[string]bool{}, ok: true}
	for _, fp := range fieldProbes(u) {
		kept := asStored(same, fp.steps)
		if kept {
			body := u.DeepCopy()
			fp.change(body)
			changed, err := r.probeWrite(ctx, srv, path, t, p, body, stored)
			kept = err == nil && asStored(changed, fp.steps)
		}
		if len(fp.steps) == 1 {
			k.top[fp.steps[0]] = kept
		} else {
			k.meta[fp.steps[1]] = kept
		}
	}
	return k, true
}

// fieldProbe is one field of an object (its steps: a top-level field, or metadata and one of
// its fields) and how a probe's body changes it.
type fieldProbe struct {
	steps  []string
	change func(*unstructured.Unstructured)
}

// fieldProbes are the changes of the probes of u: each top-level field but its apiVersion,
// kind, metadata and status left out, and each metadata field a body may change but its name,
// namespace and uid changed.
func fieldProbes(u *unstructured.Unstructured) []fieldProbe {
	var out []fieldProbe
	for f := range u.Object {
		if f != "apiVersion" && f != "kind" && f != "metadata" && f != "status" {
			out = append(out, fieldProbe{[]string{f}, func(b *unstructured.Unstructured) { delete(b.Object, f) }})
		}
	}
	slices.SortFunc(out, func(a, b fieldProbe) int { return strings.Compare(a.steps[0], b.steps[0]) })
	meta := func(field string, change func(*unstructured.Unstructured)) {
		out = append(out, fieldProbe{[]string{"metadata", field}, change})
	}
	meta("labels", func(b *unstructured.Unstructured) { b.SetLabels(withProbeMark(b.GetLabels())) })
	meta("annotations", func(b *unstructured.Unstructured) { b.SetAnnotations(withProbeMark(b.GetAnnotations())) })
	meta("finalizers", func(b *unstructured.Unstructured) { b.SetFinalizers(append(b.GetFinalizers(), probeMark)) })
	meta("ownerReferences", func(b *unstructured.Unstructured) {
		b.SetOwnerReferences(append(b.GetOwnerReferences(), metav1.OwnerReference{APIVersion: "v1", Kind: "ConfigMap", Name: "vapc-status-probe", UID: "00000000-0000-0000-0000-0000000000fe"}))
	})
	meta("creationTimestamp", func(b *unstructured.Unstructured) { b.SetCreationTimestamp(metav1.Unix(978307200, 0)) })
	meta("generation", func(b *unstructured.Unstructured) { b.SetGeneration(b.GetGeneration() + 1000) })
	meta("deletionTimestamp", func(b *unstructured.Unstructured) {
		at := metav1.Unix(978307200, 0)
		if d := b.GetDeletionTimestamp(); d != nil && d.Equal(&at) {
			at = metav1.Unix(978307300, 0)
		}
		b.SetDeletionTimestamp(&at)
	})
	meta("deletionGracePeriodSeconds", func(b *unstructured.Unstructured) {
		g := int64(4321)
		if d := b.GetDeletionGracePeriodSeconds(); d != nil && *d == g {
			g++
		}
		b.SetDeletionGracePeriodSeconds(&g)
	})
	return out
}

// withProbeMark is a copy of labels or annotations with the probe's key.
func withProbeMark(m map[string]string) map[string]string {
	out := map[string]string{probeMark: "probe"}
	for k, v := range m {
		out[k] = v
	}
	return out
}

// probeWrite writes body to the status subresource at path through the pipeline, over the
// object the State holds (p), without admission plugins or policies, and returns the object
// the storage stored: stored, as the registry read it, when the store skipped the write.
func (r *Replayer) probeWrite(ctx context.Context, srv *apiserver.Server, path string, t target, p state.Prior, body, stored *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	raw, err := json.Marshal(body.Object)
	if err != nil {
		return nil, err
	}
	gr := t.gvr.GroupResource()
	ex := &apiserver.Exchange{Objects: &jobObjects{gr: gr, namespace: t.namespace, name: t.name, prior: p},
		Validate: func(context.Context, admission.Attributes, admission.ObjectInterfaces) error { return nil }}
	resp, err := srv.Do(ctx, apiserver.Request{Method: http.MethodPut, URI: path, Body: raw, User: probeUser}, ex)
	switch {
	case err != nil:
		return nil, err
	case resp.Code >= 300 || resp.Unknown != nil:
		return nil, errProbe
	}
	for i := len(resp.Writes) - 1; i >= 0; i-- {
		if w := resp.Writes[i]; state.SameStorage(w.Resource, gr) && w.Namespace == t.namespace && w.Name == t.name {
			if u := versioned(w.Object, t.mainKind); u != nil {
				return u, nil
			}
			return nil, errProbe
		}
	}
	// The store skips a write that changes nothing: the object is as it was stored.
	return stored, nil
}

// probeUser writes the probes; errProbe is a probe the pipeline did not store.
var (
	probeUser = &user.DefaultInfo{Name: "vapc:status-probe", Groups: []string{"system:masters", "system:authenticated"}}
	errProbe  = errors.New("the pipeline did not store the probe")
)

// jsonFields are the JSON names of the top-level fields of a built-in kind (none for another),
// found once a kind (a write at Metadata level asks for each): shared, not to be changed.
func jsonFields(kind schema.GroupVersionKind) []string {
	if f, ok := kindFields.Load(kind); ok {
		return f.([]string)
	}
	var fields []string
	if obj, err := kubescheme.Scheme.New(kind); err == nil {
		fields = structFields(reflect.TypeOf(obj).Elem())
	}
	kindFields.Store(kind, fields)
	return fields
}

// kindFields are jsonFields by kind.
var kindFields sync.Map

// metaFields are the JSON names of the fields of an object's metadata: shared, not to be
// changed.
var metaFields = sync.OnceValue(func() []string { return structFields(reflect.TypeFor[metav1.ObjectMeta]()) })

// structFields are the JSON names of a struct's fields, those of its inlined structs included.
func structFields(ty reflect.Type) []string {
	var out []string
	for i := range ty.NumField() {
		f := ty.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case tag == "-":
		case f.Anonymous && tag == "" && f.Type.Kind() == reflect.Struct:
			out = append(out, structFields(f.Type)...)
		case tag != "":
			out = append(out, tag)
		}
	}
	return out
}
