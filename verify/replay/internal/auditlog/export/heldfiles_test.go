package export

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestHeldFiles: a reorder that holds events in files hands over what one that holds them in
// memory does, in the same order, byte for byte; its files are written over, not grown,
// once their events are handed over; where no file can be made, it holds them in memory.
func TestHeldFiles(t *testing.T) {
	t.Parallel()
	// Events out of order by up to two minutes, within a window of one: some arrive too
	// late; some are delivered again.
	r := rand.New(rand.NewPCG(7, 27))
	start := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	var recs []record
	for i := range 3000 {
		at := start.Add(time.Duration(i)*50*time.Millisecond - time.Duration(r.IntN(120_000))*time.Millisecond)
		data := fmt.Appendf(nil, `{"auditID":"%d","stageTimestamp":%q,"pad":"%s"}`, i, at.Format(time.RFC3339Nano), make([]byte, r.IntN(3000)))
		recs = append(recs, record{data: data, line: i + 1, at: at})
		if i%97 == 5 {
			recs = append(recs, recs[r.IntN(len(recs))])
		}
		if i%389 == 11 {
			recs = append(recs, record{line: i + 1, err: fmt.Errorf("malformed")})
		}
	}
	handedOver := func(o *reorder) []string {
		t.Helper()
		var got []string
		take := func() {
			for {
				rec, ok := o.pop()
				if !ok {
					return
				}
				got = append(got, fmt.Sprintf("%d dup=%v err=%v %s", rec.line, rec.dup, rec.err, rec.data))
			}
		}
		for _, rec := range recs {
			rec.data = append(getBuf(len(rec.data)), rec.data...)
			o.push(rec)
			take()
		}
		o.drain()
		take()
		return got
	}
	inMemory := newReorder("f", time.Minute, 1<<10)
	inMemory.maxInMemory = 1 << 30
	want := handedOver(inMemory)
	if inMemory.files.files[0] != nil {
		t.Fatalf("a reorder whose events fit in memory made a file")
	}

	inFiles := newReorder("f", time.Minute, 1<<10)
	inFiles.maxInMemory, inFiles.files.writeBuffer, inFiles.files.fileBytes = 8<<10, 2<<10, 64<<10
	defer inFiles.files.Close()
	if diff := cmp.Diff(want, handedOver(inFiles)); diff != "" {
		t.Errorf("held in files (-in memory +in files):\n%s", diff)
	}
	h := &inFiles.files
	if h.files[0] == nil || h.files[1] == nil || h.err != nil {
		t.Fatalf("files %v, error %v: want both files written over, no error", h.files, h.err)
	}
	// A file is written over once the other's events are handed over: each holds a part of
	// the events, not all of them.
	total := 0
	for _, rec := range recs {
		total += len(rec.data)
	}
	for i, f := range h.files {
		if st, err := f.Stat(); err != nil || st.Size() > int64(total)/3 {
			t.Errorf("file %d: %v, %d bytes of the %d of every event: not written over", i, err, st.Size(), total)
		}
	}
	if h.held != [2]int{} || inFiles.bytes != 0 || inFiles.inMemory != 0 {
		t.Errorf("after the drain, %v events in the files, %d bytes held, %d in memory: want none", h.held, inFiles.bytes, inFiles.inMemory)
	}

	// No file can be made: held in memory, handed over all the same.
	noDir := newReorder("f", time.Minute, 1<<10)
	noDir.maxInMemory, noDir.files.dir = 8<<10, filepath.Join(t.TempDir(), "missing")
	if diff := cmp.Diff(want, handedOver(noDir)); diff != "" {
		t.Errorf("no file made (-in memory +without files):\n%s", diff)
	}
	if noDir.files.err == nil || noDir.files.files[0] != nil {
		t.Errorf("a reorder without a temporary folder made a file (error %v)", noDir.files.err)
	}
}

// TestHeldFilesWriteError: where a write fails, the events kept but not written yet are read
// back from what was gathered, the event that could not be written is not kept, and no event
// is kept after; one written before that cannot be read back is an error, not other bytes.
func TestHeldFilesWriteError(t *testing.T) {
	t.Parallel()
	h := &heldFiles{fileBytes: 1 << 20, writeBuffer: 8, budget: &diskBudget{measured: true, left: 1 << 30}}
	defer h.Close()
	written := h.keep([]byte("0123456789")) // larger than the buffer: written as it is
	gathered := h.keep([]byte("abc"))
	if !written.kept || !gathered.kept || h.size[0] != 10 {
		t.Fatalf("kept %v and %v, %d bytes written: want both kept, the first written", written, gathered, h.size[0])
	}
	h.files[0].Close() // the next write fails
	if ref := h.keep([]byte("defghi")); ref.kept || h.err == nil || h.budget.left != 1<<30-13 {
		t.Fatalf("kept %v (error %v) with its file closed, %d of the budget taken: want not kept, 13 taken", ref, h.err, 1<<30-h.budget.left)
	}
	if ref := h.keep([]byte("j")); ref.kept {
		t.Errorf("kept %v after an error", ref)
	}
	if got, err := h.readBack(gathered); err != nil || string(got) != "abc" {
		t.Errorf("readBack(gathered) = %q, %v; want abc", got, err)
	}
	if got, err := h.readBack(written); err == nil {
		t.Errorf("readBack(written) from a closed file = %q, no error", got)
	}
}

// TestHeldFilesBudget: the files take no more of the disk than their budget, an event that
// does not fit is not kept (held in memory), and what a file written over held, and what
// the files held when closed, is given back.
func TestHeldFilesBudget(t *testing.T) {
	t.Parallel()
	budget := &diskBudget{measured: true, left: 100}
	h := &heldFiles{fileBytes: 50, writeBuffer: 16, budget: budget}
	event := []byte("0123456789012345678901234567890123456789") // 40 bytes
	a, b := h.keep(event), h.keep(event)
	if !a.kept || !b.kept || budget.left != 20 {
		t.Fatalf("kept %v, %v with %d bytes of the budget left: want both kept, 20 left", a.kept, b.kept, budget.left)
	}
	if c := h.keep(event); c.kept || budget.left != 20 || h.err != nil {
		t.Fatalf("kept %v (error %v) past the budget, %d left", c.kept, h.err, budget.left)
	}
	// The first file (80 bytes, past 50) is written over once its events are read back.
	for _, ref := range []heldRef{a, b} {
		if got, err := h.readBack(ref); err != nil || string(got) != string(event) {
			t.Fatalf("readBack = %q, %v", got, err)
		}
	}
	if c := h.keep(event); !c.kept || h.cur != 1 || budget.left != 60 {
		t.Fatalf("after the first file's events were read back: kept %v in file %d, %d left; want kept in file 1, the first file's 80 bytes given back", c.kept, h.cur, budget.left)
	}
	h.Close()
	if budget.left != 100 {
		t.Errorf("closed: %d bytes of the budget left, want 100", budget.left)
	}
}

// TestHeldFilesAccounting keeps and reads back events of random sizes on both sides of the
// write buffer, mostly the oldest first: each comes back with its bytes, what the files take
// of the budget is what they hold (written and gathered), and all of it is given back at Close.
func TestHeldFilesAccounting(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(12, 8))
	const start = 1 << 20
	budget := &diskBudget{measured: true, left: start}
	h := &heldFiles{fileBytes: 4 << 10, writeBuffer: 512, budget: budget}
	type kept struct {
		ref  heldRef
		data []byte
	}
	var held []kept
	// Events read back before they are written: the file is emptied of them, and gives back
	// what they took.
	for range 3 {
		h.keep([]byte("gathered"))
	}
	for _, off := range []int64{0, 8, 16} {
		h.readBack(heldRef{kept: true, n: 8, off: off})
	}
	if h.taken() != 0 || budget.left != start {
		t.Fatalf("every event read back: %d taken, %d left; want none taken", h.taken(), budget.left)
	}
	for step := range 5000 {
		if len(held) == 0 || r.IntN(5) < 3 {
			data := make([]byte, 1+r.IntN(1200))
			for i := range data {
				data[i] = byte(r.IntN(256))
			}
			if ref := h.keep(data); ref.kept {
				held = append(held, kept{ref, data})
			}
		} else {
			k := 0
			if r.IntN(10) == 0 {
				k = r.IntN(len(held)) // now and then not the oldest
			}
			got, err := h.readBack(held[k].ref)
			if err != nil || string(got) != string(held[k].data) {
				t.Fatalf("step %d: read back %d bytes (%v), want the %d kept", step, len(got), err, len(held[k].data))
			}
			held = append(held[:k], held[k+1:]...)
		}
		if budget.left+h.taken() != start {
			t.Fatalf("step %d: the files hold %d, %d of the budget left of %d", step, h.taken(), budget.left, start)
		}
	}
	h.Close()
	if budget.left != start {
		t.Errorf("closed: %d of the budget left, want %d", budget.left, start)
	}
}
