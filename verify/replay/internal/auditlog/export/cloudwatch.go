package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// EKS sends each control plane log to CloudWatch Logs, the audit log to the log group
// /aws/eks/CLUSTER/cluster in streams kube-apiserver-audit-* (one a server), one log event a
// line of the log backend: its message is the audit.k8s.io/v1 Event's JSON, whole
// (https://docs.aws.amazon.com/eks/latest/userguide/control-plane-logs.html). CloudWatch hands
// them over three ways, read here:
//
//   - FilterLogEvents, as `aws logs filter-log-events --output json` prints it (the CLI
//     follows nextToken and prints one document): {"events":[{"logStreamName","timestamp",
//     "message","ingestionTime","eventId"}, ...],"searchedLogStreams":[...]}; events sorted by
//     their timestamp, the ingestion time and the PutLogEvents call
//     (https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_FilterLogEvents.html,
//     https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_FilteredLogEvent.html).
//     Several documents one after the other (pages saved apart and concatenated), and the
//     events array alone (--query events), are read too.
//   - An export task to S3 (aws logs create-export-task): gzip files of lines
//     "TIMESTAMP MESSAGE", the event's timestamp in ISO 8601, a space and the message; "time-
//     based sorting on chunks of log data inside an exported file is not guaranteed"
//     (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/S3Export.html,
//     https://docs.aws.amazon.com/AmazonCloudWatchLogs/latest/APIReference/API_CreateExportTask.html).
//   - A subscription filter delivered by Firehose to S3: CloudWatch sends each batch as a gzip
//     record, {"messageType":"DATA_MESSAGE","owner","logGroup","logStream",
//     "subscriptionFilters","logEvents":[{"id","timestamp","message"}]}, with CONTROL_MESSAGEs
//     that check the destination among them
//     (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/SubscriptionFilters.html), and
//     Firehose concatenates records without a delimiter into an object, gzip-compressed once
//     more when its own compression is on
//     (https://docs.aws.amazon.com/firehose/latest/dev/basic-deliver.html): a stream of gzip
//     members, of JSON objects one after the other.
//
// The events lose nothing but what CloudWatch Logs cuts: a message longer than its event size
// limit is cut and ends with "[Truncated...]" (falcosecurity/plugins#297): see
// truncatedMessage.

// logEvent is a CloudWatch log event: FilteredLogEvent's members and a subscription's.
type logEvent struct {
	Message   *string `json:"message"`
	Timestamp *int64  `json:"timestamp"`
}

func readCloudWatch(in input, yield func(record) bool) {
	s := in.scanner()
	s.documents(yield, func(doc int) error {
		where := fmt.Sprintf("document %d", doc)
		if c, _ := s.peek(); c == '[' {
			return readLogEvents(s, in, where, "", yield)
		}
		return s.object(func(name string) error {
			if name == "events" {
				return readLogEvents(s, in, where, "events", yield)
			}
			return s.skip()
		})
	})
}

// readLogEvents reads an array of log events whose messages are audit events; field names
// the array in errors.
func readLogEvents(s *scanner, in input, where, field string, yield func(record) bool) error {
	return s.array(func(i int) error {
		f := fmt.Sprintf("%s[%d]", field, i)
		if s.passOver == nil {
			// The AWS CLI's JSON is indented: a log event ends at the line that closes it,
			// found without reading its message (an Event escaped into a string) twice.
			if raw, line, ok := s.indentedHeld(2 * in.maxLine); ok {
				return send(yield, record{data: raw, line: line, unwrap: func(r *record) { *r = checkedLogEvent(r.data, line, where, f) }})
			}
		}
		rec, err := s.element(2*in.maxLine, where, f, func(raw []byte, line int) record { return logEventOf(raw, line, where, f) })
		if err != nil {
			return err
		}
		return send(yield, rec)
	})
}

// logEventOf is the record of a log event's JSON, to unwrap.
func logEventOf(raw []byte, line int, where, field string) record {
	return record{data: raw, line: line, unwrap: func(r *record) { *r = logEventRecord(r.data, line, where, field) }}
}

// subscriptionEventOf is the record of a subscription's log event's JSON, to unwrap: its
// stream is the record's (logStream), its members id, timestamp and message.
func subscriptionEventOf(raw []byte, line int, where, field string) record {
	return record{data: raw, line: line, unwrap: func(r *record) { *r = logEventMessage(r.data, line, where, field) }}
}

// logEventRecord is the record of a log event's JSON. filter-log-events over the whole log
// group interleaves its streams: another stream's event is skipped (see otherStreamUnwrap).
func logEventRecord(raw []byte, line int, where, field string) record {
	return streamLogEvent(raw, line, where, field, logEventMessage)
}

// streamLogEvent is the record of a log event's JSON, its stream's (another stream's event
// skipped: see otherStreamUnwrap), its message read by message.
func streamLogEvent(raw []byte, line int, where, field string, message func(raw []byte, line int, where, field string) record) record {
	if v, ok := member(raw, "logStreamName"); ok {
		if name, _ := unquote(v); otherStream(string(name)) {
			r := record{data: raw, line: line}
			otherStreamUnwrap(func(r *record) { *r = message(r.data, line, where, field) }, string(name),
				"aws logs filter-log-events without --log-stream-name-prefix kube-apiserver-audit reads every stream of the log group")(&r)
			return r
		}
	}
	return message(raw, line, where, field)
}

// otherStreamUnwrap makes the record of a log event (data: its JSON) of another stream than
// the audit log's a skipped one, unless its message is an audit event after all (a log group
// whose audit stream is named otherwise), which unwrap reads as the audit log's: why says how
// it came in.
func otherStreamUnwrap(unwrap func(*record), stream, why string) func(*record) {
	return func(r *record) {
		if msg, _ := appendMemberString(nil, r.data, "message"); auditMessage(msg) {
			unwrap(r)
			return
		}
		*r = record{line: r.line, skip: otherStreamSkip(stream, why)}
	}
}

// auditMessage says whether a log event's message is an audit event's JSON, whole or cut: an
// object whose kind is Event, or whose apiVersion is audit.k8s.io's, whatever the order of
// its members and the white space between them.
func auditMessage(msg []byte) bool {
	msg = bytes.TrimLeft(msg, " \t\r\n")
	if len(msg) == 0 || msg[0] != '{' {
		return false
	}
	if v, ok := member(msg, "kind"); ok && string(v) == `"Event"` {
		return true
	}
	v, ok := member(msg, "apiVersion")
	return ok && bytes.HasPrefix(v, []byte(`"audit.k8s.io/`))
}

// awsWriteTest is the object an export task to S3 writes besides the logs to check it may
// write to the bucket, aws-logs-write-test, which holds "Permission Check Successful" (as
// getmoto/moto's CloudWatch Logs backend writes it too; the scripts that read such exports
// delete it first): among the files aws s3 cp --recursive copies, it is counted and skipped,
// not a malformed line that would fail the replay.
const awsWriteTest Format = "eks-s3-write-test"

// awsWriteTestText is what the object holds.
const awsWriteTestText = "Permission Check Successful"

func init() {
	readers[awsWriteTest] = func(in input, yield func(record) bool) {
		yield(record{line: 1, skip: "the object an export task to S3 writes to check it may write to the bucket (aws-logs-write-test), not a log"})
	}
}

// checkedLogEvent is logEventRecord of a log event whose bytes the scanner did not check
// (indentedHeld): its message's string is checked as it is decoded, and the rest of it, the
// message's string left out, as JSON.
func checkedLogEvent(raw []byte, line int, where, field string) record {
	return streamLogEvent(raw, line, where, field, checkedLogEventMessage)
}

// checkedLogEventMessage is logEventMessage of a log event's bytes not checked.
func checkedLogEventMessage(raw []byte, line int, where, field string) record {
	_, start, ok := memberAt(raw, "message")
	if !ok {
		return logEventMessage(raw, line, where, field) // decoded by encoding/json, which checks it
	}
	msg, n, ok := auditlog.AppendUnquoted(getBuf(len(raw)), raw[start:])
	if !ok || n == 0 {
		putBuf(msg)
		return logEventMessage(raw, line, where, field)
	}
	rest := make([]byte, 0, len(raw)-n+2)
	rest = append(append(append(rest, raw[:start]...), `""`...), raw[start+n:]...)
	if !validJSON(rest) {
		putBuf(msg)
		return notLogEvent(raw, line, where, field)
	}
	return logEventMessageRecord(raw, msg, line, where, field)
}

// notLogEvent is the record of a log event's bytes that are not JSON, with encoding/json's
// reason.
func notLogEvent(raw []byte, line int, where, field string) record {
	err := json.Unmarshal(raw, new(logEvent))
	if err == nil {
		err = errors.New("not JSON")
	}
	return record{line: line, err: recordError(where, field, fmt.Errorf("not a CloudWatch log event: %v", err))}
}

// logEventMessage is the record of the event a log event's JSON holds as its message.
func logEventMessage(raw []byte, line int, where, field string) record {
	if msg, ok := appendMemberString(getBuf(len(raw)), raw, "message"); ok {
		return logEventMessageRecord(raw, msg, line, where, field)
	}
	var e logEvent
	if err := json.Unmarshal(raw, &e); err != nil {
		return record{line: line, err: recordError(where, field, fmt.Errorf("not a CloudWatch log event: %v", err))}
	}
	if e.Message == nil {
		return record{line: line, err: recordError(where, field+".message", errors.New("missing"))}
	}
	return inField(eventRecord([]byte(*e.Message), line, auditlog.Loss{}), field+".message")
}

// logEventMessageRecord is the record of the event msg, the message of the log event raw,
// decoded.
func logEventMessageRecord(raw, msg []byte, line int, where, field string) record {
	// A cut event's time is the log event's timestamp: see cutTimestamp.
	if cut, ok := truncatedMessage(msg, logEventTime(raw), auditlog.LostStageTime, line, where, field+".message"); ok {
		return cut
	}
	putBuf(raw) // the log event's bytes: the message is copied out
	return inField(eventRecord(msg, line, auditlog.Loss{}), field+".message")
}

func readCloudWatchS3(in input, yield func(record) bool) {
	readLines(in, in.maxLine+1024, yield, func(text []byte, num int) record {
		if at, msg, ok := cutTimestamp(bytes.TrimRight(text, "\r\n")); ok {
			if len(msg) > 0 && bytes.IndexAny(msg, " {") < 0 {
				// A stream's name alone: aws logs tail --format json prints the message's
				// JSON indented on the lines after it.
				return record{line: num, err: recordError(fmt.Sprintf("line %d", num), "MESSAGE", errors.New("a log stream's name without a message: aws logs tail --format json spreads each event over lines; print it in the default format (--format detailed)"))}
			}
			// aws logs tail of the whole log group prints every stream.
			const tailAll = "aws logs tail of the log group prints every stream (--log-stream-name-prefix kube-apiserver-audit prints the audit log's alone)"
			stream, named := streamOf(msg)
			msg = cutStreamName(msg)
			if named && otherStream(stream) && !auditMessage(msg) {
				return record{line: num, skip: otherStreamSkip(stream, tailAll)}
			}
			if otherLogMessage(msg) {
				return record{line: num, skip: "a line of another log of the log group (klog's, logrus's, the etcd client's), not an audit event: " + tailAll + "; kubectl logs --timestamps prints kube-apiserver's own log with an audit log on standard output"}
			}
			return messageRecord(msg, at, num, fmt.Sprintf("line %d", num), "MESSAGE")
		}
		return record{line: num, err: recordError(fmt.Sprintf("line %d", num), "TIMESTAMP", errors.New(`not a line of a CloudWatch Logs export: "TIMESTAMP MESSAGE" expected`))}
	})
}

// messageRecord is the record of a log event's message a line holds (an export task's, aws
// logs tail's, the AWS CLI's text output), stamped at: a message CloudWatch cut is its head at
// that time (see cutTimestamp), any other the event, copied.
func messageRecord(msg []byte, at time.Time, num int, where, field string) record {
	if cut, ok := truncatedMessage(msg, at, auditlog.LostStageTime, num, where, field); ok {
		return cut
	}
	return inField(eventRecord(append(getBuf(len(msg)), msg...), num, auditlog.Loss{}), field)
}

// cutTimestamp splits a line of a CloudWatch Logs export into its timestamp and its message.
// The timestamp is ISO 8601 with a zone (an export task's; aws logs tail's default format,
// to the microsecond) or milliseconds since the epoch; or, as aws logs tail --format short
// prints it, the UTC second without a zone (awscli/customizations/logs/tail.py,
// ShortLogEventsFormatter: the log event's timestamp, to the millisecond, printed with
// strftime), which is not the event's time to the millisecond: at is then the last
// millisecond of that second, the latest the event can have completed. An event CloudWatch
// cut is stamped with it (cutEvent), its loss says so (LostStageTime): what it wrote is not
// known from then on, and a request of the second before it may have come after it. The log event's timestamp, to the millisecond, is not the event's stage time
// either: EKS stamps an event as its log agent reads it, after kube-apiserver wrote it (AWS's
// own sample, https://repost.aws/knowledge-center/eks-get-control-plane-logs, shows events
// stamped 0.3 and 0.8 s after their stageTimestamp): a cut event completed in the second
// before it too.
func cutTimestamp(line []byte) (at time.Time, msg []byte, ok bool) {
	ts, msg, ok := bytes.Cut(line, []byte(" "))
	if !ok || len(ts) == 0 {
		return time.Time{}, nil, false
	}
	if t, err := time.Parse(time.RFC3339Nano, string(ts)); err == nil {
		return t, msg, true
	}
	if ms, err := strconv.ParseInt(string(ts), 10, 64); err == nil && ms > 0 {
		return time.UnixMilli(ms), msg, true
	}
	if t, err := time.Parse("2006-01-02T15:04:05", string(ts)); err == nil {
		return t.Add(time.Second - time.Millisecond), msg, true
	}
	return time.Time{}, nil, false
}

// cutStreamName takes the log stream's name off a message that aws logs tail printed in its
// default format, "TIMESTAMP STREAM MESSAGE" (DetailedLogEventsFormatter): a name holds no
// space and no '{', and an audit event's JSON begins with one.
func cutStreamName(msg []byte) []byte {
	if len(msg) == 0 || msg[0] == '{' {
		return msg
	}
	name, rest, ok := bytes.Cut(msg, []byte(" "))
	if !ok || len(name) == 0 || len(name) > 512 || bytes.IndexByte(name, '{') >= 0 || len(rest) == 0 || rest[0] != '{' {
		return msg
	}
	return rest
}

// streamOf is the name of the log stream aws logs tail prints before a message ("STREAM
// MESSAGE"), when it is one as EKS names them
// (kube-apiserver-audit-0123abcd..., authenticator-..., kube-controller-manager-...:
// lowercase letters, digits and hyphens); ok is false otherwise.
func streamOf(msg []byte) (stream string, ok bool) {
	name, _, ok := bytes.Cut(msg, []byte(" "))
	if !ok || len(name) == 0 || len(name) > 512 || bytes.IndexByte(name, '-') < 0 {
		return "", false
	}
	for _, c := range name {
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return "", false
		}
	}
	return string(name), true
}

// otherStream says whether a log stream of an EKS cluster's log group is another than the
// audit log's, kube-apiserver-audit-* (kube-apiserver-*, authenticator-*,
// kube-controller-manager-*, ...: https://docs.aws.amazon.com/eks/latest/userguide/control-plane-logs.html);
// false when its name is not known.
func otherStream(stream string) bool {
	return stream != "" && !strings.HasPrefix(stream, "kube-apiserver-audit")
}

// otherStreamSkip says why a log event of another stream is skipped: why, how it came in.
func otherStreamSkip(stream, why string) string {
	return "a log event of the stream " + stream + ", not of kube-apiserver's audit log (kube-apiserver-audit-*): " + why
}

func readFirehose(in input, yield func(record) bool) {
	s := in.scanner()
	s.documents(yield, func(doc int) error {
		start := s.line
		where := fmt.Sprintf("subscription record %d (line %d)", doc, start)
		messageType, stream := "", ""
		var held []record // log events read before the message type
		err := s.object(func(name string) error {
			switch name {
			case "messageType", "logStream":
				raw, err := s.value(1024, nil)
				if err != nil {
					return err
				}
				if name == "logStream" {
					name, _ := unquote(raw) // none when not a string (null): not known
					stream = string(name)
				} else {
					messageType = string(bytes.Trim(raw, `"`))
				}
				return nil
			case "logEvents":
				return s.array(func(i int) error {
					field := fmt.Sprintf("logEvents[%d]", i)
					rec, err := s.element(2*in.maxLine, where, field, func(raw []byte, line int) record { return subscriptionEventOf(raw, line, where, field) })
					switch {
					case err != nil:
						return err
					case otherStream(stream):
						// A subscription delivers every stream of the log group.
						const why = "a CloudWatch Logs subscription delivers every stream of the log group"
						if rec.unwrap == nil {
							// Not read (longer than a record may be): another stream's.
							rec = record{line: rec.line, skip: otherStreamSkip(stream, why)}
						} else {
							rec.unwrap = otherStreamUnwrap(rec.unwrap, stream, why)
						}
						fallthrough
					case messageType == "DATA_MESSAGE":
						return send(yield, rec)
					case messageType == "":
						held = append(held, rec)
					}
					return nil
				})
			}
			return s.skip()
		})
		if err != nil {
			return err
		}
		switch messageType {
		case "DATA_MESSAGE":
			for _, rec := range held {
				if err := send(yield, rec); err != nil {
					return err
				}
			}
		case "CONTROL_MESSAGE":
			// CloudWatch checks that the destination is reachable: no log event of the group.
		default:
			return send(yield, record{line: start, err: recordError(where, "messageType", fmt.Errorf("%q: DATA_MESSAGE or CONTROL_MESSAGE expected", messageType))})
		}
		return nil
	})
}

// cloudWatchTruncated ends a message CloudWatch Logs cut at its event size limit.
const cloudWatchTruncated = "[Truncated...]"

// ExportCloudWatch names EKS's CloudWatch Logs in what a replay says of an event it cut.
const ExportCloudWatch = "EKS CloudWatch Logs"

// cutLost is what an event CloudWatch Logs cut loses: its objects (the log backend writes
// them after the request's head), and so its level, and what follows them: when the request
// was received, and its annotations.
const cutLost = auditlog.LostLevel | auditlog.LostReceived | auditlog.LostAnnotations

// truncatedMessage is the record of a message CloudWatch Logs cut at its event size limit,
// of a log event stamped at (the zero time when it has no timestamp): the event rebuilt from
// the head it kept (cutEvent), lost by the export as far as it was cut (cutLost), so that the
// replay holds what the request wrote unknown and decides nothing on what it lost
// (ReasonExportLost). A message whose kept part does not hold the head is an error (a
// malformed line) that says where and what was cut.
func truncatedMessage(msg []byte, at time.Time, lost auditlog.Lost, line int, where, field string) (record, bool) {
	if !bytes.HasSuffix(bytes.TrimRight(msg, " \r\n"), []byte(cloudWatchTruncated)) {
		return record{}, false
	}
	ev, missing := cutEvent(msg, at)
	if missing == nil {
		return eventRecord(ev, line, auditlog.Loss{Export: ExportCloudWatch, Lost: cutLost | lost}), true
	}
	id := ""
	if v, ok := memberString(msg, "auditID"); ok {
		id = " of audit ID " + string(v)
	} else if i := bytes.Index(msg, []byte(`"auditID":"`)); i >= 0 {
		if j := bytes.IndexByte(msg[i+11:], '"'); j >= 0 {
			id = " of audit ID " + string(msg[i+11:i+11+j])
		}
	}
	why := "what it kept of its head (what the request was, and how it ended) lacks " + strings.Join(missing, ", ")
	if at.IsZero() {
		why = "its log event has no timestamp"
	}
	return record{line: line, err: recordError(where, field, fmt.Errorf("the event%s was cut by CloudWatch Logs at its event size limit (%d bytes kept, ending %q), and %s: lost by the export, not replayed", id, len(msg), cloudWatchTruncated, why))}, true
}

// cutHead are the members of an audit event the log backend writes before its objects, which
// an event CloudWatch Logs cut keeps (but the last, which may be cut).
var cutHead = map[string]bool{"kind": true, "apiVersion": true, "auditID": true, "stage": true, "requestURI": true,
	"verb": true, "user": true, "impersonatedUser": true, "sourceIPs": true, "userAgent": true, "objectRef": true, "responseStatus": true}

// cutEvent rebuilds the event whose JSON msg begins with, cut: the members of its head msg
// holds whole, at level Metadata (its objects are lost), completed at (CloudWatch's timestamp
// of the log event, the latest it can have completed: see cutTimestamp); missing, when not
// nil, are the members of its head msg does not hold whole (its audit ID, stage, verb and
// request URI, or the member of its head it is cut inside: a response status cut, say), and
// it is none when at is zero.
func cutEvent(msg []byte, at time.Time) (ev []byte, missing []string) {
	if at.IsZero() {
		return nil, []string{}
	}
	out := append(make([]byte, 0, 1024), '{')
	need := map[string]bool{"auditID": true, "stage": true, "verb": true, "requestURI": true}
	walkObject(msg, 0, func(name []byte, keyAt, start int) (int, bool) {
		n := string(name)
		end, ok := valueEnd(msg, start)
		if !ok || end >= len(msg) {
			if cutHead[n] {
				need[n] = true // cut in the head: what the request was is not known
			}
			return end, false
		}
		if cutHead[n] {
			if len(out) > 1 {
				out = append(out, ',')
			}
			out = append(out, msg[keyAt:end]...)
			delete(need, n)
		}
		return end, true
	})
	if len(need) > 0 {
		return nil, slices.Sorted(maps.Keys(need))
	}
	out = append(out, `,"level":"Metadata","stageTimestamp":`...)
	out = appendJSONString(out, at.UTC().Format(time.RFC3339Nano))
	return append(out, '}'), nil
}

// logEventTime is the timestamp of a log event's JSON (milliseconds since the epoch); the
// zero time when it has none.
func logEventTime(raw []byte) time.Time {
	v, ok := member(raw, "timestamp")
	if !ok {
		return time.Time{}
	}
	ms, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil || ms <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms)
}
