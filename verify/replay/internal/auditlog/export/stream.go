package export

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// concatenatedEvents is the log backend's events one after the other without a delimiter
// between them: what a Firehose stream of a CloudWatch Logs subscription writes when its
// decompression and message extraction are on and no processor appends a delimiter
// (https://docs.aws.amazon.com/firehose/latest/dev/Message_extraction.html). It is detected
// (a first event followed on its line by another), not named in Formats: --input-format audit
// reads the log backend's lines, the hot path, which only a file that is not one leaves.
const concatenatedEvents Format = "audit-concatenated"

func init() { readers[concatenatedEvents] = readConcatenated }

// readConcatenated reads a stream of events, each a JSON object, whatever separates them.
func readConcatenated(in input, yield func(record) bool) {
	s := newScanner(in.r)
	s.documents(yield, func(doc int) error {
		where := fmt.Sprintf("event %d", doc)
		rec, err := s.element(in.maxLine, where, "", func(raw []byte, line int) record {
			if raw[0] != '{' {
				return record{line: line, err: recordError(where, "", errors.New("not an object"))}
			}
			return eventRecord(raw, line, auditlog.Loss{})
		})
		if err != nil {
			return err
		}
		return send(yield, rec)
	})
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
