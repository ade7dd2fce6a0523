package e2e

import (
	"fmt"
	"strings"
)

// CustomResourceDefinition writes for TestRandomParity, of a scratch CRD (gadgets, of a group
// of its own, whose objects no step writes): kubectl apply (client-side: a create, or a
// three-way patch; server-side, with or without --force-conflicts; a dry run; kubectl diff),
// label and annotate, merge and JSON patches of its names and schema, replace, and delete (its
// finalizer, which the apiextensions apiserver's finalizing controller removes through the
// status subresource once it has deleted the resources it served), each as a random user.
// kube-apiserver serves them from the apiextensions apiserver, whose registry strategy keeps
// the stored status on an update and bumps the generation on a spec change before validating
// admission; the controllers of that server (naming, establishing, finalizing) write the
// status as system:apiserver.

// crdShapeAtoms read what these writes change.
var crdShapeAtoms = []string{
	`object.?spec.?names.?shortNames.orValue([]).size() < 1`,
	`object.?metadata.?generation.orValue(0) < 2`,
	`object.?status.?storedVersions.orValue([]).all(v, v == 'v1')`,
	`!object.?spec.?versions.orValue([]).exists(v, v.?schema.?openAPIV3Schema.?properties.?spec.?properties.?size.?default.hasValue())`,
}

// crdShapeStrings are string expressions over the same.
var crdShapeStrings = []string{
	`'crd gen=' + string(object.?metadata.?generation.orValue(0)) + ' names=' + object.?spec.?names.?shortNames.orValue([]).join(',') + ' stored=' + object.?status.?storedVersions.orValue([]).join(',') + ' conditions=' + string(size(object.?status.?conditions.orValue([])))`,
}

// crdShapeRules are rule templates of the kinds they write.
var crdShapeRules = []ruleTemplate{
	{[]string{"apiextensions.k8s.io"}, []string{"v1"}, []string{"customresourcedefinitions"}},
	{[]string{"apiextensions.k8s.io"}, []string{"*"}, []string{"customresourcedefinitions", "customresourcedefinitions/status"}},
}

func init() {
	boolAtoms = append(boolAtoms, crdShapeAtoms...)
	stringAtoms = append(stringAtoms, crdShapeStrings...)
	ruleTemplates = append(ruleTemplates, crdShapeRules...)
}

// gadgetCRD is the scratch CRD's name.
const gadgetCRD = "gadgets.scratch.vapc.dev"

// gadgetCRDYAML is the scratch CRD, its shortNames, labels and spec.size's default given.
func gadgetCRDYAML(shortNames []string, color, sizeDefault string) string {
	def := ""
	if sizeDefault != "" {
		def = "\n                default: " + sizeDefault
	}
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %s
  labels:
    color: %s
spec:
  group: scratch.vapc.dev
  scope: Namespaced
  names:
    plural: gadgets
    singular: gadget
    kind: Gadget
    listKind: GadgetList
    shortNames: [%s]
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size:
                type: integer%s
`, gadgetCRD, color, strings.Join(shortNames, ", "), def)
}

// crdWrite writes the scratch CRD, as a random user.
func (w *randomWorld) crdWrite() {
	u := w.user()
	names := pick(w.r, []string{}, []string{"gd"}, []string{"gd", "gdt"})
	color := pick(w.r, "red", "blue")
	sizeDefault := pick(w.r, "", "1", "3")
	file := func() string { return w.manifestFile("crd.yaml", gadgetCRDYAML(names, color, sizeDefault)) }
	var args []string
	switch w.r.IntN(9) {
	case 0, 1:
		args = kubectlApplyArgs(w, file())
	case 2:
		args = []string{"create", "-f", file()}
	case 3:
		args = []string{pick(w.r, "label", "annotate"), "crd", gadgetCRD, "--overwrite", pick(w.r, "color", "rnd.vapc.dev/block") + "=" + pick(w.r, "red", "blue")}
	case 4:
		args = []string{"patch", "crd", gadgetCRD, "--type=merge", "-p", fmt.Sprintf(`{"spec":{"names":{"shortNames":[%s]}}}`, quoted(names))}
	case 5:
		// A JSON patch of the schema: a default for spec.size, or none.
		path := "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/size/default"
		if sizeDefault == "" {
			args = []string{"patch", "crd", gadgetCRD, "--type=json", "-p", `[{"op":"remove","path":"` + path + `"}]`}
		} else {
			args = []string{"patch", "crd", gadgetCRD, "--type=json", "-p", `[{"op":"add","path":"` + path + `","value":` + sizeDefault + `}]`}
		}
	case 6:
		// A status the main resource's update does not write: the strategy keeps the stored one.
		args = []string{"patch", "crd", gadgetCRD, "--type=merge", "-p", `{"status":{"storedVersions":["v1","v0"]},"metadata":{"labels":{"tier":"` + pick(w.r, "a", "b") + `"}}}`}
	case 7:
		args = []string{"replace", "-f", file()}
	default:
		args = []string{"delete", "crd", gadgetCRD, "--wait=false"}
		if chance(w.r, 0.3) {
			args = append(args, "--dry-run=server")
		}
	}
	args = append(args, u.kubectlAs()...)
	w.got("kubectl "+strings.Join(args, " "), w.kubectl(args...))
}

// quoted is names as the items of a JSON array.
func quoted(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ",")
}
