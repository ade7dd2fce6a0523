package schema_test

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"

	vschema "github.com/vapc-dev/vapc/cel/schema"
)

func ExampleBuiltin() {
	c, err := vschema.Builtin("1.37")
	if err != nil {
		fmt.Println(err)
		return
	}
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	eviction, _ := c.Resource(pods, "eviction")
	fmt.Println("pods/eviction carries", eviction.Kind)

	mapPolicies := schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1alpha1", Resource: "mutatingadmissionpolicies"}
	mp, _ := c.Resource(mapPolicies, "")
	fmt.Println("v1alpha1 served by default:", mp.ServedByDefault)

	pod, err := c.Resolver().ResolveSchema(schema.GroupVersionKind{Version: "v1", Kind: "Pod"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("Pod spec.nodeName is a", pod.Properties["spec"].Properties["nodeName"].Type[0])

	_, err = c.Resolver().ResolveSchema(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
	fmt.Println(errors.Is(err, resolver.ErrSchemaNotFound))
	// Output:
	// pods/eviction carries policy/v1, Kind=Eviction
	// v1alpha1 served by default: false
	// Pod spec.nodeName is a string
	// true
}

func ExampleCatalog_LoadCRDs() {
	c, err := vschema.Builtin("1.37")
	if err != nil {
		fmt.Println(err)
		return
	}
	if err := c.LoadCRDs("testdata/crds/widgets.yaml"); err != nil {
		fmt.Println(err)
		return
	}
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	scale, _ := c.Resource(widgets, "scale")
	fmt.Println("widgets/scale carries", scale.Kind)
	fmt.Println(c.EquivalentResources(widgets, ""))
	// Output:
	// widgets/scale carries autoscaling/v1, Kind=Scale
	// [example.com/v1, Resource=widgets example.com/v1beta1, Resource=widgets]
}
