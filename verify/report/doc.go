// Package report draws a replay (package verify/replay) as one self-contained HTML page:
// `vapc replay --report FILE`.
//
// A Builder follows the replay through its Observer (the Nodes and Pods of the snapshot and,
// in log order, every request of the logs) and its Sink (every Record), and builds the Data
// the page renders:
//
//   - the header: the inputs, the time span, and per policy and binding the counts of the
//     replay's Summary, the changed decisions, and the skipped and malformed lines;
//   - the node timeline: a lane per node the logs changed or a decision concerns, with the
//     Ready condition's spans, NoExecute taints, cordons and other conditions from the node
//     writes the log holds, and markers for the deletions and evictions of its pods, per
//     requester group and time bucket, coloured by what the policies decide;
//   - the decisions over time: per binding, the requests it denied, warned, audited, failed
//     or could not decide, per time bucket;
//   - the requests: every request a binding did not admit, or decided otherwise than
//     recorded, with its rebuilt objects, up to limits that keep a report of a million
//     events under 10 MB.
//
// Secrets, and the resources given to WithRedact, never reach the page: their objects keep
// their key names, their values become sizes, and the values are scrubbed from every text
// of their rows (a policy's message may quote one).
package report
