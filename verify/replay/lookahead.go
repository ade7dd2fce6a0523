package replay

import (
	"fmt"
	"slices"
	"time"

	"k8s.io/apiserver/pkg/admission"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// The log records a request when its response completes. A write received before another
// request to its object completed, and logged after it, ran concurrently with it: the earlier
// logged request may have read the object as that write left it, which the State does not hold
// yet when the request is evaluated (a DELETE by the garbage collector logged just before the
// job controller's patch it raced with). The replay keeps the jobs that read a stored object
// for lookahead of log time after they completed before it accounts for them, and evaluates
// one again, without the old object, when such a write shows up (reviseConcurrent).
const lookahead = time.Second

// track registers a job that read the stored object of its request, for reviseConcurrent.
func (e *evaluation) track(j *job) {
	if j.completed.IsZero() {
		return
	}
	if e.byKey == nil {
		e.byKey = map[replacedKey][]*job{}
	}
	e.byKey[j.key] = append(e.byKey[j.key], j)
	j.tracked = true
}

// untrack forgets a job as it is accounted for.
func (e *evaluation) untrack(j *job) {
	if !j.tracked {
		return
	}
	js := slices.DeleteFunc(e.byKey[j.key], func(o *job) bool { return o == j })
	if len(js) == 0 {
		delete(e.byKey, j.key)
	} else {
		e.byKey[j.key] = js
	}
}

// holds says whether the job must wait before it is accounted for: a write logged later may
// yet turn out to have run concurrently with it.
func (e *evaluation) holds(j *job, logTime time.Time) bool {
	return j.tracked && logTime.Sub(j.completed) < lookahead
}

// reviseConcurrent evaluates again, without their old object, the requests waiting to be
// accounted for that the write of ev (a successful one, at src) ran concurrently with: received
// before they completed, logged after them.
func (r *Replayer) reviseConcurrent(ev *Event, t target, src string) {
	e := r.running
	if len(e.byKey) == 0 || t.name == "" || t.connect || isDryRun(ev) || ev.Code() < 200 || ev.Code() >= 300 || ev.Verb == "deletecollection" {
		return
	}
	// A create matters to what a deletecollection listed only: an object a request read existed.
	create := t.op == admission.Create && t.sub == ""
	received := ev.Received()
	if received.IsZero() {
		return
	}
	gr := t.gvr.GroupResource()
	var js []*job
	for _, k := range []replacedKey{{gr, objectKey{t.namespace, t.name}}, {gr, objectKey{namespace: t.namespace}}, {gr, objectKey{}}} {
		js = append(js, e.byKey[k]...)
	}
	for _, j := range js {
		collection := j.ev.Verb == "deletecollection"
		if j.revised || !received.Before(j.completed) || j.ev == ev || (collection && j.list == nil) || (!collection && (create || !j.prior.found || j.prior.raw == nil)) {
			continue
		}
		<-j.done // the first evaluation
		j.revised = true
		what := "which version of the object this request read"
		if collection {
			what = "which objects this request listed"
		}
		why := fmt.Sprintf("the write at %s, which the log records after this request, was received before this request completed (%s, %s): they ran concurrently, and the log does not say %s",
			src, received.UTC().Format(time.RFC3339Nano), j.completed.UTC().Format(time.RFC3339Nano), what)
		if collection {
			j.list, j.listUnknowns, j.listUnknown = nil, nil, why
		} else {
			j.prior.raw, j.prior.unknowns, j.prior.stale, j.prior.staleUnknown, j.prior.unknown = nil, nil, nil, "", why
		}
		j.rec = j.recorded
		j.view = j.view.withStandIns(j.view.standIns)
		j.out, j.dec, j.skip, j.skipNote, j.notMatched, j.mutationRan = nil, nil, "", "", false, false
		j.done = make(chan struct{})
		e.jobs <- j
	}
}

// noteLogTime advances the log's clock to the completion of ev; it is read, and parsed, only
// while a job waits (currentLogTime).
func (r *Replayer) noteLogTime(ev *Event) {
	if ev.StageTimestamp != "" {
		r.logStamp = ev.StageTimestamp
	}
}

// currentLogTime is the log's clock: the latest completion it records so far.
func (r *Replayer) currentLogTime() time.Time {
	if r.logStamp != r.logTimeOf {
		if t := auditlog.ParseTime(r.logStamp); t.After(r.logTime) {
			r.logTime = t
		}
		r.logTimeOf = r.logStamp
	}
	return r.logTime
}
