package source

import (
	"context"
	"sort"
	"time"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// InTimeOrder returns the sources in the order of the time of their first event, so that
// rotated logs given newest first (audit.log audit.log.1.gz, as a shell glob sorts them) are
// replayed oldest first, as the State must see the writes; reordered says whether the order
// changed, and first holds the times it read, by file. Sources are left as given when one is a
// reader (stdin) or a file's first events carry no time.
func InTimeOrder(sources []Source, maxLine int) (ordered []Source, first map[string]time.Time, reordered bool) {
	type timed struct {
		src Source
		at  time.Time
	}
	if len(sources) < 2 {
		return sources, nil, false // nothing to order: an export's first line waits for its window (package export's reorder)
	}
	var ts []timed
	first = map[string]time.Time{}
	for _, src := range sources {
		if src.Reader != nil {
			return sources, first, false
		}
		at, ok := firstEventTime(src, maxLine)
		if !ok {
			return sources, first, false
		}
		first[src.Name] = at
		ts = append(ts, timed{src, at})
	}
	sort.SliceStable(ts, func(i, j int) bool { return ts[i].at.Before(ts[j].at) })
	for i, t := range ts {
		ordered = append(ordered, t.src)
		reordered = reordered || t.src.Name != sources[i].Name
	}
	return ordered, first, reordered
}

// firstEventTime reads the stage time of the first of the first lines of a log that is an
// event.
func firstEventTime(src Source, maxLine int) (time.Time, bool) {
	next, closeSource := openSource(context.Background(), src, maxLine)
	defer closeSource()
	for i := 0; i < 100; i++ {
		l, ok := next()
		if !ok {
			break
		}
		if l.Err != nil {
			continue
		}
		if ev, err := auditlog.Decode(l.Data); err == nil {
			if at, err := time.Parse(time.RFC3339Nano, ev.StageTimestamp); err == nil {
				return at, true
			}
		}
	}
	return time.Time{}, false
}
