package validation

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// managedEntry returns an Update entry of admissionregistration.k8s.io/v1 for the manager that
// owns a label the policies of these tests do not set, changed by the options.
func managedEntry(manager string, opts ...func(*metav1.ManagedFieldsEntry)) metav1.ManagedFieldsEntry {
	e := metav1.ManagedFieldsEntry{
		Manager:    manager,
		Operation:  metav1.ManagedFieldsOperationUpdate,
		APIVersion: "admissionregistration.k8s.io/v1",
		FieldsType: "FieldsV1",
		FieldsV1:   &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{"f:x":{}}}}`)},
	}
	for _, o := range opts {
		o(&e)
	}
	return e
}

func withFields(raw string) func(*metav1.ManagedFieldsEntry) {
	return func(e *metav1.ManagedFieldsEntry) { e.FieldsV1 = &metav1.FieldsV1{Raw: []byte(raw)} }
}

func withTime(s string) func(*metav1.ManagedFieldsEntry) {
	return func(e *metav1.ManagedFieldsEntry) {
		t, err := time.Parse(time.RFC3339, s)
		if err != nil {
			panic(err)
		}
		e.Time = &metav1.Time{Time: t}
	}
}

func TestValidatePolicyManagedFields(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("m", 129)
	withManaged := func(entries ...metav1.ManagedFieldsEntry) func(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
		return func(p *admissionregistrationv1.ValidatingAdmissionPolicy) { p.ManagedFields = entries }
	}
	tooLong := func(f string) fieldErr { return fieldErr{Type: field.ErrorTypeTooLong, Field: f} }
	capped := make([]metav1.ManagedFieldsEntry, 12)
	for i := range capped {
		capped[i] = managedEntry(fmt.Sprintf("%s%02d", long, i), withTime(fmt.Sprintf("2020-01-01T00:00:%02dZ", i)))
	}
	runPolicyCases(t, []policyCase{{
		name:   "a kept entry with a manager longer than 128 bytes",
		mutate: withManaged(managedEntry(long)),
		want:   []fieldErr{tooLong("metadata.managedFields[0].manager")},
	}, {
		name:   "a kept Apply entry is validated too",
		mutate: withManaged(managedEntry(long, func(e *metav1.ManagedFieldsEntry) { e.Operation = metav1.ManagedFieldsOperationApply })),
		want:   []fieldErr{tooLong("metadata.managedFields[0].manager")},
	}, {
		name:   "a manager must be printable",
		mutate: withManaged(managedEntry("a\u0007b")),
		want:   []fieldErr{invalid("metadata.managedFields[0].manager").withDetail("invalid character U+0007")},
	}, {
		name:   "a subresource longer than 256 bytes",
		mutate: withManaged(managedEntry("m", func(e *metav1.ManagedFieldsEntry) { e.Subresource = strings.Repeat("s", 257) })),
		want:   []fieldErr{tooLong("metadata.managedFields[0].subresource")},
	}, {
		name:   "an entry that does not decode drops every entry",
		mutate: withManaged(managedEntry(long), managedEntry("ok", func(e *metav1.ManagedFieldsEntry) { e.Operation = "Bad" })),
	}, {
		name:   "an entry without apiVersion does not decode",
		mutate: withManaged(managedEntry(long, func(e *metav1.ManagedFieldsEntry) { e.APIVersion = "" })),
	}, {
		name:   "an entry without fieldsType does not decode",
		mutate: withManaged(managedEntry(long, func(e *metav1.ManagedFieldsEntry) { e.FieldsType = "" })),
	}, {
		name:   "fields that do not parse",
		mutate: withManaged(managedEntry(long, withFields(`{"x":1}`))),
	}, {
		name:   "an entry that owns nothing is dropped",
		mutate: withManaged(managedEntry(long, withFields(`{}`))),
	}, {
		name:   "an entry whose fields the create sets loses them and is dropped",
		mutate: withManaged(managedEntry(long, withFields(`{"f:spec":{"f:failurePolicy":{}}}`))),
	}, {
		name:   "an entry that owns a field the create does not set is kept",
		mutate: withManaged(managedEntry(long, withFields(`{"f:spec":{}}`))),
		want:   []fieldErr{tooLong("metadata.managedFields[0].manager")},
	}, {
		name:   "an entry of a version the server does not serve is dropped",
		mutate: withManaged(managedEntry(long, func(e *metav1.ManagedFieldsEntry) { e.APIVersion = "admissionregistration.k8s.io/v1beta1" })),
	}, {
		name:   "an entry of a version the server does not know is dropped",
		mutate: withManaged(managedEntry(long, func(e *metav1.ManagedFieldsEntry) { e.APIVersion = "admissionregistration.k8s.io/v9" })),
	}, {
		name:   "a version that does not parse fails the field manager, which drops every entry",
		mutate: withManaged(managedEntry(long), managedEntry("ok", func(e *metav1.ManagedFieldsEntry) { e.APIVersion = "a/b/c" })),
	}, {
		name:   "entries of one manager are merged",
		mutate: withManaged(managedEntry(long), managedEntry(long)),
		want:   []fieldErr{tooLong("metadata.managedFields[0].manager")},
	}, {
		name: "entries are sorted by time, the request's own now",
		mutate: withManaged(
			managedEntry(long, withTime("2999-01-01T00:00:00Z")),
			managedEntry("a\u0007b", withTime("2000-01-01T00:00:00Z"))),
		want: []fieldErr{invalid("metadata.managedFields[0].manager"), tooLong("metadata.managedFields[2].manager")},
	}, {
		// With the request's, 13 Update entries: the 4 oldest are folded into one
		// ancient-changes entry, and 8 of the long managers are left after it.
		name:   "the oldest of more than 10 Update entries are folded",
		mutate: withManaged(capped...),
		want: []fieldErr{
			tooLong("metadata.managedFields[1].manager"), tooLong("metadata.managedFields[2].manager"),
			tooLong("metadata.managedFields[3].manager"), tooLong("metadata.managedFields[4].manager"),
			tooLong("metadata.managedFields[5].manager"), tooLong("metadata.managedFields[6].manager"),
			tooLong("metadata.managedFields[7].manager"), tooLong("metadata.managedFields[8].manager"),
		},
	}, {
		name:   "an empty entry resets managedFields",
		mutate: withManaged(metav1.ManagedFieldsEntry{}),
	}})
}

func TestValidateBindingManagedFields(t *testing.T) {
	t.Parallel()
	b := validBinding()
	b.ManagedFields = []metav1.ManagedFieldsEntry{
		managedEntry(strings.Repeat("m", 129)),
		managedEntry("ok", func(e *metav1.ManagedFieldsEntry) { e.Subresource = strings.Repeat("s", 257) }),
	}
	want := []fieldErr{
		{Type: field.ErrorTypeTooLong, Field: "metadata.managedFields[0].manager"},
		{Type: field.ErrorTypeTooLong, Field: "metadata.managedFields[1].subresource"},
	}
	got := ValidateBinding(b)
	if diff := cmp.Diff(want, summarize(got, want)); diff != "" {
		t.Errorf("ValidateBinding() mismatch (-want +got):\n%s\nerrors: %v", diff, got)
	}
}
