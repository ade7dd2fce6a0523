// Package catalog is the replay's stage that knows the cluster's API as the log changes it:
// the built-in kinds of Kubernetes 1.37, the CustomResourceDefinitions of --crd, and those the
// snapshot and the log define, served as kube-apiserver serves them (crds.go); the kinds the
// replay learns from the use of a resource whose CRD the log holds without its object
// (learn.go); the paramKinds of the bound policies as the apiserver's policy source resolves
// them, and what of them is unsettled when a request comes (paramkinds.go); and the registry
// strategies of custom resources (strategies.go).
//
// A change of what the API serves is made between the two halves of its Owner's barrier:
// Owner.Quiesce before the catalog changes (no evaluation reads it then), Owner.Changed
// after it (the owner derives its next epoch from the catalog and goes on). The catalog is
// changed by one goroutine (the replay's ordered stage); evaluations read it between changes.
package catalog
