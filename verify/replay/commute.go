package replay

import (
	"context"
	"encoding/json"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// Two writes the log holds without their results, to one object, that ran concurrently (one
// received before the other, logged first, completed): which the server committed last is not
// known, and the State forgets the object. Where they store the same object in either order
// (a `kubectl cordon` and the node lifecycle controller's taint patch, a label and a status
// field), the object stays known: the ordered stage sends the later one through the pipeline
// on the version the earlier one replaced, then the earlier one on what it stored, and
// compares that with the log's order.

// followedWrite is a write the ordered stage followed through the pipeline (replayWrite), kept
// for a moment of log time for the writes logged after it that ran concurrently with it.
type followedWrite struct {
	ev   *Event
	t    target
	done time.Time
}

// maxFollowed bounds the followed writes kept.
const maxFollowed = 256

// noteFollowed keeps a write the ordered stage followed (at src), and forgets those that
// completed more than a lookahead of log time before it.
func (r *Replayer) noteFollowed(ev *Event, t target, src string, done time.Time) {
	if r.followed == nil {
		r.followed = map[string]followedWrite{}
	}
	if len(r.followed) >= maxFollowed {
		for k, f := range r.followed {
			if done.Sub(f.done) > lookahead || f.done.IsZero() {
				delete(r.followed, k)
			}
		}
		if len(r.followed) >= maxFollowed {
			clear(r.followed)
		}
	}
	r.followed[src] = followedWrite{ev: ev, t: t, done: done}
}

// commutes says whether the write ev (followed over the State's version: first) stores what
// it stores whichever of it and the write the log records before it, which ran concurrently
// with it, the server committed last: both orders sent through the pipeline write the same
// object, but for what either leaves unknown, which it returns with first's.
func (r *Replayer) commutes(ctx context.Context, ev *Event, t target, first writeResult) ([]vapccel.Unknown, bool) {
	base, by, ok := r.state.ConcurrentBase(t.gvr.GroupResource(), t.namespace, t.name)
	if !ok {
		return nil, false
	}
	other, ok := r.followed[by]
	if !ok || other.t.namespace != t.namespace || other.t.name != t.name || other.t.gvr.GroupResource() != t.gvr.GroupResource() {
		return nil, false
	}
	// This write on the version the other replaced, then the other on what it stored.
	mid, reason, unmarked := r.followWrite(ctx, ev, t, base)
	if reason != "" || unmarked != nil || mid.deleted {
		return nil, false
	}
	if mid.obj == nil {
		// It changes nothing of that version (exW: two servers' concurrent patches of a
		// param, one of which set what the other's version held already, left it unknown
		// to every request after them): the other then writes on it.
		if mid.obj, _ = base.Decode(); mid.obj == nil {
			return nil, false
		}
		mid.unknowns = base.Unknowns
	}
	raw, err := json.Marshal(mid.obj.Object)
	if err != nil {
		return nil, false
	}
	midPrior := state.Prior{Kept: base.Kept, Complete: base.Complete, Found: true, Raw: raw, Unknowns: mid.unknowns, Source: base.Source}
	last, reason, unmarked := r.followWrite(ctx, other.ev, other.t, midPrior)
	if reason != "" || unmarked != nil || last.deleted {
		return nil, false
	}
	if last.obj == nil {
		last.obj, last.unknowns = mid.obj, mid.unknowns
	}
	unknowns := append(append([]vapccel.Unknown{}, first.unknowns...), last.unknowns...)
	coarser, ok := sameBut(first.obj, last.obj, unknowns)
	if !ok {
		// The two orders store different objects: what they write alike is known, what they
		// write differently is not (exU: two concurrent patches of a param's one key at
		// level Request left the whole ConfigMap unknown, and every patch after them).
		why := "the write at " + by + " and the one after it ran concurrently, and which the server committed last is not known: the two orders write it differently"
		differ := state.Differing(first.obj.Object, last.obj.Object, nil, why)
		if len(differ) == 0 {
			return nil, false
		}
		return append(append(unknowns, coarser...), differ...), true
	}
	return append(unknowns, coarser...), true
}

// sameBut says whether two objects are the same but for the fields unknowns name and their
// resourceVersion, which the server's storage gives each write. A field below a list is left
// out with the whole list, which is then not known either: coarser holds those lists.
func sameBut(a, b *unstructured.Unstructured, unknowns []vapccel.Unknown) (coarser []vapccel.Unknown, same bool) {
	a, b = a.DeepCopy(), b.DeepCopy()
	for _, u := range append(unknowns, vapccel.Unknown{Path: objectPath("metadata", "resourceVersion")}) {
		if u.Path.Root != "object" || len(u.Path.Steps) == 0 {
			return nil, false // the whole object, or another root: nothing to compare
		}
		removed := removeField(a.Object, u.Path.Steps)
		removeField(b.Object, u.Path.Steps)
		if len(removed) < len(u.Path.Steps) {
			coarser = append(coarser, vapccel.Unknown{Path: objectPath(removed...), Why: u.Why})
		}
	}
	return coarser, equality.Semantic.DeepEqual(a.Object, b.Object)
}

// removeField removes the field at steps from obj, or the field above the first step that does
// not name an object's field, and returns the steps of what it removed.
func removeField(obj map[string]any, steps []string) []string {
	for i, s := range steps {
		next, ok := obj[s].(map[string]any)
		if !ok || i == len(steps)-1 {
			delete(obj, s)
			return steps[:i+1]
		}
		obj = next
	}
	return steps
}
