package schema_test

import (
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1beta1 "k8s.io/api/admissionregistration/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestTypeConverter(t *testing.T) {
	t.Parallel()
	cat := builtin(t)
	tc, err := cat.TypeConverter(admissionregistrationv1.SchemeGroupVersion)
	if err != nil {
		t.Fatalf("TypeConverter(admissionregistration.k8s.io/v1) = %v", err)
	}
	tests := []struct {
		name    string
		obj     runtime.Object
		wantErr bool
	}{{
		name: "a kind of the group-version",
		obj: &admissionregistrationv1.ValidatingAdmissionPolicy{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
			ObjectMeta: metav1.ObjectMeta{Name: "p", Labels: map[string]string{"a": "b"}},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				Validations: []admissionregistrationv1.Validation{{Expression: "true"}},
			},
		},
	}, {
		name: "a kind of another group-version has no type",
		obj: &admissionregistrationv1beta1.ValidatingAdmissionPolicy{
			TypeMeta: metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1beta1", Kind: "ValidatingAdmissionPolicy"},
		},
		wantErr: true,
	}}
	for _, tc2 := range tests {
		t.Run(tc2.name, func(t *testing.T) {
			_, err := tc.ObjectToTyped(tc2.obj)
			if (err != nil) != tc2.wantErr {
				t.Errorf("ObjectToTyped(%s) = %v, want error %v", tc2.obj.GetObjectKind().GroupVersionKind(), err, tc2.wantErr)
			}
		})
	}
	again, err := cat.TypeConverter(admissionregistrationv1.SchemeGroupVersion, admissionregistrationv1.SchemeGroupVersion)
	if err != nil || again != tc {
		t.Errorf("TypeConverter() again = %v, %v; want the cached converter", again, err)
	}
	if _, err := cat.TypeConverter(schema.GroupVersion{Group: "example.com", Version: "v1"}); err == nil {
		t.Errorf("TypeConverter(example.com/v1) = nil error, want one for a group-version without data")
	}
}
