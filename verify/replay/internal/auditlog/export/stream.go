package export

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"regexp"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// concatenatedEvents is the log backend's events one after the other without a delimiter
// between them, or with a newline: what a Firehose stream of a CloudWatch Logs subscription
// writes when its decompression and message extraction are on, with or without a delimiter
// appended (https://docs.aws.amazon.com/firehose/latest/dev/Message_extraction.html). It is
// detected (a first event followed on its line by another; events one a line in an object
// Firehose named, firehoseObject) or named as eks-firehose, not named in Formats:
// --input-format audit reads the log backend's lines, the hot path, which only a file that is
// not one leaves.
const concatenatedEvents Format = "audit-concatenated"

// prettyEvents is the log backend's events pretty-printed, one after the other: what jq
// writes of a log without -c (jq 'select(.verb != "get")' audit.log > writes.json).
// Detected, not named in Formats.
const prettyEvents Format = "audit-pretty"

// eventArray is the log backend's events in an array, as jq -s writes a log. Detected, not
// named in Formats.
const eventArray Format = "audit-array"

func init() {
	readers[concatenatedEvents] = readConcatenated
	readers[prettyEvents] = readPretty
	readers[eventArray] = readEventArray
	readers[InStageOrder] = readInStageOrder
}

// InStageOrder is the log backend's lines read back in the order of their events' stage times
// within the window an export's are (reorder): a plain log whose clock goes back by more than
// the jitter of kube-apiserver's log backend (events a tool copied out of the order the
// server wrote them, several logs interleaved). Package source asks for it (Split); it is not
// detected, nor named in Formats.
const InStageOrder Format = "audit-in-stage-order"

// readInStageOrder reads the log backend's lines, each an event to put back in order (a line
// that is not one is the replay's decoder's to report, in its place).
func readInStageOrder(in input, yield func(record) bool) {
	readLines(in, in.maxLine, yield, func(text []byte, num int) record {
		// Without its newline, which the Reader gives each line it hands over.
		text = bytes.TrimSuffix(text, []byte{'\n'})
		return eventRecord(append(getBuf(len(text)), text...), num, auditlog.Loss{})
	})
}

// readConcatenated reads a stream of events, each a JSON object, whatever separates them.
func readConcatenated(in input, yield func(record) bool) {
	cr := &cutReader{r: in.r}
	br := bufio.NewReaderSize(cr, 256<<10)
	line := 1
	for {
		br.Reset(cr)
		s := newScanner(br)
		s.line = line
		for doc := 1; ; doc++ {
			if _, err := s.peek(); err != nil {
				if err != io.EOF {
					yield(streamStopped(err, s.line))
					return
				}
				break
			}
			where := fmt.Sprintf("event %d", doc)
			start := s.line
			if c, _ := s.peek(); c != '{' {
				// A message of another of the log group's streams, which is no JSON object:
				// skipped to the next line or event.
				if !yield(record{line: start, skip: otherMessage}) {
					return
				}
				resync(s)
				continue
			}
			rec, err := s.element(in.maxLine, where, "", func(raw []byte, line int) record {
				if !auditMessage(raw) {
					return record{line: line, skip: otherMessage} // another component's JSON
				}
				return eventRecord(raw, line, auditlog.Loss{})
			})
			switch {
			case err != nil && cr.cut:
				// The message CloudWatch Logs cut, which ends the part: Firehose's extracted
				// messages carry no time to rebuild it at (as truncatedMessage does where
				// they do).
				if !yield(record{line: start, err: recordError(fmt.Sprintf("line %d", start), "", fmt.Errorf("an event cut by CloudWatch Logs at its event size limit (ending %q), which the messages Firehose extracted give no timestamp to place: lost by the export, not replayed", cloudWatchTruncated))}) {
					return
				}
			case errors.Is(err, errStop):
				return
			case err != nil:
				// Not JSON: a malformed line, and the events after it are read.
				var syn *syntaxError
				if !errors.As(err, &syn) {
					yield(streamStopped(err, s.line))
					return
				}
				if !yield(record{line: start, err: recordError(fmt.Sprintf("line %d", start), "", fmt.Errorf("not an audit event's JSON: %v", err))}) {
					return
				}
				resync(s)
				continue
			case send(yield, rec) != nil:
				return
			default:
				continue
			}
			break
		}
		newline := cr.newline
		if !cr.next() {
			return
		}
		line = s.line
		if newline {
			line++
		}
	}
}

// readPretty reads events pretty-printed one after the other (prettyEvents), each the JSON
// object that begins at its line, in the file's order; one that is not JSON is a malformed
// line, and the events after it are read.
func readPretty(in input, yield func(record) bool) {
	s := in.scanner()
	for doc := 1; ; doc++ {
		c, err := s.peek()
		if err != nil {
			if err != io.EOF {
				yield(streamStopped(err, s.line))
			}
			return
		}
		start := s.line
		if c != '{' {
			// Not an object: the rest of the line is malformed, as the log backend's line
			// would be.
			if !yield(record{line: start, err: recordError(fmt.Sprintf("line %d", start), "", errors.New("not an audit event's JSON object"))}) {
				return
			}
			resync(s)
			continue
		}
		rec, err := s.element(in.maxLine, fmt.Sprintf("event %d", doc), "", func(raw []byte, line int) record {
			// Without its time: in the file's order, as the log backend's lines are read,
			// not put back in the order of stage times as an envelope's records are.
			return record{data: raw, line: line}
		})
		var syn *syntaxError
		switch {
		case errors.Is(err, errStop):
			return
		case errors.As(err, &syn):
			if !yield(record{line: start, err: recordError(fmt.Sprintf("line %d", start), "", fmt.Errorf("not an audit event's JSON: %v", err))}) {
				return
			}
			resync(s)
		case err != nil:
			yield(streamStopped(err, s.line))
			return
		case send(yield, rec) != nil:
			return
		}
	}
}

// readEventArray reads events in an array (eventArray), each at the line its object begins,
// in the array's order; the reading stops where the array is not JSON, which is reported.
// Arrays one after another (jq -s's output of each log appended to one file) are read one
// after another.
func readEventArray(in input, yield func(record) bool) {
	s := in.scanner()
	s.documents(yield, func(doc int) error {
		return s.array(func(i int) error {
			where := fmt.Sprintf("element %d", i)
			if doc > 1 {
				where = fmt.Sprintf("array %d element %d", doc, i)
			}
			rec, err := s.element(in.maxLine, where, "", func(raw []byte, line int) record {
				return record{data: raw, line: line} // in the file's order, as readPretty's
			})
			if err != nil {
				return err
			}
			return send(yield, rec)
		})
	})
}

// otherMessage says why a message Firehose extracted that is no audit event is skipped.
const otherMessage = "a message that is not an audit event (a CloudWatch Logs subscription delivers every stream of the log group: kube-apiserver's own log, the authenticator's, ...)"

// eventStart is how the log backend's JSON of an event begins.
var eventStart = []byte(`{"kind":"Event"`)

// resync goes past what the scanner s is in, to the next line or the next event's beginning,
// or to the input's end (its next peek says whether it ended or failed).
func resync(s *scanner) {
	s.err = nil
	for {
		b, err := s.r.Peek(1)
		if err != nil {
			return
		}
		switch b[0] {
		case '\n':
			s.readByte()
			return
		case '{':
			if next, _ := s.r.Peek(len(eventStart)); bytes.Equal(next, eventStart) {
				return
			}
		}
		s.readByte()
	}
}

// cutReader reads the input in parts that end where CloudWatch Logs cut a message: its end,
// "[Truncated...]", which no event's JSON holds but in a string, runs into the next message
// (or its delimiter). A part ends with EOF after the marker; next goes on to the next part.
type cutReader struct {
	r       *bufio.Reader
	cut     bool // the part read ended at a cut
	newline bool // the part read ended at a newline, which it read
	end     bool // the part read ended
	pending int  // the marker's bytes left to read, which end the part
}

func (c *cutReader) Read(p []byte) (int, error) {
	switch {
	case c.end:
		return 0, io.EOF
	case len(p) == 0:
		return 0, nil
	case c.pending > 0:
		k, err := c.r.Read(p[:min(len(p), c.pending)])
		if c.pending -= k; c.pending == 0 {
			c.cut, c.end = true, true
		}
		return k, err
	}
	// Room to see a marker that begins in p whole, and what follows it.
	const after = 16
	p = p[:min(len(p), c.r.Size()-len(cloudWatchTruncated)-after)]
	n := len(p) + len(cloudWatchTruncated) + after
	b, err := c.r.Peek(n)
	if len(b) == 0 {
		if err == nil {
			err = io.EOF
		}
		c.end = true
		return 0, err
	}
	// A newline ends a part too: no event's JSON holds one (the log backend writes an event
	// a line), so a message cut short without a marker ends there.
	if nl := bytes.IndexByte(b[:min(len(p), len(b))], '\n'); nl == 0 {
		c.r.Discard(1)
		c.newline, c.end = true, true
		return 0, io.EOF
	} else if nl > 0 {
		p, b = p[:nl], b[:nl+min(len(b)-nl, len(cloudWatchTruncated)+after)]
	}
	for from := 0; from < len(p) && from < len(b); {
		i := bytes.Index(b[from:], []byte(cloudWatchTruncated))
		if i < 0 || from+i >= len(p) {
			break
		}
		i += from
		if !cutEnds(b[i+len(cloudWatchTruncated):], len(b) < n) {
			from = i + 1
			continue
		}
		if i == 0 {
			c.pending = len(cloudWatchTruncated)
			return c.Read(p)
		}
		return c.r.Read(p[:i])
	}
	return c.r.Read(p[:min(len(p), len(b))])
}

// cutEnds says whether what follows a marker of a cut, rest, is the next message or the
// input's end (ended: rest is all there is), not more of a string that holds the marker's
// text: a newline (Firehose's delimiter: a string holds none), an event's '{', or a line of
// another of the log group's logs (klog's "I0101 ", logrus's "time=").
func cutEnds(rest []byte, ended bool) bool {
	switch {
	case len(rest) == 0:
		return ended
	case rest[0] == '\n' || rest[0] == '{' || bytes.HasPrefix(rest, []byte("\r\n")):
		return true
	}
	return otherLogLine(rest)
}

// otherLogLine says whether b begins a line of another of an EKS log group's logs than the
// audit log: klog's ("I0101 ", kube-apiserver's, the controller manager's, and the later
// lines of a trace it logs, "Trace[ID]: "), logrus's ("time=", the authenticator's). Its
// prefix only, not klog's whole header (auditlog.KlogLine, which a log backend's line must
// begin with to be skipped): a message Firehose extracted may be cut, or run into the next
// without a delimiter.
func otherLogLine(b []byte) bool {
	return bytes.HasPrefix(b, []byte("time=")) || len(b) >= 6 && bytes.IndexByte([]byte("IWEF"), b[0]) >= 0 && allDigits(b[1:5]) && b[5] == ' ' ||
		auditlog.TraceLine(b)
}

// otherLogMessage says whether a message of a log group whose stream is not known is one of
// another of its logs: a line otherLogLine knows, or a structured log line of
// kube-apiserver's process (the etcd client's, klog's JSON format), which is JSON but no
// audit event.
func otherLogMessage(msg []byte) bool {
	return otherLogLine(msg) || !auditMessage(msg) && auditlog.StructuredLogLine(msg)
}

func allDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// next goes on to the part after a cut or a newline; false when the input ended.
func (c *cutReader) next() bool {
	if !c.cut && !c.newline {
		return false
	}
	c.cut, c.newline, c.end = false, false, false
	return true
}

// concatenated says whether the first JSON value of head is followed by another on its line.
func concatenated(head []byte) bool {
	depth, inString, escaped := 0, false, false
	for i, c := range head {
		switch {
		case inString:
			switch {
			case escaped:
				escaped = false
			case c == '\\':
				escaped = true
			case c == '"':
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			depth--
			if depth == 0 {
				rest := bytes.TrimLeft(head[i+1:], " \t\r")
				return len(rest) > 0 && rest[0] == '{'
			}
		}
	}
	return false
}

// firehoseObjectRE is the name Firehose gives the objects it writes to S3: the stream's name,
// its version, the time and a UUID, and the compression's extension
// (https://docs.aws.amazon.com/firehose/latest/dev/s3-object-name.html).
var firehoseObjectRE = regexp.MustCompile(`-[0-9]+-[0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9]{2}-[0-9]{2}-[0-9]{2}-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(\.[A-Za-z0-9]+)*$`)

// firehoseObject says whether file is named as Firehose names an object: what is not its raw
// records (DATA_MESSAGEs) in such an object is the messages Firehose extracted from a
// CloudWatch Logs subscription, with or without a delimiter, in the order Firehose received
// the batches of every stream of the log group, not the order a server completed them: they
// are read as concatenated events, put back in that order (see reorder).
func firehoseObject(file string) bool {
	return firehoseObjectRE.MatchString(filepath.Base(file))
}
