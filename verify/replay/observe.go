package replay

import "k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

// Observer watches what a replay reads: the objects of its snapshot and the final record of
// every request of its logs, in log order. The HTML report of `vapc replay --report` (package
// verify/report) draws its node and eviction timelines from it. Every function may be nil.
type Observer struct {
	// Snapshot is called with every object of the snapshot of a kind the catalog serves, as it
	// is read, before the State keeps or drops it (an object a List repeats may come twice). It
	// must neither keep nor change the object.
	Snapshot func(u *unstructured.Unstructured)
	// Prepare is called on the decoding workers, concurrently, with the final record of every
	// request; what it returns is handed to Event with the same event. It must not change the
	// event.
	Prepare func(ev *Event) any
	// Event is called on the ordered stage, in log order, with the final record of every request
	// that is not malformed, before the State applies its write and before the Record of the
	// request, if any, reaches the sink: file and line say where it was read.
	Event func(file string, line int, ev *Event, prepared any)
}

// WithObserver sets the replay's Observer.
func WithObserver(o Observer) Option {
	return func(r *Replayer) error { r.cfg.observer = o; return nil }
}

// prepare is what the decoding workers do with every event: prepareWrite, and the Observer's
// Prepare.
func (r *Replayer) prepare(d *decoded) {
	d.written = r.prepareWrite(d.ev)
	if r.cfg.observer.Prepare != nil && d.ev.Final() {
		d.observed = r.cfg.observer.Prepare(d.ev)
	}
}

// observed says whether the replay has an Observer: Records then carry the request's objects.
func (r *Replayer) observed() bool {
	return r.cfg.observer.Snapshot != nil || r.cfg.observer.Prepare != nil || r.cfg.observer.Event != nil
}
