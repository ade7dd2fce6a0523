package source

import (
	"bufio"
	"errors"
	"io"
	"os"
	"time"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// ClockBack is how far a log's clock must go back for the lines that follow to be taken as an
// earlier part of the log: rotated logs concatenated out of order (cat audit.log audit-1.log),
// the logs of several kube-apiservers concatenated, not the jitter by which concurrent
// requests' events reach kube-apiserver's log backend out of the order of their stage times
// (it stamps an event when its stage ends and writes it then: milliseconds apart at most).
// Parts cut at a smaller jump would be merged in the order of their stage times all the same.
const ClockBack = time.Second

// OrderJitter is how far a log's clock may go back, within a part, and the log still be in the
// order kube-apiserver's log backend wrote it: its events come milliseconds out of the order of
// their stage times (12 ms at most in the real servers' recordings at hand, 23 ms in the
// bench's cluster traffic). A log that goes back further is events a tool copied out of that
// order (Firehose's extracted messages concatenated, a sort by another time) or several logs
// interleaved: Split has it read in the order of its events' stage times
// (export.InStageOrder), as an export's are, within its window.
const OrderJitter = 100 * time.Millisecond

// Jump is a line of a log whose stage time is more than ClockBack before a line above it.
type Jump struct {
	File string
	// Line is the line's number, from 1.
	Line int
	// Latest is the latest stage time above the line, At the line's.
	Latest, At time.Time
}

// Clock follows the stage times of a log's lines in the order they are read, and finds where
// the log's clock goes back by more than ClockBack: a line that does begins a part of the log,
// and what follows is measured against that part. Split cuts plain log files with it; the
// replay notes with it where the logs Split cannot cut go back.
type Clock struct {
	// latest is the latest stage time so far; stamp is it as the log wrote it, when it came
	// from NoteStamp in UTC (latest is then parsed from it only when needed: zero until).
	latest time.Time
	stamp  string
}

// Note takes the stage time of the next line, and says whether it is more than ClockBack
// before the latest above it, which it returns then.
func (c *Clock) Note(at time.Time) (latest time.Time, back bool) {
	if c.latest.IsZero() && c.stamp != "" {
		c.latest = auditlog.ParseTime(c.stamp)
	}
	if !c.latest.IsZero() && c.latest.Sub(at) > ClockBack {
		latest, c.latest, c.stamp = c.latest, at, ""
		return latest, true
	}
	if at.After(c.latest) {
		c.latest, c.stamp = at, ""
	}
	return time.Time{}, false
}

// NoteStamp is Note of a stage time as the log writes it (RFC 3339), which it parses only
// when its text does not order it after the latest (a log's lines mostly come in the order of
// their stage times); a time it cannot parse is passed over.
func (c *Clock) NoteStamp(s string) (latest time.Time, back bool) {
	if len(s) == len(c.stamp) && s >= c.stamp && utcStamp(s) {
		// The same layout as the latest's, in UTC: the text orders as the time does.
		c.stamp, c.latest = s, time.Time{}
		return time.Time{}, false
	}
	at := auditlog.ParseTime(s)
	if at.IsZero() {
		return time.Time{}, false
	}
	latest, back = c.Note(at)
	if c.latest.Equal(at) && utcStamp(s) {
		c.stamp = s // (a stamp with an offset is not compared by its text)
	}
	return latest, back
}

// utcStamp says whether s is an RFC 3339 time in UTC ("2006-01-02T15:04:05Z", with a
// fraction of a second or without): the layout whose text orders as the times do, among
// stamps of one length.
func utcStamp(s string) bool {
	const layout = "0000-00-00T00:00:00"
	if len(s) < len(layout)+1 || s[len(s)-1] != 'Z' {
		return false
	}
	for i := range len(layout) {
		if digit := s[i] >= '0' && s[i] <= '9'; (layout[i] == '0') != digit || (!digit && s[i] != layout[i]) {
			return false
		}
	}
	frac := s[len(layout) : len(s)-1]
	if frac == "" {
		return true
	}
	if frac[0] != '.' || len(frac) == 1 {
		return false
	}
	for _, b := range []byte(frac[1:]) {
		if b < '0' || b > '9' {
			return false
		}
	}
	return true
}

// part is the span of a log file that one of its parts fills: from the byte offset and line
// number where it begins to the offset where the next part begins (0: the end of the file).
// first is the stage time of its first line, zero where that line has none or is longer
// than a reader keeps: none of its lines is more than ClockBack before it (Clock), and Lines
// opens the part once the merge reaches that (earliest); a part whose first line the reader
// gives with no time, which the merge hands over at once, is opened from the start.
type part struct {
	offset, end int64
	line        int
	first       time.Time
}

// earliest is a time the merge opens the source at, which no line of it goes before: that of
// a part of a log (Split), whose lines go back at most ClockBack from its first, or of a log
// whose first event InTimeOrder read (its lines come in its reader's order, the first of them
// first: the merge hands over none of the others' after it before that one); false for the
// others.
func (s Source) earliest() (time.Time, bool) {
	switch {
	case s.part != nil && !s.part.first.IsZero():
		return s.part.first.Add(-ClockBack), true
	case s.part == nil && !s.first.IsZero():
		return s.first.Add(-ClockBack), true
	}
	return time.Time{}, false
}

// samples is how many points of a large log file Split reads the time of before it reads the
// whole file: a log whose parts each fill more than a 64th of it goes back between two of
// them. smallFile is the size under which it reads the whole file at once.
const (
	samples   = 64
	smallFile = 32 << 20
)

// Split cuts each plain log file (the log backend's lines, not compressed) whose clock goes back
// by more than ClockBack into its parts, each a span of lines whose clock does not, read as logs
// of their own: Lines merges them in the time order of their events as it merges several logs.
// jumps says where each part after the first begins. Other sources (compressed, standard
// input, exports) are left as they are; the replay notes where their clock goes back.
func Split(sources []Source, maxLine int) (out []Source, jumps []Jump) {
	for _, src := range sources {
		parts, js, disordered := partsOf(src, maxLine)
		src.inStageOrder = disordered
		if len(parts) < 2 {
			out = append(out, src)
			continue
		}
		for _, p := range parts {
			s := src
			s.part = &part{offset: p.offset, end: p.end, line: p.line, first: p.first}
			out = append(out, s)
		}
		jumps = append(jumps, js...)
	}
	return out, jumps
}

// partsOf finds the parts of a plain log file, none when it is not one or its clock does not go
// back, and whether the file goes back by more than OrderJitter within a part (read whole when
// it is small, or when it has parts).
func partsOf(src Source, maxLine int) ([]part, []Jump, bool) {
	if src.Reader != nil || src.part != nil || (src.Format != "" && src.Format != "auto" && src.Format != "audit") {
		return nil, nil, false
	}
	f, err := os.Open(src.File())
	if err != nil {
		return nil, nil, false
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil || !info.Mode().IsRegular() || !plainLog(src, f) {
		return nil, nil, false
	}
	size := info.Size()
	if size > smallFile && !sampledBack(f, size, maxLine) {
		return nil, nil, false
	}
	return scanParts(src.Name, io.NewSectionReader(f, 0, size), maxLine)
}

// plainLog says whether a file is read as the log backend's lines, in their own order, and
// begins with an event: neither compressed nor an export's envelope, nor the messages Firehose
// extracted from a CloudWatch Logs subscription (an object named as Firehose names them),
// which their export's reader puts back in order, skipping the other streams' messages
// (kube-apiserver's own log, the authenticator's).
func plainLog(src Source, f *os.File) bool {
	if format, err := export.FormatOf(src.Name, io.NewSectionReader(f, 0, 1<<20), export.Format(src.Format)); err != nil || format != export.Plain {
		return false
	}
	br := bufio.NewReaderSize(io.NewSectionReader(f, 0, 1<<20), 64<<10)
	line, _ := readLine(br, 1<<20)
	if len(line) == 0 {
		return false
	}
	ev, err := auditlog.Decode(line)
	return err == nil && ev.Kind == "Event" && ev.Stage != ""
}

// sampledBack reads the stage time of the line at each 64th of a file and says whether one is
// more than ClockBack before one above it.
func sampledBack(f *os.File, size int64, maxLine int) bool {
	var clock Clock
	for i := int64(0); i <= samples; i++ {
		off := size * i / samples
		if i == samples { // the last lines, after the last 64th's
			off = max(size*(samples-1)/samples, size-int64(min(maxLine, 4<<20)))
		}
		br := bufio.NewReaderSize(io.NewSectionReader(f, off, size-off), 64<<10)
		if off > 0 {
			if _, err := readLine(br, maxLine); err != nil { // the rest of the line the offset cut
				continue
			}
		}
		// A line's time, or the first of the next few that has one; at the end, every line's.
		for n := 0; i == samples || n < 8; n++ {
			line, err := readLine(br, maxLine)
			at, ok := stageTime(auditlog.Line{Data: line})
			if ok {
				if _, back := clock.Note(at); back {
					return true
				}
			}
			if (ok && i < samples) || (err != nil && !errors.Is(err, errLong)) {
				break
			}
		}
	}
	return false
}

// scanParts reads a log's lines and cuts it where its clock goes back.
func scanParts(file string, r io.Reader, maxLine int) ([]part, []Jump, bool) {
	br := bufio.NewReaderSize(r, 256<<10)
	parts := []part{{line: 1}}
	var jumps []Jump
	var clock Clock
	var offset int64
	var latest time.Time // the latest stage time of the part
	disordered := false
	for num := 1; ; num++ {
		line, err := readLine(br, maxLine)
		if at, ok := stageTime(auditlog.Line{Data: line}); ok {
			if latest, back := clock.Note(at); back {
				parts[len(parts)-1].end = offset
				parts = append(parts, part{offset: offset, line: num})
				jumps = append(jumps, Jump{File: file, Line: num, Latest: latest, At: at})
			}
			if p := &parts[len(parts)-1]; p.line == num && err == nil && len(line) < maxLine {
				// Its first line, an event the reader gives whole (not one longer than it
				// keeps, which it gives as an error, with no time).
				p.first = at
			}
			switch {
			case len(jumps) > 0 && jumps[len(jumps)-1].Line == num:
				latest = at // a part begins
			case latest.Sub(at) > OrderJitter:
				disordered = true
			case at.After(latest):
				latest = at
			}
		}
		offset += int64(lineSize(line, err))
		if err != nil && !errors.Is(err, errLong) {
			break
		}
	}
	return parts, jumps, disordered
}

// errLong is a line longer than the reader keeps of it.
var errLong = errors.New("line too long")

// readLine reads a line, its end included; of a line longer than maxLine it keeps the last
// maxLine bytes (the stage time is near a line's end) and returns errLong with them, having
// read to its end. Any other error ends the file.
func readLine(br *bufio.Reader, maxLine int) ([]byte, error) {
	var line []byte
	long := 0
	for {
		chunk, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			line = append(line, chunk...)
			if len(line) > maxLine {
				long += len(line) - maxLine
				line = append(line[:0], line[len(line)-maxLine:]...)
			}
			continue
		}
		if len(line) == 0 && long == 0 {
			return chunk, err
		}
		line = append(line, chunk...)
		if err == nil && long > 0 {
			return line, &longError{skipped: long}
		}
		return line, err
	}
}

// longError is errLong with the bytes readLine left out of the line.
type longError struct{ skipped int }

func (e *longError) Error() string        { return errLong.Error() }
func (e *longError) Is(target error) bool { return target == errLong }

// lineSize is how many bytes of the file a line readLine returned took.
func lineSize(line []byte, err error) int {
	var le *longError
	if errors.As(err, &le) {
		return len(line) + le.skipped
	}
	return len(line)
}

// partReader is the span of a file one part fills.
func partReader(f *os.File, p *part) (io.Reader, error) {
	if _, err := f.Seek(p.offset, io.SeekStart); err != nil {
		return nil, err
	}
	if p.end == 0 {
		return f, nil
	}
	return io.LimitReader(f, p.end-p.offset), nil
}

// numbered counts a part's lines from the line where it begins.
func numbered(next func() (auditlog.Line, bool), p *part) func() (auditlog.Line, bool) {
	return func() (auditlog.Line, bool) {
		l, ok := next()
		if ok && l.Num > 0 {
			l.Num += p.line - 1
		}
		return l, ok
	}
}
