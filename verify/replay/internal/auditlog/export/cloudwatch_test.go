package export_test

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// TestCloudWatchCut reads events CloudWatch Logs cut at its event size limit, in each of its
// three forms: the head the message kept is the event, at level Metadata and at the log
// event's time, lost by the export as far as it was cut; a message cut inside its head, or
// without a time, is an error that says where and why.
func TestCloudWatchCut(t *testing.T) {
	t.Parallel()
	const ms = 1767225601000 // 2026-01-01T00:00:01Z
	big := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"a","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/n/configmaps/c?fieldManager=m","verb":"update","user":{"username":"u","groups":["g"]},"sourceIPs":["10.0.0.1"],"userAgent":"k","objectRef":{"resource":"configmaps","namespace":"n","name":"c","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"requestObject":{"kind":"ConfigMap","apiVersion":"v1","data":{"k":"` + strings.Repeat("x", 64)
	cut := func(s string) string { return s + "[Truncated...]" }
	cw := func(msg string, stamp bool) string {
		ts := ""
		if stamp {
			ts = fmt.Sprintf(`"timestamp":%d,`, ms)
		}
		return fmt.Sprintf(`{"events":[{"logStreamName":"kube-apiserver-audit-1",%s"message":%s}]}`, ts, quoted(cut(msg)))
	}
	want := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/n/configmaps/c?fieldManager=m","verb":"update","user":{"username":"u","groups":["g"]},"sourceIPs":["10.0.0.1"],"userAgent":"k","objectRef":{"resource":"configmaps","namespace":"n","name":"c","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":200},"level":"Metadata","stageTimestamp":"2026-01-01T00:00:01Z"}`
	tests := []struct {
		name   string
		format export.Format
		data   string
		want   []string
	}{{
		name:   "filter-log-events",
		format: export.CloudWatch,
		data:   cw(big, true),
		want:   []string{"1: " + want},
	}, {
		name:   "S3 export",
		format: export.CloudWatchS3,
		data:   "2026-01-01T00:00:01.000Z " + cut(big) + "\n",
		want:   []string{"1: " + want},
	}, {
		name:   "cut inside the response status",
		format: export.CloudWatch,
		data:   cw(big[:strings.Index(big, `"code":200`)+4], true),
		want:   []string{`1: error: document 1: events[0].message: the event of audit ID a was cut by CloudWatch Logs at its event size limit (407 bytes kept, ending "[Truncated...]"), and what it kept of its head (what the request was, and how it ended) lacks responseStatus: lost by the export, not replayed`},
	}, {
		name:   "no timestamp",
		format: export.CloudWatch,
		data:   cw(big, false),
		want:   []string{`1: error: document 1: events[0].message: the event of audit ID a was cut by CloudWatch Logs at its event size limit (546 bytes kept, ending "[Truncated...]"), and its log event has no timestamp: lost by the export, not replayed`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, lines := readAll(t, tt.name, []byte(tt.data), tt.format)
			var got []string
			for _, l := range lines {
				if l.err != nil {
					got = append(got, describe(l))
					continue
				}
				if l.loss != (auditlog.Loss{Export: export.ExportCloudWatch, Lost: auditlog.LostLevel | auditlog.LostReceived | auditlog.LostAnnotations | auditlog.LostStageTime}) {
					t.Errorf("line %d lost %+v, want the level, the received and the stage times and the annotations", l.num, l.loss)
				}
				if _, err := auditlog.Decode(l.data); err != nil {
					t.Errorf("line %d: %v", l.num, err)
				}
				got = append(got, fmt.Sprintf("%d: %s", l.num, bytes.TrimSuffix(l.data, []byte("\n"))))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lines mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCloudWatchText reads the AWS CLI's text output of filter-log-events and get-log-events
// (--output text): each EVENTS line's message is its event, whichever command printed it; the
// streams searched, get-log-events' tokens and another stream's log events are skipped; a
// message CloudWatch cut is its head at the log event's time; a line that is not the CLI's,
// or whose timestamp is not one, is an error naming its line and field.
func TestCloudWatchText(t *testing.T) {
	t.Parallel()
	ev := func(id, at string) string {
		return `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"Metadata","auditID":"` + id + `","stage":"ResponseComplete","requestURI":"/api/v1/namespaces","verb":"list","user":{"username":"u"},"stageTimestamp":"2026-01-01T00:00:0` + at + `Z"}`
	}
	filter := func(stream, msg string, ms int64) string {
		return fmt.Sprintf("EVENTS\t%056d\t%d\t%s\t%s\t%d\n", ms, ms+800, stream, msg, ms)
	}
	const ms = 1767225601000 // 2026-01-01T00:00:01Z
	tests := []struct {
		name string
		data string
		want []string
	}{{
		name: "filter-log-events",
		data: filter("kube-apiserver-audit-1", ev("a", "1"), ms) + filter("kube-apiserver-audit-2", ev("b", "2"), ms+1000) +
			"SEARCHEDLOGSTREAMS\tkube-apiserver-audit-1\tTrue\nSEARCHEDLOGSTREAMS\tkube-apiserver-audit-2\tTrue\n",
		want: []string{"1: a", "2: b",
			"3: skipped: a log stream aws logs filter-log-events searched (SEARCHEDLOGSTREAMS), not a log event",
			"4: skipped: a log stream aws logs filter-log-events searched (SEARCHEDLOGSTREAMS), not a log event"},
	}, {
		name: "get-log-events",
		data: fmt.Sprintf("b/39512345678901234567890123456789012345678901234567890123/s\tf/39512345678901234567890123456789012345678901234567890124/s\nEVENTS\t%d\t%s\t%d\nEVENTS\t%d\t%s\t%d\r\n",
			ms+800, ev("a", "1"), ms, ms+1800, ev("b", "2"), ms+1000),
		want: []string{"1: skipped: the tokens of aws logs get-log-events' next pages, not a log event", "2: a", "3: b"},
	}, {
		name: "stopped by --max-items",
		data: "eyJuZXh0VG9rZW4iOiBudWxsLCAiYm90b190cnVuY2F0ZV9hbW91bnQiOiAxfQ==\n" + filter("kube-apiserver-audit-1", ev("a", "1"), ms) +
			"SEARCHEDLOGSTREAMS\tkube-apiserver-audit-1\tTrue\n",
		want: []string{"1: skipped: the NextToken of the AWS CLI's pagination (--max-items), not a log event", "2: a",
			"3: skipped: a log stream aws logs filter-log-events searched (SEARCHEDLOGSTREAMS), not a log event"},
	}, {
		name: "every stream of the log group",
		data: filter("kube-apiserver-audit-1", ev("a", "1"), ms) + filter("authenticator-1", `time="2026-01-01T00:00:01Z" level=info msg="access granted"`, ms) +
			filter("kube-apiserver-1", ev("b", "2"), ms+1000),
		want: []string{"1: a",
			"2: skipped: a log event of the stream authenticator-1, not of kube-apiserver's audit log (kube-apiserver-audit-*): aws logs filter-log-events without --log-stream-name-prefix kube-apiserver-audit reads every stream of the log group",
			"3: b"},
	}, {
		name: "a message CloudWatch cut",
		data: filter("kube-apiserver-audit-1", `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"a","stage":"ResponseComplete","requestURI":"/api/v1/namespaces","verb":"create","user":{"username":"u"},"responseStatus":{"metadata":{},"code":201},"requestObject":{"kind":"Namespace","metadata":{"name":"xx[Truncated...]`, ms),
		want: []string{"1: a"},
	}, {
		name: "not the CLI's text output",
		data: filter("kube-apiserver-audit-1", ev("a", "1"), ms) + "{\"events\": []}\n" + "EVENTS\t1\t2\n" +
			fmt.Sprintf("EVENTS\t%056d\t%d\tkube-apiserver-audit-1\t%s\tnow\n", 1, ms, ev("b", "2")),
		want: []string{"1: a",
			"2: error: line 2: not a line of the AWS CLI's text output of log events (aws logs filter-log-events --output text: EVENTS eventId ingestionTime logStreamName message timestamp; get-log-events: EVENTS ingestionTime message timestamp)",
			"3: error: line 3: 2 values after EVENTS, not a log event's (aws logs filter-log-events --output text: EVENTS eventId ingestionTime logStreamName message timestamp; get-log-events: EVENTS ingestionTime message timestamp)",
			`4: error: line 4: timestamp: "now" is not milliseconds since the epoch (aws logs filter-log-events --output text: EVENTS eventId ingestionTime logStreamName message timestamp; get-log-events: EVENTS ingestionTime message timestamp)`},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			format, lines := readAll(t, tt.name, []byte(tt.data), export.Auto)
			if format != export.CloudWatchText {
				t.Errorf("detected %q, want %q", format, export.CloudWatchText)
			}
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

// TestIndentedLogEvents holds the reading of the AWS CLI's indented JSON, whose log events
// the scanner takes by the line that closes each without checking them (indentedHeld), to
// checking each as it unwraps it: a log event that is not JSON beside its message, or whose
// message is not a JSON string, is an error naming its line and field; the events around it
// are read.
func TestIndentedLogEvents(t *testing.T) {
	event := func(id string) string {
		return `{\"kind\":\"Event\",\"apiVersion\":\"audit.k8s.io/v1\",\"level\":\"Metadata\",\"auditID\":\"` + id + `\",\"stage\":\"ResponseComplete\",\"verb\":\"get\",\"stageTimestamp\":\"2026-11-20T08:00:0` + id + `.000000Z\",\"requestReceivedTimestamp\":\"2026-11-20T08:00:0` + id + `.000000Z\"}`
	}
	logEvent := func(id, eventID, message string) string {
		return "        {\n" +
			"            \"logStreamName\": \"kube-apiserver-audit-a1\",\n" +
			"            \"timestamp\": 179582368513" + id + ",\n" +
			"            \"message\": \"" + message + "\",\n" +
			"            \"ingestionTime\": 1795823685999,\n" +
			"            \"eventId\": " + eventID + "\n" +
			"        }"
	}
	for _, tc := range []struct {
		name      string
		eventID   string // the second log event's
		message   string
		wantError string
	}{
		{"whole", `"2"`, event("2"), ""},
		{"a member not JSON", `"2" "3"`, event("2"), "events[1]: not a CloudWatch log event"},
		{"a number not JSON", `2x`, event("2"), "events[1]: not a CloudWatch log event"},
		{"a message with a control character", `"2"`, event("2")[:40] + "\t" + event("2")[40:], "events[1]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			doc := "{\n    \"events\": [\n" + logEvent("1", `"1"`, event("1")) + ",\n" + logEvent("2", tc.eventID, tc.message) + ",\n" +
				logEvent("3", `"3"`, event("3")) + "\n    ]\n}\n"
			_, lines := readAll(t, "filter-log-events.json", []byte(doc), export.Auto)
			var got []string
			for _, l := range lines {
				switch {
				case l.err != nil:
					got = append(got, fmt.Sprintf("%d error %v", l.num, l.err))
				default:
					got = append(got, fmt.Sprintf("%d %t", l.num, bytes.Contains(l.data, []byte(`"kind":"Event"`))))
				}
			}
			want := []string{"3 true", "10 true", "17 true"}
			if tc.wantError != "" {
				want[1] = "10 error"
			}
			if len(got) != 3 || got[0] != want[0] || got[2] != want[2] || !strings.HasPrefix(got[1], want[1]) || !strings.Contains(got[1], tc.wantError) {
				t.Errorf("lines:\n%s\nwant %q, the second with %q", strings.Join(got, "\n"), want, tc.wantError)
			}
		})
	}
}
