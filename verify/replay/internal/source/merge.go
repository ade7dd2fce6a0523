package source

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// Lines calls fn with every line of the sources, as one log in the time order of its
// events; fn returns false to stop. A log's own lines keep their order; among the next lines of
// the logs, the one of the earliest event (its stageTimestamp) goes first, and a line that is
// not an event at once. Several logs are those of several kube-apiservers of one cluster, each
// of which writes its own, whose requests interleave (replayed one log after another, a log's
// requests would meet the State as the other logs leave it at their end), or rotated logs of
// one, which follow each other. Ties go to the log given first. A line's Data is the
// reader's once fn returns.
//
// The parts of a log whose clock goes back (Split) are opened once the merge reaches the
// earliest time one of their events may have, and closed at their end: a log that goes back
// every few seconds (Firehose's extracted events, out of the server's order) has hundreds of
// parts, each of which, open from the start, held a reader's buffers and window (2.6 GB of
// them for a 590 MB log), and made the choice of each next line a walk over all of them.
func Lines(ctx context.Context, sources []Source, maxLine int, fn func(auditlog.Line) bool) error {
	m := newMerge(ctx, sources, maxLine)
	defer m.close()
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		h := m.next()
		if h == nil || !fn(h.line) {
			return ctx.Err()
		}
		m.advance(h)
	}
}

// merge is the logs Lines reads: those open, each with its next line, and the parts not open
// yet.
type merge struct {
	ctx     context.Context
	sources []Source
	maxLine int
	// one says a single log, whose lines go as they are, without their times read (a log
	// backend's file searched for a filter: openGrep).
	one bool
	// heads are the logs open, in the order given (ties go to the first).
	heads []*head
	// pending are the parts not open yet, by the earliest time of their events.
	pending []int
	// files are what the pending sources' files were as the merge began: one renamed or
	// removed by the time the merge reaches it (a live log rotated) is not read in its
	// place's new file, and says so.
	files map[int]os.FileInfo
}

// head is an open log and its next line.
type head struct {
	next  func() (auditlog.Line, bool)
	close func()
	line  auditlog.Line
	at    time.Time
	timed bool
	index int // in sources
}

// newMerge opens the sources, but the parts of a log, which wait for the merge to reach them.
func newMerge(ctx context.Context, sources []Source, maxLine int) *merge {
	m := &merge{ctx: ctx, sources: sources, maxLine: maxLine, one: len(sources) == 1, files: map[int]os.FileInfo{}}
	for i, src := range sources {
		if _, ok := src.earliest(); ok && !m.one && src.Reader == nil {
			// One that cannot be read now is opened at once, its error handed over first.
			if fi, err := os.Stat(src.File()); err == nil {
				m.files[i] = fi
				m.pending = append(m.pending, i)
				continue
			}
		}
		m.open(i)
	}
	slices.SortStableFunc(m.pending, func(i, j int) int {
		a, _ := sources[i].earliest()
		b, _ := sources[j].earliest()
		return a.Compare(b)
	})
	return m
}

// open opens the i-th source, and keeps it among the heads while it has a line.
func (m *merge) open(i int) {
	src := m.sources[i]
	h := &head{index: i}
	ok := false
	if was, pending := m.files[i]; pending {
		if now, err := os.Stat(src.File()); err != nil || !os.SameFile(was, now) {
			h.next, h.close = failedSource(src, fmt.Errorf("renamed or removed since the replay began to read the logs (a live log rotated?): not read, the file now at its name is another"))
			ok = true
		}
	}
	if !ok && m.one {
		var g grepper
		if g, h.close, ok = openGrep(m.ctx, src, m.maxLine); ok {
			h.next = g.Next
		}
	}
	if !ok {
		h.next, h.close = openSource(m.ctx, src, m.maxLine)
	}
	if !m.read(h) {
		h.close()
		return
	}
	at, _ := slices.BinarySearchFunc(m.heads, i, func(h *head, i int) int { return h.index - i })
	m.heads = slices.Insert(m.heads, at, h)
}

// read reads the head's next line; false at its log's end.
func (m *merge) read(h *head) bool {
	l, ok := h.next()
	if !ok {
		return false
	}
	h.line = l
	if !m.one {
		h.at, h.timed = stageTime(l)
	}
	return true
}

// first is the head whose line goes next among those open, -1 when none is: the first that
// is not an event, else the earliest.
func (m *merge) first() int {
	if len(m.heads) == 0 {
		return -1
	}
	first := 0
	for i, h := range m.heads {
		if !h.timed {
			return i
		}
		if h.at.Before(m.heads[first].at) {
			first = i
		}
	}
	return first
}

// next is the head whose line goes next, nil at the end of the logs: a part whose events may
// come before that line is opened first.
func (m *merge) next() *head {
	for {
		first := m.first()
		if len(m.pending) == 0 {
			if first < 0 {
				return nil
			}
			return m.heads[first]
		}
		if first >= 0 {
			at, _ := m.sources[m.pending[0]].earliest()
			if h := m.heads[first]; !h.timed || at.After(h.at) {
				return h
			}
		}
		m.open(m.pending[0])
		m.pending = m.pending[1:]
	}
}

// advance moves the head to its next line, and closes its log at its end.
func (m *merge) advance(h *head) {
	if m.read(h) {
		return
	}
	h.close()
	m.heads = slices.DeleteFunc(m.heads, func(o *head) bool { return o == h })
}

// close closes the logs still open.
func (m *merge) close() {
	for _, h := range m.heads {
		h.close()
	}
}

// stageTime reads the stageTimestamp of a line's event without decoding it: the last member of
// that name (the event's own follows its objects, which may have members of any name, and only
// its annotations follow it: the search from the end is short).
func stageTime(l auditlog.Line) (time.Time, bool) {
	const key = `"stageTimestamp":"`
	i := bytes.LastIndex(l.Data, []byte(key))
	if i < 0 {
		return time.Time{}, false
	}
	v := l.Data[i+len(key):]
	j := bytes.IndexByte(v, '"')
	if j < 0 {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, string(v[:j]))
	return at, err == nil
}
