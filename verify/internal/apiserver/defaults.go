package apiserver

import "k8s.io/apimachinery/pkg/runtime/schema"

// defaultedOnRead are the resources whose stored object the server's defaulting changes when it
// reads it back, because a defaulter reads a field the registry strategy set after the request
// was decoded: the response of a write is then not the object admission saw. A Job gets the
// labels of its pod template (batch/v1 SetDefaults_Job), which the job strategy sets on a
// create and its status strategy takes from the stored Job on an update of the status; a
// PersistentVolumeClaim the phase Pending (core/v1 SetDefaults_PersistentVolumeClaim), where
// the claim strategy's PrepareForCreate cleared its status before admission; a
// ReplicationController the labels of the stored one's template when an update of its status
// sends none (SetDefaults_ReplicationController; the status strategy keeps the stored spec); a
// CustomResourceDefinition its storage version as status.storedVersions when an update of its
// status sends none (apiextensions v1 SetDefaults_CustomResourceDefinition; the status
// strategy keeps the stored spec; validation refuses most such updates, whose storedVersions
// are then empty: kept, as it costs only that a CRD's write goes through the pipeline).
// TestDefaultedOnRead finds them with upstream's API fuzzer, which runs the strategies and not
// validation. They are listed by resource, status subresource and main alike (a list by store
// would leave a store the fuzzer did not catch to its response).
var defaultedOnRead = map[schema.GroupResource]bool{
	{Group: "batch", Resource: "jobs"}:                                     true,
	{Resource: "persistentvolumeclaims"}:                                   true,
	{Resource: "replicationcontrollers"}:                                   true,
	{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}: true,
}

// DefaultedOnRead says whether a write's response may differ from the object validating
// admission saw because the server's defaulting, reading the stored object back, changes what
// the registry strategy set after the request was decoded (defaultedOnRead).
func DefaultedOnRead(gr schema.GroupResource) bool { return defaultedOnRead[gr] }
