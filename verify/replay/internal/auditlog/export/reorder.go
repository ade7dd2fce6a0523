package export

import (
	"container/heap"
	"fmt"
	"time"
)

// Exports do not hand events over in the order kube-apiserver completed them: CloudWatch Logs
// orders them by its own timestamp and interleaves the streams of several servers, an S3
// export does not sort the chunks of a file, Firehose and Event Hubs deliver batches as they
// come, gcloud prints newest first, a webhook receiver keeps batches as they arrive. A replay
// must see them in the server's order, that of its log backend's file: reorder holds an
// export's events in a heap by their stageTimestamp and hands one over once an event that
// completed more than a window later has been read (or the heap holds more bytes than it may),
// so that memory stays bounded. An event that completed before one already handed over
// arrives later than the window allows: the replay cannot place it, and says so, once in
// full, at its file and line, and for each such event after (each is a malformed line, not
// replayed).

const (
	// defaultWindow is how far out of order an export's events may be.
	defaultWindow = 5 * time.Minute
	// windowBytes bounds the events the window holds.
	windowBytes = 256 << 20
)

type reorder struct {
	file     string
	window   time.Duration
	maxBytes int
	h        recordHeap
	seq      int
	bytes    int
	newest   time.Time // the latest stage read
	emitted  time.Time // the latest stage handed over
	ready    []record  // handed over at once: errors, events without a time
	draining bool
	late     int
	lateLine int
}

func newReorder(file string, window time.Duration, maxLine int) *reorder {
	return &reorder{file: file, window: window, maxBytes: max(windowBytes, 4*maxLine)}
}

func (o *reorder) push(rec record) {
	switch {
	case rec.err != nil || rec.at.IsZero():
		// An error, or an event without a time (which its decoding reports): in its place
		// among the events read around it, after those held.
		if o.h.Len() == 0 {
			o.ready = append(o.ready, rec)
			return
		}
		o.hold(rec, o.newest)
		return
	case !o.emitted.IsZero() && rec.at.Before(o.emitted):
		o.ready = append(o.ready, o.tooLate(rec))
		return
	}
	o.hold(rec, rec.at)
	if rec.at.After(o.newest) {
		o.newest = rec.at
	}
}

func (o *reorder) hold(rec record, at time.Time) {
	heap.Push(&o.h, heldRecord{rec: rec, at: at, seq: o.seq})
	o.seq++
	o.bytes += len(rec.data)
}

// tooLate is the record of an event that completed before one already handed over.
func (o *reorder) tooLate(rec record) record {
	o.late++
	if o.late == 1 {
		o.lateLine = rec.line
		rec.err = fmt.Errorf("the event completed at %s, before the event already replayed that completed at %s: the export is further out of the order kube-apiserver completed its requests than the %s the replay puts back in order (or than %d MiB of events), and the event is not replayed (nor are the later ones that arrive as late)",
			rec.at.UTC().Format(time.RFC3339Nano), o.emitted.UTC().Format(time.RFC3339Nano), o.window, o.maxBytes>>20)
	} else {
		rec.err = fmt.Errorf("the event completed at %s, before an event already replayed: not replayed (as the late event at line %d)", rec.at.UTC().Format(time.RFC3339Nano), o.lateLine)
	}
	rec.data = nil
	return rec
}

// pop hands over the next record, when one can go.
func (o *reorder) pop() (record, bool) {
	if len(o.ready) > 0 {
		rec := o.ready[0]
		o.ready[0] = record{}
		o.ready = o.ready[1:]
		return rec, true
	}
	if o.h.Len() == 0 {
		return record{}, false
	}
	top := o.h[0]
	if !o.draining && o.newest.Sub(top.at) <= o.window && o.bytes <= o.maxBytes {
		return record{}, false
	}
	heap.Pop(&o.h)
	o.bytes -= len(top.rec.data)
	o.emitted = top.at
	return top.rec, true
}

// drain hands over every record held: the file has ended.
func (o *reorder) drain() { o.draining = true }

// heldRecord is a record in the heap, at its place: its stage, or for an error the latest
// stage read before it.
type heldRecord struct {
	rec record
	at  time.Time
	seq int
}

// recordHeap orders records by their stage, and those of one stage as they were read.
type recordHeap []heldRecord

func (h recordHeap) Len() int { return len(h) }
func (h recordHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h recordHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *recordHeap) Push(x any)   { *h = append(*h, x.(heldRecord)) }
func (h *recordHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	old[len(old)-1] = heldRecord{}
	*h = old[:len(old)-1]
	return x
}
