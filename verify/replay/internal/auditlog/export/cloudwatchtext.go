package export

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"
)

// cloudWatchText is what `aws logs filter-log-events` and `aws logs get-log-events` print in
// the AWS CLI's text output (--output text, or a profile's output = text, or
// AWS_DEFAULT_OUTPUT=text: https://docs.aws.amazon.com/cli/latest/userguide/cli-usage-output-format.html):
// a line a log event, its identifier EVENTS and then the values of its members that are not
// objects or lists, sorted by their names, separated by tabs (awscli/text.py, _format_list
// and _all_scalar_keys). A FilteredLogEvent's are eventId, ingestionTime, logStreamName,
// message and timestamp; get-log-events' OutputLogEvent's ingestionTime, message and
// timestamp. The message is printed as it is: an audit event's JSON holds no tab or line
// break (JSON escapes them in strings, and kube-apiserver writes no white space between its
// tokens). Besides the events, filter-log-events prints the streams it searched
// (SEARCHEDLOGSTREAMS NAME TRUE), and the response's own values come first, on a line of
// their own: get-log-events' tokens, and the CLI's NextToken where --max-items stopped it;
// they are counted and skipped. The events are read as filter-log-events' JSON's are (see
// logEventMessage). Detected, not named in Formats.
const cloudWatchText Format = "eks-cloudwatch-text"

func init() { readers[cloudWatchText] = readCloudWatchText }

// cloudWatchTextHead is how the AWS CLI's text output of log events begins: an EVENTS line
// whose first value is a number (eventId or ingestionTime), filter-log-events' streams, or
// the response's own values (get-log-events' tokens, a NextToken) before an EVENTS line.
var cloudWatchTextHead = regexp.MustCompile(`^((b/\d+/s\tf/\d+/s|[A-Za-z0-9+/=_-]+)\r?\n)?(EVENTS\t\d+\t|SEARCHEDLOGSTREAMS\t)`)

// getLogEventsTokens is the line of get-log-events' tokens (nextBackwardToken,
// nextForwardToken) in text output.
var getLogEventsTokens = regexp.MustCompile(`^b/\d+/s\tf/\d+/s$`)

// nextToken is the line of the CLI's NextToken, which it prints first where --max-items
// stopped it.
var nextToken = regexp.MustCompile(`^[A-Za-z0-9+/=_-]+$`)

// textFields names the values of the text output's lines, for what is said of one that is wrong.
const textFields = "aws logs filter-log-events --output text: EVENTS eventId ingestionTime logStreamName message timestamp; get-log-events: EVENTS ingestionTime message timestamp"

func readCloudWatchText(in input, yield func(record) bool) {
	first := true
	readLines(in, in.maxLine+1024, yield, func(text []byte, num int) record {
		text = bytes.TrimRight(text, "\r\n")
		if first && nextToken.Match(text) {
			return record{line: num, skip: "the NextToken of the AWS CLI's pagination (--max-items), not a log event"}
		}
		first = false
		return cloudWatchTextLine(text, num)
	})
}

// cloudWatchTextLine is the record of a line of text output.
func cloudWatchTextLine(text []byte, num int) record {
	where := fmt.Sprintf("line %d", num)
	rest, ok := bytes.CutPrefix(text, []byte("EVENTS\t"))
	switch {
	case bytes.HasPrefix(text, []byte("SEARCHEDLOGSTREAMS\t")):
		return record{line: num, skip: "a log stream aws logs filter-log-events searched (SEARCHEDLOGSTREAMS), not a log event"}
	case getLogEventsTokens.Match(text):
		return record{line: num, skip: "the tokens of aws logs get-log-events' next pages, not a log event"}
	case !ok:
		return record{line: num, err: recordError(where, "", fmt.Errorf("not a line of the AWS CLI's text output of log events (%s)", textFields))}
	}
	// The message is what lies between the values before it and the timestamp, the last.
	last := bytes.LastIndexByte(rest, '\t')
	if last < 0 {
		return record{line: num, err: recordError(where, "", fmt.Errorf("1 value after EVENTS, not a log event's (%s)", textFields))}
	}
	head, ts := rest[:last], rest[last+1:]
	var stream []byte
	skip := 1 // get-log-events: ingestionTime
	if first, _, _ := bytes.Cut(head, []byte("\t")); len(first) > 20 {
		// filter-log-events: an eventId is a number of 56 digits, an ingestionTime of 13.
		skip = 3 // eventId, ingestionTime, logStreamName
	}
	msg := head
	for i := range skip {
		v, after, ok := bytes.Cut(msg, []byte("\t"))
		if !ok {
			return record{line: num, err: recordError(where, "", fmt.Errorf("%d values after EVENTS, not a log event's (%s)", i+2, textFields))}
		}
		if i == 2 {
			stream = v
		}
		msg = after
	}
	ms, err := strconv.ParseInt(string(ts), 10, 64)
	if err != nil || ms <= 0 {
		return record{line: num, err: recordError(where, "timestamp", fmt.Errorf("%q is not milliseconds since the epoch (%s)", ts, textFields))}
	}
	if otherStream(string(stream)) && !auditMessage(msg) {
		return record{line: num, skip: otherStreamSkip(string(stream), "aws logs filter-log-events without --log-stream-name-prefix kube-apiserver-audit reads every stream of the log group")}
	}
	if len(msg) == 0 {
		return record{line: num, err: recordError(where, "message", errors.New("empty"))}
	}
	return messageRecord(msg, time.UnixMilli(ms), num, where, "message")
}

// awsYAML and awsTable are the AWS CLI's other outputs of log events, which vapc does not read:
// YAML (--output yaml or yaml-stream, where the CLI folds a long message over lines) and
// tables (--output table). Detected and refused with the flag that prints what vapc reads.
const (
	awsYAML  Format = "eks-cloudwatch-yaml"
	awsTable Format = "eks-cloudwatch-table"
)

// awsYAMLHead is how filter-log-events' and get-log-events' YAML begins: the events' list,
// its first event's first member (their members sorted: eventId or ingestionTime).
var awsYAMLHead = regexp.MustCompile(`^(---\s*\n)?events:\n- (eventId|ingestionTime|logStreamName|message|timestamp):`)

// awsTableHead is how the CLI's table of filter-log-events or get-log-events begins: a rule,
// then the operation's name centred between bars.
var awsTableHead = regexp.MustCompile(`^-+\r?\n\|\s+(FilterLogEvents|GetLogEvents)\s+\|`)
