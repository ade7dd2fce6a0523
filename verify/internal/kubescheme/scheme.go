// Package kubescheme is kube-apiserver's own scheme, with every built-in API group installed
// as the server installs them, and the conversions admission runs with it.
package kubescheme

import (
	apiextensionsinstall "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/install"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiregistrationinstall "k8s.io/kube-aggregator/pkg/apis/apiregistration/install"
	"k8s.io/kubernetes/pkg/api/legacyscheme"

	// The API groups kube-apiserver serves, registered in legacyscheme with their defaulting
	// and conversion functions, as k8s.io/kubernetes/pkg/controlplane/import_known_versions.go
	// registers them.
	_ "k8s.io/kubernetes/pkg/apis/admission/install"
	_ "k8s.io/kubernetes/pkg/apis/admissionregistration/install"
	_ "k8s.io/kubernetes/pkg/apis/apiserverinternal/install"
	_ "k8s.io/kubernetes/pkg/apis/apps/install"
	_ "k8s.io/kubernetes/pkg/apis/authentication/install"
	_ "k8s.io/kubernetes/pkg/apis/authorization/install"
	_ "k8s.io/kubernetes/pkg/apis/autoscaling/install"
	_ "k8s.io/kubernetes/pkg/apis/batch/install"
	_ "k8s.io/kubernetes/pkg/apis/certificates/install"
	_ "k8s.io/kubernetes/pkg/apis/coordination/install"
	_ "k8s.io/kubernetes/pkg/apis/core/install"
	_ "k8s.io/kubernetes/pkg/apis/discovery/install"
	_ "k8s.io/kubernetes/pkg/apis/events/install"
	_ "k8s.io/kubernetes/pkg/apis/extensions/install"
	_ "k8s.io/kubernetes/pkg/apis/flowcontrol/install"
	_ "k8s.io/kubernetes/pkg/apis/imagepolicy/install"
	_ "k8s.io/kubernetes/pkg/apis/lifecycle/install"
	_ "k8s.io/kubernetes/pkg/apis/networking/install"
	_ "k8s.io/kubernetes/pkg/apis/node/install"
	_ "k8s.io/kubernetes/pkg/apis/policy/install"
	_ "k8s.io/kubernetes/pkg/apis/rbac/install"
	_ "k8s.io/kubernetes/pkg/apis/resource/install"
	_ "k8s.io/kubernetes/pkg/apis/scheduling/install"
	_ "k8s.io/kubernetes/pkg/apis/storage/install"
	_ "k8s.io/kubernetes/pkg/apis/storagemigration/install"
)

// kube-apiserver serves apiextensions.k8s.io from the apiextensions apiserver it delegates to,
// and apiregistration.k8s.io from the aggregator in front of it, each with its own scheme
// (k8s.io/apiextensions-apiserver/pkg/apiserver.Scheme, k8s.io/kube-aggregator/pkg/apiserver/scheme);
// their admission converts and defaults with the groups' installs, which are the same here.
func init() {
	apiextensionsinstall.Install(legacyscheme.Scheme)
	apiregistrationinstall.Install(legacyscheme.Scheme)
}

// Scheme is kube-apiserver's scheme (k8s.io/kubernetes/pkg/api/legacyscheme) with every API
// group it serves installed: the internal and external types, their defaulting and their
// conversions.
var Scheme = legacyscheme.Scheme

// Codecs are the scheme's codecs.
var Codecs = legacyscheme.Codecs

// Knows says whether the scheme has the kind, in its external version.
func Knows(gvk schema.GroupVersionKind) bool {
	return gvk.Version != runtime.APIVersionInternal && Scheme.Recognizes(gvk)
}

// Convert converts between two objects of the scheme as kube-apiserver's admission does
// (admission.ConvertToGVK with the request scope's convertor): internal to external and back
// through the scheme's conversion functions, and one external version to another through the
// internal version, as the server's object always is internal when it converts it for a
// policy of another version.
func Convert(in, out runtime.Object) error {
	err := Scheme.Convert(in, out, nil)
	if err == nil {
		return nil
	}
	kinds, _, kerr := Scheme.ObjectKinds(in)
	if kerr != nil || len(kinds) == 0 || kinds[0].Version == runtime.APIVersionInternal {
		return err
	}
	internal, cerr := Scheme.ConvertToVersion(in, kinds[0].GroupKind().WithVersion(runtime.APIVersionInternal).GroupVersion())
	if cerr != nil {
		return err
	}
	return Scheme.Convert(internal, out, nil)
}
