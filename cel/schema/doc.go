// Package schema knows, fully offline, the API surface of a Kubernetes release the way
// kube-apiserver knows it: the OpenAPI schema of every built-in kind, and the REST mapping
// (resource to kind, scope, subresources and the kind each one carries, equivalent resources
// across versions and groups) that admission matching and type checking use.
//
// The built-in data comes from the OpenAPI v3 documents Kubernetes publishes in the
// k8s.io/kubernetes module (api/openapi-spec/v3), embedded compressed under openapi/ and
// regenerated with hack/openapi.sh. Those documents describe every API a release can serve,
// including alpha and beta versions that a default kube-apiserver does not serve; each
// group-version is marked served-by-default or not from the release's
// DefaultAPIResourceConfigSource, and matching-related lookups use only the served ones unless
// asked otherwise (see WithAllVersions and WithGroupVersions).
//
// CustomResourceDefinitions are added with Catalog.AddCRD or Catalog.LoadCRDs (files, validated
// as a create), or, as a running apiserver serves the CRDs it stored, added, replaced and
// removed with Catalog.SetCRD and Catalog.RemoveCRD; their schemas are built by the
// apiextensions-apiserver's own OpenAPI builder, as the apiserver publishes them for the type
// checker.
package schema
