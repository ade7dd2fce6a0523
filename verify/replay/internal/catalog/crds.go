package catalog

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	vapcschema "github.com/vapc-dev/vapc/cel/schema"
)

// A replay learns the CustomResourceDefinitions the log and the snapshot hold as the apiserver
// serves them: the apiextensions-apiserver's crdHandler serves a CRD's resources once its
// NamesAccepted or Established condition is true, under status.acceptedNames, and they are
// gone once the CRD is deleted. The replay follows every successful write of a CRD whose result
// the log holds (create, update, patch, the status updates the apiserver makes itself), and
// takes a CRD as deleted as soon as its deletion begins: the apiserver then refuses creates of
// its resources and deletes them without the log showing it.

var (
	// CRDs is the resource of CustomResourceDefinitions, CRDKind their kind.
	CRDs    = schema.GroupResource{Group: apiextensionsv1.GroupName, Resource: "customresourcedefinitions"}
	CRDKind = apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition")
)

// servedCRD is a CRD the replay learned and serves.
type servedCRD struct {
	spec        apiextensionsv1.CustomResourceDefinitionSpec
	names       apiextensionsv1.CustomResourceDefinitionNames
	established bool
	// changedAt is when the log shows its spec written (zero for the snapshot's).
	changedAt time.Time
	// storageChanged is where the log last changed its storage version, and storageRV the
	// resourceVersion that write gave the CRD (0 when the log does not say): an object
	// written before is still stored in the version before (see StorageChanged), storageWas,
	// or in one of several ("") when the log changed it more than once.
	storageChanged string
	storageRV      uint64
	storageWas     string
}

// followStorage carries what the CRD served before (cur, nil for none) knew of the log's changes
// of its storage version into c, whose spec the CRD's write at where (with the resourceVersion
// rv) gave.
func (c *servedCRD) followStorage(cur *servedCRD, where, rv string) {
	if cur == nil {
		return
	}
	c.storageChanged, c.storageRV, c.storageWas = cur.storageChanged, cur.storageRV, cur.storageWas
	was := vapcschema.CustomResourceStorageVersion(&apiextensionsv1.CustomResourceDefinition{Spec: cur.spec})
	if was == "" || was == vapcschema.CustomResourceStorageVersion(&apiextensionsv1.CustomResourceDefinition{Spec: c.spec}) {
		return
	}
	if c.storageChanged != "" {
		was = "" // changed twice: written in either
	}
	c.storageChanged, c.storageWas = where, was
	c.storageRV, _ = strconv.ParseUint(rv, 10, 64)
}

// StorageChanged says where the log changed the storage version of the CRD of the name, when
// an object of it whose resourceVersion is rv may have been written before, and so be stored
// in the version before (etcd keeps an object as it was written; the apiextensions apiserver
// decodes it by its own version's schema), and that version ("" where the log changed it more
// than once): "" when the log did not change it, or rv shows the object written after
// (resourceVersions are etcd's, one sequence for every resource).
func (c *Catalog) StorageChanged(name string, rv uint64) (where, was string) {
	cur := c.crds[name]
	if cur == nil {
		return "", ""
	}
	return cur.storageChangedFor(rv)
}

func (c *servedCRD) storageChangedFor(rv uint64) (where, was string) {
	if c.storageChanged == "" || (rv != 0 && c.storageRV != 0 && rv > c.storageRV) {
		return "", ""
	}
	return c.storageChanged, c.storageWas
}

// Change is a change of the API a replay followed: a CustomResourceDefinition of the
// snapshot or the log served, changed or removed.
type Change struct {
	File   string `json:"file"`
	Line   int    `json:"line,omitempty"`
	Name   string `json:"name"`
	Change string `json:"change"`
}

func (c Change) String() string {
	return fmt.Sprintf("%s: %s %s", Where(c.File, c.Line), c.Name, c.Change)
}

// Where is a place of the log (file:line) or of the snapshot (line 0: the file, or the
// object's place in it).
func Where(file string, line int) string {
	if line <= 0 {
		return file
	}
	return fmt.Sprintf("%s:%d", file, line)
}

// crdServed mirrors the check of the crdHandler (k8s.io/apiextensions-apiserver/pkg/apiserver/
// customresource_handler.go ServeHTTP): a CRD's resources are served once its NamesAccepted or
// Established condition is true. A snapshot's CRD without any status (written by hand) is
// taken as established, as --crd takes its CRDs; the log's CRD has none when it is just
// created, and is not served yet.
func crdServed(crd *apiextensionsv1.CustomResourceDefinition, snapshot bool) bool {
	if snapshot && handWritten(crd) {
		return true
	}
	return crdCondition(crd, apiextensionsv1.NamesAccepted) || crdCondition(crd, apiextensionsv1.Established)
}

// handWritten says whether a CRD has no status the apiserver wrote.
func handWritten(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return len(crd.Status.Conditions) == 0 && crd.Status.AcceptedNames.Kind == ""
}

func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == t {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// ResourceOf is the resource of the CRD of a name (plural.group, as the apiserver requires).
func ResourceOf(name string) schema.GroupResource {
	plural, group, _ := strings.Cut(name, ".")
	return schema.GroupResource{Group: group, Resource: plural}
}

// nameOf is the name of the CRD that serves the resource (plural.group).
func nameOf(gvr schema.GroupVersionResource) string { return gvr.Resource + "." + gvr.Group }

// DecodeCRD decodes a CRD of a response or a snapshot; nil for anything else.
func DecodeCRD(raw []byte) *apiextensionsv1.CustomResourceDefinition {
	if raw = bytes.TrimSpace(raw); len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := json.Unmarshal(raw, crd); err != nil || crd.Name == "" {
		return nil
	}
	if crd.Kind != "" && (crd.Kind != CRDKind.Kind || crd.APIVersion != CRDKind.GroupVersion().String()) {
		return nil
	}
	return crd
}

// establishedAt is when the CRD became Established: its condition's lastTransitionTime, which
// has a precision of a second, or the time at which the log shows it, whichever is earlier.
func establishedAt(crd *apiextensionsv1.CustomResourceDefinition, at time.Time) time.Time {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue && !c.LastTransitionTime.IsZero() {
			if t := c.LastTransitionTime.Add(time.Second); at.IsZero() || t.Before(at) {
				return t
			}
		}
	}
	return at
}
