package replay

import (
	"bytes"
	"context"
	"maps"
	"os"
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
// served the paramKind then: the log does say, later. learnAhead reads the log's files again
// for the first use of each such CRD; where the log shows no write of the CRD between its
// create (and the status writes that established it) and that use, and no write of another CRD
// of its group (whose names may have kept it from being accepted), the CRD served then what it
// served at the use, and the replay learns it from there. Where the log cannot be read again as
// it was read (standard input, a file that is not regular or changed since), a line of it
// cannot be read, or it holds no use of the paramKind within aheadLimit of log time, the
// request stays indeterminate (param-kind-unknown).

// aheadLimit bounds how far ahead of a request, in log time, learnAhead looks for a use.
const aheadLimit = time.Hour

// aheadScan is what learnAhead needs and has done: the sources to read again, as they were
// when the replay began (files), and the paramKinds it looked for already.
type aheadScan struct {
	sources []Source
	files   []os.FileInfo
	looked  map[schema.GroupVersionKind]bool
}

// noteSources keeps the sources for learnAhead, with what their files are now.
func (a *aheadScan) noteSources(srcs []Source) {
	a.sources = srcs
	for _, s := range srcs {
		var fi os.FileInfo
		if s.Reader == nil {
			fi, _ = os.Stat(s.File())
		}
		a.files = append(a.files, fi)
	}
}

// readable are the sources to read again, or nil when one cannot be read as it was.
func (a *aheadScan) readable() []Source {
	out := make([]Source, 0, len(a.sources))
	for i, s := range a.sources {
		if s.Reader != nil || a.files[i] == nil || !a.files[i].Mode().IsRegular() {
			return nil
		}
		fi, err := os.Stat(s.File())
		if err != nil || !os.SameFile(fi, a.files[i]) || fi.Size() != a.files[i].Size() || !fi.ModTime().Equal(a.files[i].ModTime()) {
			return nil
		}
		s.Read = nil
		out = append(out, s)
	}
	return out
}

// aheadUse is what the log ahead shows of a CRD: the first use of its resource, and the first
// write of it, or of another CRD of its group, after its create.
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
	now := auditlog.ParseTime(ev.StageTimestamp)
	if now.IsZero() {
		return t
	}
	policies := r.cur().scope.match(t.gvr, t.sub, t.op)
	if len(policies) == 0 {
		return t
	}
	crds, kinds := r.cat.c.Unlearned(policies)
	kinds = slices.DeleteFunc(kinds, func(k schema.GroupVersionKind) bool { return r.cat.ahead.looked[k] })
	maps.DeleteFunc(crds, func(name string, _ time.Time) bool {
		return !slices.ContainsFunc(kinds, func(k schema.GroupVersionKind) bool { return k.Group == catalog.ResourceOf(name).Group })
	})
	if len(kinds) == 0 || len(crds) == 0 {
		return t
	}
	if r.cat.ahead.looked == nil {
		r.cat.ahead.looked = map[schema.GroupVersionKind]bool{}
	}
	for _, k := range kinds {
		r.cat.ahead.looked[k] = true
	}
	found := r.scanAhead(ctx, crds, kinds, now)
	where := d.ref().String()
	learned := false
	for _, name := range slices.Sorted(maps.Keys(found)) {
		a := found[name]
		if a.use == nil || !wanted(kinds, a.use) || (!a.changed.IsZero() && !a.changed.After(a.use.At)) {
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

// wanted says whether a use shows one of the kinds.
func wanted(kinds []schema.GroupVersionKind, u *catalog.Use) bool {
	return slices.Contains(kinds, u.Resource.GroupVersion().WithKind(u.Kind))
}

// scanAhead reads the log again for the CRDs (by name, with the time of their create): the
// first successful write of each one's resource that shows its kind, and the first write of
// it after its create other than the status writes that established it, or of another CRD of
// its group (any deletecollection of CRDs), at any stage, up to aheadLimit after now, or until
// a minute of log time after the uses of all the kinds. It returns nil when the log cannot be
// read again as it was, or a line of it that may be about them cannot be read.
func (r *Replayer) scanAhead(ctx context.Context, crds map[string]time.Time, kinds []schema.GroupVersionKind, now time.Time) map[string]*aheadUse {
	srcs := r.cat.ahead.readable()
	if len(srcs) == 0 {
		return nil
	}
	out := make(map[string]*aheadUse, len(crds))
	byResource := make(map[schema.GroupResource]string, len(crds))
	// Every event of a CRD's or its resource's names its group: the others are not decoded.
	var groups [][]byte
	for name := range crds {
		out[name] = &aheadUse{}
		gr := catalog.ResourceOf(name)
		byResource[gr] = name
		if !slices.ContainsFunc(groups, func(g []byte) bool { return string(g) == gr.Group }) {
			groups = append(groups, []byte(gr.Group))
		}
	}
	var lastUse time.Time
	found := map[schema.GroupVersionKind]bool{} // the kinds whose use the log showed
	done := func(at time.Time) bool {
		// A minute after the last use the logs merged and an export's order have settled.
		return at.Sub(now) > aheadLimit || (len(found) == len(kinds) && at.Sub(lastUse) > time.Minute)
	}
	// When each CRD of the groups was created, as the log shows: the status writes that
	// establish it are not a change of the others.
	createdAt := maps.Clone(crds)
	failed := false
	err := source.Lines(ctx, srcs, r.cfg.maxLine, func(l auditlog.Line) bool {
		if l.Err != nil {
			failed = true
			return false
		}
		if l.Skip != "" || l.Duplicate {
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
		if err != nil {
			failed = true
			return false
		}
		ev.Loss = l.Loss
		at := auditlog.ParseTime(ev.StageTimestamp)
		if ev.ObjectRef == nil || at.IsZero() {
			return true
		}
		if done(at) {
			return false
		}
		ref := ev.ObjectRef
		gr := schema.GroupResource{Group: ref.APIGroup, Resource: ref.Resource}
		if gr == catalog.CRDs {
			if ev.Verb == "create" && ref.Subresource == "" && ref.Name != "" {
				if c, ok := createdAt[ref.Name]; !ok || at.Before(c) {
					createdAt[ref.Name] = at
				}
			}
			aheadCRDWrite(ev, at, crds, createdAt, out)
			return true
		}
		name, ok := byResource[gr]
		if !ok || !ev.Final() || ref.Subresource != "" || !at.After(crds[name]) || out[name].use != nil {
			return true
		}
		t, skip := resolveIn(r.cur().resources, ev)
		if skip != "" {
			return true
		}
		if kind := kindOfUse(ev, t); kind != "" {
			u := &catalog.Use{Resource: t.gvr, Kind: kind, Namespaced: t.namespace != "", Verb: ev.Verb, File: l.File, Line: l.Num, At: at}
			out[name].use = u
			if wanted(kinds, u) {
				found[t.gvr.GroupVersion().WithKind(kind)] = true
				if at.After(lastUse) {
					lastUse = at
				}
			}
		}
		return true
	})
	if failed || err != nil {
		return nil
	}
	return out
}

// aheadCRDWrite notes a write of a CRD the log shows ahead, at any stage, at the time at, as a
// change of the CRDs (crds, by name with their creates' times) of its group after their
// creates.
func aheadCRDWrite(ev *Event, at time.Time, crds, createdAt map[string]time.Time, out map[string]*aheadUse) {
	switch ev.Verb {
	case "get", "list", "watch":
		return
	}
	if ev.Final() && (ev.Code() >= 400 || isDryRun(ev)) {
		return
	}
	ref := ev.ObjectRef
	establishing := false
	if c, ok := createdAt[ref.Name]; ok && ref.Subresource == "status" && ev.Verb != "delete" && at.After(c) && at.Sub(c) < catalog.EstablishWithin {
		establishing = true // kube-apiserver's controllers accepting its names and establishing it
	}
	for name, created := range crds {
		switch {
		case !at.After(created):
			continue // before the create, or the create itself
		case ev.Verb == "deletecollection":
		case ref.Name == name:
			if establishing {
				continue
			}
		case catalog.ResourceOf(ref.Name).Group == catalog.ResourceOf(name).Group && ev.Verb != "create" && !establishing:
			// Another CRD of the group changed: the names it held may have been released.
		default:
			continue
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
