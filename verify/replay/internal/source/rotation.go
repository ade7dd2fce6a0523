package source

import (
	"path/filepath"
	"strings"
	"time"
)

// kube-apiserver's log backend rotates its file with lumberjack (--audit-log-maxsize): the file
// it closes is renamed to NAME-TIME.EXT (gopkg.in/natefinch/lumberjack.v2 backupName, TIME in
// UTC as backupTimeFormat writes it; .gz once --audit-log-compress compressed it), and the event
// whose write did not fit is the first line of the new file. So the file after a rotated one
// begins when that one was rotated: one that begins later is not the next, and the events
// between them are in a file the replay was not given.

// backupTimeFormat is lumberjack's, the time of the rotation in a rotated file's name.
const backupTimeFormat = "2006-01-02T15-04-05.000"

// rotationSlack is how much later than a rotated file's time the first event of the file given
// after it may have completed and still be the next file's: the event that did not fit is
// written as it completes (a batch backend writes it earlier).
const rotationSlack = time.Second

// Gap is where the rotated logs given to a replay lack the files between two of them: After
// was rotated at Rotated, and Before, the next given, begins at Resumed, later.
type Gap struct {
	After, Before    string
	Rotated, Resumed time.Time
}

// rotatedName reads a log file's name as lumberjack names its files: the log's own name
// (directory, name and extension, the group its rotated files share) and, for a rotated one,
// when it was rotated.
func rotatedName(file string) (group string, rotated time.Time) {
	dir, base := filepath.Split(file)
	base = strings.TrimSuffix(base, ".gz")
	ext := filepath.Ext(base)
	stem := strings.TrimSuffix(base, ext)
	if n := len(backupTimeFormat); len(stem) > n+1 && stem[len(stem)-n-1] == '-' {
		if t, err := time.Parse(backupTimeFormat, stem[len(stem)-n:]); err == nil {
			return dir + stem[:len(stem)-n-1] + ext, t
		}
	}
	return dir + stem + ext, time.Time{}
}

// RotationGaps finds, among the sources in the time order of their first events (InTimeOrder,
// whose times first holds; a file's not there is read), each rotated file whose successor of
// the same log begins more than rotationSlack after it was rotated.
func RotationGaps(sources []Source, first map[string]time.Time, maxLine int) []Gap {
	type file struct {
		name    string
		rotated time.Time
	}
	last := map[string]file{}
	seen := map[string]bool{}
	var gaps []Gap
	for _, src := range sources {
		if src.Reader != nil || seen[src.Name] {
			continue // standard input; a part of a file whose clock goes back (Split)
		}
		seen[src.Name] = true
		group, rotated := rotatedName(src.Name)
		if prev, ok := last[group]; ok && !prev.rotated.IsZero() {
			at, ok := first[src.Name]
			if !ok {
				at, _, ok = firstEventTime(src, maxLine)
			}
			if ok && at.Sub(prev.rotated) > rotationSlack {
				gaps = append(gaps, Gap{After: prev.name, Before: src.Name, Rotated: prev.rotated, Resumed: at})
			}
		}
		last[group] = file{src.Name, rotated}
	}
	return gaps
}
