package replay

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// Summary accounts for every line of a replay.
type Summary struct {
	// Read is what the replay read.
	Read
	// Decided is what it decided of the requests.
	Decided
	// Checks is the decisions compared with the log's verdicts (--check-recorded).
	Checks
	// Bindings are the per policy and binding counts.
	Bindings []*BindingSummary `json:"bindings"`
	// StateObjects is how many objects the State held at the end.
	StateObjects int `json:"stateObjects"`
	// CustomResourceDefinitions are the CRDs of the snapshot and the log the replay began or
	// stopped serving, in order.
	CustomResourceDefinitions []CRDChange `json:"customResourceDefinitions,omitempty"`
	// Verdict is whether the replay passes its gate, once Decide has computed it.
	Verdict *Verdict `json:"verdict,omitempty"`
}

// Read is what a replay read: its logs, their lines and the requests they hold.
type Read struct {
	// Files are the logs in the order they were replayed.
	Files []string `json:"files"`
	Bytes int64    `json:"bytes"`
	// Notes say what the replay did that a reader of its result should know.
	Notes []string `json:"notes,omitempty"`
	// Lines is every line read: Malformed + Blank + Duplicates + IntermediateStages +
	// Requests.
	Lines int `json:"lines"`
	Blank int `json:"blank,omitempty"`
	// Duplicates are events read again, exports delivering at least once: a final record
	// the same (the same line) as the final record of its audit ID read before, or an event
	// an export's reader found handed over already when it arrived later than the reader
	// puts events back in order. They are not replayed again.
	Duplicates int `json:"duplicates,omitempty"`
	// MalformedCount lines were not audit events; Malformed lists the first MaxMalformed.
	// Both include the Unreadable.
	MalformedCount int         `json:"malformedCount"`
	Malformed      []Malformed `json:"malformed,omitempty"`
	// Unreadable are the logs that could not be read to their end, at the line where reading
	// stopped: a truncated or corrupt gzip stream, a file that cannot be opened, a read error.
	Unreadable []Malformed `json:"unreadable,omitempty"`
	// ExportSkipped counts the records of an export that hold no audit event of the
	// cluster's servers (another service's entry, another category of logs) or one read
	// already (AKS's kube-audit-admin copy of a kube-audit event), by why: they are not
	// lines of the log, and not replayed.
	ExportSkipped map[string]int `json:"exportSkipped,omitempty"`
	// Partial says the replay was interrupted before the end of its logs: the summary is of
	// the lines read until then.
	Partial bool `json:"partial,omitempty"`
	// IntermediateStages are RequestReceived and ResponseStarted lines of requests counted
	// at their final stage.
	IntermediateStages int `json:"intermediateStages"`
	// Requests = Skipped + NotMatched + Evaluated: one per ResponseComplete or Panic record.
	Requests int `json:"requests"`
	// Incomplete requests have intermediate stages but no final record (a watch still open
	// when the log ends), by verb; their lines are among IntermediateStages.
	Incomplete map[string]int `json:"incomplete,omitempty"`
	// ClockJumps are the lines where a log's clock goes back more than a second: rotated
	// logs, or the logs of several kube-apiservers, concatenated out of order. Each is a note
	// too.
	ClockJumps []ClockJump `json:"clockJumps,omitempty"`
}

// ClockJump is a line of a log whose event completed more than a second before one above it.
type ClockJump struct {
	File string `json:"file"`
	Line int    `json:"line"`
	// Latest is the latest completion above the line, At the line's.
	Latest time.Time `json:"latest"`
	At     time.Time `json:"at"`
	// Parts says the log was read as its parts (the spans between the lines where its clock
	// goes back) merged in the time order of their events; otherwise (standard input, a
	// compressed log) the requests after the line were replayed in the log's order.
	Parts bool `json:"parts"`
}

// clockJump accounts for a line where a log's clock goes back.
func (s *Summary) clockJump(j ClockJump) {
	s.ClockJumps = append(s.ClockJumps, j)
	if len(s.ClockJumps) > maxClockNotes {
		return
	}
	what := "its parts were read as one log, in the time order of their events"
	if !j.Parts {
		what = "the requests after it were replayed in the log's order, over the State the lines above left; give the parts as files of their own, which are read as one log in the time order of their events"
	}
	s.Notes = append(s.Notes, fmt.Sprintf("%s:%d: the log's clock goes back %s (from %s to %s; rotated logs concatenated out of order?): %s",
		j.File, j.Line, j.Latest.Sub(j.At).Round(time.Millisecond), j.Latest.Format(time.RFC3339Nano), j.At.Format(time.RFC3339Nano), what))
}

// maxClockNotes is how many places where a log's clock goes back a replay notes.
const maxClockNotes = 3

// Decided counts what a replay decided of the requests it read.
type Decided struct {
	// Skipped counts the requests that never reached validating admission by their skip
	// reason (SkipRead, ...), followed by a note in parentheses where there is one:
	// "rejected-before-admission (NotFound)".
	Skipped    map[string]int `json:"skipped,omitempty"`
	NotMatched int            `json:"notMatched"`
	// Evaluated requests the policies match: Admit + Deny + Indeterminate.
	Evaluated int `json:"evaluated"`
	Admit     int `json:"admit"`
	Deny      int `json:"deny"`
	// Indeterminate counts the indeterminate requests by Record.Reason.
	Indeterminate map[Reason]int `json:"indeterminate,omitempty"`
	// Warn and Audit count requests with a Warn or Audit result.
	Warn  int `json:"warn"`
	Audit int `json:"audit"`
	// Likely counts the decisions that rest on a timing assumption (Record.Certainty), among
	// those counted above.
	Likely LikelyCounts `json:"likely"`
	// Changed requests would be decided otherwise than they were; Changes lists the first
	// MaxChanges of them, with why.
	Changed int      `json:"changed"`
	Changes []Change `json:"changes,omitempty"`
	// Unreproduced requests are indeterminate though the log records a verdict of a replayed
	// policy for them; UnreproducedRequests lists the first MaxChanges of them.
	Unreproduced         int      `json:"unreproduced"`
	UnreproducedRequests []Change `json:"unreproducedRequests,omitempty"`
	// evidenceWould counts the unreproduced requests whose reason the log's verdicts of
	// their policies settle where they are evidence (evidence.go).
	evidenceWould int
	// Mutated counts the evaluated requests the replayed MutatingAdmissionPolicies changed,
	// by policy; MutatedFields the fields they changed most often (JSON patch paths, list
	// indices as "*"), at most MaxMutatedFields of them.
	Mutated       map[string]int `json:"mutated,omitempty"`
	MutatedFields map[string]int `json:"mutatedFields,omitempty"`
	// NoObject counts requests logged at Metadata level, without objects.
	NoObject int `json:"noObject"`
	// Truncated counts the requests whose event the audit backend truncated (their objects
	// dropped: audit.k8s.io/truncated), decided or not.
	Truncated int `json:"truncated,omitempty"`
}

// Checks is a replay's decisions compared with the log's verdicts (--check-recorded).
type Checks struct {
	// Checked requests were compared with the log's verdicts; Disagreements lists every
	// contradiction.
	Checked       int            `json:"checked"`
	Disagreements []Disagreement `json:"disagreements,omitempty"`
	// CheckedPolicies are the replayed policies the log shows installed (their create and a
	// binding's, or a verdict of theirs), whose verdicts it records were compared;
	// UncheckedPolicies the others, of which the log records no verdict to compare with.
	CheckedPolicies   []string `json:"checkedPolicies,omitempty"`
	UncheckedPolicies []string `json:"uncheckedPolicies,omitempty"`
}

// LikelyCounts count the likely decisions of a replay: all of them (Count), and those that
// deny, warn, change what the log records, or stand for a verdict the log records of a
// replayed policy (Recorded), which --strict counts as indeterminate.
type LikelyCounts struct {
	Count    int `json:"count"`
	Deny     int `json:"deny,omitempty"`
	Warn     int `json:"warn,omitempty"`
	Changed  int `json:"changed,omitempty"`
	Recorded int `json:"recorded,omitempty"`
}

// MaxMalformed is how many malformed lines a Summary lists.
const MaxMalformed = 1000

// Malformed is a line that is not an audit event.
type Malformed struct {
	File   string `json:"file"`
	Line   int    `json:"line"`
	Reason string `json:"reason"`

	unreadable bool // where reading stopped (see Summary.Unreadable)
	convert    bool // in a form a replay does not read (auditlog.ConvertError): whole, not damaged
}

// MaxChanges is how many changed requests a Summary lists.
const MaxChanges = 100

// Change is a request the policies would decide otherwise than the log records, and why.
type Change struct {
	File      string `json:"file"`
	Line      int    `json:"line"`
	AuditID   string `json:"auditID"`
	Request   string `json:"request"`
	Recorded  string `json:"recorded"`
	Predicted string `json:"predicted"`
	// Detail says who decided what: the denial the log records, or the results of the
	// prediction.
	Detail string `json:"detail"`
}

func (c Change) String() string {
	return fmt.Sprintf("%s (%s): recorded %s, predicted %s: %s", c.Request, c.AuditID, c.Recorded, c.Predicted, c.Detail)
}

// newChange says why a changed record is decided otherwise than the log records.
func newChange(r *Record) Change {
	c := Change{File: r.File, Line: r.Line, AuditID: r.AuditID, Request: r.String(), Recorded: r.Recorded, Predicted: r.Decision}
	var why []string
	if r.Recorded == RecordedDeny && r.RecordedBy != "" {
		why = append(why, "the log records a denial by "+r.RecordedBy)
	}
	for _, res := range r.Results {
		w := fmt.Sprintf("%s/%s %s %v", res.Policy, res.Binding, res.Result, res.Actions)
		if res.Message != "" {
			w += ": " + firstLine(res.Message)
		}
		why = append(why, w)
	}
	if r.Decision == DecisionAdmit && len(r.Results) > 0 {
		denies := false
		for _, res := range r.Results {
			for _, a := range res.Actions {
				denies = denies || a == string(admissionregistrationv1.Deny)
			}
		}
		if !denies {
			why = append(why, "no binding that fails it has the Deny action (its stage is Audit or Warn)")
		}
	}
	if r.Decision == DecisionAdmit && len(r.Results) == 0 {
		why = append(why, "every policy admits it")
	}
	c.Detail = strings.Join(why, "; ")
	return c
}

func (m Malformed) String() string {
	if m.Line == 0 {
		// The file as a whole (a format a replay does not read): its reason names it.
		if strings.HasPrefix(m.Reason, m.File+": ") {
			return m.Reason
		}
		return m.File + ": " + m.Reason
	}
	return fmt.Sprintf("%s:%d: %s", m.File, m.Line, m.Reason)
}

// Disagreement is a verdict of the log that the prediction contradicts.
type Disagreement struct {
	File    string `json:"file"`
	Line    int    `json:"line"`
	AuditID string `json:"auditID"`
	Detail  string `json:"detail"`
}

func newSummary(sources []Source) *Summary {
	s := &Summary{Read: Read{Incomplete: map[string]int{}}, Decided: Decided{Skipped: map[string]int{}, Indeterminate: map[Reason]int{}}}
	for _, src := range sources {
		if !slices.Contains(s.Files, src.Name) { // the parts of a log whose clock goes back are one file
			s.Files = append(s.Files, src.Name)
		}
	}
	return s
}

func (s *Summary) malformed(file string, line int, reason string) {
	s.MalformedCount++
	if len(s.Malformed) < MaxMalformed {
		s.Malformed = append(s.Malformed, Malformed{File: file, Line: line, Reason: reason})
	}
}

// lineError accounts for a line that could not be read or decoded: a malformed line, or where
// reading a log stopped (an *auditlog.ReadError), which is Unreadable too.
func (s *Summary) lineError(file string, line int, err error) {
	var re *auditlog.ReadError
	if !errors.As(err, &re) {
		s.malformed(file, line, err.Error())
		return
	}
	var ce *auditlog.ConvertError
	m := Malformed{File: file, Line: line, Reason: err.Error(), unreadable: true, convert: errors.As(err, &ce)}
	s.Unreadable = append(s.Unreadable, m)
	s.MalformedCount++
	if len(s.Malformed) < MaxMalformed {
		s.Malformed = append(s.Malformed, m)
	}
}

func (s *Summary) exportSkipped(why string) {
	if s.ExportSkipped == nil {
		s.ExportSkipped = map[string]int{}
	}
	s.ExportSkipped[why]++
}

func (s *Summary) skip(reason Reason, note string) {
	key := string(reason)
	if note != "" {
		key += " (" + note + ")"
	}
	s.Skipped[key]++
}

// MaxMutatedFields is how many changed fields a Summary counts.
const MaxMutatedFields = 100

func (s *Summary) record(r *Record) {
	s.Evaluated++
	s.recordMutations(r)
	switch r.Decision {
	case DecisionAdmit:
		s.Admit++
	case DecisionDeny:
		s.Deny++
	default:
		s.Indeterminate[r.Reason]++
		if r.Reason == ReasonNoObject {
			s.NoObject++
		}
	}
	warn, audit := false, false
	for _, res := range r.Results {
		for _, a := range res.Actions {
			warn = warn || a == string(admissionregistrationv1.Warn)
			audit = audit || a == string(admissionregistrationv1.Audit)
		}
	}
	if warn {
		s.Warn++
	}
	if audit {
		s.Audit++
	}
	if r.Changed {
		s.Changed++
		if len(s.Changes) < MaxChanges {
			s.Changes = append(s.Changes, newChange(r))
		}
	}
	if r.Certainty == CertaintyLikely {
		s.Likely.Count++
		if r.Decision == DecisionDeny {
			s.Likely.Deny++
		}
		if warn {
			s.Likely.Warn++
		}
		if r.Changed {
			s.Likely.Changed++
		}
		if r.recordedVerdict != "" {
			s.Likely.Recorded++
		}
	}
	if r.Decision == DecisionIndeterminate && r.recordedVerdict != "" {
		s.Unreproduced++
		if r.verdictUnproven && settledByVerdicts(r.Reason) {
			s.evidenceWould++
		}
		if len(s.UnreproducedRequests) < MaxChanges {
			s.UnreproducedRequests = append(s.UnreproducedRequests, Change{File: r.File, Line: r.Line, AuditID: r.AuditID, Request: r.String(),
				Recorded: r.Recorded, Predicted: r.Decision, Detail: "the log records " + r.recordedVerdict + "; " + r.Indeterminate})
		}
	}
	if r.Decision != DecisionIndeterminate && r.Disagreements != nil {
		s.Checked++
	}
	for _, d := range r.Disagreements {
		if d == "" {
			continue
		}
		s.Disagreements = append(s.Disagreements, Disagreement{File: r.File, Line: r.Line, AuditID: r.AuditID, Detail: d})
	}
}

// BindingSummary counts what one binding of a policy decided.
type BindingSummary struct {
	Policy        string `json:"policy"`
	Binding       string `json:"binding"`
	Admit         int    `json:"admit"`
	Deny          int    `json:"deny"`
	Warn          int    `json:"warn"`
	Audit         int    `json:"audit"`
	Error         int    `json:"error"`
	Indeterminate int    `json:"indeterminate"`
	// Likely counts the binding's decisions that rest on a timing assumption, among those
	// above; LikelyDeny and LikelyWarn those of them that deny or warn.
	Likely     int `json:"likely"`
	LikelyDeny int `json:"likelyDeny,omitempty"`
	LikelyWarn int `json:"likelyWarn,omitempty"`
	// Denied is who and what the binding denied.
	Denied
	// Examples are the first requests of each outcome, at most maxExamples each.
	Examples []Example `json:"examples,omitempty"`

	examples map[string]int
}

// Denied is who and what a binding denied: the TopUsers, TopNamespaces and TopResources of
// the requests it denied, of DeniedUsers, DeniedNamespaces and DeniedResources distinct ones.
type Denied struct {
	TopUsers         []Count `json:"topUsers,omitempty"`
	TopNamespaces    []Count `json:"topNamespaces,omitempty"`
	TopResources     []Count `json:"topResources,omitempty"`
	DeniedUsers      int     `json:"deniedUsers,omitempty"`
	DeniedNamespaces int     `json:"deniedNamespaces,omitempty"`
	DeniedResources  int     `json:"deniedResources,omitempty"`

	users, namespaces, resources map[string]int
}

// Count is a value and how often it occurred.
type Count struct {
	Value string `json:"value"`
	Count int    `json:"count"`
}

// Example is a request a binding did not admit, or could not decide.
type Example struct {
	Outcome string `json:"outcome"`
	Request string `json:"request"`
	AuditID string `json:"auditID"`
	Detail  string `json:"detail"`
}

// maxExamples is how many example requests a BindingSummary keeps per outcome, maxTop how
// many values its top lists hold.
const (
	maxExamples = 3
	maxTop      = 5
)

type bindingKey struct{ policy, binding string }

type aggregator struct {
	bindings map[bindingKey]*BindingSummary
	byPolicy map[string][]string
}

func newAggregator(policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindings map[string][]string) *aggregator {
	a := &aggregator{bindings: map[bindingKey]*BindingSummary{}, byPolicy: bindings}
	for _, p := range policies {
		for _, b := range bindings[p.Name] {
			a.get(p.Name, b)
		}
	}
	return a
}

func (a *aggregator) get(policy, binding string) *BindingSummary {
	k := bindingKey{policy, binding}
	b := a.bindings[k]
	if b == nil {
		b = &BindingSummary{Policy: policy, Binding: binding, Denied: Denied{users: map[string]int{}, namespaces: map[string]int{}, resources: map[string]int{}}, examples: map[string]int{}}
		a.bindings[k] = b
	}
	return b
}

// add counts a record for every binding it concerns: the bindings in the decision's results,
// or, for a request that was not evaluated, every binding of the policies that can match it.
func (a *aggregator) add(r *Record, policies []string, dec *verify.Decision) {
	type outcome struct{ deny, warn, audit, err bool }
	seen := map[bindingKey]*outcome{}
	var order []bindingKey
	note := func(k bindingKey) *outcome {
		o := seen[k]
		if o == nil {
			o = &outcome{}
			seen[k] = o
			order = append(order, k)
		}
		return o
	}
	if dec != nil {
		for _, res := range dec.Results {
			o := note(bindingKey{res.Policy, res.Binding})
			if res.Result == verify.ResultError {
				o.err = true
			}
			for _, act := range res.Actions {
				switch act {
				case admissionregistrationv1.Deny:
					o.deny = true
				case admissionregistrationv1.Warn:
					o.warn = true
				case admissionregistrationv1.Audit:
					o.audit = true
				}
			}
		}
	} else {
		for _, p := range policies {
			for _, b := range a.byPolicy[p] {
				note(bindingKey{p, b})
			}
		}
	}
	for _, k := range order {
		o := seen[k]
		b := a.get(k.policy, k.binding)
		if r.Decision == DecisionIndeterminate {
			b.Indeterminate++
			b.example("indeterminate", r, r.Indeterminate)
			continue
		}
		detail := r.Message
		for _, res := range r.Results {
			if res.Policy == k.policy && res.Binding == k.binding {
				detail = res.Message
				break
			}
		}
		if o.deny {
			b.Deny++
			b.users[r.User]++
			b.namespaces[orDash(r.Namespace)]++
			res := r.Resource
			if r.Subresource != "" {
				res += "/" + r.Subresource
			}
			b.resources[res]++
			b.example("deny", r, detail)
		}
		if o.warn {
			b.Warn++
			b.example("warn", r, detail)
		}
		if o.audit {
			b.Audit++
			b.example("audit", r, detail)
		}
		if o.err {
			b.Error++
			b.example("error", r, detail)
		}
		if !o.deny && !o.warn && !o.audit && !o.err {
			b.Admit++
		}
		if r.Certainty == CertaintyLikely {
			b.Likely++
			if o.deny {
				b.LikelyDeny++
			}
			if o.warn {
				b.LikelyWarn++
			}
		}
	}
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

func (b *BindingSummary) example(outcome string, r *Record, detail string) {
	if b.examples[outcome] >= maxExamples {
		return
	}
	b.examples[outcome]++
	b.Examples = append(b.Examples, Example{Outcome: outcome, Request: r.String(), AuditID: r.AuditID, Detail: detail})
}

func (a *aggregator) finish(s *Summary) {
	for _, b := range a.bindings {
		b.TopUsers, b.TopNamespaces, b.TopResources = top(b.users), top(b.namespaces), top(b.resources)
		b.DeniedUsers, b.DeniedNamespaces, b.DeniedResources = len(b.users), len(b.namespaces), len(b.resources)
		s.Bindings = append(s.Bindings, b)
	}
	sort.Slice(s.Bindings, func(i, j int) bool {
		if s.Bindings[i].Policy != s.Bindings[j].Policy {
			return s.Bindings[i].Policy < s.Bindings[j].Policy
		}
		return s.Bindings[i].Binding < s.Bindings[j].Binding
	})
}

func top(m map[string]int) []Count {
	var out []Count
	for v, c := range m {
		out = append(out, Count{v, c})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Value < out[j].Value
	})
	if len(out) > maxTop {
		out = out[:maxTop]
	}
	return out
}

// Outcomes is how many requests the binding had of the outcome of an Example: deny, warn,
// audit, error or indeterminate.
func (b *BindingSummary) Outcomes(outcome string) int {
	switch outcome {
	case "deny":
		return b.Deny
	case "warn":
		return b.Warn
	case "audit":
		return b.Audit
	case "error":
		return b.Error
	case "indeterminate":
		return b.Indeterminate
	}
	return 0
}

// recordMutations counts what the replayed MutatingAdmissionPolicies changed in a request.
func (s *Summary) recordMutations(r *Record) {
	if len(r.Mutations) == 0 {
		return
	}
	if s.Mutated == nil {
		s.Mutated, s.MutatedFields = map[string]int{}, map[string]int{}
	}
	policies, fields := map[string]bool{}, map[string]bool{}
	for _, c := range r.Mutations {
		policies[c.Policy] = true
		var ops []struct {
			Path string `json:"path"`
		}
		if err := json.Unmarshal(c.Patch, &ops); err != nil {
			continue
		}
		for _, op := range ops {
			fields[listIndices.ReplaceAllString(op.Path, "/*")] = true
		}
	}
	for p := range policies {
		s.Mutated[p]++
	}
	for f := range fields {
		if _, ok := s.MutatedFields[f]; ok || len(s.MutatedFields) < MaxMutatedFields {
			s.MutatedFields[f]++
		}
	}
}

// listIndices are the list indices of a JSON pointer.
var listIndices = regexp.MustCompile(`/[0-9]+`)

// settledByVerdicts says whether the verdicts the log records of a policy it shows installed
// choose among what a request indeterminate for reason may have been (the way a patch was
// sent, a number's type, the state or version read).
func settledByVerdicts(reason Reason) bool {
	switch reason {
	case ReasonPatchType, ReasonNumberType, ReasonDefaultedLabels, ReasonWatchCache, ReasonParamKindPending, ReasonOldObjectUnknown:
		return true
	}
	return false
}
