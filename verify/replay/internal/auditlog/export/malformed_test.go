package export_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/verify/replay/exporttest"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// ev is a small event that completed at second s.
func ev(id string, s int) string {
	return fmt.Sprintf(`{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"%s","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/a/pods/p","verb":"delete","user":{"username":"u"},"objectRef":{"resource":"pods","namespace":"a","name":"p","apiVersion":"v1"},"responseStatus":{"code":200},"stageTimestamp":"2026-01-01T00:00:%02d.000000Z"}`, id, s)
}

// otherLog is why a line of another log of an EKS log group is skipped where the stream is not
// named (aws logs tail --format short, an S3 export's file, kubectl logs --timestamps).
const otherLog = "a line of another log of the log group (klog's, logrus's, the etcd client's), not an audit event: aws logs tail of the log group prints every stream (--log-stream-name-prefix kube-apiserver-audit prints the audit log's alone); kubectl logs --timestamps prints kube-apiserver's own log with an audit log on standard output"

func quoted(s string) string { return fmt.Sprintf("%q", s) }

func gzipped(s string) string { return string(exporttest.Gzip([]byte(s))) }

func truncated(s string, cut int) string { return s[:len(s)-cut] }

// describe is a line as the tests expect it: "N: auditID", "N: error: ...",
// "N: unreadable: ..." or "N: duplicate".
func describe(l line) string {
	var re *auditlog.ReadError
	switch {
	case l.dup:
		return fmt.Sprintf("%d: duplicate", l.num)
	case l.skip != "":
		return fmt.Sprintf("%d: skipped: %s", l.num, l.skip)
	case errors.As(l.err, &re):
		return fmt.Sprintf("%d: unreadable: %v", l.num, l.err)
	case l.err != nil:
		return fmt.Sprintf("%d: error: %v", l.num, l.err)
	}
	e, err := auditlog.Decode(l.data)
	if err != nil {
		return fmt.Sprintf("%d: not an event: %v", l.num, err)
	}
	return fmt.Sprintf("%d: %s", l.num, e.AuditID)
}

// TestMalformedEnvelopes reads envelopes that are not what their vendor writes: each record
// that holds no event is an error that names its line, its record and its field; an envelope
// that stops being JSON ends the file as unreadable, at its line; the records around a bad one
// are read.
func TestMalformedEnvelopes(t *testing.T) {
	t.Parallel()
	// Two entries of a log sink, pretty-printed one after the other (an entry copied from the
	// Logs Explorer as JSON).
	sink, err := exporttest.Wrap(exporttest.GKESink, []byte(ev("a", 1)+"\n"+ev("b", 2)+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	var pretty bytes.Buffer
	for _, entry := range bytes.Split(bytes.TrimSpace(sink), []byte("\n")) {
		if err := json.Indent(&pretty, entry, "", "  "); err != nil {
			t.Fatal(err)
		}
		pretty.WriteString("\n")
	}
	tests := []struct {
		name   string
		format export.Format
		data   string
		want   []string
	}{{
		name:   "webhook: an item that is not an object, a list of another kind",
		format: export.Webhook,
		data: `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[` + ev("a", 1) + `,3]}` + "\n" +
			`{"kind":"PodList","apiVersion":"v1","items":[]}` + "\n",
		want: []string{"1: a", "1: error: EventList 1 (line 1): items[1]: not an object", `2: error: EventList 2 (line 2): kind: not an audit.k8s.io/v1 EventList: apiVersion "v1", kind "PodList"`},
	}, {
		name:   "webhook: cut short",
		format: export.Webhook,
		data:   `{"kind":"EventList","apiVersion":"audit.k8s.io/v1","items":[` + ev("a", 1) + `,` + "\n" + ev("b", 2)[:40],
		want:   []string{"1: a", "2: unreadable: the envelope is not JSON, reading stopped: the envelope ends in the middle of a value"},
	}, {
		name:   "filter-log-events: an event without its message, one that is not an event",
		format: export.CloudWatch,
		data: "{\n  \"events\": [\n    {\"logStreamName\": \"kube-apiserver-audit-s\", \"timestamp\": 1},\n    {\"message\": " + quoted(ev("a", 1)) + "},\n" +
			"    {\"message\": \"I0101 not an event\"}\n  ]\n}\n",
		want: []string{"3: error: document 1: events[0].message: missing", "4: a", "5: not an event: not JSON: invalid character 'I' looking for beginning of value"},
	}, {
		name:   "filter-log-events: not JSON past the first event",
		format: export.CloudWatch,
		data:   "{\"events\": [{\"message\": " + quoted(ev("a", 1)) + "}\n, x]}",
		want:   []string{"1: a", "2: error: document 1: events[1]: not a CloudWatch log event: invalid character 'x' looking for beginning of value"},
	}, {
		name:   "S3 export: a line without its timestamp",
		format: export.CloudWatchS3,
		data:   "2026-01-01T00:00:01.000Z " + ev("a", 1) + "\n" + ev("b", 2) + "\n\n2026-01-01T00:00:03.000Z " + ev("c", 3) + "\n",
		want:   []string{"1: a", `2: error: line 2: TIMESTAMP: not a line of a CloudWatch Logs export: "TIMESTAMP MESSAGE" expected`, "4: c"},
	}, {
		// aws logs tail: its default format names the stream between the timestamp and the
		// message; --format short prints the UTC second without a zone, which is not the
		// event's time to the millisecond: an event cut there is rebuilt at the second's last
		// millisecond (TestCutTimestamp), and one cut in its head is not.
		name:   "aws logs tail: the default and the short format",
		format: export.CloudWatchS3,
		data: "2026-01-01T00:00:01.000000+00:00 kube-apiserver-audit-0a1b2c " + ev("a", 1) + "\n" +
			"2026-01-01T00:00:02 " + ev("b", 2) + "\n" +
			"2026-01-01T00:00:03.000000+00:00 kube-apiserver-audit-0a1b2c I0101 not an event\n" +
			"2026-01-01T00:00:04 " + ev("d", 4)[:120] + "[Truncated...]\n" +
			"2026-01-01T00:00:05 " + ev("e", 5)[:strings.Index(ev("e", 5), `,"stageTimestamp"`)] + `,"requestObject":{"kind":"DeleteOptions","x":"[Truncated...]` + "\n",
		want: []string{"1: a", "2: b", "3: not an event: not JSON: invalid character 'k' looking for beginning of value",
			`4: error: line 4: MESSAGE: the event of audit ID d was cut by CloudWatch Logs at its event size limit (134 bytes kept, ending "[Truncated...]"), and what it kept of its head (what the request was, and how it ended) lacks requestURI, verb: lost by the export, not replayed`,
			"5: e"},
	}, {
		// aws logs tail of the whole log group prints every stream; --format short names
		// none, and another log's line (klog's, logrus's) is no event.
		name:   "aws logs tail: other streams of the log group",
		format: export.CloudWatchS3,
		data: "2026-01-01T00:00:01.000000+00:00 kube-apiserver-8c0c1d2e I0101 00:00:01.000000 1 controller.go:1] started\n" +
			"2026-01-01T00:00:02.000000+00:00 authenticator-8c0c1d2e time=\"2026-01-01T00:00:02Z\" level=info msg=\"access granted\"\n" +
			"2026-01-01T00:00:03.000000+00:00 kube-apiserver-audit-8c0c1d2e " + ev("c", 3) + "\n" +
			"2026-01-01T00:00:04 W0101 00:00:04.000000 1 reflector.go:1] watch ended\n" +
			// A slow request's trace goes on without klog's header; the etcd client logs JSON.
			"2026-01-01T00:00:05 Trace[7816759]: ---\"limitedReadBody succeeded\" len:629048 11ms (00:00:05.211)\n" +
			`2026-01-01T00:00:06 {"level":"warn","ts":"2026-01-01T00:00:06.000Z","logger":"etcd-client","msg":"retrying of unary invoker failed"}` + "\n" +
			`2026-01-01T00:00:07 {"ts":1,"msg":"not an event","auditID":"g"}` + "\n",
		want: []string{
			"1: skipped: a log event of the stream kube-apiserver-8c0c1d2e, not of kube-apiserver's audit log (kube-apiserver-audit-*): aws logs tail of the log group prints every stream (--log-stream-name-prefix kube-apiserver-audit prints the audit log's alone)",
			"2: skipped: a log event of the stream authenticator-8c0c1d2e, not of kube-apiserver's audit log (kube-apiserver-audit-*): aws logs tail of the log group prints every stream (--log-stream-name-prefix kube-apiserver-audit prints the audit log's alone)",
			"3: c",
			"4: skipped: " + otherLog,
			"5: skipped: " + otherLog,
			"6: skipped: " + otherLog,
			"7: not an event: not an audit.k8s.io/v1 Event: no auditID or stage"},
	}, {
		// filter-log-events without --log-stream-name-prefix reads every stream.
		name:   "filter-log-events: other streams of the log group",
		format: export.CloudWatch,
		data: `{"events":[{"logStreamName":"kube-apiserver-8c0c1d2e","timestamp":1,"message":"I0101 00:00:01.000000 1 controller.go:1] started"},` +
			`{"logStreamName":"cloud-controller-manager-8c0c1d2e","timestamp":1,"message":"{\"ts\":1,\"msg\":\"started\"}"},` +
			`{"logStreamName":"kube-apiserver-audit-8c0c1d2e","timestamp":2,"message":` + quoted(ev("b", 2)) + `},` +
			// A log group of one's own, whose audit stream is named otherwise: its events are,
			// whatever the order of their members and the white space between them, or cut.
			`{"logStreamName":"ip-10-0-1-5.audit","timestamp":3,"message":` + quoted(ev("c", 3)) + `},` +
			`{"logStreamName":"ip-10-0-1-5.audit","timestamp":4,"message":` + quoted(`{"apiVersion": "audit.k8s.io/v1", "kind": "Event"`+ev("d", 4)[len(`{"kind":"Event","apiVersion":"audit.k8s.io/v1"`):]) + `},` +
			`{"logStreamName":"ip-10-0-1-5.audit","timestamp":5000,"message":` + quoted(ev("e", 5)[:60]+"[Truncated...]") + `}]}`,
		want: []string{"1: skipped: a log event of the stream kube-apiserver-8c0c1d2e, not of kube-apiserver's audit log (kube-apiserver-audit-*): aws logs filter-log-events without --log-stream-name-prefix kube-apiserver-audit reads every stream of the log group",
			"1: skipped: a log event of the stream cloud-controller-manager-8c0c1d2e, not of kube-apiserver's audit log (kube-apiserver-audit-*): aws logs filter-log-events without --log-stream-name-prefix kube-apiserver-audit reads every stream of the log group",
			"1: b", "1: c", "1: d",
			`1: error: document 1: events[5].message: the event was cut by CloudWatch Logs at its event size limit (74 bytes kept, ending "[Truncated...]"), and what it kept of its head (what the request was, and how it ended) lacks auditID, requestURI, stage, verb: lost by the export, not replayed`},
	}, {
		// A UTF-8 byte order mark (PowerShell 7's Out-File, Notepad) is not the log's.
		name:   "a byte order mark before an AKS blob's first record",
		format: export.Auto,
		data:   "\ufeff" + `{"category":"kube-audit","properties":{"log":` + quoted(ev("a", 1)) + `}}` + "\r\n",
		want:   []string{"1: a"},
	}, {
		name:   "a byte order mark before aws logs tail's first line",
		format: export.Auto,
		data:   "\ufeff2026-01-01T00:00:01.000000+00:00 kube-apiserver-audit-0a1b2c " + ev("a", 1) + "\n",
		want:   []string{"1: a"},
	}, {
		name:   "aws logs tail --format json: an event over lines",
		format: export.CloudWatchS3,
		data:   "2026-01-01T00:00:01+00:00 kube-apiserver-audit-0a1b2c\n{\n    \"kind\": \"Event\"\n}\n",
		want: []string{`1: error: line 1: MESSAGE: a log stream's name without a message: aws logs tail --format json spreads each event over lines; print it in the default format (--format detailed)`,
			`2: error: line 2: TIMESTAMP: not a line of a CloudWatch Logs export: "TIMESTAMP MESSAGE" expected`,
			`3: error: line 3: TIMESTAMP: not a line of a CloudWatch Logs export: "TIMESTAMP MESSAGE" expected`,
			`4: error: line 4: TIMESTAMP: not a line of a CloudWatch Logs export: "TIMESTAMP MESSAGE" expected`},
	}, {
		name:   "S3 export: a truncated gzip file",
		format: export.CloudWatchS3,
		data:   truncated(gzipped("2026-01-01T00:00:01.000Z "+ev("a", 1)+"\n2026-01-01T00:00:02.000Z "+ev("b", 2)+"\n"), 12),
		want:   []string{"1: a", "2: b", "3: unreadable: compressed stream truncated: reading stopped"},
	}, {
		name:   "firehose: a message of another type, control messages skipped",
		format: export.Firehose,
		data: `{"messageType":"CONTROL_MESSAGE","logEvents":[{"id":"","timestamp":1,"message":"CWL CONTROL MESSAGE"}]}` +
			`{"logEvents":[{"id":"1","timestamp":1,"message":` + quoted(ev("a", 1)) + `}],"messageType":"DATA_MESSAGE"}` + "\n" +
			`{"messageType":"HELLO","logEvents":[]}`,
		want: []string{"1: a", `2: error: subscription record 3 (line 2): messageType: "HELLO": DATA_MESSAGE or CONTROL_MESSAGE expected`},
	}, {
		// A subscription delivers every stream of the log group: another stream's log
		// events are skipped.
		name:   "firehose: another stream of the log group",
		format: export.Firehose,
		data: `{"messageType":"DATA_MESSAGE","logStream":"authenticator-0a1b2c","logEvents":[{"id":"1","timestamp":1,"message":"time=\"2026-01-01T00:00:01Z\" level=info msg=access granted"}]}` +
			`{"messageType":"DATA_MESSAGE","logStream":"kube-apiserver-audit-0a1b2c","logEvents":[{"id":"2","timestamp":1,"message":` + quoted(ev("a", 1)) + `}]}`,
		want: []string{"1: skipped: a log event of the stream authenticator-0a1b2c, not of kube-apiserver's audit log (kube-apiserver-audit-*): a CloudWatch Logs subscription delivers every stream of the log group", "1: a"},
	}, {
		name:   "storage blob: another category (skipped), no log, not JSON",
		format: export.AzureBlob,
		data: `{"category":"kube-audit","properties":{"log":` + quoted(ev("a", 1)) + `}}` + "\n" +
			`{"category":"kube-apiserver","properties":{"log":"I0101 12:00:00 started"}}` + "\n" +
			`{"category":"kube-audit-admin","properties":{}}` + "\n" +
			`{"category":` + "\n",
		want: []string{"1: a", `2: skipped: an AKS record of the category kube-apiserver, not kube-audit or kube-audit-admin`,
			"3: error: record at line 3: properties.log: missing",
			"4: error: record at line 4: not an Azure Monitor resource log record: unexpected end of JSON input"},
	}, {
		name:   "storage blob: an event in pieces, one whose rest never comes",
		format: export.AzureBlob,
		data: `{"category":"kube-audit","properties":{"pod":"p1","log":` + quoted(ev("a", 1)[:100]) + `}}` + "\n" +
			`{"category":"kube-audit","properties":{"pod":"p2","log":` + quoted(ev("b", 2)[:50]) + `}}` + "\n" +
			`{"category":"kube-audit","properties":{"pod":"p1","log":` + quoted(ev("a", 1)[100:]) + `}}` + "\n" +
			`{"category":"kube-audit","properties":{"pod":"p2","log":` + quoted(ev("c", 3)) + `}}` + "\n",
		want: []string{"1: a", "2: error: record at line 2: properties.log: an event cut after 50 bytes (AKS splits lines longer than 16 KiB into records), whose rest is not in the export", "4: c"},
	}, {
		// Log Analytics' AzureDiagnostics table keeps 32,766 bytes of a column (Azure/AKS#3316).
		name:   "storage blob: an event cut at the AzureDiagnostics column's length",
		format: export.AzureBlob,
		data: `{"category":"kube-audit","properties":{"pod":"p1","log":` + quoted(strings.Replace(ev("a", 1), `"level"`, `"pad":"`+strings.Repeat("x", 40000)+`","level"`, 1)[:32766]) + `}}` + "\n" +
			`{"category":"kube-audit","properties":{"pod":"p1","log":` + quoted(ev("c", 3)) + `}}` + "\n",
		want: []string{"1: error: record at line 1: properties.log: an event cut after 32766 bytes (Log Analytics' AzureDiagnostics table keeps 32,766 bytes of a column; its resource-specific tables (AKSAudit, AKSAuditAdmin) keep the event whole), whose rest is not in the export", "2: c"},
	}, {
		// aws logs get-query-results: a Logs Insights query's rows, newest first (its
		// default sort), reversed; a row without @message says what the query lacks.
		name:   "Logs Insights results",
		format: export.Auto,
		data: "{\n    \"results\": [\n        [\n            {\"field\": \"@timestamp\", \"value\": \"2026-01-01 00:00:03.400\"},\n            {\"field\": \"@message\", \"value\": " + quoted(ev("c", 3)) + "},\n            {\"field\": \"@ptr\", \"value\": \"x\"}\n        ],\n" +
			"        [{\"field\": \"@timestamp\", \"value\": \"2026-01-01 00:00:02.400\"}, {\"field\": \"@message\", \"value\": " + quoted(ev("b", 2)) + "}],\n" +
			"        [{\"field\": \"@timestamp\", \"value\": \"2026-01-01 00:00:01.400\"}, {\"field\": \"@logStream\", \"value\": \"kube-apiserver-audit-1\"}]\n" +
			"    ],\n    \"statistics\": {\"recordsMatched\": 3.0},\n    \"status\": \"Complete\"\n}\n",
		want: []string{"9: error: document 1 results[2] (line 9): @message: missing: the query's fields must hold the log event's message (fields @timestamp, @message)", "8: b", "3: c"},
	}, {
		name:   "Logs Insights results, the rows alone (--query results)",
		format: export.CloudWatch,
		data: `[[{"field":"@message","value":` + quoted(ev("a", 1)) + `},{"field":"@timestamp","value":"2026-01-01 00:00:01.400"}],[{"field":"@message","value":` + quoted(ev("b", 2)) + `}],` +
			// Of another stream of the log group, when the query did not filter them out; one
			// without @message says what the query lacks, whatever its stream.
			`[{"field":"@logStream","value":"kube-apiserver-8c0c1d2e"},{"field":"@message","value":"I0101 00:00:03.000000 1 controller.go:1] started"}],` +
			// Without @logStream, another log's line is known by its text.
			`[{"field":"@message","value":"Trace[7816759]: [611.2ms] [611.2ms] END"},{"field":"@timestamp","value":"2026-01-01 00:00:03.500"}],` +
			`[{"field":"@logStream","value":"audit-custom"},{"field":"@timestamp","value":"2026-01-01 00:00:04.000"}]]`,
		want: []string{"1: a", "1: b", "1: skipped: a log event of the stream kube-apiserver-8c0c1d2e, not of kube-apiserver's audit log (kube-apiserver-audit-*): a Logs Insights query without filter @logStream like /kube-apiserver-audit/ reads every stream of the log group",
			"1: skipped: a line of another log of the log group (klog's, logrus's, the etcd client's), not an audit event: a Logs Insights query without filter @logStream like /kube-apiserver-audit/ reads every stream of the log group",
			"1: error: results[4] (line 1): @message: missing: the query's fields must hold the log event's message (fields @timestamp, @message)"},
	}, {
		// The Logs Insights console's table downloaded as JSON: each row an object of its
		// fields by name, newest first.
		name:   "Logs Insights rows as objects",
		format: export.Auto,
		data: "[\n  {\n    \"@timestamp\": \"2026-01-01 00:00:02.400\",\n    \"@message\": " + quoted(ev("b", 2)) + "\n  },\n" +
			"  {\n    \"@timestamp\": \"2026-01-01 00:00:01.400\",\n    \"@message\": " + quoted(ev("a", 1)) + "\n  },\n  {\"@timestamp\": \"2026-01-01 00:00:00.400\", \"@message\": 3}\n]\n",
		want: []string{"10: error: results[2] (line 10): not a Logs Insights result's row: json: cannot unmarshal number into Go value of type string", "6: a", "2: b"},
	}, {
		// The console's table downloaded as CSV: a header of the fields, a row an event,
		// newest first; a row of another count, or without @message, is the row's error;
		// a quote out of place ends the table.
		name:   "Logs Insights table as CSV",
		format: export.Auto,
		data: "@timestamp,@message\n" +
			"2026-01-01 00:00:03.400," + csvQuoted(ev("c", 3)) + "\n" +
			"2026-01-01 00:00:02.400," + csvQuoted(ev("b", 2)) + ",extra\n" +
			"2026-01-01 00:00:01.400," + csvQuoted(ev("a", 1)) + "\n" +
			"2026-01-01 00:00:00.400,x\"y\n",
		want: []string{"4: a", "3: error: row 2 (line 3): 3 values, not the header's 2", "2: c",
			"5: unreadable: the table is not CSV, reading stopped: parse error on line 5, column 26: bare \" in non-quoted-field"},
	}, {
		// A record copied from the portal or printed by jq, az: pretty-printed, one after
		// the other or in an array.
		name:   "AKS records pretty-printed",
		format: export.Auto,
		data: "{\n  \"category\": \"kube-audit\",\n  \"resourceId\": \"/SUBSCRIPTIONS/X\",\n  \"properties\": {\n    \"log\": " + quoted(ev("a", 1)) + "\n  }\n}\n" +
			"{\n  \"category\": \"kube-audit\",\n  \"properties\": {\n    \"log\": " + quoted(ev("b", 2)) + "\n  }\n}\n",
		want: []string{"1: a", "8: b"},
	}, {
		name:   "AKS records in an array",
		format: export.Auto,
		data: "[\n  {\"category\": \"kube-audit\", \"properties\": {\"log\": " + quoted(ev("a", 1)) + "}},\n" +
			"  {\"category\": \"kube-audit\", \"properties\": {\"log\": " + quoted(ev("b", 2)) + "}},\n  {\"category\": \"kube-audit\", \"properties\": {}}\n]\n",
		want: []string{"2: a", "3: b", "4: error: document 1 [2]: properties.log: missing"},
	}, {
		// Out of order (a Log Analytics query's rows that share a TimeGenerated): the rest
		// of an event before its beginning says so.
		name:   "storage blob: an event's pieces out of order",
		format: export.AzureBlob,
		data: `{"category":"kube-audit","properties":{"pod":"p1","log":` + quoted(ev("a", 1)[100:]) + `}}` + "\n" +
			`{"category":"kube-audit","properties":{"pod":"p1","log":` + quoted(ev("a", 1)[:100]) + `}}` + "\n",
		want: []string{"1: error: record at line 1: properties.log: not the beginning of an audit event: the rest of one AKS split (lines longer than 16 KiB are split into records) whose beginning is not before it in the export; read the records in the order AKS wrote them (a Log Analytics query: | sort by TimeGenerated asc; the pieces of one event share it, and Kusto keeps no order among them)",
			"2: error: record at line 2: properties.log: an event cut after 100 bytes (AKS splits lines longer than 16 KiB into records), whose rest is not in the export"},
	}, {
		name:   "event hub: a record that is not an object",
		format: export.AzureEventHub,
		data:   `{"records":[{"category":"kube-audit","properties":{"log":` + quoted(ev("a", 1)) + `}},"x"]}`,
		want:   []string{"1: a", "1: error: message 1 records[1]: not an Azure Monitor resource log record: json: cannot unmarshal string into Go value of type export.azureRecord"},
	}, {
		name:   "gcloud: an entry of another service (skipped), cut short",
		format: export.GKE,
		data:   "[\n{\"protoPayload\":{\"serviceName\":\"compute.googleapis.com\"},\"insertId\":\"x\",\"timestamp\":\"2026-01-01T00:00:00Z\"},\n{\"insertId\": ",
		want: []string{`2: skipped: a Cloud Audit Logs entry of compute.googleapis.com, not of the Kubernetes API server (k8s.io)`,
			"3: unreadable: the envelope is not JSON, reading stopped: the envelope ends in the middle of a value"},
	}, {
		// A query that displays other fields than @message (AWS's own example): a Logs
		// Insights table still, whose rows lack the event.
		name:   "Logs Insights CSV without @message",
		format: export.Auto,
		data:   "@logStream,@timestamp,requestURI,verb\nkube-apiserver-audit-8c0c,2026-01-01 00:00:01.000,/api/v1/pods,create\n",
		want:   []string{"2: error: row 1 (line 2): @message: missing: the query's fields must hold the log event's message (fields @timestamp, @message)"},
	}, {
		name:   "gcloud: entries pretty-printed",
		format: export.GKE,
		data:   pretty.String(),
		want:   []string{"1: a", fmt.Sprintf("%d: b", strings.Count(pretty.String()[:strings.LastIndex(pretty.String(), "\n{")], "\n")+2)},
	}, {
		// Found by FuzzReadGKE: the fast walk of an entry looked at the byte past its end
		// (on a worker goroutine: the process died).
		name:   "gcloud: an entry that ends at its protoPayload's colon",
		format: export.GKE,
		data:   ` {"protoPayload":`,
		want:   []string{"1: error: entry at line 1: not a Cloud Logging LogEntry: unexpected end of JSON input"},
	}, {
		name:   "log analytics: not a row of the tables",
		format: export.AzureLogAnalytics,
		data:   "[\n" + laRow("a", 1, nil) + ",\n" + `{"Verb":"get","TimeGenerated":"2026-01-01T00:00:02Z"}` + "\n]",
		want:   []string{"2: a", "3: error: entry 1 (line 3): AuditId: missing: not a row of AKSAudit or AKSAuditAdmin (nor of AzureDiagnostics: no log_s)"},
	}, {
		name:   "log analytics: a column the replay needs left out",
		format: export.AzureLogAnalytics,
		data:   "[\n" + laRow("a", 1, nil) + ",\n" + laRow("b", 2, map[string]any{"ObjectRef": nil}) + "\n]",
		want:   []string{"2: a", "3: error: entry 1 (line 3): ObjectRef: missing: the query left out a column the replay needs (keep the table's columns: no project)"},
	}, {
		name:   "log analytics: a column an event always has, empty",
		format: export.AzureLogAnalytics,
		data:   "[\n" + laRow("a", 1, nil) + ",\n" + laRow("b", 2, map[string]any{"User": "None"}) + ",\n" + laRow("c", 3, map[string]any{"Verb": ""}) + "\n]",
		want:   []string{"2: a", "3: error: entry 1 (line 3): User: empty", "4: error: entry 2 (line 4): Verb: empty"},
	}, {
		name:   "log analytics: a dynamic column that is not JSON, or not an object",
		format: export.AzureLogAnalytics,
		data:   "[\n" + laRow("a", 1, nil) + ",\n" + laRow("b", 2, map[string]any{"User": "{username"}) + ",\n" + laRow("c", 3, map[string]any{"ObjectRef": "[1]"}) + "\n]",
		want:   []string{"2: a", `3: error: entry 1 (line 3): User: "{username" is not JSON`, "4: error: entry 2 (line 4): ObjectRef: [1] is not a JSON object"},
	}, {
		name:   "log analytics: a time that is not one, a verb that is not a string",
		format: export.AzureLogAnalytics,
		data:   "[\n" + laRow("a", 1, nil) + ",\n" + laRow("b", 2, map[string]any{"StageReceivedTime": "yesterday"}) + ",\n" + laRow("c", 3, map[string]any{"Verb": 3}) + "\n]",
		want:   []string{"2: a", `3: error: entry 1 (line 3): StageReceivedTime: "yesterday" is not an RFC 3339 time`, "4: error: entry 2 (line 4): Verb: 3 is not a string"},
	}, {
		name:   "log analytics: cut short",
		format: export.AzureLogAnalytics,
		data:   "[\n" + laRow("a", 1, nil) + ",\n" + `{"AuditId": `,
		want:   []string{"2: a", "3: unreadable: the envelope is not JSON, reading stopped: the envelope ends in the middle of a value"},
	}, {
		// Firehose's extracted messages, one CloudWatch Logs cut: it runs into the next
		// (without a delimiter, or with a newline); the messages after it are read. A
		// message that holds the marker's text in a string is no cut.
		name:   "Firehose's extracted messages: one cut",
		format: export.ConcatenatedEvents,
		data: ev("a", 1) + ev("b", 2)[:150] + "[Truncated...]" + ev("c", 3) + "\n" +
			strings.Replace(ev("d", 4), `"username":"u"`, `"username":"[Truncated...]"`, 1) + "\n" +
			ev("e", 5)[:90] + "[Truncated...]\n" + ev("f", 6) + "\n" + ev("g", 7)[:60] + "[Truncated...]",
		want: []string{"1: a",
			`1: error: line 1: an event cut by CloudWatch Logs at its event size limit (ending "[Truncated...]"), which the messages Firehose extracted give no timestamp to place: lost by the export, not replayed`,
			"1: c", "2: d",
			`3: error: line 3: an event cut by CloudWatch Logs at its event size limit (ending "[Truncated...]"), which the messages Firehose extracted give no timestamp to place: lost by the export, not replayed`,
			"4: f",
			`5: error: line 5: an event cut by CloudWatch Logs at its event size limit (ending "[Truncated...]"), which the messages Firehose extracted give no timestamp to place: lost by the export, not replayed`},
	}, {
		// A subscription delivers every stream of the log group: another log's message is
		// skipped; an event that is not JSON is a malformed line; the events after them are
		// read, with or without a delimiter. A string that holds the marker's text followed
		// by a space and '{' is no cut.
		name:   "Firehose's extracted messages: other logs' lines, a line cut short",
		format: export.ConcatenatedEvents,
		data: ev("a", 1) + "\nI0101 00:00:02.000000 1 controller.go:1] not an event {x}\n" + ev("b", 2) + "\n" + `{"kind":"Event","auditID":"c"]` + "\n" +
			strings.Replace(ev("d", 4), `"username":"u"`, `"username":"log: [Truncated...] {next}"`, 1) + "\n" +
			"time=\"2026-01-01T00:00:05Z\" level=info msg=authenticator" + ev("e", 5) + `{"kind":"Event",]` + ev("g", 7) + "\n" + ev("h", 8)[:100],
		want: []string{"1: a",
			"2: skipped: a message that is not an audit event (a CloudWatch Logs subscription delivers every stream of the log group: kube-apiserver's own log, the authenticator's, ...)",
			"3: b",
			"4: not an event: truncated JSON (31 bytes)", // the decoder's, at the replay
			"5: d",
			"6: skipped: a message that is not an audit event (a CloudWatch Logs subscription delivers every stream of the log group: kube-apiserver's own log, the authenticator's, ...)",
			"6: e",
			"6: not an event: truncated JSON (18 bytes)",
			"6: g",
			"7: error: line 7: not an audit event's JSON: the envelope ends in the middle of a value"},
	}, {
		// A newline ends a message: one cut short without a marker does not run into the
		// next line's.
		name:   "Firehose's extracted messages: a line cut short",
		format: export.ConcatenatedEvents,
		data:   ev("a", 1)[:100] + "\n" + ev("b", 2) + "\r\n" + ev("c", 3) + "\n",
		want:   []string{"1: error: line 1: not an audit event's JSON: the envelope ends in the middle of a value", "2: b", "3: c"},
	}, {
		name:   "Firehose's extracted messages: another log's line last, before and after a cut",
		format: export.ConcatenatedEvents,
		data:   ev("a", 1) + "I0101 before the cut" + ev("b", 2)[:90] + "[Truncated...]" + "I0101 after the cut\n" + ev("c", 3) + "\nI0101 the last line\n" + `{"ts":1,"msg":"another component's JSON"}`,
		want: []string{"1: a",
			"1: skipped: a message that is not an audit event (a CloudWatch Logs subscription delivers every stream of the log group: kube-apiserver's own log, the authenticator's, ...)",
			`1: error: line 1: an event cut by CloudWatch Logs at its event size limit (ending "[Truncated...]"), which the messages Firehose extracted give no timestamp to place: lost by the export, not replayed`,
			"1: skipped: a message that is not an audit event (a CloudWatch Logs subscription delivers every stream of the log group: kube-apiserver's own log, the authenticator's, ...)",
			"2: c",
			"3: skipped: a message that is not an audit event (a CloudWatch Logs subscription delivers every stream of the log group: kube-apiserver's own log, the authenticator's, ...)",
			"4: skipped: a message that is not an audit event (a CloudWatch Logs subscription delivers every stream of the log group: kube-apiserver's own log, the authenticator's, ...)"},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, lines := readAll(t, "f", []byte(tt.data), tt.format)
			var got []string
			for _, l := range lines {
				got = append(got, describe(l))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lines mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestReorderWindow hands events over in the order they completed, and an event that arrives
// later than the window allows as an error, in full once; but an event handed over already
// that arrives again, as exports that deliver at least once hand it over, as a duplicate.
func TestReorderWindow(t *testing.T) {
	t.Parallel()
	var lines []string
	// Lines of an S3 export: the third minute's event first, then the first's and the
	// second's; one ten minutes later, which hands those over; then two that completed
	// before them; then the second line again, and an event with its audit ID and time that
	// is not the same.
	for i, m := range []string{"03:00", "01:00", "02:00", "13:00", "02:30", "00:30"} {
		lines = append(lines, fmt.Sprintf("2026-01-01T00:%s.000Z %s", m, strings.Replace(ev(fmt.Sprint(i+1), 0), "00:00:00", "00:"+m, 1)))
	}
	lines = append(lines, lines[1], strings.Replace(lines[1], `"verb":"delete"`, `"verb":"update"`, 1))
	_, got := readAll(t, "s3", []byte(strings.Join(lines, "\n")+"\n"), export.CloudWatchS3)
	var desc []string
	for _, l := range got {
		desc = append(desc, describe(l))
	}
	want := []string{"2: 2", "3: 3", "1: 1",
		"5: error: the event completed at 2026-01-01T00:02:30Z, before the event already replayed that completed at 2026-01-01T00:03:00Z: the export is further out of the order kube-apiserver completed its requests than the 5m0s the replay puts back in order (or than 256 MiB of events), and the event is not replayed (nor are the later ones that arrive as late)",
		"6: error: the event completed at 2026-01-01T00:00:30Z, before an event already replayed: not replayed (as the late event at line 5)",
		"7: duplicate",
		"8: error: the event completed at 2026-01-01T00:01:00Z, before an event already replayed: not replayed (as the late event at line 5)",
		"4: 4"}
	if diff := cmp.Diff(want, desc); diff != "" {
		t.Errorf("lines mismatch (-want +got):\n%s", diff)
	}
}

// TestCutTimestamp: the timestamp of a CloudWatch Logs export's line, to the microsecond, the
// millisecond or, as aws logs tail --format short prints it, the second, whose last
// millisecond is the latest the event can have completed.
func TestCutTimestamp(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ line, want string }{
		{"2026-01-01T00:00:04.123456+00:00 stream {}", "2026-01-01T00:00:04.123456Z"},
		{"2026-01-01T00:00:04.123Z {}", "2026-01-01T00:00:04.123Z"},
		{"1767225604123 {}", "2026-01-01T00:00:04.123Z"},
		{"2026-01-01T00:00:04 {}", "2026-01-01T00:00:04.999Z"},
	} {
		at, _, ok := export.CutTimestamp([]byte(tc.line))
		if got := at.UTC().Format(time.RFC3339Nano); !ok || got != tc.want {
			t.Errorf("cutTimestamp(%q) = %s, %v; want %s", tc.line, got, ok, tc.want)
		}
	}
}

// TestCutAcrossReads: a marker of a cut is found wherever the reads of the input fall, in a
// message longer than the buffers.
func TestCutAcrossReads(t *testing.T) {
	t.Parallel()
	big := strings.Replace(ev("b", 2), `"username":"u"`, `"username":"`+strings.Repeat("x", 600<<10), 1)
	for _, pad := range []int{0, 1, 7, 13, 100} {
		data := ev("a", 1) + strings.Repeat(" ", pad) + big[:(300<<10)+pad] + "[Truncated...]" + ev("c", 3)
		_, lines := readAll(t, "f", []byte(data), export.ConcatenatedEvents)
		var got []string
		for _, l := range lines {
			got = append(got, describe(l))
		}
		want := []string{"1: a", `1: error: line 1: an event cut by CloudWatch Logs at its event size limit (ending "[Truncated...]"), which the messages Firehose extracted give no timestamp to place: lost by the export, not replayed`, "1: c"}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("pad %d: lines mismatch (-want +got):\n%s", pad, diff)
		}
	}
}

// TestOtherStreamTooLong: a Firehose record's log event of another stream, longer than a
// record may be, is not read: skipped as that stream's, not a panic on the unwrap it never got.
func TestOtherStreamTooLong(t *testing.T) {
	t.Parallel()
	data := `{"messageType":"DATA_MESSAGE","logStream":"kube-apiserver-audit-1","logEvents":[{"id":"1","timestamp":1,"message":` + quoted(ev("a", 1)) + `}]}` +
		`{"messageType":"DATA_MESSAGE","logStream":"kube-apiserver-0a1b","logEvents":[{"id":"2","timestamp":2,"message":"I0101 ` + strings.Repeat("x", 3000) + `"}]}`
	r, err := export.NewReader("fh", strings.NewReader(data), export.Firehose, 1000)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []string
	for {
		l, ok := r.Next()
		if !ok {
			break
		}
		got = append(got, describe(line{num: l.Num, data: l.Data, err: l.Err, skip: l.Skip}))
	}
	want := []string{"1: a", "1: skipped: a log event of the stream kube-apiserver-0a1b, not of kube-apiserver's audit log (kube-apiserver-audit-*): a CloudWatch Logs subscription delivers every stream of the log group"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines mismatch (-want +got):\n%s", diff)
	}
}

// csvQuoted is s as a CSV value quoted.
func csvQuoted(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

// TestInsightsCSVLimits: a quote out of place in a Logs Insights CSV table makes the rest of
// the file one value: reading stops at the row's limit, with an error, after the rows
// before it; a header without a name or with one twice is refused; rows without @timestamp,
// newest first, are put back in order by their events' stageTimestamp.
func TestInsightsCSVLimits(t *testing.T) {
	t.Parallel()
	read := func(data string) []string {
		r, err := export.NewReader("t.csv", strings.NewReader(data), export.Auto, 1<<16)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		var got []string
		for {
			l, ok := r.Next()
			if !ok {
				return got
			}
			got = append(got, describe(line{num: l.Num, data: bytes.Clone(l.Data), err: l.Err, skip: l.Skip}))
		}
	}
	open := "@timestamp,@message\n2026-01-01 00:00:01.400," + csvQuoted(ev("a", 1)) + "\n2026-01-01 00:00:00.400,\"" + strings.Repeat("x", 1<<18)
	if diff := cmp.Diff([]string{"2: a", "3: unreadable: the table's row after line 2: longer than the limit of a row (196608 bytes), reading stopped (a quote out of place?)"}, read(open)); diff != "" {
		t.Errorf("a quote left open (-want +got):\n%s", diff)
	}
	for header, want := range map[string]string{
		"@timestamp,@message,@message": `field "@message" is named twice`,
		"@timestamp,,@message":         "field 2 has no name",
	} {
		got := read(header + "\n2026-01-01 00:00:01.400,x,y\n")
		if len(got) != 1 || !strings.Contains(got[0], want) {
			t.Errorf("header %q: %q, want one error saying %q", header, got, want)
		}
	}
	untimed := "@message\n" + csvQuoted(ev("b", 2)) + "\n" + csvQuoted(ev("a", 1)) + "\n"
	if diff := cmp.Diff([]string{"3: a", "2: b"}, read(untimed)); diff != "" {
		t.Errorf("rows without @timestamp, newest first (-want +got):\n%s", diff)
	}
}
