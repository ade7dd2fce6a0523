package replay

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apiserver/pkg/admission"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/internal/apiserver"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/decide"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// firstAttempt follows what kube-apiserver's first attempt at an update or a delete published:
// the store runs it on its watch cache's copy of the object, which may be a version before the
// State's (see watchCacheLag and state.State.staleOf), and runs it again on the live object
// when that copy was stale. The decision is the live attempt's, the one the replay made (live);
// the audit event keeps the first value each annotation key was given, and the response the
// warnings of both attempts (the warning recorder keeps each text once), so both may come from
// the older version too. decideOn decides the request on one such version: nil when the
// attempt did not reach validating admission (a patch that does not apply), which publishes
// nothing.
//
// When the annotations or warnings depend on the version the first attempt read, the live
// attempt's are likely (the watch cache holds a write moments after it completed) and the
// others alternatives, or, when the writes that stored the newer versions were all received
// after this request was, the version before them (state.Prior.FirstRead: the first attempt
// read its copy as it began, before they could have been committed); unless the replay checks the log and the annotations the log records for
// the policies it shows installed agree with one outcome only: the server's own record says
// which.
func (r *Replayer) firstAttempt(j *job, out *Record, live *verify.Decision, decideOn func(p state.Prior) (*verify.Decision, error)) {
	p := j.prior // narrowed to the version the request asked for (job.askedFor)
	if out.Decision == DecisionIndeterminate || live == nil || (len(p.Stale) == 0 && p.StaleUnknown == "") {
		return
	}
	why := p.StaleUnknown
	if r.olderVersionUnread(j, live) {
		// No policy read what an older version would have changed (the old object, a
		// patch's object, a delete's options), or each was skipped by a matchCondition that
		// reads none of it: the first attempt published what the live one did, whichever
		// version it read, known or not, and none is sent through the pipeline again (a
		// kubelet's DELETE of its pod, which a policy's matchCondition on the user skips,
		// read an older version for every status patch it raced).
		return
	}
	// The outcomes the response and the audit event may show: the live attempt's alone, or
	// after a first one on an older version.
	liveWarnings := warningSet(live.Warnings)
	outcomes := []attemptOutcome{{annotations: live.AuditAnnotations, warnings: liveWarnings, of: []*verify.Decision{live}}}
	for _, sp := range p.Stale {
		if why != "" {
			break
		}
		if r.decidedAlike(j, sp) {
			continue // it publishes what the live attempt does
		}
		dec, err := decideOn(sp)
		switch {
		case err != nil:
			why = fmt.Sprintf("on %s: %v", sp.Source, err)
		case dec != nil:
			o := attemptOutcome{
				annotations: addAnnotations(addAnnotations(nil, dec.AuditAnnotations), live.AuditAnnotations),
				warnings:    warningSet(append(slices.Clone(live.Warnings), dec.Warnings...)),
				version:     sp.Source,
				of:          []*verify.Decision{dec, live},
			}
			if !sameAttempt(o, outcomes[0]) {
				outcomes = append(outcomes, o)
			}
		}
	}
	if why == "" && len(outcomes) == 1 {
		return
	}
	// The worlds: the live attempt's annotations and warnings, likely (the watch cache holds a
	// write moments after it completed), and each older version's. The log records what the
	// policies it shows installed published (not the warnings): its annotations choose when
	// every version is known, and rule out those they contradict.
	evidence := j.byAnnotations()
	likely := likelyAttempt(p, outcomes)
	var worlds []decide.World[attemptOutcome]
	for i, o := range outcomes {
		w := decide.World[attemptOutcome]{Outcome: o, Decided: true, Likely: i == likely, If: "kube-apiserver's first attempt read its watch cache's copy of " + o.version}
		if o.version == "" {
			w.If = "kube-apiserver's first attempt read the version the log's order gives (" + p.Source + ")"
		}
		if evidence {
			w.Evidence = decide.Disagrees
			if len(checkAnnotations(j.ev, o.annotations, live, j.evidenced)) == 0 {
				w.Evidence = decide.Agrees
			}
		}
		worlds = append(worlds, w)
	}
	if why != "" {
		worlds = append(worlds, decide.World[attemptOutcome]{If: "kube-apiserver's first attempt read its watch cache's copy of an older version", Undecided: &indeterminateError{because(ReasonWatchCache, why)}})
	}
	agrees := func(w decide.World[attemptOutcome]) bool { return w.Evidence == decide.Agrees }
	if evidence && why == "" && !slices.ContainsFunc(worlds, agrees) && lagAgrees(j, out, live) {
		return
	}
	res := decide.Resolve(worlds, sameAttempt)
	if res.Certainty == decide.Indeterminate {
		// The log's annotations are not the live attempt's, and the first attempt's are not
		// known: neither is what the request published.
		out.indeterminate(undecidedOf(res.Likely.Undecided))
		return
	}
	if res.Certainty == decide.Certain || res.Chosen != &worlds[0] {
		o := res.Chosen.Outcome
		d := *live
		d.AuditAnnotations = o.annotations
		out.AuditAnnotations, out.Warnings = o.annotations, o.warnings
		out.Disagreements = check(j.ev, j.rec, &d, j.evidenced)
		j.result.dec = &d // what the request published, for the worlds a concurrent write gives (likelyOutcome)
		what := "the live object: kube-apiserver's first attempt did not read an older copy"
		if o.version != "" {
			j.result.firstAnnotations = o.annotations
			out.AnnotationsSource = "kube-apiserver's first attempt, on its watch cache's copy of " + o.version
			what = out.AnnotationsSource + "; the decision is the live object's"
		}
		if res.Certainty == decide.Certain {
			out.Notes = append(out.Notes, "the audit annotations the log records are those of "+what)
		} else {
			out.Notes = append(out.Notes, "the audit annotations are likely those of "+what+": the writes that stored the newer versions were received after this request")
		}
		if res.Certainty == decide.Certain {
			return
		}
	}
	out.likely(publishedAlternatives(out, res.Alternatives)...)
}

// likelyAttempt is which of the outcomes is likely: the live attempt's (the first), unless the
// writes that stored the newer versions were all received after this request was
// (state.Prior.FirstRead): it read its copy before they could have been committed, and that
// version's outcome is likely (the live one's where that version publishes the same).
func likelyAttempt(p state.Prior, outcomes []attemptOutcome) int {
	if p.FirstRead == 0 || p.FirstRead > len(p.Stale) {
		return 0
	}
	read := p.Stale[p.FirstRead-1].Source
	for i, o := range outcomes {
		if o.version == read {
			return i
		}
	}
	return 0
}

// staleAttemptUnknowns are what a first attempt on an older version of the object, not known
// (why), read otherwise than the live attempt: the old object; an update's object, which takes
// fields of the version it read (a patch applied to it; an unconditional update's
// resourceVersion, a status the strategy keeps, the rest of a subresource's update); a
// DELETE's options (a pod's grace period defaults from the stored pod).
func staleAttemptUnknowns(j *job, why string) []vapccel.Unknown {
	us := []vapccel.Unknown{{Path: vapccel.FieldPath{Root: "oldObject"}, Why: why}}
	switch j.t.op {
	case admission.Update:
		us = append(us, vapccel.Unknown{Path: vapccel.FieldPath{Root: "object"}, Why: why})
	case admission.Delete:
		us = append(us, vapccel.Unknown{Path: vapccel.FieldPath{Root: "request", Steps: []string{"options"}}, Why: why})
	}
	return us
}

// olderVersionUnread says whether the decision shows that no policy the request matched read
// what another version of its object would change (staleAttemptUnknowns), or that a
// matchCondition that reads none of it skipped each (dependsOnUnknown): the request is decided
// alike on every version.
func (r *Replayer) olderVersionUnread(j *job, dec *verify.Decision) bool {
	return dec != nil && !r.dependsOnUnknown(j, []admitted{{dec: dec, unknowns: staleAttemptUnknowns(j, "another version")}}).is()
}

// attemptOutcome is what a request's response and audit event may show of its admission: the
// live attempt's, or what a first attempt on an older version published before it.
type attemptOutcome struct {
	annotations map[string]string
	warnings    []string // sorted, each once
	version     string   // where the first attempt's version came from; "" for the live one
	// of are the decisions whose annotations and warnings it holds (sameAttempt).
	of []*verify.Decision
}

// sameAttempt says whether two attempts publish the same annotations and warnings, whatever
// order CEL listed a map's keys in where a message or an annotation's value lists them (see
// sameOutcome).
func sameAttempt(a, b attemptOutcome) bool {
	of := slices.Concat(a.of, b.of)
	c := inOrderOfChance(of...)
	if !sameAnnotations(a.annotations, b.annotations, c, c, of...) || len(a.warnings) != len(b.warnings) {
		return false
	}
	wa, wb := make([]string, len(a.warnings)), make([]string, len(b.warnings))
	for i := range a.warnings {
		wa[i], wb[i] = c(a.warnings[i]), c(b.warnings[i])
	}
	slices.Sort(wa)
	slices.Sort(wb)
	return slices.Equal(wa, wb)
}

// lagAgrees settles a request whose log's annotations are neither the live attempt's on the
// state the log's order gives nor any older copy's, but those of the live attempt on another
// state the informers may have held, which informerLag evaluated (an alternative of the
// record; it weighs no evidence when an older copy may have been read): as informerLag does
// when none may have, the log's verdicts choose that state, unless a state the replay could
// not decide may be theirs. It says whether it settled the request.
func lagAgrees(j *job, out *Record, live *verify.Decision) bool {
	if slices.ContainsFunc(out.Alternatives, func(a Alternative) bool { return a.Decision == DecisionIndeterminate }) {
		return false
	}
	for _, a := range out.Alternatives {
		if a.Decision != out.Decision || a.Code != out.Code || a.Message != out.Message || a.AuditAnnotations == nil ||
			len(checkAnnotations(j.ev, a.AuditAnnotations, live, j.evidenced)) != 0 {
			continue
		}
		d := *live
		d.AuditAnnotations, d.Warnings = a.AuditAnnotations, a.Warnings
		out.AuditAnnotations, out.Warnings = a.AuditAnnotations, a.Warnings
		out.Disagreements = check(j.ev, j.rec, &d, j.evidenced)
		out.AnnotationsSource = "the live object in a state kube-apiserver's informers may have held (" + a.If + ")"
		out.Notes = append(out.Notes, "the audit annotations the log records are those of "+out.AnnotationsSource+", not of the likely one nor of an older copy")
		out.Certainty, out.Alternatives = CertaintyCertain, nil
		j.result.dec = &d
		return true
	}
	return false
}

// publishedAlternatives are the alternatives of a request whose decision is the live
// attempt's in every world: only what it published differs.
func publishedAlternatives(out *Record, worlds []decide.World[attemptOutcome]) []Alternative {
	var alts []Alternative
	for _, w := range worlds {
		if !w.Decided {
			alts = append(alts, undecidedAlternative(undecidedOf(w.Undecided), w.If))
			continue
		}
		alts = append(alts, Alternative{Decision: out.Decision, Code: out.Code, Message: out.Message,
			AuditAnnotations: w.Outcome.annotations, Warnings: w.Outcome.warnings, If: w.If})
	}
	return alts
}

// warningSet is ws sorted, each once, as the response's warning recorder keeps them.
func warningSet(ws []string) []string {
	return slices.Compact(slices.Sorted(slices.Values(ws)))
}

// decideOn decides the job's request on the stored version p, as an attempt of the store on it
// would: through the request pipeline where it serves the resource, from the request's body
// otherwise (the log's response is the live attempt's result). nil when the attempt would not
// have reached validating admission.
func (r *Replayer) decideOn(ctx context.Context, w evalWorker, j *job, p state.Prior) (*verify.Decision, error) {
	if srv, err := pipelineServer(); err == nil && srv.Serves(j.t.gvr, j.t.sub) && !j.t.reqKind.Empty() && !objectNotLogged(j.ev, j.t) {
		return r.decideServedOn(ctx, w, j, p) // (serve refuses a body an export lost)
	}
	if why := bodyLost(j.ev); why.is() {
		return nil, &indeterminateError{why}
	}
	ev := *j.ev
	ev.ResponseObject = nil
	b := r.rebuild(&ev, j.t, j.rec, p, j.facts)
	if b.skip != "" {
		return nil, nil
	}
	r.prepareCustomResource(&ev, j.t, &b)
	switch {
	case b.indeterminate.is():
		return nil, &indeterminateError{b.indeterminate}
	case b.oldUnknown.is():
		return nil, &indeterminateError{b.oldUnknown}
	}
	// What the live evaluation did not know of the request is not known on this version
	// either, nor what the replay does not know of this version and of what it rebuilt on it.
	d := rebuiltDecider{r: r, ctx: ctx, w: w, j: j, b: &b, unknowns: append(slices.Clip(j.revise.unknowns), r.rebuiltUnknowns(j, &b, p)...)}
	return d.decide(w.eval, j.view)
}

// decideServedOn decides the job's request through the request pipeline on the stored version
// p.
func (r *Replayer) decideServedOn(ctx context.Context, w evalWorker, j *job, p state.Prior) (*verify.Decision, error) {
	o := &jobObjects{gr: j.t.gvr.GroupResource(), namespace: j.t.namespace, name: j.t.name, prior: p}
	if j.rec.vapRan || j.rec.byWebhook {
		o.version, o.uid = fromRequest(j.ev, p.Unknowns)
		o.body = updateBody(j.ev, p.Unknowns)
	}
	once, err := r.serveOnce(ctx, w, j, o, w.eval, j.view, false)
	if err != nil {
		return nil, err
	}
	// What the replay does not know of this version, and what an export lost of the request
	// (exportloss.go), as the live evaluation takes them (evaluateServed).
	u := passUnknowns{prior: append(rooted(knownFrom(p.Unknowns, o.version, o.uid), j.t.op == admission.Update), requestUnknowns(j, p)...)}
	mutationUnknown := r.withUnknowns(u, &once.s, j.policies)
	if why := optionsUndecided(j, once.s); why.is() {
		return nil, &indeterminateError{why}
	}
	switch {
	case once.s.mutation.Acted() && j.result.schemaRefreshing != "":
		return nil, &indeterminateError{because(ReasonMutationUnknown, j.result.schemaRefreshing)}
	case mutationUnknown != "" && len(once.s.calls) == 0 && once.s.mutation != nil && !once.s.mutation.Allowed:
		return nil, &indeterminateError{because(ReasonMutationUnknown, "replayed on what the replay knows, a MutatingAdmissionPolicy refused the request (which the log may show refused by another), and "+mutationUnknown)}
	}
	if why := r.dependsOnUnknown(j, once.s.calls); why.is() {
		return nil, &indeterminateError{why}
	}
	return servedDecision(j.ev.Verb, once.s), nil
}

// pendingRaced decides a DELETE the store completed without admission on the version the
// State gives it, its graceful deletion pending, when the request may have read the version
// before the write that stored that one (the two ran concurrently, and the log records that
// write first: State.concurrent) and the log shows a verdict of a policy it shows installed:
// admission ran, so the request read the version before, and it is decided on that one.
func (r *Replayer) pendingRaced(ctx context.Context, w evalWorker, j *job, out *Record) {
	p := j.prior
	if j.result.skip != SkipPendingDeletion || p.RacedFrom == nil || len(j.evidenced) == 0 ||
		j.ev.Loss.Lost.Has(auditlog.LostAnnotations) || recordedVerdictOf(j.ev, j.evidenced) == "" {
		return
	}
	if p.RV == 0 || responseVersion(j.ev, j.t) != p.RV {
		// Only a response of the marked version shows the request did not end on what it
		// first read: the store validates the DELETE before it looks whether its deletion is
		// pending, and on a retry ends it answering the object it read at first
		// (updateForGracefulDeletionAndFinalizers, errAlreadyDeleting), whose verdicts may
		// then be the marked version's.
		return
	}
	dec, err := r.decideServedOn(ctx, w, j, *p.RacedFrom)
	if err != nil || dec == nil || r.unknownRead(j, dec).is() {
		return
	}
	j.result.skip, j.result.skipNote, j.result.dec = "", "", dec
	out.refill(dec)
	out.OldObjectSource = p.RacedFrom.Source
	out.Notes = append(out.Notes, "decided on the version before "+p.RacedBy+": on that one the store completes the request without admission (its graceful deletion pending), and the log shows the verdicts of an admission")
	out.Disagreements = check(j.ev, j.rec, dec, j.evidenced)
}

// goneRaced decides a request that found its object gone on the State the log's order gives,
// where the log shows a policy refused it (validating admission ran), when the deletion
// completed after the request was received (State.concurrent): the request read the object
// before the deletion committed, and is decided on the version the deletion removed, when that
// decision is the log's (random parity r:1246: a dry-run patch received before a DELETE of its
// ConfigMap completed, refused by a policy).
func (r *Replayer) goneRaced(ctx context.Context, w evalWorker, j *job, out *Record) {
	p := j.prior
	if p.RacedFrom == nil || p.Found || out.Decision != DecisionIndeterminate || out.Reason != ReasonRebuild || !j.rec.vapRan || j.rec.policy == "" {
		return
	}
	dec, err := r.decideServedOn(ctx, w, j, *p.RacedFrom)
	if err != nil || dec == nil || len(check(j.ev, j.rec, dec, j.evidenced)) > 0 || r.unknownRead(j, dec).is() {
		return
	}
	r.olderFirstAttempt(j, dec)
	j.result.dec = dec
	out.Reason, out.Indeterminate = "", ""
	out.refill(dec)
	out.OldObjectSource = p.RacedFrom.Source
	out.Notes = append(out.Notes, "decided on the version before "+p.RacedBy+": on the State the log's order gives the object is gone and the request does not reach validating admission, and the log shows a policy's verdict")
}

// conflictAfterFirstAttempt decides an update or delete kube-apiserver answered 409 Conflict,
// which the pipeline refuses before admission on the State's version, on the watch cache's copy
// of a version before it, when the request asked for that version's resourceVersion and the
// log's annotations show validating admission ran: the store's first attempt passed the
// precondition on that copy and ran admission, then found the live object changed and failed
// the precondition on it (the audit event keeps the first attempt's annotations). Without
// them the request is left refused before admission: the watch cache holds a write moments
// after it completed (as firstAttempt takes it), and real servers' logs agree (of 260 such
// conflicts in 11 of random parity's logs, each with a policy installed that annotates every
// request, 9 show admission ran, received from 5 ms before the write completed to 1.6 ms
// after, and the rest do not, from 6.5 ms before to 26 ms after). Either way the response is
// 409 Conflict: what differs is only what the attempt published. It says whether it decided
// the job.
func (r *Replayer) conflictAfterFirstAttempt(ctx context.Context, w evalWorker, j *job, out *Record) bool {
	if j.ev.Code() != http.StatusConflict || len(j.prior.Stale) == 0 || !r.ranAdmission(j.ev) {
		return false
	}
	asked := askedVersion(j.ev)
	if asked == 0 {
		return false
	}
	for _, sp := range j.prior.Stale {
		if sp.RV != asked {
			continue
		}
		dec, err := r.decideOn(ctx, w, j, sp)
		if err != nil {
			out.indeterminate(undecidedOf(err))
			out.OldObjectSource = sp.Source
			out.Notes = append(out.Notes, "kube-apiserver's first attempt ran admission on its watch cache's copy of "+sp.Source+" before the request failed with 409 Conflict")
			return true
		}
		if dec == nil || !dec.Allowed {
			// An attempt refused on that copy is retried on the live object, which fails the
			// precondition (etcd3's GuaranteedUpdate answers a stale attempt's error only when
			// the copy was current): 409 Conflict either way, and the response shows no
			// decision. The live attempt is refused before admission; the note says what
			// the first one did.
			if dec != nil {
				j.rec.note = "the live attempt failed its resourceVersion precondition; the first, on kube-apiserver's watch cache copy of " + sp.Source + ", was refused by validating admission (the log's annotations show it ran), and the store ran the request again"
			}
			return false
		}
		if why := r.unknownRead(j, dec); why.is() {
			out.indeterminate(why)
			out.OldObjectSource = sp.Source
			out.Notes = append(out.Notes, "kube-apiserver's first attempt ran admission on its watch cache's copy of "+sp.Source+" before the request failed with 409 Conflict")
			return true
		}
		admittedOnFirstAttempt(j, out, dec, sp.Source, "Conflict (the live object had changed since the watch cache's copy admission read)",
			"its watch cache's copy of "+sp.Source+": the live object had changed, and the request failed with 409 Conflict after admission")
		return true
	}
	return false
}

// unknownRead says why a decision on another version than the live evaluation's (the first
// attempt's, a raced one's) is not known where its evaluation read a param or namespace the
// State does not know, or a field of one the State knows but for some fields, as conclude
// takes the live decision's reads (helper exAH: a 409 after admission decided on the watch
// cache's copy, certain with no annotation, where the params its binding selects held one the
// State did not know).
func (r *Replayer) unknownRead(j *job, dec *verify.Decision) undecided {
	if misses := j.view.Misses(); len(misses) > 0 {
		return because(readReason(misses[0].GR), state.MissText(misses))
	}
	return r.dependsOnPartial(j.policies, j.view.Partials, dec)
}

// admittedOnFirstAttempt records the job as decided (dec, an admission) on kube-apiserver's first
// attempt at it, on the version source names, after which the request failed (failure: why,
// as the record's note of what the log records; after: what the first attempt was on, and
// what came after it).
func admittedOnFirstAttempt(j *job, out *Record, dec *verify.Decision, source, failure, after string) {
	out.fill(dec)
	out.Recorded, out.RecordedNote, out.recordedByVAP = RecordedAdmit, "failed after validating admission: "+failure, false
	out.OldObjectSource = source
	out.Notes = append(out.Notes, "decided on kube-apiserver's first attempt, on "+after)
	if j.byAnnotations() {
		out.Disagreements = check(j.ev, recording{outcome: RecordedAdmit, vapRan: true}, dec, j.evidenced)
	}
	j.result.dec = dec
}

// ranAdmission says whether the log's annotations of the request show validating admission ran:
// a validation failure or an audit annotation of a replayed policy.
func (r *Replayer) ranAdmission(ev *Event) bool {
	for k := range ev.Annotations {
		if k == ValidationFailureAnnotation {
			return true
		}
		if p, _, ok := strings.Cut(k, "/"); ok && r.set.loadedPolicies[p] {
			return true
		}
	}
	return false
}

// staleAttemptPossible says whether an update or delete the server answered 409 Conflict on
// its own object may have had its first attempt pass the precondition on the watch cache's copy
// of a version the State knows (see conflictAfterFirstAttempt), or on the version the State
// holds, which a write the log records later replaced: it asked for the resourceVersion of a
// version a write replaced moments before it was received, or of the State's, and the log's annotations show
// validating admission ran.
func (r *Replayer) staleAttemptPossible(ev *Event, t target) bool {
	if ev.Code() != http.StatusConflict || (t.op != admission.Update && t.op != admission.Delete) || ev.Verb == "deletecollection" {
		return false
	}
	asked := askedVersion(ev)
	if asked == 0 || !r.ranAdmission(ev) {
		return false
	}
	p := r.state.PriorOf(t.gvr.GroupResource(), t.namespace, t.name, 0, receivedOf(ev), true)
	// The version the State holds, when the write that replaced it in the server is one the log
	// records later (two updates of one version, the loser's 409 logged first): the first
	// attempt passed the precondition on it, and the second failed it.
	return t.op == admission.Update && p.RV == asked && p.Raw != nil || slices.ContainsFunc(p.Stale, func(sp state.Prior) bool { return sp.RV == asked })
}

// notFoundAfterFirstAttempt decides an update or delete the server answered 404 on its own
// object, which the pipeline refuses before admission on the State (the object deleted), on
// the version its deletion removed, where the log's annotations show validating admission ran:
// the store's first attempt ran it on that version (the watch cache's copy, or a read a
// concurrent delete overtook), then found the object gone. The response is 404 either way:
// refused on that version, the request is refused before admission, its first attempt's
// refusal noted. It says whether it settled the job.
func (r *Replayer) notFoundAfterFirstAttempt(ctx context.Context, w evalWorker, j *job, out *Record) bool {
	if !notFoundItself(j.ev, j.t) || !r.ranAdmission(j.ev) {
		return false
	}
	p, ok := j.deleted.prior, j.deleted.found
	if !ok {
		return false
	}
	dec, err := r.decideOn(ctx, w, j, p)
	if err != nil {
		out.indeterminate(undecidedOf(err))
		out.OldObjectSource = p.Source
		return true
	}
	if dec == nil {
		return false
	}
	if !dec.Allowed {
		// Refused on that copy, it was run again on the live object (etcd3's GuaranteedUpdate
		// answers a stale attempt's error only when the copy was current): gone, 404, as it
		// would have been had admission admitted it. The response shows no decision: the live
		// attempt is refused before admission, the note says what the first one did.
		j.result.skip = SkipBeforeAdmission
		j.result.skipNote = "the live attempt found the object gone; the first, on kube-apiserver's watch cache copy of " + p.Source + ", was refused by validating admission (the log's annotations show it ran), and the store ran the request again"
		return true
	}
	if why := r.unknownRead(j, dec); why.is() {
		out.indeterminate(why)
		out.OldObjectSource = p.Source
		return true
	}
	r.olderFirstAttempt(j, dec)
	admittedOnFirstAttempt(j, out, dec, p.Source, "NotFound (the object was deleted since the version admission read)",
		p.Source+": the object was gone when the store wrote, and the request failed with 404 NotFound after admission")
	return true
}

// olderFirstAttempt takes out of a decision on the version a deletion removed the audit
// annotations the server's first attempt may have published from an older copy
// (State.DeletedStale): the decision is the same, what it published not known (exU: a patch
// refused on the version before a concurrent DELETE, whose annotations the log records from
// the one before that).
func (r *Replayer) olderFirstAttempt(j *job, dec *verify.Decision) {
	why := j.deleted.stale
	if why == "" {
		return
	}
	for _, full := range slices.Sorted(maps.Keys(dec.AuditAnnotations)) {
		if policy, key, ok := strings.Cut(full, "/"); ok {
			dropAnnotation(dec, policy, key, why)
		}
	}
}

// notFoundItself says whether the server answered an update or delete 404 NotFound on its own
// object.
func notFoundItself(ev *Event, t target) bool {
	return ev.Code() == http.StatusNotFound && (t.op == admission.Update || t.op == admission.Delete) && ev.Verb != "deletecollection" &&
		t.name != "" && strings.Contains(ev.Message(), `"`+t.name+`" not found`)
}

// firstAttemptUnknown says why the old object is not known of an update or delete the server
// answered 409 Conflict on its own object when the log's annotations show validating admission
// ran, on a first attempt, on a version the replay cannot send it through the pipeline on (see
// staleAttemptPossible): the version it asked for, which the State does not hold (a write
// between a snapshot and the log, one the log holds below RequestResponse), or a DELETE's (whose
// first attempt the replay does not take on the State's version: a pod's DELETE may run
// admission twice). The request reached admission: it is not one refused before it. ""
// otherwise.
func (r *Replayer) firstAttemptUnknown(ev *Event, t target) string {
	if ev.Code() != http.StatusConflict || (t.op != admission.Update && t.op != admission.Delete) || ev.Verb == "deletecollection" || isDryRun(ev) || !r.ranAdmission(ev) {
		return ""
	}
	asked := "not in the log"
	if v := askedVersion(ev); v != 0 {
		asked = strconv.FormatUint(v, 10)
	}
	return "the log's annotations show its first attempt ran validating admission before it failed with 409 Conflict, on the version of the object it asked for (resourceVersion " + asked + "), which the replay does not evaluate it on"
}

// raced settles a request that a write to its object completed after it was received, and
// before it completed (its prior's racedBy): the log's order, the version the write stored, is
// likely; on the version before it (decideOn), the request is the alternative, or certain when
// both decide alike, or when the log's verdicts are those of one of them.
func (r *Replayer) raced(j *job, out *Record, decideOn func(p state.Prior) (*verify.Decision, error)) {
	p := j.prior
	if p.RacedBy == "" || out.Decision == DecisionIndeterminate || j.result.dec == nil {
		return
	}
	cond := p.RacedBy + " had not yet been committed when this request read the object"
	alt := world{If: cond}
	switch {
	case p.RacedFrom == nil:
		alt.Undecided = &indeterminateError{because(ReasonOldObjectUnknown, "the version before that write is not known")}
	case r.decidedAlike(j, *p.RacedFrom):
		alt.Outcome, alt.Decided = j.result.dec, true
	default:
		dec, err := decideOn(*p.RacedFrom)
		switch {
		case err != nil:
			alt.Undecided = err
		case dec == nil:
			alt.Undecided = &indeterminateError{because(ReasonRebuild, "the request does not reach validating admission on the version before that write")}
		default:
			alt.Outcome, alt.Decided = dec, true
		}
	}
	// The log's order: the decision on the version the write stored, with what the request
	// published as firstAttempt settled it (its first attempt may have read the version
	// before the write from the watch cache, and the live one when it tried again).
	live := *j.result.dec
	live.AuditAnnotations, live.Warnings = out.AuditAnnotations, out.Warnings
	worlds := []world{{Likely: true, Outcome: &live, Decided: true}, alt}
	if j.result.firstAnnotations != nil && alt.Decided {
		// On the version before the write too, the first attempt may have read the older copy
		// firstAttempt found the annotations of: the audit event keeps them.
		first := *alt.Outcome
		first.AuditAnnotations = addAnnotations(addAnnotations(nil, j.result.firstAnnotations), alt.Outcome.AuditAnnotations)
		if !maps.Equal(first.AuditAnnotations, alt.Outcome.AuditAnnotations) {
			worlds = append(worlds, world{If: cond + ", and its first attempt read the older copy whose annotations the log records", Outcome: &first, Decided: true})
		}
	}
	if j.byAnnotations() {
		for i := range worlds {
			if worlds[i].Decided {
				worlds[i].Evidence = j.verdictsOn(worlds[i].Outcome)
			}
		}
	}
	res := decide.Resolve(worlds, sameOutcome)
	if res.Certainty == decide.Indeterminate {
		out.indeterminate(undecidedOf(res.Likely.Undecided))
		return
	}
	if res.Chosen != nil && res.Chosen != &worlds[0] && res.Chosen.Decided {
		// The log's verdicts are those of the version before the write.
		dec := res.Chosen.Outcome
		checked := out.Disagreements != nil
		out.refill(dec)
		out.Notes = append(out.Notes, "decided on the version before "+p.RacedBy+": the verdicts the log records are those of that version")
		if checked {
			out.Disagreements = check(j.ev, j.rec, dec, j.evidenced)
		}
		j.result.dec = dec
		return
	}
	_, alts, _ := settled(res)
	out.likely(alts...)
}

// decidedAlike says whether a DELETE is decided on the version other of its object as on the
// version the State gives it (j.prior), without serving it: the two differ only in fields that
// no policy it matched reads (cel.Reads, selectors included), or the request's decision shows
// no policy read the old object or the options at all (see dependsOnUnknown: a matchCondition
// that reads neither skipped it), and the store deletes both alike
// (what it leaves of each: kube-apiserver's delete strategy and finalizers,
// apiserver.Server.DeleteLeaves). Each admission then sees the same request, and an oldObject
// that differs only where no policy looks. A request that preconditions the resourceVersion,
// or a uid the versions do not share, is not: one version may fail it.
//
// A stored object's next version differs in its resourceVersion and managedFields, and a
// controller's writes in its status: most policies read neither, and the watch cache's and a
// race's versions (which a log that lost the received time has many of) decide as the live one.
func (r *Replayer) decidedAlike(j *job, other state.Prior) bool {
	t, gr := j.t, j.t.gvr.GroupResource()
	if t.op != admission.Delete || t.sub != "" || j.ev.Verb != "delete" || apiserver.DefaultedOnRead(gr) ||
		len(j.prior.Unknowns) > 0 || len(other.Unknowns) > 0 {
		return false
	}
	if r.olderVersionUnread(j, j.result.dec) {
		// No policy the request matched read its old object or options, or a matchCondition
		// that reads neither skipped each (a kubelet's DELETE of its pod that the guards
		// leave to the node controller): neither version is decoded, and what the store
		// leaves of each decides.
		return r.leavesAlike(j, other)
	}
	live := j.alikeLive()
	b, whyB := other.Decode()
	// In another version than the request's, a field may be converted into another (an
	// HPA's conditions into an annotation of autoscaling/v1): the fields that differ are
	// those of the request's version.
	if live.err != nil || b == nil || whyB != "" || live.u.GroupVersionKind() != t.reqKind || b.GroupVersionKind() != t.reqKind {
		return false
	}
	differ := rooted(state.Differing(live.u.Object, b.Object, nil, "differs between the versions"), true)
	if !r.noneReads(j.policies, differ) {
		return false
	}
	if pre := live.options.Preconditions; pre != nil && (pre.ResourceVersion != nil || (pre.UID != nil && live.u.GetUID() != b.GetUID())) {
		return false
	}
	leaves, err := deleteLeavesRaw(gr, other.Raw, live.options)
	return err == nil && leaves == live.leaves
}

// leavesAlike says whether the store deletes the version other of a DELETE's object as it
// deletes the State's (j.prior), for a request that preconditions neither its resourceVersion
// nor its uid (one version may fail either).
func (r *Replayer) leavesAlike(j *job, other state.Prior) bool {
	options, err := eventDeleteOptions(j.ev)
	if err != nil || options.Preconditions != nil && (options.Preconditions.ResourceVersion != nil || options.Preconditions.UID != nil) {
		return false
	}
	gr := j.t.gvr.GroupResource()
	live, err := deleteLeavesRaw(gr, j.prior.Raw, options)
	if err != nil {
		return false
	}
	leaves, err := deleteLeavesRaw(gr, other.Raw, options)
	return err == nil && leaves == live
}

// alike is what decidedAlike compares another version of a DELETE's object with: the State's
// version, decoded, the request's delete options, and what the store leaves of the version.
type alike struct {
	u       *unstructured.Unstructured
	options *metav1.DeleteOptions
	leaves  apiserver.Deletion
	err     error
}

// alikeLive is the job's alike, made once for every version it is compared with.
func (j *job) alikeLive() *alike {
	if j.alike != nil {
		return j.alike
	}
	a := &alike{}
	j.alike = a
	u, why := j.prior.Decode()
	if u == nil || why != "" {
		a.err = fmt.Errorf("the State's version: %s", cmp.Or(why, "not known"))
		return a
	}
	a.u = u
	if a.options, a.err = eventDeleteOptions(j.ev); a.err == nil {
		a.leaves, a.err = deleteLeavesRaw(j.t.gvr.GroupResource(), j.prior.Raw, a.options)
	}
	return a
}
