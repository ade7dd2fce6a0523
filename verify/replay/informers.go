package replay

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/decide"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// The ValidatingAdmissionPolicy plugin reads params and namespaces from informers, which the
// watch cache feeds: a write that completed moments before a request was received may not be in
// them yet, and one that completed after it was received, or that the log records after it,
// may be already. kube-apiserver runs validating admission in the store, between receiving a
// request and answering it (likelyAdmission), and its informers follow etcd within
// milliseconds: the likely state is the one the writes completed by the middle of the request's
// span give; the others are alternatives, each with what it needs. The MutatingAdmissionPolicies
// run before, as the handler has decoded the request: what only they read is likely as the
// writes completed by its receipt left it (likelyMutation).

// lagState is a state the informers may have held: the writes it undoes, and the outcome of the
// request in it, or why the replay cannot decide it there.
type lagState struct {
	undone []state.TypedWrite
	dec    *verify.Decision
	why    undecided
}

// informerLag evaluates the request again on each state kube-apiserver's informers may have held
// of the params and namespaces the evaluation read (the job's typedWrites: completed less than
// informerLag before the request was received, or after; see undoneStates), and once more on
// what those states read. It returns the decision on the likely state (every write that
// completed by likelyAdmission held, none that completed after: dec when there is none of
// those) and the alternatives, the outcome of every state that decides otherwise or
// that the replay cannot decide; when the likely state cannot be decided, why says so. The
// decision is certain when there are no alternatives. When, checking against the log, the
// verdicts the log records for policies it shows installed are those of states that agree,
// their decision is the one, certain.
//
// An informer holds its watch's events in order, each resource's its own. A namespace decides
// whether a policy applies at all, and one the informer does not hold yet is read from storage
// (the policy matcher's GetNamespace, "in case of latency in our caches"): a namespace's create
// is never undone. A param read by name falls back to storage too (CollectParams): its create,
// completed before the request was received, is not undone when no list or admission plugin
// read it.
func (r *Replayer) informerLag(w evalWorker, j *job, dec *verify.Decision, evaluateOn evaluateOn) (*verify.Decision, []Alternative, undecided) {
	if alt, ok := j.unknownRead(j.view); ok {
		j.lag.readBy = []*state.StateView{j.view}
		switch {
		case j.ev.Loss.Lost.Has(auditlog.LostReceived) && j.ev.Received().IsZero():
			// A long-running request whose receipt its export lost (an exec, logged as its
			// session ends): no state of the informers is likely (lagWorlds).
			return dec, []Alternative{alt}, because(alt.Reason, alt.Detail+": its export does not give when this long-running request was received, which kube-apiserver's --request-timeout does not bound")
		case j.lostAfterAdmission(j.view):
			// The state the log's order gives holds a write that completed after the
			// request's likely admission (an exec admitted as it began, logged as it
			// ended), which the likely state does not, and the replay no longer has it.
			return dec, []Alternative{alt}, because(alt.Reason, alt.Detail+": one that completed after this request's likely admission, which the state the replay decides on holds")
		}
		return dec, []Alternative{alt}, undecided{}
	}
	if len(j.lag.typedWrites) == 0 {
		j.lag.readBy = []*state.StateView{j.view}
		return dec, nil, undecided{}
	}
	e := r.lagStates(w, j, dec, evaluateOn)
	j.lag.readBy = e.views
	j.lag.settled = !e.cut.is() && !slices.ContainsFunc(e.states, func(st lagState) bool { return st.why.is() })
	// An audit annotation one state does not know is not known of the request (random parity
	// seed r:1562: a node's status update likely in one replay, certain in the next).
	var decs []*verify.Decision
	for _, st := range e.states {
		if st.dec != nil {
			decs = append(decs, st.dec)
		}
	}
	forgetUnknown(decs)
	worlds := r.lagWorlds(j, e)
	if len(e.taken) > 0 && allContradicted(worlds) {
		// The server was in none of them: a write concurrent with the request may have
		// landed in an informer between two of its policies' or bindings' reads (the
		// dispatcher reads each one's params as it evaluates it, in an order no log
		// records), which no state of the whole informer gives.
		_, alts, _ := settled(decide.Resolve(worlds, sameOutcome))
		j.lag.contradicted = true
		return nil, alts, laggedWrite(e.taken[0], "the log's verdicts are those of none of the states the informers may have held that the replay evaluates: one policy or binding may have read its params before the write and another after it")
	}
	res := decide.Resolve(worlds, sameOutcome)
	if res.Certainty == decide.Certain && res.Chosen != nil && !res.Chosen.Likely {
		res.Chosen.Outcome.Notes = append(res.Chosen.Outcome.Notes, "decided on params or namespaces in a state kube-apiserver's informers may have held other than the likely one: the verdicts the log records are those of that state")
	}
	return settled(res)
}

// allContradicted says whether every world is decided and the log's verdicts contradict each.
func allContradicted(worlds []world) bool {
	return len(worlds) > 1 && !slices.ContainsFunc(worlds, func(w world) bool { return !w.Decided || w.Evidence != decide.Disagrees })
}

// unknownRead says whether the views read resources a request logged later may have written
// unknown objects of, or resources whose writes around the request the State no longer
// remembers, and what the informers must have held for that to matter.
func (j *job) unknownRead(views ...*state.StateView) (Alternative, bool) {
	for _, au := range j.lag.aheadUnknown {
		if slices.ContainsFunc(views, func(v *state.StateView) bool { return v.Reads(au.gr) }) {
			return undecidedAlternative(laggedResource(au.gr, "may have had objects written by the request at "+au.by+" that the log does not show"),
				fmt.Sprintf("the %s informer had already held the write at %s, which the log records after this request but which was received before this request completed", au.gr.Resource, au.by)), true
		}
	}
	for _, gr := range j.lag.typedLost {
		if slices.ContainsFunc(views, func(v *state.StateView) bool { return v.Reads(gr) }) {
			return undecidedAlternative(laggedResource(gr, "more of its writes completed around this request than the replay remembers"),
				fmt.Sprintf("the %s informer had not yet held writes that completed moments before this request was received", gr.Resource)), true
		}
	}
	return Alternative{}, false
}

// lostAfterAdmission says whether the view reads a resource of which the State no longer
// remembers a write that completed after the request's likely admission (lostLate).
func (j *job) lostAfterAdmission(v *state.StateView) bool {
	return slices.ContainsFunc(j.lag.lostLate, v.Reads)
}

// relevantWrite says whether the informers' not yet holding the write tw matters to a request
// received at received whose evaluations read through views.
func relevantWrite(tw *state.TypedWrite, received time.Time, views ...*state.StateView) bool {
	if tw.Created && !tw.Ahead {
		if tw.GR == state.NamespacesGR {
			return false
		}
		// A param created before the request was received and read by name only: an
		// informer that did not hold it yet left CollectParams to read it from storage.
		if tw.Done.Before(received) && !slices.ContainsFunc(views, func(v *state.StateView) bool { return v.ReadOtherThanByName(tw) }) {
			return false
		}
	}
	return slices.ContainsFunc(views, func(v *state.StateView) bool { return v.Read(tw) })
}

// lagEvaluation is the states informerLag evaluated: each with its outcome (the job's own
// first), the writes they undo (taken), the views they read through, and why not every state
// was evaluated (cut): they are more than the replay evaluates, or what a state reads depends
// on yet more writes.
type lagEvaluation struct {
	states []lagState
	taken  []state.TypedWrite
	views  []*state.StateView
	cut    undecided
}

// lagStates evaluates the request on the states of the writes it read, in rounds: those the
// job's own evaluation read, then those the states of the first round read, and so on.
func (r *Replayer) lagStates(w evalWorker, j *job, dec *verify.Decision, evaluateOn evaluateOn) lagEvaluation {
	received := j.ev.Received()
	e := lagEvaluation{views: []*state.StateView{j.view}, states: []lagState{{dec: dec}}}
	isTaken := make([]bool, len(j.lag.typedWrites))
	for round := 0; ; round++ {
		var more []state.TypedWrite
		for i := range j.lag.typedWrites {
			if tw := &j.lag.typedWrites[i]; !isTaken[i] && relevantWrite(tw, received, e.views...) {
				isTaken[i] = true
				more = append(more, *tw)
			}
		}
		if len(more) == 0 {
			return e
		}
		e.taken = append(e.taken, more...)
		if round == 2 {
			e.cut = laggedWrite(more[0], "what it read of the params and namespaces depends on which of their writes the informers held")
			return e
		}
		undone, ok := undoneStates(e.taken)
		if !ok {
			e.cut = laggedWrite(e.taken[0], "the informers may have held more states of the params and namespaces it read than the replay evaluates")
			return e
		}
		for _, u := range undone {
			if !slices.ContainsFunc(u, func(tw state.TypedWrite) bool {
				return slices.ContainsFunc(more, func(m state.TypedWrite) bool { return m.Same(tw) })
			}) {
				continue // evaluated in an earlier round
			}
			st, v := r.lagState(w, j, u, evaluateOn)
			if v != nil {
				e.views = append(e.views, v)
			}
			e.states = append(e.states, st)
		}
	}
}

// lagState evaluates the request on the state that undoes the writes u, and returns the view
// it read through when it decided.
func (r *Replayer) lagState(w evalWorker, j *job, u []state.TypedWrite, evaluateOn evaluateOn) (lagState, *state.StateView) {
	st := lagState{undone: u}
	if why := r.unknownBefore(j, u); why.is() {
		st.why = why
		return st, nil
	}
	v := j.view.Before(u)
	alt, err := evaluateOn(w.eval, v)
	switch {
	case err != nil:
		st.why = undecidedOf(err)
	case len(v.Misses()) > 0:
		st.why = laggedWrite(u[0], u[0].Version()+" is not known: "+state.MissText(v.Misses()))
	default:
		if why := r.dependsOnPartial(j.policies, v.Partials, alt); why.is() {
			st.why = why
			return st, nil
		}
		st.dec = alt
		return st, v
	}
	return st, nil
}

// lagWorlds are the worlds of the states evaluated: the likely one undoes the writes that
// completed after likelyAdmission; the log's verdicts are evidence where they can be.
func (r *Replayer) lagWorlds(j *job, e lagEvaluation) []world {
	received := receivedOf(j.ev)
	admitted, mutated := likelyAdmission(j.ev, j.t), likelyMutation(j.ev)
	var concurrent []state.TypedWrite
	var either *state.TypedWrite // a write that completed either before admission or after
	eitherWhy := "its export gives when it completed only within the second before the time it gives"
	var between *state.TypedWrite // one the mutating policies likely read before, validating admission after
	for _, tw := range e.taken {
		at := admitted
		if early, late := readWhen(&tw, e.views); early {
			if late && !tw.Ahead && tw.Done.After(mutated) && !tw.Done.After(admitted) && between == nil {
				between = &tw
			}
			at = mutated
		}
		if !tw.Ahead && !at.IsZero() && tw.Done.After(at) {
			concurrent = append(concurrent, tw)
		}
		if tw.Second && !at.IsZero() && tw.Done.After(at) && !tw.Done.Add(-time.Second).After(at) && either == nil {
			either = &tw
		}
	}
	if either == nil && j.ev.Loss.Lost.Has(auditlog.LostReceived) && !admitted.IsZero() {
		// The export lost when the request was received (GKE): likelyAdmission is when it
		// completed, and a write that completed moments before (admissionMayFollow) may have
		// completed after its admission as well as before. (A long-running one, received at a
		// time not known, has no writes taken: its reads are lost, informerLag.)
		for _, tw := range e.taken {
			if !tw.Ahead && !tw.Done.After(admitted) && admitted.Sub(tw.Done) < admissionMayFollow {
				either, eitherWhy = &tw, "its export does not give when this request was received, and the write completed "+admitted.Sub(tw.Done).String()+" before it completed"
				break
			}
		}
	}
	worlds := make([]world, 0, len(e.states)+2)
	hasLikely := false
	for _, st := range e.states {
		w := world{If: lagCondition(st.undone, concurrent, received), Likely: sameWrites(st.undone, concurrent)}
		hasLikely = hasLikely || w.Likely
		if st.why.is() {
			w.Undecided = &indeterminateError{st.why}
		} else {
			w.Outcome, w.Decided, w.Evidence = st.dec, true, j.evidenceOf(st.dec)
		}
		worlds = append(worlds, w)
	}
	if either == nil && between != nil && !validatedAlike(worlds) {
		// The likely state is the mutating policies' (the write not held yet), and
		// validating admission decides otherwise in another: the one state of the
		// informers a replay evaluates for the whole request is not the likely one for both.
		either, eitherWhy = between, "it completed after the MutatingAdmissionPolicies likely read it (as the request was received) and before validating admission likely read it, which decides otherwise with it"
	}
	if either != nil {
		// Its export gives its time within a second, which holds the request's admission:
		// the log's order does not say which state is likely.
		for i := range worlds {
			worlds[i].Likely = false
		}
		hasLikely = true
		worlds = append(worlds, world{Likely: true, Undecided: &indeterminateError{laggedWrite(*either, "whether the write at "+either.By+" completed before this request's admission: "+eitherWhy)}})
	}
	switch {
	case !hasLikely && e.cut.is():
		worlds = append(worlds, world{Likely: true, Undecided: &indeterminateError{e.cut}})
	case !hasLikely:
		worlds = append(worlds, world{Likely: true, Undecided: &indeterminateError{laggedWrite(concurrent[0], "the state the informers likely held is not evaluated")}})
	case e.cut.is():
		worlds = append(worlds, world{If: "the informers held other states of the params and namespaces it read", Undecided: &indeterminateError{e.cut}})
	}
	if alt, ok := j.unknownRead(e.views...); ok {
		worlds = append(worlds, world{If: alt.If, Undecided: &indeterminateError{because(alt.Reason, alt.Detail)}})
	}
	return worlds
}

// likelyAdmission is when the request's validating admission likely ran: in the middle of the
// span from its receipt to its completion. kube-apiserver runs it in the store, after it has
// decoded the request, read the object it writes and run mutating admission, and before it
// writes to etcd (registry.Store's Create, the GuaranteedUpdate of Update, Delete; a patch's
// conflict retries run it again): neither as it receives the request nor as it answers.
// Where it runs it first, on receipt: a CONNECT (ConnectResource admits before it connects,
// and the log records the session's end), a pod's eviction and binding (EvictionREST and
// BindingREST admit before they read the pod). An export that lost when the request was
// received (GKE) leaves moments before it completed.
func likelyAdmission(ev *auditlog.Event, t target) time.Time {
	done := auditlog.ParseTime(ev.StageTimestamp)
	if ev.Loss.Lost.Has(auditlog.LostReceived) {
		// Received is only the earliest it may have been.
		return done
	}
	received := ev.Received()
	first := t.op == admission.Connect || t.gvr.GroupResource() == podsGR && (t.sub == "eviction" || t.sub == "binding")
	if first || received.IsZero() || !done.After(received) {
		return received
	}
	return received.Add(done.Sub(received) / 2)
}

// admissionMayFollow is how long before a request completed its admission may have run, where
// its export lost when it was received (GKE: likelyAdmission is then its completion): a write
// that completed within it may have completed after the request's admission as well as before
// (TestLagRaceWithoutReceipt: a label 0.7 ms before a DELETE that had been admitted before
// it), one that completed before it likely before, the request's admission reading it once the
// informers held it. What follows validating admission is the store's write to etcd and the
// response: the recorded logs' writes took 2 to 8 ms from receipt to completion at the median,
// 4 to 29 ms at the 90th percentile (recordings a, b, d and the cluster traffic of
// testdata/bench; 60 to 110 ms at the 99th), of which admission to completion is a part. It
// holds the calls of validating admission webhooks too, which kube-apiserver makes after the
// policies: where they are slow, a write that completed within their time before the request
// is likely one it did not read, which this takes the other way (likely, with the state
// without it an alternative).
const admissionMayFollow = 50 * time.Millisecond

// likelyMutation is when the request's mutating admission likely ran, and the
// MutatingAdmissionPolicies read their params and namespaces: as it was received. The handler
// runs it as soon as it has decoded the request (createHandler, UpdateResource's and patch's
// admit before the store's update), moments after receipt; the informers hold a write only
// after it has completed. An export that lost when the request was received (GKE) leaves when
// it completed.
func likelyMutation(ev *auditlog.Event) time.Time {
	if ev.Loss.Lost.Has(auditlog.LostReceived) {
		return auditlog.ParseTime(ev.StageTimestamp)
	}
	return ev.Received()
}

// validatedAlike says whether every world is decided, and alike but for what the
// MutatingAdmissionPolicies changed.
func validatedAlike(worlds []world) bool {
	for _, w := range worlds {
		if !w.Decided || w.Outcome == nil {
			return false
		}
		a, b := *worlds[0].Outcome, *w.Outcome
		a.Mutation, b.Mutation = nil, nil
		if !sameOutcome(&a, &b) {
			return false
		}
	}
	return true
}

// readWhen says whether the views read the object of tw through the MutatingAdmissionPolicies
// (early), and otherwise (late): see state.StateView.ReadWhen.
func readWhen(tw *state.TypedWrite, views []*state.StateView) (early, late bool) {
	for _, v := range views {
		e, l := v.ReadWhen(tw)
		early, late = early || e, late || l
	}
	return early, late
}

// world is a state kube-apiserver may have been in, and the request's decision in it (see
// package decide).
type world = decide.World[*verify.Decision]

// evidenceOf is what the verdicts the log records for the policies it shows installed say of
// the decision dec, in a state the request may have been admitted in (see check): nothing
// when the log does not show those policies ran. A first attempt on an older version of the
// object (the watch cache's copy, or the one a write that completed while the request ran
// replaced) may have published other annotations, never another response: the store runs
// admission again on the live object (GuaranteedUpdate retries on current state), answers with
// that, and the audit event keeps each annotation's first value. Then the response alone is
// evidence, and only against a state.
func (j *job) evidenceOf(dec *verify.Decision) decide.Evidence {
	switch {
	case !j.byAnnotations():
		return decide.NoEvidence
	case j.prior.OtherVersionRead():
		if len(checkResponse(j.ev, j.rec, dec, j.evidenced)) > 0 {
			return decide.Disagrees
		}
		return decide.NoEvidence
	}
	return j.verdictsOn(dec)
}

// verdictsOn is what the verdicts the log records for the policies it shows installed say of
// the decision dec (see check).
func (j *job) verdictsOn(dec *verify.Decision) decide.Evidence {
	if len(check(j.ev, j.rec, dec, j.evidenced)) == 0 {
		return decide.Agrees
	}
	return decide.Disagrees
}

// settled gives a resolution in the record's terms: the decision (nil when indeterminate), the
// alternatives, and why it is indeterminate.
func settled(res decide.Result[*verify.Decision]) (*verify.Decision, []Alternative, undecided) {
	var base *verify.Decision
	if res.Chosen != nil {
		base = res.Chosen.Outcome
	}
	var alts []Alternative
	for _, w := range res.Alternatives {
		var a Alternative
		if w.Decided {
			a = alternativeOf(base, w.Outcome, w.If)
		} else {
			a = undecidedAlternative(undecidedOf(w.Undecided), w.If)
		}
		// The states of a deletecollection's items read alike.
		if !slices.ContainsFunc(alts, func(o Alternative) bool {
			return o.Decision == a.Decision && o.Code == a.Code && o.Message == a.Message && o.Reason == a.Reason && o.Detail == a.Detail && o.If == a.If
		}) {
			alts = append(alts, a)
		}
	}
	if res.Certainty == decide.Indeterminate {
		return nil, alts, undecidedOf(res.Likely.Undecided)
	}
	return base, alts, undecided{}
}

// unknownBefore says why a state with the writes undone cannot be evaluated: a version it gives
// is not known, or not in full where a policy reads it.
func (r *Replayer) unknownBefore(j *job, undone []state.TypedWrite) undecided {
	for _, tw := range undone {
		if tw.UnknownBefore || (tw.Had && tw.Prev.Obj == nil) {
			return laggedWrite(tw, tw.Version()+" is not known")
		}
		if tw.Had && len(tw.Prev.Unknowns) > 0 {
			if why := r.dependsOnPartial(j.policies, []state.PartialUse{{GR: tw.GR, Obj: tw.Obj, Unknowns: tw.Prev.Unknowns}}, nil); why.is() {
				return laggedWrite(tw, tw.Version()+" is not known in full: "+why.detail)
			}
		}
	}
	return undecided{}
}

// sameWrites says whether a and b hold the same writes.
func sameWrites(a, b []state.TypedWrite) bool {
	if len(a) != len(b) {
		return false
	}
	for _, tw := range a {
		if !slices.ContainsFunc(b, tw.Same) {
			return false
		}
	}
	return true
}

// alternativeOf is the outcome alt of a state that decides otherwise than base, the decision
// the record gives, under the condition cond.
func alternativeOf(base, alt *verify.Decision, cond string) Alternative {
	a := Alternative{Decision: DecisionAdmit, If: cond}
	if !alt.Allowed {
		a.Decision, a.Code, a.Message = DecisionDeny, alt.Code, alt.Message
	}
	diff := "the response"
	if base != nil {
		diff = outcomeDiff(base, alt)
	}
	switch diff {
	case "authorizer checks":
		return undecidedAlternative(because(ReasonAuthorizer, "the decision in that state depends on authorizer checks, which the audit log does not answer"), cond)
	case "the response", "the refusals":
	case "the mutation":
		a.Detail = "what the MutatingAdmissionPolicies changed differs"
	default:
		a.AuditAnnotations, a.Warnings = alt.AuditAnnotations, alt.Warnings
	}
	return a
}

// undecidedAlternative is a state the replay cannot decide the request in.
func undecidedAlternative(why undecided, cond string) Alternative {
	return Alternative{Decision: DecisionIndeterminate, Reason: why.reason, Detail: why.detail, If: cond}
}

// lagCondition says what a state with the writes undone needs, against the likely state, which
// undoes the concurrent ones (completed after likelyAdmission): which informer had not
// yet held which write, or had held it already.
func lagCondition(undone, concurrent []state.TypedWrite, received state.Received) string {
	var parts []string
	seen := map[string]bool{}
	say := func(part string) {
		if !seen[part] { // a deletecollection's writes are one
			seen[part] = true
			parts = append(parts, part)
		}
	}
	at := func(tw state.TypedWrite) string {
		if tw.By != "" {
			return "the write at " + tw.By
		}
		return "a write"
	}
	for _, tw := range undone {
		switch {
		case tw.Ahead:
			say(fmt.Sprintf("the %s informer had already held %s, which the log records after this request but which was received before this request completed", tw.GR.Resource, at(tw)))
		case !slices.ContainsFunc(concurrent, tw.Same):
			say(fmt.Sprintf("the %s informer had not yet held %s, which completed %s", tw.GR.Resource, at(tw), received.Since(tw.Done)))
		}
	}
	for _, tw := range concurrent {
		if !slices.ContainsFunc(undone, tw.Same) {
			say(fmt.Sprintf("the %s informer had already held %s, which completed %s", tw.GR.Resource, at(tw), received.Since(tw.Done)))
		}
	}
	if len(parts) == 0 {
		return "the informers held the params and namespaces as the log's order gives them"
	}
	return strings.Join(parts, ", and ")
}

// maxLagStates bounds the states of params and namespaces a request is evaluated on for the
// informers' lag (see Replayer.informerLag).
const maxLagStates = 16

// undoneStates are the states the informers may have held of the writes, each the writes
// undone: every combination of the resources' states but the one where none is undone. A
// resource's informer holds its writes in the order they were committed: its states undo its
// newest requests one more at a time, and of the oldest undone request any of its writes (a
// deletecollection's deletions commit in no order the log says). A write the log records after
// the request (ahead) is "undone" into what it wrote: the states of a resource's ahead writes
// do its oldest requests one more at a time, and never go with its undone ones (an informer
// that held a later write held the earlier ones). ok is false when there are more than
// maxLagStates.
func undoneStates(writes []state.TypedWrite) (states [][]state.TypedWrite, ok bool) {
	var grs []schema.GroupResource
	by := map[schema.GroupResource][]state.TypedWrite{}
	for _, tw := range writes {
		if _, ok := by[tw.GR]; !ok {
			grs = append(grs, tw.GR)
		}
		by[tw.GR] = append(by[tw.GR], tw)
	}
	states = [][]state.TypedWrite{nil}
	for _, gr := range grs {
		var undo, ahead []state.TypedWrite
		for _, tw := range by[gr] {
			if tw.Ahead {
				ahead = append(ahead, tw)
			} else {
				undo = append(undo, tw)
			}
		}
		own := [][]state.TypedWrite{nil} // this resource's states
		for _, ws := range [][]state.TypedWrite{undo, ahead} {
			more, ok := unitStates(ws, len(ws) > 0 && ws[0].Ahead, maxLagStates+1-len(own))
			if !ok {
				return nil, false
			}
			own = append(own, more...)
		}
		var next [][]state.TypedWrite
		for _, st := range states {
			for _, o := range own {
				next = append(next, append(slices.Clip(st), o...))
			}
		}
		if len(next) > maxLagStates+1 {
			return nil, false
		}
		states = next
	}
	return states[1:], true // the first undoes nothing
}

// unitStates are the states of one resource's writes, each a request's writes in turn (newest
// first, or oldest first when ahead), with any of the last request's; at most room of them
// (ok is false beyond).
func unitStates(ws []state.TypedWrite, ahead bool, room int) (states [][]state.TypedWrite, ok bool) {
	slices.SortStableFunc(ws, func(a, b state.TypedWrite) int {
		c := b.Done.Compare(a.Done)
		if ahead {
			c = -c
		}
		if c != 0 {
			return c
		}
		return strings.Compare(state.JoinKey(a.Obj.Namespace, a.Obj.Name), state.JoinKey(b.Obj.Namespace, b.Obj.Name))
	})
	for start := 0; start < len(ws); {
		end := start + 1
		for end < len(ws) && ws[end].Done.Equal(ws[start].Done) {
			end++
		}
		unit := ws[start:end]
		if len(unit) > 4 || len(states)+(1<<len(unit))-1 > room {
			return nil, false
		}
		for mask := 1; mask < 1<<len(unit); mask++ {
			st := slices.Clip(ws[:start])
			for i, tw := range unit {
				if mask&(1<<i) != 0 {
					st = append(st, tw)
				}
			}
			states = append(states, st)
		}
		start = end
	}
	return states, true
}

// laggedWrite is why the state with the write tw undone cannot be decided: what of the
// version it gives is in the way.
func laggedWrite(tw state.TypedWrite, what string) undecided {
	return laggedResource(tw.GR, state.JoinKey(tw.Obj.Namespace, tw.Obj.Name)+": "+what)
}

// laggedResource is why a state of the informers of gr cannot be decided.
func laggedResource(gr schema.GroupResource, what string) undecided {
	return because(readReason(gr), gr.String()+" "+what)
}

// readReason is the reason of a decision that read an object of gr the State does not know: a
// namespace's, or a param's.
func readReason(gr schema.GroupResource) Reason {
	if gr == state.NamespacesGR {
		return ReasonNamespaceUnknown
	}
	return ReasonParamUnknown
}

// undecidedOf is why an error says a request is not decided: an indeterminateError's reason, or
// an error of the evaluation.
func undecidedOf(err error) undecided {
	var ind *indeterminateError
	if errors.As(err, &ind) {
		return ind.why
	}
	return because(ReasonRequest, err.Error())
}
