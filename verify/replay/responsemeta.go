package replay

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// loggedMetadata is the metadata of the object a successful write's response holds, as the
// log records it (a whole object, or the PartialObjectMetadata a metadata client asked for:
// the garbage collector's finalizer patches); nil when the log holds none.
func loggedMetadata(ev *Event) metav1.Object {
	if ev.Code() < 200 || ev.Code() >= 300 || len(ev.ResponseObject) == 0 {
		return nil
	}
	u, err := auditlog.DecodeMetadata(ev.ResponseObject)
	if err != nil || u == nil || u.GetName() == "" {
		return nil
	}
	return u
}

// sameWrittenMetadata says whether a way of sending a write left the object the metadata the
// log's response shows (logged): the labels, annotations, finalizers and owner references a
// patch writes, which a merge and a strategic merge patch of a list (finalizers) or of a map
// key's null write differently.
func sameWrittenMetadata(obj runtime.Object, logged metav1.Object) bool {
	m, err := meta.Accessor(obj)
	if err != nil {
		return true
	}
	emptyMap := func(a, b map[string]string) bool { return len(a) == 0 && len(b) == 0 || maps.Equal(a, b) }
	return emptyMap(m.GetLabels(), logged.GetLabels()) && emptyMap(m.GetAnnotations(), logged.GetAnnotations()) &&
		(len(m.GetFinalizers()) == 0 && len(logged.GetFinalizers()) == 0 || slices.Equal(m.GetFinalizers(), logged.GetFinalizers())) &&
		(len(m.GetOwnerReferences()) == 0 && len(logged.GetOwnerReferences()) == 0 || equality.Semantic.DeepEqual(m.GetOwnerReferences(), logged.GetOwnerReferences()))
}

// matchingResponse keeps, of several ways a write may have been sent that it left its object
// (written gives each way's object), those whose object has the metadata the log's response
// shows; all of them when none does or the log shows none (what the replay knows of the
// object before may be what differs).
func matchingResponse[T any](ev *Event, ways []T, written func(T) runtime.Object) []T {
	if len(ways) < 2 {
		return ways
	}
	logged := loggedMetadata(ev)
	if logged == nil {
		return ways
	}
	var kept []T
	for _, w := range ways {
		if obj := written(w); obj != nil && sameWrittenMetadata(obj, logged) {
			kept = append(kept, w)
		}
	}
	if len(kept) == 0 {
		return ways
	}
	return kept
}
