package cel

import (
	"regexp"
	"strconv"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/vapc-dev/vapc/cel/internal/validation"
)

// managedFieldsPath matches the path of an error about an entry of metadata.managedFields.
var managedFieldsPath = regexp.MustCompile(`^metadata\.managedFields\[(\d+)\](.*)$`)

// managedFieldsSource returns what places an error about metadata.managedFields of obj: the
// server numbers the entries the field manager kept, which merges and sorts them, so the
// returned function maps the path of such an error to the path of the entry of obj that
// became that entry (by manager, operation, subresource and apiVersion), or to
// metadata.managedFields for one no entry of obj became. Other paths are returned as they are.
func managedFieldsSource(obj runtime.Object, source []metav1.ManagedFieldsEntry) func(path string) string {
	var kept []metav1.ManagedFieldsEntry
	done := false
	return func(path string) string {
		m := managedFieldsPath.FindStringSubmatch(path)
		if m == nil {
			return path
		}
		if !done {
			kept, _ = validation.ManagedFieldsOnCreate(obj)
			done = true
		}
		i, _ := strconv.Atoi(m[1])
		if i >= len(kept) {
			return "metadata.managedFields"
		}
		k := kept[i]
		for j, e := range source {
			if e.Manager == k.Manager && e.Operation == k.Operation && e.Subresource == k.Subresource &&
				(e.APIVersion == k.APIVersion || e.Operation == metav1.ManagedFieldsOperationApply) {
				return "metadata.managedFields[" + strconv.Itoa(j) + "]" + m[2]
			}
		}
		return "metadata.managedFields"
	}
}
