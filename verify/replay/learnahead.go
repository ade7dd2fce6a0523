package replay

import (
	"bytes"
	"context"
	"maps"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/catalog"
	"github.com/vapc-dev/vapc/verify/replay/internal/source"
)

// A CRD the log created without its object serves a kind the replay learns at the first
// successful write of its resource (learnFromUse). A request that comes between the two, whose
// policy's paramKind that kind may be, is decided only if the replay knows whether the CRD
// served the paramKind then: the log does say, later. learnAhead reads the log ahead of the
// request for the first use of each such CRD; where the log shows no write of the CRD between
// its create (and the status writes that established it) and that use, the CRD served then
// what it served at the use, and the replay learns it from there. Where the log cannot be read
// again (standard input), or holds no use within aheadLimit of log time, the request stays
// indeterminate (param-kind-unknown).

// aheadLimit bounds how far ahead of a request, in log time, learnAhead looks for a use.
const aheadLimit = time.Hour

// aheadScan is what learnAhead needs and has done: the sources to read again, and the CRDs it
// looked for already.
type aheadScan struct {
	sources []Source
	looked  map[string]bool
}

// aheadUse is what the log ahead shows of a CRD: the first use of its resource, and the first
// write of the CRD after its create.
type aheadUse struct {
	use     *catalog.Use
	changed time.Time
}

// learnAhead learns, from the log ahead, the kinds the CRDs may serve that the catalog does not
// map for a paramKind of the policies the request matches, and returns the request's target as
// the catalog then resolves it.
func (r *Replayer) learnAhead(ctx context.Context, d decoded, ev *Event, t target) target {
	if r.cat.c.Schema() == nil || !r.cat.c.CreatedOpaque() {
		return t
	}
	policies := r.cur().scope.match(t.gvr, t.sub, t.op)
	if len(policies) == 0 {
		return t
	}
	crds := r.cat.c.Unlearned(policies)
	for name := range crds {
		if r.cat.ahead.looked[name] {
			delete(crds, name)
		}
	}
	if len(crds) == 0 {
		return t
	}
	if r.cat.ahead.looked == nil {
		r.cat.ahead.looked = map[string]bool{}
	}
	for name := range crds {
		r.cat.ahead.looked[name] = true
	}
	now := auditlog.ParseTime(ev.StageTimestamp)
	if now.IsZero() {
		return t
	}
	where := lineRef{d.file, d.num}.String()
	found := r.scanAhead(ctx, crds, now)
	learned := false
	for _, name := range slices.Sorted(maps.Keys(found)) {
		a := found[name]
		if a.use == nil || (!a.changed.IsZero() && !a.changed.After(a.use.At)) {
			continue
		}
		a.use.Ahead = where
		if r.learn(ctx, *a.use) {
			learned = true
		}
	}
	if !learned {
		return t
	}
	nt, skip := r.resolve(ev)
	if skip != "" {
		return t
	}
	return nt
}

// scanAhead reads the log again for the CRDs (by name, with the time of their create): the
// first successful write of each one's resource that shows its kind, and the first write of
// the CRD after its create other than the status writes that established it (any
// deletecollection of CRDs), up to aheadLimit after now. It reads nothing when a source cannot
// be read again.
func (r *Replayer) scanAhead(ctx context.Context, crds map[string]time.Time, now time.Time) map[string]*aheadUse {
	srcs := make([]Source, 0, len(r.cat.ahead.sources))
	for _, s := range r.cat.ahead.sources {
		if s.Reader != nil {
			return nil
		}
		s.Read = nil
		srcs = append(srcs, s)
	}
	if len(srcs) == 0 {
		return nil
	}
	out := make(map[string]*aheadUse, len(crds))
	byResource := make(map[schema.GroupResource]string, len(crds))
	for name := range crds {
		out[name] = &aheadUse{}
		byResource[catalog.ResourceOf(name)] = name
	}
	// Every event of a CRD's or its resource's names its group: the others are not decoded.
	var groups [][]byte
	for gr := range byResource {
		if !slices.ContainsFunc(groups, func(g []byte) bool { return string(g) == gr.Group }) {
			groups = append(groups, []byte(gr.Group))
		}
	}
	var lastUse time.Time
	done := func(at time.Time) bool {
		if at.Sub(now) > aheadLimit {
			return true
		}
		for _, a := range out {
			if a.use == nil {
				return false
			}
		}
		return at.Sub(lastUse) > time.Minute // the logs merged and an export's order settle within it
	}
	_ = source.Lines(ctx, srcs, r.cfg.maxLine, func(l auditlog.Line) bool {
		if l.Err != nil || l.Skip != "" || l.Duplicate {
			return true
		}
		if !slices.ContainsFunc(groups, func(g []byte) bool { return bytes.Contains(l.Data, g) }) {
			if l.Num%4096 == 0 {
				if at := stageTimeOf(l.Data); !at.IsZero() && at.Sub(now) > aheadLimit {
					return false
				}
			}
			return true
		}
		ev, err := auditlog.Decode(l.Data)
		if err != nil || !ev.Final() || ev.ObjectRef == nil {
			return true
		}
		ev.Loss = l.Loss
		at := auditlog.ParseTime(ev.StageTimestamp)
		if at.IsZero() {
			return true
		}
		if done(at) {
			return false
		}
		ref := ev.ObjectRef
		if gr := (schema.GroupResource{Group: ref.APIGroup, Resource: ref.Resource}); gr == catalog.CRDs {
			aheadCRDWrite(ev, at, crds, out)
			return true
		}
		name, ok := byResource[schema.GroupResource{Group: ref.APIGroup, Resource: ref.Resource}]
		if !ok || ref.Subresource != "" || !at.After(crds[name]) || out[name].use != nil {
			return true
		}
		t, skip := resolveIn(r.cur().resources, ev)
		if skip != "" {
			return true
		}
		if kind := kindOfUse(ev, t); kind != "" {
			out[name].use = &catalog.Use{Resource: t.gvr, Kind: kind, Namespaced: t.namespace != "", Verb: ev.Verb, File: l.File, Line: l.Num, At: at}
			if at.After(lastUse) {
				lastUse = at
			}
		}
		return true
	})
	return out
}

// aheadCRDWrite notes a write of a CRD the log shows ahead, at the time at, as a change of the
// CRDs it may be (crds, by name with their creates' times) after their creates.
func aheadCRDWrite(ev *Event, at time.Time, crds map[string]time.Time, out map[string]*aheadUse) {
	switch ev.Verb {
	case "get", "list", "watch":
		return
	}
	if code := ev.Code(); code >= 400 || isDryRun(ev) {
		return
	}
	for name, created := range crds {
		if ev.Verb != "deletecollection" && ev.ObjectRef.Name != name {
			continue
		}
		if !at.After(created) {
			continue // the create itself
		}
		if ev.ObjectRef.Subresource == "status" && ev.Verb != "delete" && at.Sub(created) < catalog.EstablishWithin {
			continue // kube-apiserver's controllers accepting its names and establishing it
		}
		if a := out[name]; a.changed.IsZero() || at.Before(a.changed) {
			a.changed = at
		}
	}
}

// stageTimeOf is the stageTimestamp of an event's JSON, found without decoding it; the zero
// time when it has none.
func stageTimeOf(data []byte) time.Time {
	const key = `"stageTimestamp":"`
	i := bytes.LastIndex(data, []byte(key))
	if i < 0 {
		return time.Time{}
	}
	v := data[i+len(key):]
	end := bytes.IndexByte(v, '"')
	if end < 0 {
		return time.Time{}
	}
	return auditlog.ParseTime(string(v[:end]))
}
