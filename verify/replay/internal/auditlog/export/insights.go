package export

import (
	"bytes"
	"encoding/csv"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"regexp"
	"slices"
	"time"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// A CloudWatch Logs Insights query's results, as aws logs get-query-results prints them
// (https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_GetQueryResults.html):
// {"results": [[{"field": "@timestamp", "value": "2026-11-20 10:00:00.123"}, {"field":
// "@message", "value": EVENT}, ...], ...], "statistics": ..., "status": "Complete"}, a row a
// matched log event, its fields those the query's `fields` named (its --query results alone:
// the rows' array). The rows come as the query sorted them, newest first by default: reversed
// when so (see reverser). The event is @message's value, whole but where CloudWatch cut it
// (truncatedMessage, at @timestamp). Detected, or read for eks-cloudwatch when the file is
// one; not named in Formats.
const insightsResults Format = "eks-insights"

func init() { readers[insightsResults] = readInsights }

// insightsHead is how a Logs Insights result's file begins: its results, or their rows alone,
// each an array of fields, or results without a row (a query that matched nothing); insightsObjectsHead, rows each an object of the fields by name (as
// the console's table is downloaded as JSON: [{"@timestamp": ..., "@message": ...}, ...]),
// which is one when the first row has an @message (not another tool's documents that begin
// with an @timestamp).
var (
	insightsHead        = regexp.MustCompile(`^(\{\s*"results"\s*:\s*)?\[\s*\[\s*\{\s*"(field|value)"|^\{\s*"results"\s*:\s*\[\s*\]`)
	insightsObjectsHead = regexp.MustCompile(`^\[\s*\{\s*"@(timestamp|message|logStream|log|ingestionTime|ptr)"\s*:`)
)

func readInsights(in input, yield func(record) bool) {
	s := newScanner(in.r)
	rv := newReverser(yield, insightsUnwrap)
	rows := func(where string) error {
		return s.array(func(i int) error {
			line := s.startLine()
			w := fmt.Sprintf("%s[%d] (line %d)", where, i, line)
			rec, err := s.element(2*in.maxLine, w, "", func(raw []byte, line int) record { return insightsRowOf(raw, line, w, !rv.decided()) })
			if err != nil {
				return err
			}
			if !rv.add(rec) {
				return errStop
			}
			return nil
		})
	}
	var err error
	for doc := 1; err == nil; doc++ {
		c, perr := s.peek()
		if perr != nil {
			if perr != io.EOF {
				err = perr
			}
			break
		}
		if c == '[' {
			err = rows("results")
			continue
		}
		err = s.object(func(name string) error {
			if name != "results" {
				return s.skip()
			}
			return rows(fmt.Sprintf("document %d results", doc))
		})
	}
	finishArray(rv, err, s.line, yield)
}

// insightsField is a field of a Logs Insights result's row.
type insightsField struct {
	Field string `json:"field"`
	Value string `json:"value"`
}

// insightsRowOf is the record of a row's JSON, to unwrap; timed, with its @timestamp.
func insightsRowOf(raw []byte, line int, where string, timed bool) record {
	rec := record{data: raw, line: line, unwrap: insightsUnwrap(where), where: where}
	if timed {
		if fs, err := insightsFields(raw); err == nil {
			rec.at = insightsTime(fs)
		}
	}
	return rec
}

// insightsFields are the fields of a row: an array of fields, or an object of their values
// by name (in the order of their names), each a string.
func insightsFields(raw []byte) ([]insightsField, error) {
	var fs []insightsField
	if len(raw) == 0 || raw[0] != '{' {
		err := json.Unmarshal(raw, &fs)
		return fs, err
	}
	var byName map[string]string
	if err := json.Unmarshal(raw, &byName); err != nil {
		return nil, err
	}
	for _, name := range slices.Sorted(maps.Keys(byName)) {
		fs = append(fs, insightsField{Field: name, Value: byName[name]})
	}
	return fs, nil
}

// insightsStamp is a row's @timestamp (UTC, to the millisecond, without a zone, as the API
// gives it; or RFC 3339): the log event's time, which a message CloudWatch cut is placed at;
// the zero time when it has none.
func insightsStamp(fs []insightsField) time.Time {
	for _, f := range fs {
		if f.Field != "@timestamp" {
			continue
		}
		if t, err := time.Parse("2006-01-02 15:04:05.000", f.Value); err == nil {
			return t
		}
		if t, err := time.Parse(time.RFC3339Nano, f.Value); err == nil {
			return t
		}
	}
	return time.Time{}
}

// insightsTime is when a row's event completed, as far as the order of the rows needs it: its
// @timestamp, or without one its @message's stageTimestamp (the member alone, not the event
// decoded); the zero time when it has neither.
func insightsTime(fs []insightsField) time.Time {
	if t := insightsStamp(fs); !t.IsZero() {
		return t
	}
	for _, f := range fs {
		if f.Field == "@message" {
			if v, ok := memberString([]byte(f.Value), "stageTimestamp"); ok {
				t, _ := time.Parse(time.RFC3339Nano, string(v))
				return t
			}
		}
	}
	return time.Time{}
}

// insightsUnwrap makes a row's record the event its @message holds; a row of another log
// stream than the audit log's (its @logStream, when the query's fields hold it) is skipped,
// unless its message is an audit event (see auditMessage).
func insightsUnwrap(where string) func(*record) {
	return func(r *record) {
		fs, err := insightsFields(r.data)
		if err != nil {
			*r = record{line: r.line, err: recordError(where, "", fmt.Errorf("not a Logs Insights result's row: %v", err))}
			return
		}
		for _, f := range fs {
			if f.Field == "@logStream" && otherStream(f.Value) && slices.ContainsFunc(fs, func(m insightsField) bool { return m.Field == "@message" && !auditMessage([]byte(m.Value)) }) {
				*r = record{line: r.line, skip: otherStreamSkip(f.Value, "a Logs Insights query without filter @logStream like /kube-apiserver-audit/ reads every stream of the log group")}
				return
			}
		}
		*r = insightsEvent(fs, r.line, where)
	}
}

// insightsEvent is the record of the event a row's @message holds.
func insightsEvent(fs []insightsField, line int, where string) record {
	for _, f := range fs {
		if f.Field != "@message" {
			continue
		}
		msg := []byte(f.Value)
		if otherLogMessage(msg) {
			// Another stream's, where the query's fields do not name it (@logStream).
			return record{line: line, skip: "a line of another log of the log group (klog's, logrus's, the etcd client's), not an audit event: a Logs Insights query without filter @logStream like /kube-apiserver-audit/ reads every stream of the log group"}
		}
		if cut, ok := truncatedMessage(msg, insightsStamp(fs), auditlog.LostStageTime, line, where, "@message"); ok {
			return cut
		}
		return inField(eventRecord(msg, line, auditlog.Loss{}), "@message")
	}
	return record{line: line, err: recordError(where, "@message", errors.New("missing: the query's fields must hold the log event's message (fields @timestamp, @message)"))}
}

// insightsCSV is a Logs Insights table downloaded from the console as CSV: a header row that
// names the query's fields, then a row a matched log event (RFC 4180: a value that holds a
// quote, a comma or a line break is quoted, its quotes doubled), as the query sorted them,
// newest first by default. A row is read as the object of its fields by name, as the table
// downloaded as JSON is (insightsFields). Detected; not named in Formats.
const insightsCSV Format = "eks-insights-csv"

func init() { readers[insightsCSV] = readInsightsCSV }

// insightsCSVHead is how such a table begins: its header names one of Logs Insights' own
// fields first; it is one when it names @message or a field only CloudWatch Logs has
// (insightsCSVHeader): a query that displays other fields than @message makes a table too,
// whose rows say what they lack (another tool's table may begin with an @timestamp).
var insightsCSVHead = regexp.MustCompile(`^"?@(timestamp|message|logStream|log|ingestionTime|ptr)"?(,|\r?\n)`)

// insightsCSVHeader says whether the first line of head is a Logs Insights table's header.
func insightsCSVHeader(head []byte) bool {
	header, err := csv.NewReader(bytes.NewReader(head)).Read()
	return err == nil && slices.ContainsFunc(header, func(f string) bool {
		return f == "@message" || f == "@logStream" || f == "@log" || f == "@ptr" || f == "@ingestionTime"
	})
}

// csvSlack is how much more than a row's limit the CSV reader may read of it: what its
// buffer reads ahead.
const csvSlack = 64 << 10

func readInsightsCSV(in input, yield func(record) bool) {
	rv := newReverser(yield, insightsUnwrap)
	// A row is read whole: a quote out of place would make the rest of the file one value.
	limited := &rowLimit{r: in.r, max: 2*in.maxLine + csvSlack}
	cr := csv.NewReader(limited)
	cr.FieldsPerRecord = -1 // a row of another count is the row's error, not the file's
	header, err := cr.Read()
	if err == nil {
		err = headerError(header)
	}
	if err != nil {
		yield(record{line: 1, err: &auditlog.ReadError{Err: fmt.Errorf("the table's header: %v, reading stopped", err)}})
		return
	}
	line := 1
	for i := 0; ; i++ {
		limited.n = 0
		row, err := cr.Read()
		if err == io.EOF {
			break
		}
		where := fmt.Sprintf("row %d", i+1)
		if err != nil {
			// The file stopped being readable, or is not CSV there: the rows after it
			// cannot be found.
			stopped := record{line: line, err: &auditlog.ReadError{Err: err}}
			if pe := (*csv.ParseError)(nil); errors.As(err, &pe) {
				stopped = record{line: pe.StartLine, err: &auditlog.ReadError{Err: fmt.Errorf("the table is not CSV, reading stopped: %v", err)}}
			}
			if errors.Is(err, errRowTooLong) {
				stopped = record{line: line + 1, err: &auditlog.ReadError{Err: fmt.Errorf("the table's row after line %d: %w, reading stopped (a quote out of place?)", line, err)}}
			}
			if rv.finish() {
				yield(stopped)
			}
			return
		}
		line, _ = cr.FieldPos(0)
		where = fmt.Sprintf("%s (line %d)", where, line)
		rec := record{line: line, where: where}
		switch size := csvSize(row); {
		case len(row) != len(header):
			rec.err = recordError(where, "", fmt.Errorf("%d values, not the header's %d", len(row), len(header)))
		case size > 2*in.maxLine:
			rec.err = recordError(where, "", fmt.Errorf("%d bytes, more than %d", size, 2*in.maxLine))
		default:
			fields := make(map[string]string, len(header))
			for j, name := range header {
				fields[name] = row[j]
			}
			raw, err := json.Marshal(fields)
			if err != nil {
				rec.err = recordError(where, "", err)
				break
			}
			rec = insightsRowOf(raw, line, where, !rv.decided())
		}
		if !rv.add(rec) {
			return
		}
	}
	finishArray(rv, nil, line, yield)
}

// csvSize is how many bytes a row's values hold.
func csvSize(row []string) int {
	n := 0
	for _, v := range row {
		n += len(v)
	}
	return n
}

// headerError says what is wrong with a table's header: a field without a name, or named twice.
func headerError(header []string) error {
	for i, name := range header {
		switch {
		case name == "":
			return fmt.Errorf("field %d has no name", i+1)
		case slices.Contains(header[:i], name):
			return fmt.Errorf("field %q is named twice", name)
		}
	}
	return nil
}

// errRowTooLong is a CSV row's error when it is longer than the reader allows.
var errRowTooLong = errors.New("longer than the limit of a row")

// rowLimit fails a read once n, which the reader sets to zero at each row, passes max.
type rowLimit struct {
	r      io.Reader
	n, max int
}

func (l *rowLimit) Read(p []byte) (int, error) {
	if l.n > l.max {
		return 0, fmt.Errorf("%w (%d bytes)", errRowTooLong, l.max)
	}
	n, err := l.r.Read(p)
	l.n += n
	return n, err
}
