package schema

import (
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestRemoveCRDKeepsAnIndex: removing a CRD indexes the others again from the kinds read when
// they were added, so that it cannot leave the catalog without an index, which every later
// lookup reads (a replay removes a CRD the log deletes, then goes on resolving kinds). The
// kinds extension of the remaining CRD's schemas is spoiled by hand: reading it again would
// fail.
func TestRemoveCRDKeepsAnIndex(t *testing.T) {
	t.Parallel()
	c, err := Builtin("1.37")
	if err != nil {
		t.Fatal(err)
	}
	if err := c.LoadCRDs(filepath.Join("testdata", "crds")); err != nil {
		t.Fatal(err)
	}
	gadgets := c.crds["gadgets.example.com"]
	if gadgets == nil || c.crds["widgets.example.com"] == nil {
		t.Fatalf("testdata/crds lacks widgets.example.com or gadgets.example.com: %v", c.CRDs())
	}
	spoiled := 0
	for _, comps := range gadgets.components {
		for _, s := range comps.schemas {
			for k := range s.Extensions {
				if strings.EqualFold(k, extGVK) {
					s.Extensions[k] = "not a list of kinds"
					spoiled++
				}
			}
		}
	}
	if spoiled == 0 {
		t.Fatal("the gadgets CRD's schemas declare no kind")
	}

	if !c.RemoveCRD("widgets.example.com") {
		t.Fatal("RemoveCRD(widgets.example.com) = false, want true")
	}
	gadget := schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Gadget"}
	if got := c.KindFor(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "gadgets"}, ""); got != gadget {
		t.Errorf("after RemoveCRD(widgets), KindFor(gadgets) = %v, want %v", got, gadget)
	}
	if got := c.KindFor(schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}, ""); !got.Empty() {
		t.Errorf("after RemoveCRD(widgets), KindFor(widgets) = %v, want none", got)
	}
	if _, err := c.Resolver().ResolveSchema(gadget); err != nil {
		t.Errorf("after RemoveCRD(widgets), ResolveSchema(Gadget) = %v", err)
	}
	if _, err := c.RESTMapper().RESTMapping(gadget.GroupKind(), "v1"); err != nil {
		t.Errorf("after RemoveCRD(widgets), RESTMapping(Gadget) = %v", err)
	}
}
