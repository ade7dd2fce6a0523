package replay

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/vapc-dev/vapc/verify"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// firstAttempt follows what kube-apiserver's first attempt at an update or a delete published:
// the store runs it on its watch cache's copy of the object, which may be a version before the
// State's (see watchCacheLag and clusterState.staleOf), and runs it again on the live object
// when that copy was stale. The decision is the live attempt's, the one the replay made (live);
// the audit event keeps the first value each annotation key was given, so its annotations may
// come from the older version. decideOn decides the request on one such version: nil when
// the attempt did not reach validating admission (a resourceVersion conflict, a patch that
// does not apply), which publishes nothing.
//
// When the annotations depend on the version the first attempt read, the request is
// indeterminate, unless the replay checks the log and the annotations the log recorded for the
// loaded policies are those of exactly one version: the server's own record says which.
func (r *Replayer) firstAttempt(j *job, out *Record, live *verify.Decision, decideOn func(p prior) (*verify.Decision, error)) {
	p := j.prior
	if out.Decision == DecisionIndeterminate || live == nil || (len(p.stale) == 0 && p.staleUnknown == "") {
		return
	}
	if version, _ := requestMeta(j.ev); version != "" {
		if h, err := auditlog.DecodeHeader(p.raw); err == nil && h.GetResourceVersion() == version {
			// The request asked for the live version: on an older one, the store's check of
			// the resourceVersion fails before admission, and the attempt publishes nothing.
			return
		}
	}
	type alternative struct {
		annotations map[string]string
		source      string
	}
	var alts []alternative
	why := p.staleUnknown
	for _, sp := range p.stale {
		if why != "" {
			break
		}
		if len(sp.unknowns) > 0 {
			why = fmt.Sprintf("%s holds fields the replay does not know", sp.source)
			break
		}
		dec, err := decideOn(sp)
		switch {
		case err != nil:
			why = fmt.Sprintf("on %s: %v", sp.source, err)
		case dec == nil:
			// The attempt did not reach validating admission.
		default:
			if a := firstValues(dec.AuditAnnotations, live.AuditAnnotations); !maps.Equal(a, live.AuditAnnotations) {
				alts = append(alts, alternative{annotations: a, source: sp.source})
			}
		}
	}
	if why == "" && len(alts) == 0 {
		return
	}
	if r.check && (j.rec.vapRan || j.ev.Annotations[ValidationFailureAnnotation] != "") {
		// The log records what the loaded policies published: the alternative that agrees
		// with it is what the server did.
		agrees := func(a map[string]string) bool {
			d := *live
			d.AuditAnnotations = a
			return len(check(j.ev, j.rec, &d, r.loadedPolicies)) == 0
		}
		if agrees(live.AuditAnnotations) {
			out.Notes = append(out.Notes, "the audit annotations the log records are those of the live object: kube-apiserver's first attempt did not read an older copy")
			return
		}
		for _, a := range alts {
			if why == "" && agrees(a.annotations) {
				d := *live
				d.AuditAnnotations = a.annotations
				out.AuditAnnotations = a.annotations
				out.Disagreements = check(j.ev, j.rec, &d, r.loadedPolicies)
				out.Notes = append(out.Notes, "the audit annotations the log records are those of kube-apiserver's first attempt, on its watch cache's copy of "+a.source+"; the decision is the live object's")
				return
			}
		}
	}
	if why == "" {
		var keys []string
		for _, a := range alts {
			for k, v := range a.annotations {
				if w, ok := live.AuditAnnotations[k]; !ok || w != v {
					keys = append(keys, k)
				}
			}
		}
		why = fmt.Sprintf("on %s it would have published %s otherwise", alts[0].source, strings.Join(slices.Compact(slices.Sorted(slices.Values(keys))), ", "))
	}
	out.AuditAnnotations, out.Disagreements = nil, nil
	out.indeterminate(because(ReasonWatchCache, "kube-apiserver may have admitted the request first on its watch cache's copy of an older version, and the audit annotations keep that attempt's values; "+why))
}

// firstValues are the annotations of an attempt on first followed by those of then, as the audit
// event merges them: the first value a key was given stays.
func firstValues(first, then map[string]string) map[string]string {
	out := maps.Clone(first)
	if out == nil {
		out = map[string]string{}
	}
	for k, v := range then {
		if _, ok := out[k]; !ok {
			out[k] = v
		}
	}
	if len(out) == 0 && then == nil {
		return nil
	}
	return out
}

// decideOn decides the job's request on the stored version p, as an attempt of the store on it
// would: through the request pipeline where it serves the resource, from the request's body
// otherwise (the log's response is the live attempt's result). nil when the attempt would not
// have reached validating admission.
func (r *Replayer) decideOn(ctx context.Context, w evalWorker, j *job, p prior) (*verify.Decision, error) {
	if srv, err := pipelineServer(); err == nil && srv.Serves(j.t.gvr, j.t.sub) && !j.t.reqKind.Empty() {
		return r.decideServedOn(ctx, w, j, p)
	}
	if version, _ := requestMeta(j.ev); version != "" {
		if h, err := auditlog.DecodeHeader(p.raw); err == nil && h.GetResourceVersion() != version {
			return nil, nil // a conflict, before admission
		}
	}
	ev := *j.ev
	ev.ResponseObject = nil
	b := r.rebuild(&ev, j.t, j.rec, p)
	switch {
	case b.skip != "":
		return nil, nil
	case b.indeterminate.is():
		return nil, &indeterminateError{b.indeterminate}
	}
	w.store.v = j.view
	defer func() { w.store.v = nil }()
	return w.eval.Evaluate(ctx, b.req)
}

// decideServedOn decides the job's request through the request pipeline on the stored version
// p.
func (r *Replayer) decideServedOn(ctx context.Context, w evalWorker, j *job, p prior) (*verify.Decision, error) {
	o := &jobObjects{gr: j.t.gvr.GroupResource(), namespace: j.t.namespace, name: j.t.name, prior: p}
	if j.rec.vapRan || j.rec.byWebhook {
		o.version, o.uid = fromRequest(j.ev, p.unknowns)
		o.body = updateBody(j.ev, p.unknowns)
	}
	once, err := r.serveOnce(ctx, w, j, o, w.eval, j.view)
	if err != nil {
		return nil, err
	}
	return servedDecision(j.ev.Verb, once.s), nil
}
