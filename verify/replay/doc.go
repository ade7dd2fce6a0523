// Package replay replays kube-apiserver audit logs (audit.k8s.io/v1 Event JSON lines) through
// ValidatingAdmissionPolicies and says, for every request the policies match, what kube-apiserver
// would have decided and whether that differs from what the log says happened.
//
// A replay streams its logs (files, rotated and gzip-compressed files, stdin; several logs as
// one, in the time order of their events) line by line with a bounded line buffer, decodes
// lines on every core into lazily decoded Events (the cheap fields first; request and response
// objects stay raw JSON until a policy or the state store needs them), and then, in log order,
// on one goroutine:
//
//   - keeps one record per request (the ResponseComplete or Panic stage) and accounts for every
//     line: malformed lines, intermediate stages, requests skipped because they never reached
//     validating admission (by reason), requests no policy matches, evaluated requests and
//     indeterminate ones (by reason);
//   - rebuilds the admission request (operation, user, options, object, oldObject) from the
//     event and the state store, saying which source each object came from;
//   - asks an Evaluator (package verify) for the decision, with a State that answers params,
//     namespaces and old objects from a snapshot and every write the log shows, and refuses to
//     guess: a read of an object it does not know makes the decision indeterminate;
//   - applies the request's writes to the State, and a CustomResourceDefinition's to the
//     replay's catalog: the kinds the log's CRDs define are served as the apiserver serves them
//     (internal/catalog, told by crds.go), and what depends on the catalog is rebuilt at a
//     barrier (epoch.go).
//
// Records and the Summary are written by the reporters in report.go (text, JSON lines, JUnit),
// and Check compares the log's own verdicts (validation_failure and policy audit annotations,
// denials by ValidatingAdmissionPolicies) with the predictions.
package replay
