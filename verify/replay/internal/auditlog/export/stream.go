package export

import (
	"bytes"
	"errors"
	"fmt"
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

// firehoseObjectRE is the name Firehose gives the objects it writes to S3: the stream's name,
// its version, the time and a UUID, and the compression's extension
// (https://docs.aws.amazon.com/firehose/latest/dev/s3-object-name.html).
var firehoseObjectRE = regexp.MustCompile(`-[0-9]+-[0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9]{2}-[0-9]{2}-[0-9]{2}-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(\.[A-Za-z0-9]+)*$`)

// firehoseObject says whether file is named as Firehose names an object: audit events one a
// line in such an object are the messages Firehose extracted from a CloudWatch Logs
// subscription and delimited with newlines, which are in the order Firehose received the
// batches of every server's log stream, not the order a server completed them: they are read
// as concatenated events, put back in that order (see reorder).
func firehoseObject(file string) bool {
	return firehoseObjectRE.MatchString(filepath.Base(file))
}
