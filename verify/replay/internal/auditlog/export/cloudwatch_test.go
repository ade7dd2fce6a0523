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
