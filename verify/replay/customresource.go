package replay

import (
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
)

// customResourceUnknowns are the fields of a custom resource's object, rebuilt from its
// request outside the request pipeline (a create or update the log holds without its stored
// result), that the custom resource handler set before validating admission and the replay
// does not: rest.BeforeCreate's uid and creationTimestamp (FillObjectMetaSystemFields), the
// generation its strategy sets on create and bumps on a change outside metadata, the status
// its strategy drops on create and keeps from the stored object on update when the CRD has a
// status subresource, and, unless decoded says the replay applied them, the defaults of the
// CRD's schema, which the decoder applies. old is the stored object of an update.
func (r *Replayer) customResourceUnknowns(t target, u, old *unstructured.Unstructured, decoded bool) []vapccel.Unknown {
	if kubescheme.Knows(u.GroupVersionKind()) || t.sub != "" || (t.op != admission.Create && t.op != admission.Update) {
		return nil
	}
	what := "the " + describe(t.gvr, t.sub) + " handler"
	var out []vapccel.Unknown
	if r.catalog != nil && !decoded {
		if _, defaulted, ok, _ := r.catalog.CustomTypeConverter(u.GroupVersionKind()); ok && defaulted {
			return []vapccel.Unknown{{Path: vapccel.FieldPath{Root: "object"},
				Why: "the defaults of the schema of " + describe(t.gvr, "") + ", which " + what + " applies before admission and the replay does not apply to an object it rebuilds"}}
		}
	}
	generated := func(steps ...string) {
		out = append(out, vapccel.Unknown{Path: objectPath(steps...), Why: "what " + what + " sets before admission (rest.BeforeCreate, BeforeUpdate), which the replay does not run for a custom resource it rebuilds"})
	}
	switch t.op {
	case admission.Create:
		generated("metadata", "uid")
		generated("metadata", "creationTimestamp")
		generated("metadata", "generation")
		if _, has := u.Object["status"]; has {
			generated("status")
		}
	case admission.Update:
		if old == nil || u.GetGeneration() != old.GetGeneration() || !sameOutsideMetadata(u, old) {
			generated("metadata", "generation")
		}
		if old == nil {
			generated("metadata", "uid")
			generated("metadata", "creationTimestamp")
			generated("status")
			break
		}
		if u.GetUID() == "" && old.GetUID() != "" {
			generated("metadata", "uid")
		}
		if created, was := u.GetCreationTimestamp(), old.GetCreationTimestamp(); created.IsZero() && !was.IsZero() {
			generated("metadata", "creationTimestamp")
		}
		if !equality.Semantic.DeepEqual(u.Object["status"], old.Object["status"]) {
			generated("status")
		}
	}
	return out
}

// sameOutsideMetadata says whether two objects are the same but for their metadata: the
// strategy's update leaves the generation as it was then.
func sameOutsideMetadata(a, b *unstructured.Unstructured) bool {
	if len(a.Object) != len(b.Object) {
		return false
	}
	for k, v := range a.Object {
		if k == "metadata" {
			continue
		}
		if w, ok := b.Object[k]; !ok || !equality.Semantic.DeepEqual(v, w) {
			return false
		}
	}
	return true
}
