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
// reader (stdin) or a file's first events carry no time. Each source whose first line that
// may be an event has a time for the merge keeps it, ordered or not, and Lines opens it once
// the merge reaches that time (earliest): an S3 export's or a webhook receiver's files of a
// day, each of whose readers holds minutes of events to put them back in order, are not all
// open at once.
func InTimeOrder(sources []Source, maxLine int) (ordered []Source, first map[string]time.Time, reordered bool) {
	type timed struct {
		src Source
		at  time.Time
	}
	if len(sources) < 2 {
		return sources, nil, false // nothing to order: an export's first line waits for its window (package export's reorder)
	}
	first = map[string]time.Time{}
	for _, src := range sources {
		if src.Reader != nil {
			return sources, first, false
		}
	}
	ts := make([]timed, len(sources))
	all := true
	for i, src := range sources {
		at, opensAt, ok := firstEventTime(src, maxLine)
		if ok {
			src.first = opensAt
		}
		if _, seen := first[src.Name]; ok && !seen {
			first[src.Name] = at // a split file's first part's: the file's (RotationGaps)
		}
		ts[i] = timed{src, at}
		all = all && ok
	}
	if all {
		sort.SliceStable(ts, func(i, j int) bool { return ts[i].at.Before(ts[j].at) })
	}
	for i, t := range ts {
		ordered = append(ordered, t.src)
		reordered = reordered || t.src.Name != sources[i].Name
	}
	return ordered, first, reordered
}

// firstEventTime reads the stage time of the first of the first lines of a log that is an
// event, among the first hundred that may be one (and ten thousand records an export says hold
// none: a GKE sink's other services' entries), and the time the merge may open the log at
// (opensAt): the time the merge reads (stageTime) of the first line the log hands over but
// records an export says hold none (Skip, Duplicate, which carry no event). Where that line has
// no time for the merge (an error, a line that does not decode, one whose stage time the merge
// does not find, such as `"stageTimestamp": "…"` with a space), the merge hands it over as it
// opens the log, and a replay takes what it may have written as of then: opensAt is zero, the
// log opened from the start.
func firstEventTime(src Source, maxLine int) (at, opensAt time.Time, ok bool) {
	next, closeSource := openSource(context.Background(), src, maxLine)
	defer closeSource()
	for read, skipped := 0, 0; read < 100 && skipped < 10000; {
		l, ok := next()
		if !ok {
			break
		}
		if l.Err == nil && (l.Skip != "" || l.Duplicate) {
			skipped++
			continue
		}
		if read == 0 {
			opensAt, _ = stageTime(l)
		}
		read++
		if l.Err == nil {
			if ev, err := auditlog.Decode(l.Data); err == nil {
				if at, err := time.Parse(time.RFC3339Nano, ev.StageTimestamp); err == nil {
					return at, opensAt, true
				}
			}
		}
	}
	return time.Time{}, time.Time{}, false
}
