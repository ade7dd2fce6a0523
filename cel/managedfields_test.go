package cel

import (
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestManagedFieldsSource(t *testing.T) {
	t.Parallel()
	entry := func(manager string, at string) metav1.ManagedFieldsEntry {
		ts, err := time.Parse(time.RFC3339, at)
		if err != nil {
			t.Fatal(err)
		}
		return metav1.ManagedFieldsEntry{
			Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "admissionregistration.k8s.io/v1",
			Time: &metav1.Time{Time: ts}, FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{"f:x":{}}}}`)},
		}
	}
	long := strings.Repeat("m", 129)
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec:       admissionregistrationv1.ValidatingAdmissionPolicySpec{Validations: []admissionregistrationv1.Validation{{Expression: "true"}}},
	}
	// Kept and sorted by time: the unprintable manager, the request's entry, the long one.
	p.ManagedFields = []metav1.ManagedFieldsEntry{entry(long, "2999-01-01T00:00:00Z"), entry("a\u0007b", "2000-01-01T00:00:00Z")}
	place := managedFieldsSource(p, p.ManagedFields)
	tests := []struct{ path, want string }{
		{"metadata.managedFields[0].manager", "metadata.managedFields[1].manager"},
		{"metadata.managedFields[2].manager", "metadata.managedFields[0].manager"},
		{"metadata.managedFields[1].manager", "metadata.managedFields"},
		{"metadata.managedFields[7]", "metadata.managedFields"},
		{"metadata.name", "metadata.name"},
		{"spec.validations[0].expression", "spec.validations[0].expression"},
	}
	for _, tc := range tests {
		if got := place(tc.path); got != tc.want {
			t.Errorf("managedFieldsSource()(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}
