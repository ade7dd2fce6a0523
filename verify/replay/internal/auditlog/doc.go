// Package auditlog reads kube-apiserver audit logs: lines of audit.k8s.io/v1 Event JSON, plain
// or gzip-compressed, with a bounded line buffer (Reader), each decoded in one pass that
// validates the line and keeps the request and response objects as the bytes validated
// (Decode), and objects decoded without reflection (DecodeObject, DecodeHeader). Anything but
// the common shape falls back to encoding/json; differential fuzz targets hold the fast paths
// to encoding/json's and UnmarshalJSON's results.
package auditlog
