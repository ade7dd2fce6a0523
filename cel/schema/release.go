package schema

import "k8s.io/apimachinery/pkg/runtime/schema"

// release is what vapc knows of one Kubernetes minor beyond its published OpenAPI documents:
// which group-versions a kube-apiserver with default flags serves, and in which order it
// installs and lists API groups. Each field names the kube-apiserver source it mirrors; a
// test fails when an embedded document is missing from these tables, so regenerating the
// data for a new release forces a review of them.
type release struct {
	// servedByDefault are the group-versions enabled without --runtime-config: kube-apiserver's
	// pkg/controlplane/instance.go DefaultAPIResourceConfigSource (stable versions of
	// genericStableAPIGroupVersionsEnabledByDefault and stableAPIGroupVersionsEnabledByDefault),
	// plus apiextensions.k8s.io/v1 and apiregistration.k8s.io/v1, which the apiextensions and
	// aggregator servers enable by default. Every resource of these versions is served by
	// default: the feature-gated ones (certificates.k8s.io/v1 clustertrustbundles and
	// podcertificaterequests, pods/resize) have their gates on by default.
	servedByDefault []schema.GroupVersion

	// notServedByDefault are the published group-versions that DefaultAPIResourceConfigSource
	// disables (alpha and beta APIs, off by default since 1.24).
	notServedByDefault []schema.GroupVersion

	// installOrder is the order in which kube-apiserver installs API groups (the
	// RESTStorageProvider list in pkg/controlplane/instance.go, then the apiextensions and
	// aggregator servers). It is the order of the apiserver's EquivalentResourceRegistry, which
	// decides which equivalent resource matchPolicy Equivalent picks first.
	installOrder []string

	// discoveryOrder is the order in which the aggregated /apis discovery lists groups: the
	// aggregator's own group first, then descending APIService group priority
	// (cmd/kube-apiserver/app/aggregator.go apiVersionPriorities), ties by name. Clients build
	// their RESTMapper priorities from it.
	discoveryOrder []string

	// resourcePrefixes are the etcd prefixes that differ from the resource name
	// (pkg/kubeapiserver/default_storage_factory_builder.go SpecialDefaultResourcePrefixes).
	// The apiserver keys resource equivalence by storage prefix, which is why core/v1 events
	// and events.k8s.io/v1 events are equivalent.
	resourcePrefixes map[schema.GroupResource]string
}

// releases are the Kubernetes minors with embedded data.
var releases = map[string]*release{
	"1.37": {
		servedByDefault: []schema.GroupVersion{
			{Group: "", Version: "v1"},
			{Group: "admissionregistration.k8s.io", Version: "v1"},
			{Group: "apiextensions.k8s.io", Version: "v1"},
			{Group: "apiregistration.k8s.io", Version: "v1"},
			{Group: "apps", Version: "v1"},
			{Group: "authentication.k8s.io", Version: "v1"},
			{Group: "authorization.k8s.io", Version: "v1"},
			{Group: "autoscaling", Version: "v1"},
			{Group: "autoscaling", Version: "v2"},
			{Group: "batch", Version: "v1"},
			{Group: "certificates.k8s.io", Version: "v1"},
			{Group: "coordination.k8s.io", Version: "v1"},
			{Group: "discovery.k8s.io", Version: "v1"},
			{Group: "events.k8s.io", Version: "v1"},
			{Group: "flowcontrol.apiserver.k8s.io", Version: "v1"},
			{Group: "networking.k8s.io", Version: "v1"},
			{Group: "node.k8s.io", Version: "v1"},
			{Group: "policy", Version: "v1"},
			{Group: "rbac.authorization.k8s.io", Version: "v1"},
			{Group: "resource.k8s.io", Version: "v1"},
			{Group: "scheduling.k8s.io", Version: "v1"},
			{Group: "storage.k8s.io", Version: "v1"},
			{Group: "storagemigration.k8s.io", Version: "v1"},
		},
		notServedByDefault: []schema.GroupVersion{
			{Group: "admissionregistration.k8s.io", Version: "v1alpha1"},
			{Group: "admissionregistration.k8s.io", Version: "v1beta1"},
			{Group: "certificates.k8s.io", Version: "v1beta1"},
			{Group: "coordination.k8s.io", Version: "v1alpha2"},
			{Group: "coordination.k8s.io", Version: "v1beta1"},
			{Group: "internal.apiserver.k8s.io", Version: "v1alpha1"},
			{Group: "lifecycle.k8s.io", Version: "v1alpha1"},
			{Group: "resource.k8s.io", Version: "v1alpha3"},
			{Group: "resource.k8s.io", Version: "v1beta1"},
			{Group: "resource.k8s.io", Version: "v1beta2"},
			{Group: "scheduling.k8s.io", Version: "v1alpha3"},
			{Group: "scheduling.k8s.io", Version: "v1beta1"},
			{Group: "storagemigration.k8s.io", Version: "v1beta1"},
		},
		installOrder: []string{
			"",
			"internal.apiserver.k8s.io",
			"authentication.k8s.io",
			"authorization.k8s.io",
			"autoscaling",
			"batch",
			"certificates.k8s.io",
			"coordination.k8s.io",
			"discovery.k8s.io",
			"lifecycle.k8s.io",
			"networking.k8s.io",
			"node.k8s.io",
			"policy",
			"rbac.authorization.k8s.io",
			"scheduling.k8s.io",
			"storage.k8s.io",
			"storagemigration.k8s.io",
			"flowcontrol.apiserver.k8s.io",
			"apps",
			"admissionregistration.k8s.io",
			"events.k8s.io",
			"resource.k8s.io",
			"apiextensions.k8s.io",
			"apiregistration.k8s.io",
		},
		discoveryOrder: []string{
			"",                             // 18000, /api
			"apiregistration.k8s.io",       // served by the aggregator itself, listed first
			"apps",                         // 17800
			"events.k8s.io",                // 17750
			"authentication.k8s.io",        // 17700
			"authorization.k8s.io",         // 17600
			"autoscaling",                  // 17500
			"batch",                        // 17400
			"certificates.k8s.io",          // 17300
			"networking.k8s.io",            // 17200
			"policy",                       // 17100
			"rbac.authorization.k8s.io",    // 17000
			"storage.k8s.io",               // 16800
			"admissionregistration.k8s.io", // 16700
			"apiextensions.k8s.io",         // 16700
			"scheduling.k8s.io",            // 16600
			"coordination.k8s.io",          // 16500
			"node.k8s.io",                  // 16300
			"discovery.k8s.io",             // 16200
			"resource.k8s.io",              // 16200
			"flowcontrol.apiserver.k8s.io", // 16100
			"internal.apiserver.k8s.io",    // 16000
			"storagemigration.k8s.io",      // 15800
			"lifecycle.k8s.io",             // 15700
		},
		resourcePrefixes: map[schema.GroupResource]string{
			{Group: "", Resource: "replicationcontrollers"}:     "controllers",
			{Group: "", Resource: "endpoints"}:                  "services/endpoints",
			{Group: "", Resource: "nodes"}:                      "minions",
			{Group: "", Resource: "services"}:                   "services/specs",
			{Group: "networking.k8s.io", Resource: "ingresses"}: "ingress",
		},
	},
}
