package source

import (
	"bytes"
	"context"
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
	type head struct {
		next  func() (auditlog.Line, bool)
		close func()
		line  auditlog.Line
		at    time.Time
		timed bool
		index int // in sources: ties go to the log given first
	}
	var heads []*head // the logs open, in the order given
	defer func() {
		for _, h := range heads {
			h.close()
		}
	}()
	merge := len(sources) > 1 // one log's lines go as they are
	advance := func(h *head) bool {
		l, ok := h.next()
		if !ok {
			return false
		}
		h.line = l
		if merge {
			h.at, h.timed = stageTime(l)
		}
		return true
	}
	open := func(i int) {
		src := sources[i]
		h := &head{index: i}
		ok := false
		if !merge {
			var g *grepReader
			if g, h.close, ok = openGrep(ctx, src, maxLine); ok {
				h.next = g.Next
			}
		}
		if !ok {
			h.next, h.close = openSource(ctx, src, maxLine)
		}
		if !advance(h) {
			h.close()
			return
		}
		at, _ := slices.BinarySearchFunc(heads, i, func(h *head, i int) int { return h.index - i })
		heads = slices.Insert(heads, at, h)
	}
	// pending are the parts not open yet, by the earliest time of their events.
	var pending []int
	for i, src := range sources {
		if _, ok := src.earliest(); ok && merge {
			pending = append(pending, i)
			continue
		}
		open(i)
	}
	slices.SortStableFunc(pending, func(i, j int) int {
		a, _ := sources[i].earliest()
		b, _ := sources[j].earliest()
		return a.Compare(b)
	})
	next := func() int {
		if len(heads) == 0 {
			return -1
		}
		first := 0
		for i, h := range heads {
			if !h.timed {
				return i
			}
			if h.at.Before(heads[first].at) {
				first = i
			}
		}
		return first
	}
	for len(heads) > 0 || len(pending) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		first := next()
		// A part whose events may come before the next line's is opened first.
		for len(pending) > 0 {
			if first >= 0 {
				at, _ := sources[pending[0]].earliest()
				if !heads[first].timed || at.After(heads[first].at) {
					break
				}
			}
			open(pending[0])
			pending = pending[1:]
			first = next()
		}
		if first < 0 {
			continue
		}
		h := heads[first]
		if !fn(h.line) {
			return ctx.Err()
		}
		if !advance(h) {
			h.close()
			heads = slices.Delete(heads, first, first+1)
		}
	}
	return ctx.Err()
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
