package report

import (
	"encoding/json"

	"github.com/vapc-dev/vapc/verify/replay"
)

// Data is what the report's page renders: the JSON embedded in the HTML file, and what the
// golden files of the tests hold. Times are milliseconds from Span.Start.
type Data struct {
	// Version is the version of this layout; the page refuses another.
	Version int `json:"version"`
	// Verdict is the replay's verdict (replay.Summary.Decide), the one its exit code, text
	// summary and JUnit state; nil when the summary was not decided.
	Verdict   *replay.Verdict `json:"verdict,omitempty"`
	Inputs    Inputs          `json:"inputs"`
	Span      Span            `json:"span"`
	Totals    Totals          `json:"totals"`
	Policies  []Policy        `json:"policies"`
	Nodes     Nodes           `json:"nodes"`
	Decisions Decisions       `json:"decisions"`
	Requests  Requests        `json:"requests"`
	Lines     LineIssues      `json:"lines"`
	// Notes are the replay's notes (the order the logs were read in, ...).
	Notes []string `json:"notes,omitempty"`
}

// DataVersion is the Version of the Data this package writes.
const DataVersion = 1

// Inputs are what the replay read.
type Inputs struct {
	Logs      []string `json:"logs"`
	Policies  []string `json:"policies,omitempty"`
	Snapshots []string `json:"snapshots,omitempty"`
	Bytes     int64    `json:"bytes"`
	// Redacted are the resources whose values the report replaces by their sizes.
	Redacted []string `json:"redacted"`
}

// Span is the time the logs cover: from the second of the earliest stage timestamp of a
// request to the latest.
type Span struct {
	Start string `json:"start"`
	End   string `json:"end"`
	// Ms is End - Start.
	Ms int64 `json:"ms"`
	// Bucket is the width of the time buckets of the markers and the decision counts.
	Bucket int64 `json:"bucket"`
}

// Totals account for every line and request, as the replay's Summary does.
type Totals struct {
	Lines              int            `json:"lines"`
	Blank              int            `json:"blank,omitempty"`
	Duplicates         int            `json:"duplicates,omitempty"`
	IntermediateStages int            `json:"intermediateStages"`
	Malformed          int            `json:"malformed"`
	Requests           int            `json:"requests"`
	Skipped            int            `json:"skipped"`
	NotMatched         int            `json:"notMatched"`
	Evaluated          int            `json:"evaluated"`
	Admit              int            `json:"admit"`
	Deny               int            `json:"deny"`
	Warn               int            `json:"warn"`
	Audit              int            `json:"audit"`
	Indeterminate      int            `json:"indeterminate"`
	IndeterminateBy    map[string]int `json:"indeterminateBy,omitempty"`
	Changed            int            `json:"changed"`
	Checked            int            `json:"checked"`
	Disagreements      int            `json:"disagreements"`
}

// Policy is one ValidatingAdmissionPolicy and its bindings.
type Policy struct {
	Name          string    `json:"name"`
	FailurePolicy string    `json:"failurePolicy,omitempty"`
	ParamKind     string    `json:"paramKind,omitempty"`
	Bindings      []Binding `json:"bindings"`
}

// Binding is what one binding decided: the counts of the replay's Summary, and Changed, the
// requests it took part in that would be decided otherwise than recorded.
type Binding struct {
	Name string `json:"name"`
	// Actions are its validationActions: the policy's rollout stage.
	Actions       []string `json:"actions"`
	Param         string   `json:"param,omitempty"`
	Admit         int      `json:"admit"`
	Deny          int      `json:"deny"`
	Warn          int      `json:"warn"`
	Audit         int      `json:"audit"`
	Error         int      `json:"error"`
	Indeterminate int      `json:"indeterminate"`
	Changed       int      `json:"changed"`
}

// Nodes is the node timeline.
type Nodes struct {
	Lanes []Lane `json:"lanes"`
	// Quiet counts the nodes the log wrote without changing what a lane shows (heartbeats);
	// LeftOut the lanes beyond the report's budget, the least active.
	Quiet   int `json:"quiet"`
	LeftOut int `json:"leftOut"`
	// LabelKeys are the label keys of the lanes' nodes, for the label filter.
	LabelKeys []string `json:"labelKeys"`
	// Groups are the requester groups of the markers, in the order they are drawn.
	Groups []string `json:"groups"`
}

// Lane is one node's timeline.
type Lane struct {
	Node   string            `json:"node"`
	Labels map[string]string `json:"labels,omitempty"`
	// Activity orders the lanes: state changes, deletions and evictions, decisions.
	Activity int `json:"activity"`
	// Known is when the node's state is first known (0 with a snapshot that holds it);
	// Deleted when the log deleted it, or -1.
	Known   int64 `json:"known"`
	Deleted int64 `json:"deleted"`
	// Ready spans hold the Ready condition's status (True, False, Unknown).
	Ready []Interval `json:"ready"`
	// Taints are the NoExecute taints (value: the key), Cordons the spans of
	// spec.unschedulable, Conditions those of every other condition with status True (value:
	// its type: node-problem-detector's KernelDeadlock, Draino's DrainScheduled, ...).
	Taints     []Interval `json:"taints"`
	Cordons    []Interval `json:"cordons"`
	Conditions []Interval `json:"conditions"`
	// Markers are the deletions and evictions of the node's pods and the decided writes of the
	// node itself, per time bucket.
	Markers []Marker `json:"markers"`
}

// Interval is a span of a lane: [From, To) with a value.
type Interval struct {
	From int64  `json:"from"`
	To   int64  `json:"to"`
	V    string `json:"v"`
}

// Marker counts the requests of one kind by one requester group in one time bucket, by
// outcome: deny, indeterminate, warn, audit, admit (what the policies decide), none (no
// policy matched).
type Marker struct {
	T int64 `json:"t"`
	// G is the requester group; K the kind: delete, evict (of a pod), or write (of the node).
	G string         `json:"g"`
	K string         `json:"k"`
	N map[string]int `json:"n"`
}

// Decisions are the decision counts over time, per binding.
type Decisions struct {
	// Bucket is the width of their time buckets: the span's, or coarser when there are many
	// bindings.
	Bucket int64 `json:"bucket"`
	// All counts every evaluated request: [t, admit, deny, indeterminate].
	All [][4]int64 `json:"all"`
	// Series count per binding: [t, deny, warn, audit, error, indeterminate]; a request counts
	// once per binding, by its strongest outcome.
	Series []Series `json:"series"`
}

// Series is one binding's counts.
type Series struct {
	Policy  string     `json:"policy"`
	Binding string     `json:"binding"`
	Points  [][6]int64 `json:"points"`
}

// Requests are the rows of the request table: every request some binding did not admit, or
// that would be decided otherwise than recorded.
type Requests struct {
	Rows []Row `json:"rows"`
	// Total rows qualified; LeftOut of them are not in Rows (the report's limit), by outcome.
	Total     int            `json:"total"`
	LeftOut   int            `json:"leftOut"`
	LeftOutBy map[string]int `json:"leftOutBy,omitempty"`
	// ObjectsLeftOut rows are without their objects: the report's budget for objects was
	// spent.
	ObjectsLeftOut int `json:"objectsLeftOut"`
}

// Row is one request of the table.
type Row struct {
	T        int64  `json:"t"`
	Time     string `json:"time"`
	File     string `json:"file"`
	Line     int    `json:"line"`
	AuditID  string `json:"auditID"`
	User     string `json:"user"`
	Group    string `json:"group"`
	Verb     string `json:"verb"`
	Resource string `json:"resource"`
	// Namespace and Name of the object; Node the node it is about or runs on.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name,omitempty"`
	Node      string `json:"node,omitempty"`
	// Decision, Code and Message are the prediction, Certainty how it is known (likely:
	// Alternatives says what else the server may have decided, and when; "" when certain);
	// Recorded what the log says.
	Decision   string `json:"decision"`
	Certainty  string `json:"certainty,omitempty"`
	Code       int32  `json:"code,omitempty"`
	Message    string `json:"message,omitempty"`
	Recorded   string `json:"recorded"`
	RecordedBy string `json:"recordedBy,omitempty"`
	Changed    bool   `json:"changed,omitempty"`
	// Outcome is the row's strongest outcome (deny, indeterminate, warn, audit, error, admit);
	// Bindings what each binding concerned decided.
	Outcome  string           `json:"outcome"`
	Bindings []BindingOutcome `json:"bindings"`
	Results  []Result         `json:"results"`
	// Reason is the reason code: the first result's, or the kind of indeterminate.
	Reason          string `json:"reason,omitempty"`
	Indeterminate   string `json:"indeterminate,omitempty"`
	ObjectSource    string `json:"objectSource,omitempty"`
	OldObjectSource string `json:"oldObjectSource,omitempty"`
	// AnnotationsSource says whose evaluation AuditAnnots are where not the decision's
	// (replay.Record.AnnotationsSource).
	AnnotationsSource string            `json:"annotationsSource,omitempty"`
	Notes             []string          `json:"notes,omitempty"`
	Warnings          []string          `json:"warnings,omitempty"`
	AuditAnnots       map[string]string `json:"auditAnnotations,omitempty"`
	Alternatives      []string          `json:"alternatives,omitempty"`
	Disagreements     []string          `json:"disagreements,omitempty"`
	// Object and OldObject are the rebuilt objects (managedFields dropped, sensitive values
	// replaced by their sizes); ObjectsLeftOut says they were not kept.
	Object         json.RawMessage `json:"object,omitempty"`
	OldObject      json.RawMessage `json:"oldObject,omitempty"`
	ObjectsLeftOut bool            `json:"objectsLeftOut,omitempty"`
	// Redacted says values of a sensitive object were replaced.
	Redacted bool `json:"redacted,omitempty"`
}

// BindingOutcome is what one binding decided about a request.
type BindingOutcome struct {
	Policy   string   `json:"policy"`
	Binding  string   `json:"binding"`
	Outcomes []string `json:"outcomes"`
}

// Result is one (binding, param) evaluation that did not admit.
type Result struct {
	Policy  string   `json:"policy"`
	Binding string   `json:"binding"`
	Param   string   `json:"param,omitempty"`
	Result  string   `json:"result"`
	Actions []string `json:"actions,omitempty"`
	Message string   `json:"message,omitempty"`
	Reason  string   `json:"reason,omitempty"`
}

// LineIssues are the requests skipped and the lines that were not audit events.
type LineIssues struct {
	Skipped []Count `json:"skipped"`
	// Malformed lists the first malformed lines (MalformedCount in Totals).
	Malformed  []Malformed `json:"malformed"`
	Incomplete []Count     `json:"incomplete,omitempty"`
}

// Count is a reason and how often it occurred.
type Count struct {
	Reason string `json:"reason"`
	N      int    `json:"n"`
}

// Malformed is a line that is not an audit event.
type Malformed struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Reason string `json:"reason"`
}
