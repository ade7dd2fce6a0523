package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDedupOwnerReferences(t *testing.T) {
	t.Parallel()
	a := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "a", UID: "1"}
	aController := a
	aController.Controller = ptr(true)
	aFalse := a
	aFalse.Controller = ptr(false)
	b := metav1.OwnerReference{APIVersion: "v1", Kind: "Node", Name: "b", UID: "2"}
	tests := []struct {
		name           string
		refs           []metav1.OwnerReference
		want           []metav1.OwnerReference
		wantDuplicates []string
	}{
		{name: "none"},
		{name: "distinct", refs: []metav1.OwnerReference{a, b}, want: []metav1.OwnerReference{a, b}},
		{name: "equal", refs: []metav1.OwnerReference{a, b, a, a}, want: []metav1.OwnerReference{a, b}, wantDuplicates: []string{"1", "1"}},
		{name: "one UID, not equal", refs: []metav1.OwnerReference{a, aController, aFalse}, want: []metav1.OwnerReference{a, aController, aFalse}},
		{name: "equal to an earlier one of the same UID", refs: []metav1.OwnerReference{a, aController, a, aController}, want: []metav1.OwnerReference{a, aController}, wantDuplicates: []string{"1", "1"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, dups := dedupOwnerReferences(tc.refs)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("dedupOwnerReferences() references mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantDuplicates, dups); diff != "" {
				t.Errorf("dedupOwnerReferences() duplicates mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
