package source

import (
	"bytes"
	"context"
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
func Lines(ctx context.Context, sources []Source, maxLine int, fn func(auditlog.Line) bool) error {
	type head struct {
		next  func() (auditlog.Line, bool)
		line  auditlog.Line
		at    time.Time
		timed bool
	}
	var heads []*head
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
	for _, src := range sources {
		var next func() (auditlog.Line, bool)
		var closeSource func()
		ok := false
		if !merge {
			var g *grepReader
			if g, closeSource, ok = openGrep(ctx, src, maxLine); ok {
				next = g.Next
			}
		}
		if !ok {
			next, closeSource = openSource(ctx, src, maxLine)
		}
		defer closeSource()
		if h := (&head{next: next}); advance(h) {
			heads = append(heads, h)
		}
	}
	for len(heads) > 0 {
		if err := ctx.Err(); err != nil {
			return err
		}
		first := 0
		for i, h := range heads {
			if !h.timed {
				first = i
				break
			}
			if h.at.Before(heads[first].at) {
				first = i
			}
		}
		h := heads[first]
		if !fn(h.line) {
			return ctx.Err()
		}
		if !advance(h) {
			heads = append(heads[:first], heads[first+1:]...)
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
