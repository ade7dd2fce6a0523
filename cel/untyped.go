package cel

import (
	"regexp"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// The apiserver's type checker types object, oldObject and params by the kinds' OpenAPI schemas
// (common.SchemaDeclType), and leaves out the fields whose schema it cannot convert: a map of
// resource quantities (a container's resources.limits and requests), a field of several types
// (oneOf, an int-or-string in some forms). Selecting such a field is an "undefined field" type
// error, which kube-controller-manager writes as a warning, while the expression works at
// runtime on the object, where the field is there; so is a field of an object whose schema
// declares none (an embedded object of any kind). vapc tells it from a field that is in no
// schema (a typo, which cannot work): untypedField.

// versionRE matches a Kubernetes API version, for reading a kind out of a type name.
var versionRE = regexp.MustCompile(`^v[0-9]+((alpha|beta)[0-9]+)?$`)

// The reasons untypedField gives.
const (
	untypedInSchema   = "the field is in the kind's OpenAPI schema, in a form kube-apiserver's type checker does not type (a map of quantities, a field of several types)"
	untypedInEmbedded = "the field is in an embedded object, whose OpenAPI schema declares none of its fields (runtime.RawExtension)"
)

// untypedField says why the field the type checker says is undefined on the object type of the
// name (the name declTypeFor gives a kind's type and its path: vapc.GROUP.VERSION.KIND and then
// the fields and list items, @idx, down to it) is one an object holds at runtime: it is in the
// kind's OpenAPI schema there, or that schema is an embedded object's (freeForm); "" when it is
// in no schema.
func (c *Checker) untypedField(typeName, field string) string {
	parts := strings.Split(typeName, ".")
	if len(parts) < 4 || parts[0] != "vapc" {
		return ""
	}
	for i := 1; i+1 < len(parts); i++ {
		if !versionRE.MatchString(parts[i]) || parts[i+1] == "" || parts[i+1][0] < 'A' || parts[i+1][0] > 'Z' {
			continue
		}
		gvk := schema.GroupVersionKind{Group: strings.Join(parts[1:i], "."), Version: parts[i], Kind: parts[i+1]}
		s, err := c.catalog.Resolver().ResolveSchema(gvk)
		if err != nil {
			return ""
		}
		for _, step := range parts[i+2:] {
			if s = stepInto(s, step); s == nil {
				return ""
			}
		}
		switch _, ok := s.Properties[field]; {
		case ok:
			return untypedInSchema
		case freeForm(s):
			return untypedInEmbedded
		}
		return ""
	}
	return ""
}

// freeForm says whether a schema is an object that declares none of its fields: an embedded
// object of any kind (runtime.RawExtension: a ControllerRevision's data), whose fields the
// checker cannot know and the object holds at runtime.
func freeForm(s *spec.Schema) bool {
	return len(s.Properties) == 0 && s.AdditionalProperties == nil && s.Items == nil && (len(s.Type) == 0 || s.Type.Contains("object"))
}

// stepInto is the schema of a step of a type's path: a property, the items of a list (@idx),
// the values of a map (@elem); nil when there is none. A schema of a single allOf is read as
// what it wraps.
func stepInto(s *spec.Schema, step string) *spec.Schema {
	for len(s.AllOf) == 1 && len(s.Properties) == 0 {
		s = &s.AllOf[0]
	}
	switch step {
	case "@idx":
		if s.Items == nil || s.Items.Schema == nil {
			return nil
		}
		return s.Items.Schema
	case "@elem":
		if s.AdditionalProperties == nil || s.AdditionalProperties.Schema == nil {
			return nil
		}
		return s.AdditionalProperties.Schema
	}
	p, ok := s.Properties[step]
	if !ok {
		return nil
	}
	for len(p.AllOf) == 1 && len(p.Properties) == 0 {
		p = p.AllOf[0]
	}
	return &p
}
