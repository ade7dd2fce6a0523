package export

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/bits"
	"strconv"
	"unicode/utf8"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// scanner walks the JSON documents of an export as a stream, one structural step at a time,
// so that an envelope of any size (the one document `aws logs filter-log-events` prints for a
// day, gcloud's array) is read with memory for one record: a record's bytes are kept, up to a
// limit, and everything else is skipped as it is read. It counts lines, so that a record and
// an error point at the line they are on. It checks structure (brackets, strings, escapes),
// not the grammar of numbers and literals: what a record holds is decoded by encoding/json,
// which checks it in full.
type scanner struct {
	r    *bufio.Reader
	line int   // the line of the next byte, from 1
	off  int64 // the offset of the next byte in the input
	err  error
	// compact drops the white space outside strings from the values it keeps: gcloud's
	// indentation, a third of its array, which would be held, written to disk to reverse the
	// array, read back and scanned again for nothing.
	compact bool
	// kept is where a compact scanner gathers a value's runs, which it then copies once.
	kept []byte
	// indent is the spaces the next value follows at the beginning of its line (peek counts
	// them); -1 when it does not begin a line after spaces alone.
	indent int
	// passOver, when set, says whether a record's bytes show that the Reader's Filter passes
	// over it: element then finds the end of a record the reader holds whole and goes past
	// it, neither kept nor checked (passOverHeld). lacks says whether bytes do not hold the
	// Filter's bytes: a line's, which lineDocuments passes over (passLine).
	passOver, lacks func([]byte) bool
}

func newScanner(r *bufio.Reader) *scanner { return &scanner{r: r, line: 1} } // indent 0: the input begins a line

// errTooLong is a value longer than the limit a scanner keeps; it was skipped.
type errTooLong struct{ max, size int }

func (e *errTooLong) Error() string {
	return fmt.Sprintf("longer than %d bytes (at least %d): skipped", e.max, e.size)
}

// syntaxError is an envelope that is not JSON where the scanner is.
type syntaxError struct {
	line int
	msg  string
}

func (e *syntaxError) Error() string { return e.msg }

func (s *scanner) fail(format string, args ...any) error {
	if s.err == nil {
		s.err = &syntaxError{s.line, fmt.Sprintf(format, args...)}
	}
	return s.err
}

// readErr records why the input stopped: io.EOF in the middle of a value is a truncated
// envelope (a syntax error); another error is the stream's (a truncated gzip stream).
func (s *scanner) readErr(err error, inValue bool) error {
	if s.err != nil {
		return s.err
	}
	if errors.Is(err, io.EOF) {
		if inValue {
			return s.fail("the envelope ends in the middle of a value")
		}
		s.err = io.EOF
		return s.err
	}
	s.err = &streamError{err}
	return s.err
}

// streamError is an error reading the stream itself: the log stops being readable.
type streamError struct{ err error }

func (e *streamError) Error() string {
	if errors.Is(e.err, io.ErrUnexpectedEOF) {
		return "compressed stream truncated: reading stopped"
	}
	return "reading stopped: " + e.err.Error()
}
func (e *streamError) Unwrap() error { return e.err }

func (s *scanner) readByte() (byte, error) {
	c, err := s.r.ReadByte()
	if err != nil {
		return 0, err
	}
	s.off++
	s.indent = -1
	if c == '\n' {
		s.line++
	}
	return c, nil
}

// peek skips white space and returns the next byte without reading it; io.EOF at the end.
func (s *scanner) peek() (byte, error) {
	if s.err != nil {
		return 0, s.err
	}
	for {
		b, err := s.r.Peek(1)
		if err != nil {
			return 0, s.readErr(err, false)
		}
		switch c := b[0]; c {
		case ' ', '\t', '\r', '\n':
			indent := s.indent
			s.readByte()
			switch {
			case c == '\n':
				s.indent = 0
			case c == ' ' && indent >= 0:
				s.indent = indent + 1
			}
		case 0xef:
			// A byte order mark, which some tools write first: skipped wherever it is.
			if bom, err := s.r.Peek(3); err == nil && string(bom) == "\ufeff" {
				s.r.Discard(3)
				s.off += 3
				s.indent = -1
				continue
			}
			return b[0], nil
		default:
			return b[0], nil
		}
	}
}

// startLine is the line the next value begins on, after white space.
func (s *scanner) startLine() int {
	s.peek()
	return s.line
}

// expect reads the byte c, after white space.
func (s *scanner) expect(c byte, what string) error {
	got, err := s.peek()
	if err != nil {
		if err == io.EOF {
			return s.fail("%s expected, the envelope ends", what)
		}
		return err
	}
	if got != c {
		return s.fail("%s expected, found %s", what, quoteByte(got))
	}
	s.readByte()
	return nil
}

func quoteByte(c byte) string {
	if c < utf8.RuneSelf && strconv.IsPrint(rune(c)) {
		return strconv.QuoteRune(rune(c))
	}
	return fmt.Sprintf("byte 0x%02x", c)
}

// key reads an object member's name and the colon after it. Names longer than 1 KiB are
// not the envelopes': they are kept cut.
func (s *scanner) key() (string, error) {
	if c, err := s.peek(); err != nil {
		return "", err
	} else if c != '"' {
		return "", s.fail("a member name expected, found %s", quoteByte(c))
	}
	raw, err := s.value(1<<10, nil)
	var tl *errTooLong
	if errors.As(err, &tl) {
		raw, err = []byte(`""`), nil
	}
	if err != nil {
		return "", err
	}
	name, uerr := strconv.Unquote(string(raw))
	if uerr != nil {
		name = string(raw[1 : len(raw)-1]) // escapes strconv does not take (\/): the name is not one the envelopes use
	}
	if err := s.expect(':', "':' after the member name "+strconv.Quote(name)); err != nil {
		return "", err
	}
	return name, nil
}

// object reads the object that comes next, calling member with each member's name; member
// must read the member's value.
func (s *scanner) object(member func(name string) error) error {
	return s.container('{', '}', "an object", func(i int) (string, error) {
		name, err := s.key()
		if err != nil {
			return "", s.inValue(err)
		}
		return fmt.Sprintf("the member %q", name), member(name)
	})
}

// array reads the array that comes next, calling element for each element, which must read
// it; i counts from 0.
func (s *scanner) array(element func(i int) error) error {
	return s.container('[', ']', "an array", func(i int) (string, error) {
		return fmt.Sprintf("element %d", i), element(i)
	})
}

// container reads a container from open to end, calling each for its i-th part (which says
// what it read, for an error).
func (s *scanner) container(open, end byte, what string, each func(i int) (string, error)) error {
	if err := s.expect(open, what); err != nil {
		return err
	}
	if c, err := s.peek(); err != nil {
		return s.inValue(err)
	} else if c == end {
		s.readByte()
		return nil
	}
	for i := 0; ; i++ {
		part, err := each(i)
		if err != nil {
			return err
		}
		c, err := s.peek()
		if err != nil {
			return s.inValue(err)
		}
		s.readByte()
		switch c {
		case ',':
		case end:
			return nil
		default:
			return s.fail("',' or '%c' expected after %s, found %s", end, part, quoteByte(c))
		}
	}
}

// element reads the next value, of at most max bytes, as the record build makes of it; a
// longer one is the record of an error at where and field.
func (s *scanner) element(max int, where, field string, build func(raw []byte, line int) record) (record, error) {
	line := s.startLine()
	if s.passOverHeld(max) {
		return record{line: line, skip: Filtered}, nil
	}
	raw, err := s.value(max, nil)
	var tl *errTooLong
	switch {
	case errors.As(err, &tl):
		return record{line: line, err: recordError(where, field, err)}, nil
	case err != nil:
		return record{}, err
	}
	return build(raw, line), nil
}

// send yields a record, and errStop when the reader wants no more.
func send(yield func(record) bool, rec record) error {
	if !yield(rec) {
		return errStop
	}
	return nil
}

// readLines yields the record build makes of each line of an envelope of JSON lines, of at
// most max bytes (blank lines are skipped, a line too long or the file's end read as the log
// backend's lines are; a line whose bytes show a Reader's Filter passes over it is passed
// over at once, and not yielded); the line's data is valid until build returns.
func readLines(in input, max int, yield func(record) bool, build func(text []byte, num int) record) {
	lr, _, err := auditlog.NewReader(in.file, in.r, max)
	if err != nil {
		yield(record{line: 1, err: &auditlog.ReadError{Err: err}})
		return
	}
	for {
		l, ok := lr.Next()
		if !ok {
			return
		}
		rec := record{line: l.Num, err: l.Err}
		if l.Err == nil {
			if len(bytes.TrimSpace(l.Data)) == 0 {
				continue
			}
			if in.passOver != nil && in.passOver(l.Data) {
				// A search's Filter passes over it: neither copied nor unwrapped, nor handed
				// over (the Reader hands over none it passes over; its line holds no other).
				continue
			}
			rec = build(l.Data, l.Num)
		}
		if !yield(rec) {
			return
		}
	}
}

// ended says whether the input ends after the document the scanner read (nil), or holds
// more, which a reader of one document would not read: a ConvertError naming the file and the
// line the rest begins at (what names the document). An export's output appended to a file
// that held another's (each hour's query, >> to one file) is the usual cause: the file is
// whole, and split it reads.
func (s *scanner) ended(file, what string) error {
	c, end, err := s.after()
	if end || err != nil {
		return err
	}
	return &auditlog.ConvertError{Err: fmt.Errorf("%s:%d: %s after %s, which holds the whole export, ends: another query's output appended to the file? Give each output a file of its own", file, s.line, describeStart(c), what)}
}

// another says whether another array follows the one the scanner read (more), or the input
// ends (an error for anything else after it).
func (s *scanner) another(what string) (more bool, err error) {
	c, end, err := s.after()
	switch {
	case end || err != nil:
		return false, err
	case c == '[':
		return true, nil
	}
	return false, s.fail("%s after %s, which holds the whole export, ends", describeStart(c), what)
}

// after is the first byte after the document the scanner read, or end at the input's end.
func (s *scanner) after() (c byte, end bool, err error) {
	c, err = s.peek()
	if err == io.EOF {
		s.err = nil
		return 0, true, nil
	}
	return c, false, err
}

// describeStart names what a JSON document that begins with c is.
func describeStart(c byte) string {
	switch c {
	case '[':
		return "another array"
	case '{':
		return "an object"
	}
	return quoteByte(c)
}

// documents calls each with every JSON document of the input, counted from 1, until the
// input ends; the error that stops it (but errStop) ends the file as its record says.
func (s *scanner) documents(yield func(record) bool, each func(doc int) error) {
	for doc := 1; ; doc++ {
		if _, err := s.peek(); err != nil {
			if err != io.EOF {
				yield(streamStopped(err, s.line))
			}
			return
		}
		if err := each(doc); err != nil {
			if !errors.Is(err, errStop) {
				yield(streamStopped(err, s.line))
			}
			return
		}
	}
}

// inValue turns the end of the input inside a container into a syntax error.
func (s *scanner) inValue(err error) error {
	if err == io.EOF {
		s.err = nil
		return s.fail("the envelope ends in the middle of a value")
	}
	return err
}

// skip reads the next value and forgets it.
func (s *scanner) skip() error {
	_, err := s.value(-1, nil)
	return err
}

// passOverHeld goes past the object that begins the bytes the reader holds, when it holds it
// whole, in at most max bytes, and passOver says its bytes show that the Filter passes over
// it: a search for a few records of a day (the admission policies' names) read every record
// of an export as the replay does, kept it and checked its strings' escapes, to pass over all
// but a few. What it goes past is not checked: the replay's own reading of the file does.
// False where value reads the record.
func (s *scanner) passOverHeld(max int) bool {
	if s.passOver == nil {
		return false
	}
	if c, err := s.peek(); err != nil || c != '{' {
		return false
	}
	b, _ := s.r.Peek(s.r.Buffered())
	end, ok := s.indentedEnd(b)
	if !ok {
		end, ok = containerEnd(b)
	}
	if !ok || end > max || !s.passOver(b[:end]) {
		return false
	}
	s.discard(b[:end])
	return true
}

// searchLine is the most of a line a search holds to pass over it (passLine): a webhook batch
// of --audit-webhook-batch-max-size (400) events at Metadata level is about half a megabyte,
// an Event Hubs message at most 1 MB.
const searchLine = 4 << 20

// lineDocuments is documents, over a file that holds one document a line as a rule (a webhook
// receiver's EventLists, Event Hubs' messages). A search (a Filter) reads it as a log
// backend's file is searched (a byte search, source's grepReader): a line whose bytes do not
// hold the filter is passed over whole, unread (passLine), where the document before it was
// read to the end of its line (the first, and each that holds the filter); whole, when set,
// says whether a line's records may be passed over on their bytes at all (AKS's, where none
// is a piece of an event that others complete). Reading each record to its end to pass over
// it took 0.6 s of the 5.6 a replay of a cluster's traffic as webhook batches took, before
// its first event.
func (s *scanner) lineDocuments(yield func(record) bool, whole func([]byte) bool, each func(doc int) error) {
	byLine := false
	if s.lacks != nil {
		s.r = bufio.NewReaderSize(s.r, searchLine)
	}
	s.documents(yield, func(doc int) error {
		if byLine && s.passLine(whole) {
			return nil
		}
		err := each(doc)
		byLine = err == nil && s.lacks != nil && s.lineEnded()
		return err
	})
}

// passLine goes past the line the next document begins, when it begins the line, the reader
// holds the line whole (to its newline, or the input's end), the line ends with '}', its
// bytes do not hold the filter (lacks) and whole, when set, says its records may be passed
// over on them: a line that does not hold the filter holds no record that does. The caller
// knows that the document before it ended its line (lineEnded): a newline is never inside a
// JSON string. False where the document is to be read.
func (s *scanner) passLine(whole func([]byte) bool) bool {
	if c, err := s.peek(); err != nil || c != '{' || s.indent != 0 {
		return false
	}
	b, _ := s.r.Peek(s.r.Buffered())
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		// The line goes on past what the reader holds: as much as it holds.
		var err error
		if b, err = s.r.Peek(s.r.Size()); err != nil && err != io.EOF {
			return false
		}
		if i = bytes.IndexByte(b, '\n'); i < 0 && err != io.EOF {
			return false
		}
	}
	line := b
	if i >= 0 {
		line = b[:i]
	}
	if t := bytes.TrimRight(line, " \t\r"); len(t) == 0 || t[len(t)-1] != '}' || !s.lacks(line) || whole != nil && !whole(line) {
		return false
	}
	if i >= 0 {
		s.discard(b[:i+1])
		s.indent = 0 // the next line begins
	} else {
		s.discard(b)
	}
	return true
}

// lineEnded says whether the document the scanner read ended its line: nothing but spaces,
// tabs or a carriage return follow it before a newline or the input's end.
func (s *scanner) lineEnded() bool {
	for n := 1; ; n++ {
		b, err := s.r.Peek(n)
		if len(b) < n {
			return err == io.EOF
		}
		switch b[n-1] {
		case '\n':
			return true
		case ' ', '\t', '\r':
		default:
			return false
		}
	}
}

// discard goes past the bytes b the reader holds next.
func (s *scanner) discard(b []byte) {
	s.line += bytes.Count(b, newline)
	s.off += int64(len(b))
	s.r.Discard(len(b))
	s.indent = -1
}

var newline = []byte{'\n'}

// openedAlone says whether the object b begins with ends its first line with its brace, and
// its next line is indented deeper than indent: as a printer that indents lays it out.
func openedAlone(b []byte, indent int) bool {
	i := 1
	if i < len(b) && b[i] == '\r' {
		i++
	}
	if i >= len(b) || b[i] != '\n' {
		return false
	}
	spaces := 0
	for i++; i < len(b) && b[i] == ' '; i++ {
		spaces++
	}
	return spaces > indent
}

// skipIndented skips an object that begins a line of an indented document after spaces
// alone (gcloud's --format=json, az's --output json), finding its end by the line that closes
// it, a newline and as many spaces before '}', without reading what it holds: a JSON string
// holds no newline, and a printer that indents puts what the object nests deeper. False when
// the object does not begin such a line, or the reader's buffer does not hold that line, and
// skip reads it. What it skips is not checked: the newest-first entries it indexes are read
// back and decoded whole, which reports an entry that is not JSON.
func (s *scanner) skipIndented() bool {
	if c, err := s.peek(); err != nil || c != '{' || s.indent < 1 {
		return false
	}
	b, _ := s.r.Peek(s.r.Buffered())
	i := indexClosing(b, s.indent)
	if i < 0 && len(b) < s.r.Size() {
		// The buffer ends in the object: filled (which moves what it holds to its start)
		// only then.
		b, _ = s.r.Peek(s.r.Size())
		i = indexClosing(b, s.indent)
	}
	if i < 0 || !openedAlone(b, s.indent) {
		return false
	}
	end := i + s.indent + 2 // its newline, indentation and brace
	if end < len(b) && b[end] != ',' && b[end] != '\n' && b[end] != '\r' {
		return false
	}
	s.discard(b[:end])
	return true
}

// indentedHeld reads the object that begins a line of an indented document after spaces
// alone (the AWS CLI's JSON), when the reader holds it whole in at most max bytes, to the line
// that closes it (as skipIndented finds it): its bytes, copied (getBuf), and the line it
// begins on. What it holds is not checked: its reader checks it as it unwraps it
// (checkedLogEvent). False where value reads it.
func (s *scanner) indentedHeld(max int) (raw []byte, line int, ok bool) {
	if c, err := s.peek(); err != nil || c != '{' || s.indent < 1 {
		return nil, 0, false
	}
	b, _ := s.r.Peek(s.r.Buffered())
	end, ok := s.indentedEnd(b)
	if !ok || end > max {
		return nil, 0, false
	}
	line = s.line
	raw = append(getBuf(end), b[:end]...)
	s.discard(b[:end])
	return raw, line, true
}

// indentedEnd is where the object that begins b ends, when it begins a line after spaces
// alone (the scanner's indent) and b holds the line that closes it, found by that line (a
// newline, as many spaces and '}', then ',' or the line's end); false otherwise.
func (s *scanner) indentedEnd(b []byte) (int, bool) {
	if s.indent < 1 || len(b) == 0 || b[0] != '{' {
		return 0, false
	}
	i := indexClosing(b, s.indent)
	if i < 0 || !openedAlone(b, s.indent) {
		return 0, false
	}
	end := i + s.indent + 2 // its newline, indentation and brace
	if end < len(b) && b[end] != ',' && b[end] != '\n' && b[end] != '\r' {
		return 0, false
	}
	return end, true
}

// indexClosing is where the first line of b that closes an object indented by indent spaces
// begins (a newline, indent spaces and '}'), or -1: bytes.Index of that line, found from its
// brace. An indented document has a newline every few dozen bytes and, after it, spaces, which
// bytes.Index of the line checks one by one (it looks for the first byte and compares the
// rest: a quarter of the CPU of reading gcloud's array of a day); a brace comes on few of its
// lines.
func indexClosing(b []byte, indent int) int {
	for i := indent + 1; i < len(b); i++ {
		j := bytes.IndexByte(b[i:], '}')
		if j < 0 {
			return -1
		}
		i += j
		if b[i-indent-1] == '\n' && onlySpaces(b[i-indent:i]) {
			return i - indent - 1
		}
	}
	return -1
}

// onlySpaces says whether b is spaces alone.
func onlySpaces(b []byte) bool {
	for len(b) >= 8 {
		if binary.LittleEndian.Uint64(b) != spaces {
			return false
		}
		b = b[8:]
	}
	for _, c := range b {
		if c != ' ' {
			return false
		}
	}
	return true
}

// value reads the next value and returns its bytes, appended to buf, when it has at most max
// bytes (max < 0 keeps nothing); a longer value is read to its end and reported as
// *errTooLong, after which the scanner goes on.
func (s *scanner) value(max int, buf []byte) ([]byte, error) {
	c, err := s.peek()
	if err != nil {
		return nil, err
	}
	out := buf[:len(buf):len(buf)]
	keep := max >= 0
	size := 0
	add := func(b ...byte) {
		size += len(b)
		if keep {
			if size > max {
				keep, out = false, nil
				return
			}
			out = append(out, b...)
		}
	}
	depth := 0
	inString := false
	escaped := false
	switch c {
	case '{', '[', '"':
	case ']', '}', ',', ':':
		return nil, s.fail("a value expected, found %s", quoteByte(c))
	default:
		// A number or a literal: to the next delimiter.
		for {
			b, err := s.r.Peek(1)
			if err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				return nil, s.readErr(err, true)
			}
			switch b[0] {
			case ',', '}', ']', ' ', '\t', '\r', '\n':
			default:
				if b[0] == '{' || b[0] == '[' || b[0] == '"' || b[0] == ':' {
					return nil, s.fail("%s cannot follow %q", quoteByte(b[0]), string(out))
				}
				s.readByte()
				add(b[0])
				continue
			}
			break
		}
		return s.done(out, keep, max, size)
	}
	if c != '"' {
		if held, ok := s.heldContainer(max, buf); ok {
			return held, nil
		}
	}
	// The bytes the reader holds are scanned in place and gathered in kept (but for the white
	// space a compact scanner drops), then copied at once into a buffer of the record's
	// (getBuf).
	stops := &scanStops
	gathered := len(buf) == 0 && keep
	if s.compact {
		stops = &compactStops
	}
	if gathered {
		out = s.kept[:0]
	}
	for {
		n := s.r.Buffered()
		if n == 0 {
			n = 1 // fills the buffer
		}
		chunk, err := s.r.Peek(n)
		if len(chunk) == 0 {
			return nil, s.readErr(err, true)
		}
		i, from, done := 0, 0, false
		for i < len(chunk) && !done {
			if inString {
				// To the quote that ends the string (what a string holds is the decoder's
				// to check, control characters included).
				end, found, carry := stringEnd(chunk[i:], escaped)
				// A line's end in a string (wrong JSON, which the decoder refuses) is
				// counted as the blocks count it.
				s.line += bytes.Count(chunk[i:i+end], newline)
				i += end
				escaped = carry
				if found {
					i++
					inString, escaped = false, false
					done = depth == 0
				}
				continue
			}
			b := chunk[i]
			i++
			if !stops[b] {
				continue
			}
			switch b {
			case '"':
				inString = true
			case '{', '[':
				depth++
			case '}', ']':
				depth--
				done = depth == 0
			default: // white space
				if b == '\n' {
					s.line++
				}
				if s.compact {
					// The run before it kept, the white space that follows skipped.
					if from < i-1 {
						add(chunk[from : i-1]...)
					}
					for ; i < len(chunk) && (chunk[i] == ' ' || chunk[i] == '\t' || chunk[i] == '\r' || chunk[i] == '\n'); i++ {
						if chunk[i] == '\n' {
							s.line++
						}
					}
					from = i
				}
			}
		}
		add(chunk[from:i]...)
		s.r.Discard(i)
		s.off += int64(i)
		s.indent = -1
		if done {
			if gathered && keep {
				s.kept, out = out, append(getBuf(len(out)), out...)
			}
			return s.done(out, keep, max, size)
		}
	}
}

// heldContainer is value of the container the reader holds whole: its end found 64 bytes at
// a time and its bytes copied (a compact scanner's in the same reading, without their white
// space), or skipped (max < 0: an export's members a replay does not read). False where value
// reads it byte by byte: the reader holds part of it, it is longer than max (which value
// says), or it holds a backslash outside a string (containerEnd).
func (s *scanner) heldContainer(max int, buf []byte) ([]byte, bool) {
	b, _ := s.r.Peek(s.r.Buffered())
	if len(b) == 0 {
		return nil, false
	}
	if max < 0 {
		end, found := containerEnd(b)
		if found {
			s.discard(b[:end])
		}
		return nil, found
	}
	var out []byte
	end, found := 0, false
	if s.compact {
		// Gathered in kept, then copied into a buffer of the record's size.
		s.kept, end, found = compactContainer(s.kept[:0], b)
		out = s.kept
	} else if end, found = containerEnd(b); found {
		out = b[:end]
	}
	if !found || len(out) > max {
		return nil, false
	}
	held := buf[:len(buf):len(buf)]
	if len(buf) == 0 {
		held = getBuf(len(out))
	}
	held = append(held, out...)
	s.discard(b[:end])
	return held, true
}

// scanStops are the bytes a scanner's value stops at outside strings; compactStops those of a
// compact scanner, which drops white space.
var scanStops, compactStops = [256]bool{'"': true, '{': true, '[': true, '}': true, ']': true, '\n': true},
	[256]bool{'"': true, '{': true, '[': true, '}': true, ']': true, '\n': true, ' ': true, '\t': true, '\r': true}

// stringEnd is where the string whose bytes b follows (escaped: its last byte before b was
// an unpaired backslash) ends: the index of its closing quote, found; or, when b does not
// hold it, len(b), and whether b ends with an unpaired backslash. It reads 64 bytes at a
// time, their quotes and backslashes as the bits of a word and the bytes escaped found from
// them (escapedBits), the rest eight bytes at a time by a table (escapes): the message of a
// CloudWatch or Azure record is an Event escaped into a string, with an escaped quote every
// few bytes, where jumping from quote to quote and counting the backslashes before each took
// a quarter of the reading.
func stringEnd(b []byte, escaped bool) (end int, found, carry bool) {
	var c uint16 // 1: the next byte is escaped
	if escaped {
		c = 1
	}
	i := 0
	for ; i+64 <= len(b); i += 64 {
		var quotes, backslashes uint64
		for k := 0; k < 64; k += 8 {
			x := binary.LittleEndian.Uint64(b[i+k:])
			quotes |= uint64(gather(bytesEqual(x, '"'))) << k
			backslashes |= uint64(gather(bytesEqual(x, '\\'))) << k
		}
		var esc uint64
		esc, c = escapedBits(backslashes, c)
		if ends := quotes &^ esc; ends != 0 {
			return i + bits.TrailingZeros64(ends), true, false
		}
	}
	for ; i+8 <= len(b); i += 8 {
		x := binary.LittleEndian.Uint64(b[i:])
		e := escapes[(uint16(gather(bytesEqual(x, '\\')))<<1|c)&511]
		if ends := gather(bytesEqual(x, '"')) &^ uint8(e); ends != 0 {
			return i + bits.TrailingZeros8(ends), true, false
		}
		c = e >> 8
	}
	for ; i < len(b); i++ {
		switch {
		case c == 1:
			c = 0
		case b[i] == '\\':
			c = 1
		case b[i] == '"':
			return i, true, false
		}
	}
	return len(b), false, c == 1
}

// containerEnd is the index just past the bracket that closes the object or array b begins
// with; false when b does not hold it, or holds a backslash outside a string before its end
// (scanner.value reads it byte by byte then). It reads 64 bytes at a time, as stringEnd does: the
// quotes not escaped give, by the parity of those before each byte (a prefix XOR), which bytes
// are inside strings, and only the brackets outside them count. An Event's strings are a few
// bytes each: a scan that went byte by byte between them and string by string read a
// webhook's events at a third of a GB/s. What the strings hold (control characters) and the
// kinds of brackets are not checked: the decoding of the record does.
func containerEnd(b []byte) (int, bool) {
	_, end, found := scanContainer(b, nil, false)
	return end, found
}

// compactContainer is containerEnd that also appends the container to dst without the white
// space outside its strings, as a compact scanner keeps it (gcloud's and az's indentation):
// in the same reading, where a scan for the end and another that compacted took twice as long
// as the scan byte by byte between strings.
func compactContainer(dst, b []byte) (out []byte, end int, found bool) {
	return scanContainer(b, dst, true)
}

// scanContainer is containerEnd, and with compact set compactContainer.
func scanContainer(b, dst []byte, compact bool) (out []byte, end int, found bool) {
	var c uint16           // 1: the next byte is escaped
	var in uint64          // all ones: the next byte is inside a string
	var quotesEnded uint64 // the quotes of the block before, not escaped
	depth := 0
	var tail [64]byte
	out = dst
	for i := 0; i < len(b); i += 64 {
		if in != 0 && i > 0 && quotesEnded == 0 {
			// A block all inside a string, which goes on: a long one (an Event escaped
			// into a record's message, a last-applied configuration), read to its end by
			// stringEnd, which looks for half as many bytes.
			end, found, _ := stringEnd(b[i:], c == 1)
			if !found {
				return out, len(b), false
			}
			if compact {
				out = append(out, b[i:i+end+1]...)
			}
			i += end + 1
			in, c = 0, 0
		}
		w := b[i:]
		n := min(len(w), 64) // the block's bytes of b's
		if n < 64 {
			// The last bytes, padded with zeros, which are neither quotes nor brackets.
			copy(tail[:], w)
			w = tail[:]
		}
		var quotes, backslashes, opens, closes, low uint64
		for k := 0; k < 64; k += 8 {
			x := binary.LittleEndian.Uint64(w[k:])
			// A byte | 0x20 is '{' for '[' and '{' alone, '}' for ']' and '}' alone.
			y := x | 0x2020202020202020
			quotes |= uint64(gather(bytesEqual(x, '"'))) << k
			backslashes |= uint64(gather(bytesEqual(x, '\\'))) << k
			opens |= uint64(gather(bytesEqual(y, '{'))) << k
			closes |= uint64(gather(bytesEqual(y, '}'))) << k
			if compact {
				// The bytes below '!' (white space among them), exactly: a byte's low
				// seven bits plus 0x5f carry into its high bit from 0x21 up, within it.
				low |= uint64(gather(^(x&0x7f7f7f7f7f7f7f7f+0x5f5f5f5f5f5f5f5f|x)&0x8080808080808080)) << k
			}
		}
		var esc uint64
		esc, c = escapedBits(backslashes, c)
		quotesEnded = quotes &^ esc
		strs := prefixXOR(quotesEnded) ^ in
		if backslashes&^strs != 0 {
			// A backslash outside a string, which escapes nothing there: the blocks
			// read it as an escape, the scan byte by byte as the byte it is (both are
			// wrong JSON, which the decoder refuses), and they must cut the same records.
			return out, len(b), false
		}
		in = uint64(int64(strs) >> 63)
		opens &^= strs
		closes &^= strs
		limit, closed := n, false // the bytes of the block that are the container's
		if k := bits.OnesCount64(closes); depth > k {
			// It cannot close here.
			depth += bits.OnesCount64(opens) - k
		} else {
			for m := opens | closes; m != 0; m &= m - 1 {
				k := bits.TrailingZeros64(m)
				if opens&(1<<k) != 0 {
					depth++
					continue
				}
				if depth--; depth == 0 {
					limit, closed = k+1, true
					break
				}
			}
		}
		if compact {
			// The runs of white space outside strings dropped, a run at a time (an
			// indentation is dozens of spaces).
			from := 0
			for m := low &^ strs & (1<<limit - 1); m != 0; {
				k := bits.TrailingZeros64(m)
				end := k + bits.TrailingZeros64(^(m >> k)) // the run's end
				j := k
				for j < end && (w[j] == ' ' || w[j] == '\n' || w[j] == '\t' || w[j] == '\r') {
					j++
				}
				if j > k {
					out = append(out, w[from:k]...)
					from = j
				}
				if j < end {
					j++ // a control character, kept: the decoder's to report
				}
				m &^= 1<<j - 1
			}
			out = append(out, w[from:limit]...)
		}
		if closed {
			return out, i + limit, true
		}
	}
	return out, len(b), false
}

// prefixXOR sets bit k of x to the parity of its bits 0 to k.
func prefixXOR(x uint64) uint64 {
	x ^= x << 1
	x ^= x << 2
	x ^= x << 4
	x ^= x << 8
	x ^= x << 16
	x ^= x << 32
	return x
}

// escapedBits is, for the backslashes of 64 bytes (bit k set: byte k is one) and whether the
// first byte is escaped by a backslash before them (c, 0 or 1), the bytes that are escaped and
// whether the byte after them is: simdjson's arithmetic (Langdale and Lemire, "Parsing
// Gigabytes of JSON per Second", 2019, section 3.1.1), where a run of backslashes escapes
// every second byte from its start.
func escapedBits(backslashes uint64, c uint16) (escaped uint64, next uint16) {
	const odd = 0xaaaaaaaaaaaaaaaa
	if backslashes == 0 {
		return uint64(c), 0
	}
	potential := backslashes &^ uint64(c)
	codes := (potential<<1 | odd) - potential ^ odd
	escaped = codes ^ (backslashes | uint64(c))
	escape := codes & backslashes
	return escaped, uint16(escape >> 63)
}

// escapes is, for the backslashes of eight bytes (bit k set: byte k is one) shifted left by
// one, with the low bit set when the first byte is escaped by a backslash before them, the
// bytes that are escaped (bits 0 to 7) and whether the byte after them is (bit 8).
var escapes = func() (t [512]uint16) {
	for i := range t {
		backslashes, c := i>>1, i&1
		for k := range 8 {
			switch {
			case c == 1:
				t[i] |= 1 << k
				c = 0
			case backslashes&(1<<k) != 0:
				c = 1
			}
		}
		t[i] |= uint16(c) << 8
	}
	return t
}()

// bytesEqual marks every byte of x (little-endian) that is c with its high bit, exactly.
func bytesEqual(x uint64, c byte) uint64 {
	const lows = 0x7f7f7f7f7f7f7f7f
	y := x ^ (0x0101010101010101 * uint64(c))
	return ^(y&lows + lows | y | lows)
}

// gather is the high bits of the bytes of m (little-endian) as the bits of a byte: bit k is
// byte k's. The multiplication moves each byte's bit to the top byte, k places from its
// bottom, with no two bits landing on one place (no carries).
func gather(m uint64) uint8 { return uint8((m >> 7) * 0x0102040810204080 >> 56) }

func (s *scanner) done(out []byte, keep bool, max, size int) ([]byte, error) {
	if max >= 0 && !keep {
		return nil, &errTooLong{max: max, size: size}
	}
	return out, nil
}
