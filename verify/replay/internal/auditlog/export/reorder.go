package export

import (
	"container/heap"
	"fmt"
	"hash/maphash"
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
// replayed). But exports deliver at least once (Firehose, Event Hubs, Cloud Logging sinks, a
// webhook receiver's retried POSTs): an event that arrives too late and is the same as one
// handed over (the same bytes, by a hash of the last events handed over) was delivered again,
// and is handed over as a duplicate, which the replay counts and does not replay.

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
	// held are the records in the heap, by slot; free the slots of held to reuse. The bytes
	// of a record whose kept is set are in files, not in its data.
	held  []record
	kept  []heldRef
	files heldFiles
	free  []int32
	seq   int
	bytes int // of the records held
	// inMemory are the bytes of the records held in memory: past maxInMemory, an event's
	// are kept in files (heldInMemory).
	inMemory, maxInMemory int
	newest                time.Time // the latest stage read
	emitted               time.Time // the latest stage handed over
	ready                 []record  // handed over at once: errors, events without a time
	draining              bool
	late                  int
	lateLine              int
	sent                  sentEvents
}

func newReorder(file string, window time.Duration, maxLine int) *reorder {
	return &reorder{file: file, window: window, maxBytes: max(windowBytes, 4*maxLine), maxInMemory: heldInMemory,
		files: heldFiles{fileBytes: heldFileBytes, writeBuffer: heldWriteBuffer, budget: &heldBudget}}
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
		if len(rec.data) > 0 && o.sent.has(rec.eventSum()) {
			rec.dup = true
			o.ready = append(o.ready, rec)
			return
		}
		o.ready = append(o.ready, o.tooLate(rec))
		return
	}
	o.hold(rec, rec.at)
	if rec.at.After(o.newest) {
		o.newest = rec.at
	}
}

func (o *reorder) hold(rec record, at time.Time) {
	n := len(rec.data)
	var ref heldRef
	if o.inMemory+n > o.maxInMemory && rec.err == nil && rec.skip == "" && n > 0 {
		if ref = o.files.keep(rec.data); ref.kept {
			rec.eventSum() // the hash pop takes, of the bytes handed over
			putBuf(rec.data)
			rec.data = nil
		}
	}
	if !ref.kept {
		o.inMemory += n
	}
	var slot int32
	if k := len(o.free); k > 0 {
		slot, o.free = o.free[k-1], o.free[:k-1]
		o.held[slot], o.kept[slot] = rec, ref
	} else {
		slot = int32(len(o.held))
		o.held, o.kept = append(o.held, rec), append(o.kept, ref)
	}
	heap.Push(&o.h, heldRecord{sec: at.Unix(), nsec: int32(at.Nanosecond()), seq: o.seq, slot: slot})
	o.seq++
	o.bytes += n
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
	at := time.Unix(top.sec, int64(top.nsec))
	if !o.draining && o.newest.Sub(at) <= o.window && o.bytes <= o.maxBytes {
		return record{}, false
	}
	heap.Pop(&o.h)
	rec, ref := o.held[top.slot], o.kept[top.slot]
	o.held[top.slot], o.kept[top.slot] = record{}, heldRef{}
	o.free = append(o.free, top.slot)
	if ref.kept {
		o.bytes -= int(ref.n)
		data, err := o.files.readBack(ref)
		rec.data, rec.err = data, err
	} else {
		o.bytes -= len(rec.data)
		o.inMemory -= len(rec.data)
	}
	o.emitted = at
	if rec.err == nil && len(rec.data) > 0 {
		if checkSums && rec.summed && rec.sum != maphash.Bytes(eventSeed, rec.data) {
			panic(fmt.Sprintf("export: %s:%d: the event's hash, taken before it was handed over, is not its bytes'", o.file, rec.line))
		}
		o.sent.add(rec.eventSum())
	}
	return rec, true
}

// checkSums makes the reorder check the hash of each event it hands over, taken by a worker or
// the joiner, against its bytes (the package's tests set it).
var checkSums = false

// sentEvents remembers hashes of the last events a reorder handed over.
type sentEvents struct {
	count map[uint64]int32
	ring  []uint64
	next  int
}

// sentMemory is how many of the last events handed over a reorder remembers.
const sentMemory = 1 << 16

func (s *sentEvents) add(h uint64) {
	if s.ring == nil {
		s.count, s.ring = map[uint64]int32{}, make([]uint64, 0, sentMemory)
	}
	if len(s.ring) < sentMemory {
		s.ring = append(s.ring, h)
	} else {
		old := s.ring[s.next]
		if s.count[old]--; s.count[old] <= 0 {
			delete(s.count, old)
		}
		s.ring[s.next] = h
		s.next = (s.next + 1) % sentMemory
	}
	s.count[h]++
}

func (s *sentEvents) has(h uint64) bool { return s.count[h] > 0 }

// drain hands over every record held: the file has ended.
func (o *reorder) drain() { o.draining = true }

// heldRecord is a record in the heap, at its place: its stage (Unix time), or for an error the
// latest stage read before it; the record is in the reorder's slot. It holds no pointer, so
// that the heap's moves cost the garbage collector nothing.
type heldRecord struct {
	sec        int64
	nsec, slot int32
	seq        int
}

// recordHeap orders records by their stage, and those of one stage as they were read.
type recordHeap []heldRecord

func (h recordHeap) Len() int { return len(h) }
func (h recordHeap) Less(i, j int) bool {
	if h[i].sec != h[j].sec {
		return h[i].sec < h[j].sec
	}
	if h[i].nsec != h[j].nsec {
		return h[i].nsec < h[j].nsec
	}
	return h[i].seq < h[j].seq
}
func (h recordHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *recordHeap) Push(x any)   { *h = append(*h, x.(heldRecord)) }
func (h *recordHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}
