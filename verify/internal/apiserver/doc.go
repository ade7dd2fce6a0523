// Package apiserver runs kube-apiserver's own request pipeline in process, for one request at
// a time, over the objects a replay knows: the REST handlers of k8s.io/apiserver (decoding
// with the server's scheme and codecs, defaulting, conversion through the internal version,
// field management, the patch types, dry run, deletecollection, connect), the registry of
// k8s.io/kubernetes (each resource's strategy: PrepareForCreate, PrepareForUpdate, the
// subresources' REST) and the admission the caller gives. Validating admission sees exactly
// the attributes kube-apiserver builds; the caller decides with them.
//
// The storage under the registry is in memory and per request (an Exchange): it reads the
// stored objects the caller knows and records what the request writes, so that concurrent
// requests of a replay never see each other.
package apiserver
