package report

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vapc-dev/vapc/verify/internal/redact"
	"github.com/vapc-dev/vapc/verify/replay"
)

// The report's limits keep it under 10 MB whatever the log: the rows, their objects and the
// lanes have a budget of bytes each (of their JSON), and the decision counts are bucketed
// coarser until they fit theirs.
const (
	DefaultMaxRows        = 5000
	DefaultMaxObjectBytes = 2 << 20
	maxRowBytes           = 3 << 20
	maxLaneBytes          = 3 << 20
	maxDecisionPoints     = 40000
)

// Option configures a Builder.
type Option func(*Builder) error

// WithInputs names the logs, policies and snapshots of the replay in the report's header.
func WithInputs(logs, policies, snapshots []string) Option {
	return func(b *Builder) error {
		b.inputs.Logs = append([]string(nil), logs...)
		b.inputs.Policies = append([]string(nil), policies...)
		b.inputs.Snapshots = append([]string(nil), snapshots...)
		return nil
	}
}

// WithRedact marks resources whose objects are sensitive, besides Secrets: the report shows
// their key names and the sizes of their values, never the values.
func WithRedact(resources ...schema.GroupResource) Option {
	return func(b *Builder) error { b.redactExtra = append(b.redactExtra, resources...); return nil }
}

// WithMaxRows sets how many requests the table keeps (default DefaultMaxRows); the others
// are counted.
func WithMaxRows(n int) Option {
	return func(b *Builder) error {
		if n < 0 {
			return fmt.Errorf("max rows must not be negative, not %d", n)
		}
		b.maxRows = n
		return nil
	}
}

// WithMaxObjectBytes sets how many bytes of objects the rows keep, in all (default
// DefaultMaxObjectBytes); rows beyond it are without their objects.
func WithMaxObjectBytes(n int) Option {
	return func(b *Builder) error {
		if n < 0 {
			return fmt.Errorf("max object bytes must not be negative, not %d", n)
		}
		b.maxObjectBytes = n
		return nil
	}
}

// ParseResources reads resources as GROUP/RESOURCE, or RESOURCE of the core group (the
// --report-redact flag).
func ParseResources(names []string) ([]schema.GroupResource, error) {
	var out []schema.GroupResource
	for _, n := range names {
		gr, err := redact.Parse(n)
		if err != nil {
			return nil, err
		}
		out = append(out, gr)
	}
	return out, nil
}

// Builder gathers a report while a replay runs: give the replay its Observer and its Sink,
// then build the Data from the replay's Summary. The Observer's Event and the Sink are called
// on the replay's ordered stage, one at a time, as replay.Replayer calls them.
type Builder struct {
	policies    []*admissionregistrationv1.ValidatingAdmissionPolicy
	bindings    []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	bindingsOf  map[string][]string
	inputs      Inputs
	redactExtra []schema.GroupResource
	redactor    *redact.Redactor
	// secretParams are the policies whose paramKind may be sensitive (redact.SensitiveKind):
	// what they answer may quote a param's values, which no row's object holds.
	secretParams map[string]bool

	maxRows, maxObjectBytes int

	// The span of the logs, Unix milliseconds.
	first, last int64
	timed       bool

	lanes   map[string]*lane
	podNode map[string]string // namespace/name -> node
	pending map[string]*pendingMarker
	queue   []*pendingMarker

	all       map[int64]*[3]int64 // Unix second -> admit, deny, indeterminate
	series    map[bindingKey]map[int64]*[5]int64
	changedBy map[bindingKey]int

	rows           []Row
	rowBytes       int
	total          int
	leftOutBy      map[string]int
	objectBytes    int
	objectsLeftOut int
}

type bindingKey struct{ policy, binding string }

// pendingMarker is a deletion or eviction of a pod waiting for its Record, if any.
type pendingMarker struct {
	key   string
	t     int64
	node  string
	group string
	kind  string
	done  bool
}

// New returns a Builder for a replay of the policies and bindings.
func New(policies []*admissionregistrationv1.ValidatingAdmissionPolicy, bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding, opts ...Option) (*Builder, error) {
	b := &Builder{
		policies: policies, bindings: bindings, bindingsOf: map[string][]string{},
		maxRows: DefaultMaxRows, maxObjectBytes: DefaultMaxObjectBytes,
		lanes: map[string]*lane{}, podNode: map[string]string{}, pending: map[string]*pendingMarker{},
		all: map[int64]*[3]int64{}, series: map[bindingKey]map[int64]*[5]int64{}, changedBy: map[bindingKey]int{},
		leftOutBy: map[string]int{},
	}
	for _, o := range opts {
		if err := o(b); err != nil {
			return nil, err
		}
	}
	b.redactor = redact.New(b.redactExtra...)
	b.inputs.Redacted = b.redactor.Resources()
	b.secretParams = map[string]bool{}
	for _, p := range policies {
		if pk := p.Spec.ParamKind; pk != nil {
			if gv, err := schema.ParseGroupVersion(pk.APIVersion); err != nil || b.redactor.SensitiveKind(gv.Group, pk.Kind) {
				b.secretParams[p.Name] = true
			}
		}
	}
	known := map[string]bool{}
	for _, p := range policies {
		known[p.Name] = true
	}
	for _, bd := range bindings {
		if known[bd.Spec.PolicyName] {
			b.bindingsOf[bd.Spec.PolicyName] = append(b.bindingsOf[bd.Spec.PolicyName], bd.Name)
		}
	}
	for _, bs := range b.bindingsOf {
		sort.Strings(bs)
	}
	return b, nil
}

// Observer is what the replay must be given (replay.WithObserver) for the node timeline.
func (b *Builder) Observer() replay.Observer {
	return replay.Observer{Snapshot: b.snapshot, Prepare: prepare, Event: b.event}
}

// Sink returns the sink of the replay: it adds every Record to the report, then hands it to
// next, when not nil.
func (b *Builder) Sink(next func(*replay.Record) error) func(*replay.Record) error {
	return func(r *replay.Record) error {
		b.record(r)
		if next != nil {
			return next(r)
		}
		return nil
	}
}

func (b *Builder) lane(name string) *lane {
	l := b.lanes[name]
	if l == nil {
		l = newLane(name)
		b.lanes[name] = l
	}
	return l
}

// snapshot takes the Nodes and the Pods' nodes of the snapshot.
func (b *Builder) snapshot(u *unstructured.Unstructured) {
	switch {
	case u.GetKind() == "Node" && u.GetAPIVersion() == "v1":
		raw, err := u.MarshalJSON()
		if err != nil {
			return
		}
		if n := decodeNode(raw); n != nil {
			b.lane(n.Metadata.Name).set(n, beforeLog)
		}
	case u.GetKind() == "Pod" && u.GetAPIVersion() == "v1":
		node, _, _ := unstructured.NestedString(u.Object, "spec", "nodeName")
		if node != "" {
			b.podNode[u.GetNamespace()+"/"+u.GetName()] = node
		}
	}
}

// event follows the log: the span, node writes, the pods' nodes, and deletions and
// evictions of pods.
func (b *Builder) event(file string, line int, ev *replay.Event, p any) {
	t, ok := parseMs(ev.StageTimestamp)
	if !ok {
		return
	}
	if !b.timed || t < b.first {
		b.first = t
	}
	if !b.timed || t > b.last {
		b.last = t
	}
	b.timed = true
	ref := ev.ObjectRef
	if ref == nil || ref.APIGroup != "" {
		return
	}
	pr, _ := p.(*prepared)
	code := ev.Code()
	ok = code >= 200 && code < 300
	switch ref.Resource {
	case "nodes":
		switch {
		case pr != nil && pr.node != nil:
			l := b.lane(pr.node.Metadata.Name)
			l.set(pr.node, t)
			l.inLog = true
		case ok && ev.Verb == "delete" && ref.Subresource == "" && ref.Name != "":
			if l := b.lanes[ref.Name]; l != nil {
				l.remove(t)
			}
		}
	case "pods":
		key := ref.Namespace + "/" + ref.Name
		if pr != nil && pr.hasNode {
			b.podNode[key] = pr.podNode
		}
		kind := ""
		switch {
		case ev.Verb == "delete" && ref.Subresource == "" && ref.Name != "":
			kind = "delete"
		case ev.Verb == "create" && ref.Subresource == "eviction":
			kind = "evict"
		default:
			return
		}
		pm := &pendingMarker{key: recordKey(file, line), t: t, node: b.podNode[key], group: requesterGroup(ev.Requester().Username, ref.Subresource), kind: kind}
		b.pending[pm.key] = pm
		b.queue = append(b.queue, pm)
	}
}

func recordKey(file string, line int) string { return file + "\x00" + strconv.Itoa(line) }

// settle marks the pending markers before pm, which no Record followed (no policy matched
// them), and pm with the outcome of its Record.
func (b *Builder) settle(pm *pendingMarker, outcome string) {
	for len(b.queue) > 0 {
		head := b.queue[0]
		b.queue[0] = nil
		b.queue = b.queue[1:]
		delete(b.pending, head.key)
		if head == pm {
			b.lane(pm.node).mark(pm.t, pm.group, pm.kind, outcome)
			return
		}
		b.lane(head.node).mark(head.t, head.group, head.kind, "none")
	}
}

// record adds a Record: the decision counts, the markers, the table.
func (b *Builder) record(r *replay.Record) {
	t, ok := parseMs(r.StageTimestamp)
	if !ok {
		t = b.last
	}
	sec := floorDiv(t, 1000)
	outs := b.bindingOutcomes(r)
	outcome := strongest(r, outs)

	all := b.all[sec]
	if all == nil {
		all = &[3]int64{}
		b.all[sec] = all
	}
	switch r.Decision {
	case replay.DecisionAdmit:
		all[0]++
	case replay.DecisionDeny:
		all[1]++
	default:
		all[2]++
	}
	for _, o := range outs {
		k := bindingKey{o.Policy, o.Binding}
		if r.Changed {
			b.changedBy[k]++
		}
		i := seriesIndex(strongestOf(o.Outcomes))
		if i < 0 {
			continue
		}
		s := b.series[k]
		if s == nil {
			s = map[int64]*[5]int64{}
			b.series[k] = s
		}
		c := s[sec]
		if c == nil {
			c = &[5]int64{}
			s[sec] = c
		}
		c[i]++
	}

	node := ""
	if pm := b.pending[recordKey(r.File, r.Line)]; pm != nil {
		if pm.node == "" {
			pm.node = objectNode(r)
		}
		node = pm.node
		b.settle(pm, markerOutcome(outcome))
	} else if r.Resource == "nodes" && r.Name != "" {
		node = r.Name
		b.lane(node).mark(t, requesterGroup(r.User, r.Subresource), "write", markerOutcome(outcome))
	} else if r.Resource == "pods" {
		node = objectNode(r)
		if node == "" {
			node = b.podNode[r.Namespace+"/"+r.Name]
		}
	}
	if node != "" && outcome != replay.DecisionAdmit {
		b.lane(node).decisions++
	}
	// A likely admission whose alternative denies is a row too: the server may have denied.
	if outcome != replay.DecisionAdmit || r.Changed || len(r.Disagreements) > 0 || r.Certainty == replay.CertaintyLikely {
		b.addRow(r, t, node, outcome, outs)
	}
}

// flush marks the markers no Record followed.
func (b *Builder) flush() {
	for _, pm := range b.queue {
		b.lane(pm.node).mark(pm.t, pm.group, pm.kind, "none")
	}
	b.queue, b.pending = nil, map[string]*pendingMarker{}
}

// Outcomes, strongest first.
const (
	OutcomeDeny          = "deny"
	OutcomeIndeterminate = "indeterminate"
	OutcomeWarn          = "warn"
	OutcomeAudit         = "audit"
	OutcomeError         = "error"
	OutcomeAdmit         = "admit"
	// OutcomeNone is a marker's request that no policy matched.
	OutcomeNone = "none"
)

var outcomeOrder = []string{OutcomeDeny, OutcomeIndeterminate, OutcomeWarn, OutcomeAudit, OutcomeError, OutcomeAdmit}

func outcomeRank(o string) int {
	for i, x := range outcomeOrder {
		if x == o {
			return i
		}
	}
	return len(outcomeOrder)
}

func strongestOf(os []string) string {
	best := OutcomeAdmit
	for _, o := range os {
		if outcomeRank(o) < outcomeRank(best) {
			best = o
		}
	}
	return best
}

// strongest is a request's outcome: its decision, or the strongest action of a binding.
func strongest(r *replay.Record, outs []BindingOutcome) string {
	switch r.Decision {
	case replay.DecisionDeny:
		return OutcomeDeny
	case replay.DecisionIndeterminate:
		return OutcomeIndeterminate
	}
	best := OutcomeAdmit
	for _, o := range outs {
		if s := strongestOf(o.Outcomes); outcomeRank(s) < outcomeRank(best) {
			best = s
		}
	}
	if best == OutcomeDeny {
		best = OutcomeError // a denial the decision does not show: cannot happen but for errors ignored
	}
	return best
}

// markerOutcome is the colour of a marker: errors that admit are admits.
func markerOutcome(o string) string {
	if o == OutcomeError {
		return OutcomeAdmit
	}
	return o
}

// seriesIndex is the index of an outcome in a Series point, less one (the time); -1 for admit.
func seriesIndex(o string) int {
	switch o {
	case OutcomeDeny:
		return 0
	case OutcomeWarn:
		return 1
	case OutcomeAudit:
		return 2
	case OutcomeError:
		return 3
	case OutcomeIndeterminate:
		return 4
	}
	return -1
}

// bindingOutcomes says what each binding concerned decided: the actions of its results, or,
// for an indeterminate request, indeterminate for every binding of the policies that can
// match it.
func (b *Builder) bindingOutcomes(r *replay.Record) []BindingOutcome {
	var out []BindingOutcome
	idx := map[bindingKey]int{}
	add := func(policy, binding, outcome string) {
		k := bindingKey{policy, binding}
		i, ok := idx[k]
		if !ok {
			i = len(out)
			idx[k] = i
			out = append(out, BindingOutcome{Policy: policy, Binding: binding, Outcomes: []string{}})
		}
		for _, o := range out[i].Outcomes {
			if o == outcome {
				return
			}
		}
		if outcome != "" {
			out[i].Outcomes = append(out[i].Outcomes, outcome)
		}
	}
	if r.Decision == replay.DecisionIndeterminate {
		for _, p := range r.Policies {
			for _, bd := range b.bindingsOf[p] {
				add(p, bd, OutcomeIndeterminate)
			}
		}
		return out
	}
	for _, res := range r.Results {
		if len(res.Actions) == 0 && res.Result != "admit" {
			add(res.Policy, res.Binding, OutcomeError)
		}
		for _, a := range res.Actions {
			switch admissionregistrationv1.ValidationAction(a) {
			case admissionregistrationv1.Deny:
				add(res.Policy, res.Binding, OutcomeDeny)
			case admissionregistrationv1.Warn:
				add(res.Policy, res.Binding, OutcomeWarn)
			case admissionregistrationv1.Audit:
				add(res.Policy, res.Binding, OutcomeAudit)
			}
		}
		if res.Result == "error" {
			add(res.Policy, res.Binding, OutcomeError)
		}
	}
	if len(out) == 0 && r.Changed {
		// Admitted now, denied then: the binding that denied is every binding that can match.
		for _, p := range r.Policies {
			for _, bd := range b.bindingsOf[p] {
				add(p, bd, OutcomeAdmit)
			}
		}
	}
	for i := range out {
		sort.Slice(out[i].Outcomes, func(x, y int) bool {
			return outcomeRank(out[i].Outcomes[x]) < outcomeRank(out[i].Outcomes[y])
		})
	}
	return out
}

// objectNode is the node of a pod request's rebuilt objects.
func objectNode(r *replay.Record) string {
	for _, u := range []*unstructured.Unstructured{r.OldObject, r.Object} {
		if u == nil || u.GetKind() != "Pod" {
			continue
		}
		if n, _, _ := unstructured.NestedString(u.Object, "spec", "nodeName"); n != "" {
			return n
		}
	}
	return ""
}

// parseMs reads an audit timestamp as Unix milliseconds.
func parseMs(s string) (int64, bool) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return 0, false
	}
	return t.UnixMilli(), true
}

// Data builds the report's data from what the Builder gathered and the replay's Summary,
// once the replay is done. It is called once.
func (b *Builder) Data(sum *replay.Summary) *Data {
	b.flush()
	d := &Data{Version: DataVersion, Verdict: sum.Verdict, Inputs: b.inputs, Notes: sum.Notes}
	d.Inputs.Logs = sum.Files
	d.Inputs.Bytes = sum.Bytes
	// Times are from the second of the first request: the per-second counts fall in whole
	// buckets.
	start, end := floorDiv(b.first, 1000)*1000, b.last
	if !b.timed {
		start, end = 0, 0
	}
	bucket := chooseBucket(end - start)
	d.Span = Span{Ms: end - start, Bucket: bucket}
	if b.timed {
		d.Span.Start = time.UnixMilli(start).UTC().Format(time.RFC3339Nano)
		d.Span.End = time.UnixMilli(end).UTC().Format(time.RFC3339Nano)
	}
	d.Totals = totals(sum)
	d.Policies = b.policySummaries(sum)
	d.Nodes = b.nodes(start, end, bucket)
	d.Decisions = b.decisions(start, bucket)
	for i := range b.rows {
		b.rows[i].T = max(0, b.rows[i].T-start)
	}
	d.Requests = Requests{Rows: b.rows, Total: b.total, LeftOut: b.total - len(b.rows), LeftOutBy: b.leftOutBy, ObjectsLeftOut: b.objectsLeftOut}
	if d.Requests.Rows == nil {
		d.Requests.Rows = []Row{}
	}
	if len(d.Requests.LeftOutBy) == 0 {
		d.Requests.LeftOutBy = nil
	}
	d.Lines = lineIssues(sum)
	return d
}

func totals(sum *replay.Summary) Totals {
	t := Totals{
		Lines: sum.Lines, Blank: sum.Blank, Duplicates: sum.Duplicates, IntermediateStages: sum.IntermediateStages, Malformed: sum.MalformedCount,
		Requests: sum.Requests, NotMatched: sum.NotMatched, Evaluated: sum.Evaluated,
		Admit: sum.Admit, Deny: sum.Deny, Warn: sum.Warn, Audit: sum.Audit, Changed: sum.Changed,
		Checked: sum.Checked, Disagreements: len(sum.Disagreements),
	}
	for _, n := range sum.Skipped {
		t.Skipped += n
	}
	for k, n := range sum.Indeterminate {
		if n > 0 {
			if t.IndeterminateBy == nil {
				t.IndeterminateBy = map[string]int{}
			}
			t.IndeterminateBy[string(k)] = n
			t.Indeterminate += n
		}
	}
	return t
}

func (b *Builder) policySummaries(sum *replay.Summary) []Policy {
	counts := map[bindingKey]*replay.BindingSummary{}
	for _, bs := range sum.Bindings {
		counts[bindingKey{bs.Policy, bs.Binding}] = bs
	}
	byName := map[string]*admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
	for _, bd := range b.bindings {
		byName[bd.Name] = bd
	}
	out := []Policy{}
	ps := append([]*admissionregistrationv1.ValidatingAdmissionPolicy(nil), b.policies...)
	sort.Slice(ps, func(i, j int) bool { return ps[i].Name < ps[j].Name })
	for _, p := range ps {
		pol := Policy{Name: p.Name, Bindings: []Binding{}}
		if p.Spec.FailurePolicy != nil {
			pol.FailurePolicy = string(*p.Spec.FailurePolicy)
		}
		if pk := p.Spec.ParamKind; pk != nil {
			pol.ParamKind = pk.APIVersion + " " + pk.Kind
		}
		for _, name := range b.bindingsOf[p.Name] {
			bd := byName[name]
			row := Binding{Name: name, Actions: []string{}, Changed: b.changedBy[bindingKey{p.Name, name}]}
			if bd != nil {
				for _, a := range bd.Spec.ValidationActions {
					row.Actions = append(row.Actions, string(a))
				}
				row.Param = paramRef(bd)
			}
			if c := counts[bindingKey{p.Name, name}]; c != nil {
				row.Admit, row.Deny, row.Warn, row.Audit, row.Error, row.Indeterminate = c.Admit, c.Deny, c.Warn, c.Audit, c.Error, c.Indeterminate
			}
			pol.Bindings = append(pol.Bindings, row)
		}
		out = append(out, pol)
	}
	return out
}

// paramRef describes a binding's paramRef.
func paramRef(bd *admissionregistrationv1.ValidatingAdmissionPolicyBinding) string {
	pr := bd.Spec.ParamRef
	if pr == nil {
		return ""
	}
	var parts []string
	if pr.Name != "" {
		parts = append(parts, "name "+pr.Name)
	}
	if pr.Namespace != "" {
		parts = append(parts, "namespace "+pr.Namespace)
	}
	if sel := pr.Selector; sel != nil {
		var terms []string
		for _, k := range sortedKeys(sel.MatchLabels) {
			terms = append(terms, k+"="+sel.MatchLabels[k])
		}
		for _, e := range sel.MatchExpressions {
			terms = append(terms, fmt.Sprintf("%s %s (%s)", e.Key, strings.ToLower(string(e.Operator)), strings.Join(e.Values, ", ")))
		}
		parts = append(parts, "selector "+strings.Join(terms, ", "))
	}
	if pr.ParameterNotFoundAction != nil {
		parts = append(parts, "not found: "+string(*pr.ParameterNotFoundAction))
	}
	return strings.Join(parts, "; ")
}

func lineIssues(sum *replay.Summary) LineIssues {
	li := LineIssues{Skipped: counts(sum.Skipped), Malformed: []Malformed{}, Incomplete: counts(sum.Incomplete)}
	for _, m := range sum.Malformed {
		li.Malformed = append(li.Malformed, Malformed{File: m.File, Line: m.Line, Reason: m.Reason})
	}
	if len(li.Incomplete) == 0 {
		li.Incomplete = nil
	}
	return li
}

func counts(m map[string]int) []Count {
	out := []Count{}
	for k, n := range m {
		if n > 0 {
			out = append(out, Count{Reason: k, N: n})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].N != out[j].N {
			return out[i].N > out[j].N
		}
		return out[i].Reason < out[j].Reason
	})
	return out
}
