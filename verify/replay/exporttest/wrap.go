// Package exporttest wraps a log backend's audit log (audit.k8s.io/v1 Event JSON lines) as
// each export a replay reads hands it over: kube-apiserver's webhook backend, EKS's CloudWatch
// Logs (filter-log-events, an S3 export task, a subscription through Firehose), AKS's
// diagnostic settings (a storage account, Event Hubs, a Log Analytics query) and GKE's Cloud Logging (gcloud, a log
// sink), each as its vendor documents it (the formats' sources are named in package export),
// with the disorder each hands events over in and what it drops. The tests of the readers and
// of the replay read real recorded logs through it, so that a replay of an export can be held
// to the replay of the file it was made from.
package exporttest

import (
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// event is what a wrapper reads of an event.
type event struct {
	raw   []byte
	stage time.Time
	id    string
	Stage string `json:"stage"`
}

// CloudWatchLimit is the longest message of a CloudWatch Logs event: 256 KiB less the 26
// bytes an event costs. CloudWatch cuts a longer one and marks it "[Truncated...]"
// (falcosecurity/plugins#297).
const CloudWatchLimit = 256<<10 - 26

// Wrap wraps the lines of a log backend's file in the format f, gzip-compressed where the
// export is. Lines that are not events are dropped; in CloudWatch's formats, those longer than
// CloudWatchLimit are cut as CloudWatch cuts them.
func Wrap(f export.Format, log []byte) ([]byte, error) { return WrapCut(f, log, CloudWatchLimit) }

// WrapCut is Wrap with CloudWatch's messages cut at limit bytes (a smaller limit than
// CloudWatch's cuts the events a test has, which are smaller than real ones can be).
func WrapCut(f export.Format, log []byte, limit int) ([]byte, error) {
	evs := events(log)
	switch f {
	case export.CloudWatch, EKSText, export.CloudWatchS3, EKSTail, export.Firehose, FirehoseLines:
		for i, e := range evs {
			if len(e.raw) > limit {
				keep := max(limit-len(cloudWatchTruncated), 0)
				evs[i].raw = append(e.raw[:keep:keep], cloudWatchTruncated...)
			}
		}
	}
	switch f {
	case export.Webhook:
		return webhook(evs), nil
	case export.CloudWatch:
		return filterLogEvents(evs)
	case EKSText:
		return filterLogEventsText(evs), nil
	case export.CloudWatchS3:
		return s3Export(evs)
	case EKSTail:
		return logsTail(evs), nil
	case export.Firehose:
		return firehose(evs)
	case FirehoseLines:
		var b bytes.Buffer
		for _, batch := range swapPairs(batches(evs, 25)) {
			for _, e := range batch {
				b.Write(e.raw)
				b.WriteByte('\n')
			}
		}
		return b.Bytes(), nil
	case export.AzureBlob:
		return azureBlob(evs)
	case export.AzureEventHub:
		return azureEventHub(evs)
	case export.AzureLogAnalytics:
		return logAnalytics(evs)
	case export.GKE:
		return gkeArray(evs, true, GKEOptions{})
	case GKESink:
		return gkeArray(evs, false, GKEOptions{})
	case ContainerLog:
		return containerLog(log), nil
	case KubectlLogs:
		return kubectlLogs(log), nil
	}
	return nil, fmt.Errorf("exporttest: no wrapper for %q", f)
}

// events are the log's events, one a line; lines that are no event with a stage time are
// left out.
func events(log []byte) []event {
	var evs []event
	for _, l := range bytes.Split(log, []byte("\n")) {
		l = bytes.TrimSpace(l)
		if len(l) == 0 {
			continue
		}
		var e struct {
			AuditID        string `json:"auditID"`
			Stage          string `json:"stage"`
			StageTimestamp string `json:"stageTimestamp"`
		}
		if json.Unmarshal(l, &e) != nil {
			continue
		}
		at, err := time.Parse(time.RFC3339Nano, e.StageTimestamp)
		if err != nil {
			continue
		}
		evs = append(evs, event{raw: l, stage: at, id: e.AuditID, Stage: e.Stage})
	}
	return evs
}

// cloudWatchTruncated marks a message CloudWatch cut.
const cloudWatchTruncated = "[Truncated...]"

// GKESink is GKE's export as a log sink to Cloud Storage writes it (JSON lines, oldest first),
// where export.GKE is gcloud's array, newest first.
const GKESink export.Format = "gke-sink"

// EKSTail is what `aws logs tail` prints of an EKS cluster's log group in its default format,
// "TIMESTAMP STREAM MESSAGE" lines, which export.CloudWatchS3 reads.
const EKSTail export.Format = "eks-tail"

// EKSText is what `aws logs filter-log-events --output text` prints of an EKS cluster's log
// group, which export.CloudWatch reads: a line EVENTS eventId ingestionTime logStreamName
// message timestamp a log event, tab-separated, and the streams searched.
const EKSText export.Format = "eks-cloudwatch-text"

// FirehoseLines is what a Firehose stream of a CloudWatch Logs subscription writes with its
// decompression and message extraction on and a newline delimiter appended: the events one a
// line, in the order Firehose received the batches, in an object named as Firehose names it
// (Name), which export.Firehose reads.
const FirehoseLines export.Format = "eks-firehose-lines"

// ContainerLog is kube-apiserver's audit log on standard output (--audit-log-path=-) as the
// container runtime writes it to the container's log file (the kubelet's CRI logging format,
// "TIMESTAMP STREAM TAG MESSAGE"): the log's lines in its order, each cut in pieces of
// ContainerLogPiece bytes (the runtime cuts at 16 KiB: smaller, to cut the events a test
// has), klog's lines of standard error among them. Not an export: it loses nothing.
const ContainerLog export.Format = "container-log"

// ContainerLogPiece is the longest piece of a line ContainerLog writes.
const ContainerLogPiece = 4 << 10

// Lossless are the other forms of the log backend's file Wrap makes, which lose nothing of
// it, not even its order.
func Lossless() []export.Format { return []export.Format{ContainerLog, KubectlLogs} }

// KubectlLogs is kube-apiserver's audit log on standard output as kubectl logs prints it: its
// standard output and standard error in one, the log's lines in its order, the lines of its
// own log among them as kube-apiserver writes them (ownLog): klog's, a slow request's trace
// over lines of its own, the etcd client's JSON lines, klog's JSON format's. Not an export:
// it loses nothing.
const KubectlLogs export.Format = "kubectl-logs"

// ownLog are lines of kube-apiserver's standard error, a group of them between every few
// events.
var ownLog = [][]string{
	{"I1120 08:00:00.000000       1 controller.go:615] quota admission added evaluator for: leases.coordination.k8s.io"},
	{`I1120 08:00:01.211000       1 trace.go:236] Trace[7816759]: "Update" accept:application/vnd.kubernetes.protobuf, */*,audit-id:1c5a,client:127.0.0.1,api-group:coordination.k8s.io,api-version:v1,name:kube-scheduler,subresource:,namespace:kube-system,protocol:HTTP/2.0,resource:leases,scope:resource,url:/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler,user-agent:kube-scheduler/v1.37.0 (linux/amd64) kubernetes/unknown,verb:PUT (20-Nov-2026 08:00:00.600) (total time: 611ms):`,
		`Trace[7816759]: ["GuaranteedUpdate etcd3" audit-id:1c5a,key:/leases/kube-system/kube-scheduler,type:*coordination.Lease,resource:leases.coordination.k8s.io 611ms (08:00:00.600)`,
		`Trace[7816759]:  ---"Txn call completed" 609ms (08:00:01.210)]`,
		`Trace[7816759]: [611.2ms] [611.2ms] END`},
	{`{"level":"warn","ts":"2026-11-20T08:00:02.000Z","logger":"etcd-client","caller":"v3@v3.6.5/retry_interceptor.go:63","msg":"retrying of unary invoker failed","target":"etcd-endpoints://0xc000a1e000/127.0.0.1:2379","attempt":0,"error":"rpc error: code = DeadlineExceeded desc = context deadline exceeded"}`},
	{`{"ts":1763625603000.123,"caller":"cacher/cacher.go:478","msg":"cacher (pods): unexpected ListAndWatch error","v":0}`},
	{"W1120 08:00:04.000001      17 dispatcher.go:217] Failed calling webhook, failing open"},
}

// kubectlLogs writes the log's lines as KubectlLogs.
func kubectlLogs(log []byte) []byte {
	var b bytes.Buffer
	for i, l := range bytes.Split(bytes.TrimRight(log, "\n"), []byte("\n")) {
		if i%7 == 0 {
			for _, o := range ownLog[i/7%len(ownLog)] {
				b.WriteString(o + "\n")
			}
		}
		b.Write(l)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// containerLog writes the log's lines as ContainerLog.
func containerLog(log []byte) []byte {
	var b bytes.Buffer
	at := time.Date(2026, 11, 20, 8, 0, 0, 0, time.UTC)
	for i, l := range bytes.Split(bytes.TrimRight(log, "\n"), []byte("\n")) {
		at = at.Add(time.Millisecond)
		if ts, ok := stageOf(l); ok && ts.After(at) {
			at = ts
		}
		stamp := at.Format(time.RFC3339Nano)
		if i%10 == 0 {
			fmt.Fprintf(&b, "%s stderr F I1120 08:00:00.000000       1 controller.go:615] quota admission added evaluator\n", stamp)
		}
		for len(l) > ContainerLogPiece {
			fmt.Fprintf(&b, "%s stdout P %s\n", stamp, l[:ContainerLogPiece])
			l = l[ContainerLogPiece:]
		}
		fmt.Fprintf(&b, "%s stdout F %s\n", stamp, l)
	}
	return b.Bytes()
}

// stageOf is the stage time of a line's event.
func stageOf(l []byte) (time.Time, bool) {
	var ev struct {
		StageTimestamp time.Time `json:"stageTimestamp"`
	}
	if json.Unmarshal(l, &ev) != nil || ev.StageTimestamp.IsZero() {
		return time.Time{}, false
	}
	return ev.StageTimestamp, true
}

// Formats are the exports Wrap makes.
func Formats() []export.Format {
	return []export.Format{export.Webhook, export.CloudWatch, EKSText, export.CloudWatchS3, EKSTail, export.Firehose, FirehoseLines,
		export.AzureBlob, export.AzureEventHub, export.AzureLogAnalytics, export.GKE, GKESink}
}

// Name is the name of the i-th file of an export in the format f: Firehose's objects are
// named by their stream, version, time and a UUID
// (https://docs.aws.amazon.com/firehose/latest/dev/s3-object-name.html), which tells the
// replay a file of events one a line is one.
func Name(f export.Format, i int) string {
	if f == FirehoseLines {
		return fmt.Sprintf("vapc-audit-1-2026-11-20-08-%02d-00-8c7a1f3e-25ea-4c64-9b75-44b73ddc6b3b", i%60)
	}
	return fmt.Sprintf("export-%s-%d", f, i)
}

// hash is a stable pseudo-random number of a string: the disorder is the same every run.
func hash(s string) uint64 {
	h := sha256.Sum256([]byte(s))
	return binary.BigEndian.Uint64(h[:8])
}

// swapPairs swaps each pair of neighbouring batches: batches delivered out of order.
func swapPairs[T any](xs []T) []T {
	out := append([]T(nil), xs...)
	for i := 0; i+1 < len(out); i += 2 {
		out[i], out[i+1] = out[i+1], out[i]
	}
	return out
}

// batches cuts the events into batches of at most n events that span at most 30 seconds, as
// an exporter buffers them (kube-apiserver's --audit-webhook-batch-max-wait is 30s; Firehose
// and Event Hubs buffer for a minute or less).
func batches(evs []event, n int) [][]event {
	const span = 30 * time.Second
	var out [][]event
	start := 0
	for i := range evs {
		if i-start == n || evs[i].stage.Sub(evs[start].stage) > span {
			out = append(out, evs[start:i])
			start = i
		}
	}
	if start < len(evs) {
		out = append(out, evs[start:])
	}
	return out
}

// Gzip is b gzip-compressed, as the exports that compress write it.
func Gzip(b []byte) []byte {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(b)
	zw.Close()
	return buf.Bytes()
}

// webhook: EventLists of 17 events, one a line, the batches kept as they arrived.
func webhook(evs []event) []byte {
	var b bytes.Buffer
	for _, batch := range swapPairs(batches(evs, 17)) {
		items := make([]json.RawMessage, len(batch))
		for i, e := range batch {
			items[i] = e.raw
		}
		line, _ := json.Marshal(map[string]any{"kind": "EventList", "apiVersion": "audit.k8s.io/v1", "metadata": map[string]any{}, "items": items})
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes()
}

// streamOf is the CloudWatch stream of the server that wrote an event: two servers.
func streamOf(e event) string {
	return fmt.Sprintf("kube-apiserver-audit-%x", hash(e.id)%2+0xa1)
}

// cloudWatchTime is the timestamp EKS gives an event's log event: when its agent read the
// line, up to half a second after the server wrote it.
func cloudWatchTime(e event) int64 {
	return e.stage.Add(time.Duration(hash(e.id)%500) * time.Millisecond).UnixMilli()
}

// filterLogEvents: one document as the AWS CLI prints it (indented by 4), events sorted by
// their CloudWatch timestamp.
func filterLogEvents(evs []event) ([]byte, error) {
	type fle struct {
		LogStreamName string `json:"logStreamName"`
		Timestamp     int64  `json:"timestamp"`
		Message       string `json:"message"`
		IngestionTime int64  `json:"ingestionTime"`
		EventID       string `json:"eventId"`
	}
	var out []fle
	for i, e := range evs {
		ts := cloudWatchTime(e)
		out = append(out, fle{streamOf(e), ts, string(e.raw), ts + 800, fmt.Sprintf("%056d", i)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Timestamp < out[j].Timestamp })
	streams := map[string]bool{}
	var names []map[string]any
	for _, e := range out {
		if !streams[e.LogStreamName] {
			streams[e.LogStreamName] = true
			names = append(names, map[string]any{"logStreamName": e.LogStreamName, "searchedCompletely": true})
		}
	}
	return json.MarshalIndent(map[string]any{"events": out, "searchedLogStreams": names}, "", "    ")
}

// filterLogEventsText: the AWS CLI's text output of filter-log-events (awscli/text.py: a
// list's objects' scalar members sorted by name, after the list's name in capitals), events
// sorted by their CloudWatch timestamp, in two pages (the CLI prints each page it reads), each
// followed by the streams it searched.
func filterLogEventsText(evs []event) []byte {
	type fle struct {
		ts     int64
		stream string
		msg    []byte
		id     int
	}
	var out []fle
	for i, e := range evs {
		out = append(out, fle{cloudWatchTime(e), streamOf(e), e.raw, i})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ts < out[j].ts })
	var b bytes.Buffer
	for _, page := range [][]fle{out[:len(out)/2], out[len(out)/2:]} {
		streams := map[string]bool{}
		var names []string
		for _, e := range page {
			fmt.Fprintf(&b, "EVENTS\t%056d\t%d\t%s\t%s\t%d\n", e.id, e.ts+800, e.stream, e.msg, e.ts)
			if !streams[e.stream] {
				streams[e.stream] = true
				names = append(names, e.stream)
			}
		}
		for _, n := range names {
			fmt.Fprintf(&b, "SEARCHEDLOGSTREAMS\t%s\tTrue\n", n)
		}
	}
	return b.Bytes()
}

// s3Export: gzip lines "TIMESTAMP MESSAGE", chunks of 40 lines out of order.
func s3Export(evs []event) ([]byte, error) {
	var b bytes.Buffer
	for _, chunk := range swapPairs(batches(evs, 40)) {
		for _, e := range chunk {
			fmt.Fprintf(&b, "%s %s\n", time.UnixMilli(cloudWatchTime(e)).UTC().Format("2006-01-02T15:04:05.000Z"), e.raw)
		}
	}
	return Gzip(b.Bytes()), nil
}

// logsTail: aws logs tail's default format (awscli/customizations/logs/tail.py,
// DetailedLogEventsFormatter): the log event's timestamp in ISO 8601 to the microsecond with
// its zone, the stream's name and the message, in the order FilterLogEvents gives them
// (interleaved: by their CloudWatch timestamp).
func logsTail(evs []event) []byte {
	type line struct {
		ts   int64
		text string
	}
	var out []line
	for _, e := range evs {
		ts := cloudWatchTime(e)
		out = append(out, line{ts, fmt.Sprintf("%s %s %s\n", time.UnixMilli(ts).UTC().Format("2006-01-02T15:04:05.000000-07:00"), streamOf(e), e.raw)})
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ts < out[j].ts })
	var b bytes.Buffer
	for _, l := range out {
		b.WriteString(l.text)
	}
	return b.Bytes()
}

// firehose: a CONTROL_MESSAGE, then DATA_MESSAGEs of 25 log events, each a gzip member of its
// own, concatenated out of order without a delimiter, and the object gzip-compressed again.
func firehose(evs []event) ([]byte, error) {
	type logEvent struct {
		ID        string `json:"id"`
		Timestamp int64  `json:"timestamp"`
		Message   string `json:"message"`
	}
	msg := func(kind, stream string, les []logEvent) []byte {
		b, _ := json.Marshal(map[string]any{"messageType": kind, "owner": "123456789012", "logGroup": "/aws/eks/vapc/cluster",
			"logStream": stream, "subscriptionFilters": []string{"vapc-audit"}, "logEvents": les})
		return Gzip(b)
	}
	var b bytes.Buffer
	b.Write(msg("CONTROL_MESSAGE", "", []logEvent{{ID: "", Timestamp: 1, Message: "CWL CONTROL MESSAGE: Checking health of destination Firehose."}}))
	for i, batch := range swapPairs(batches(evs, 25)) {
		var les []logEvent
		for j, e := range batch {
			les = append(les, logEvent{fmt.Sprintf("%056d", i*100+j), cloudWatchTime(e), string(e.raw)})
		}
		b.Write(msg("DATA_MESSAGE", streamOf(batch[0]), les))
	}
	return Gzip(b.Bytes()), nil
}

// azureRecord is a resource log record of an AKS cluster's kube-audit category.
func azureRecord(e event, log string, pod string) map[string]any {
	return map[string]any{
		"time":          e.stage.UTC().Format(time.RFC3339Nano),
		"resourceId":    "/SUBSCRIPTIONS/00000000-0000-0000-0000-000000000000/RESOURCEGROUPS/VAPC/PROVIDERS/MICROSOFT.CONTAINERSERVICE/MANAGEDCLUSTERS/VAPC",
		"category":      "kube-audit",
		"operationName": "Microsoft.ContainerService/managedClusters/diagnosticLogs/Read",
		"properties":    map[string]any{"log": log, "stream": "stdout", "pod": pod},
	}
}

// azurePieces are an event's records: one, or one a 16 KiB piece of a longer line.
func azurePieces(e event) []map[string]any {
	pod := fmt.Sprintf("kube-apiserver-%x", hash(e.id)%2+0x7c)
	const piece = 16 << 10
	var out []map[string]any
	for s := string(e.raw); ; s = s[piece:] {
		if len(s) <= piece {
			return append(out, azureRecord(e, s, pod))
		}
		out = append(out, azureRecord(e, s[:piece], pod))
	}
}

// azureBlob: a PT1H.json blob, one record a line, pairs of events out of order, long events
// in pieces.
func azureBlob(evs []event) ([]byte, error) {
	var b bytes.Buffer
	for _, batch := range swapPairs(batches(evs, 1)) {
		for _, rec := range azurePieces(batch[0]) {
			line, err := json.Marshal(rec)
			if err != nil {
				return nil, err
			}
			b.Write(line)
			b.WriteByte('\n')
		}
	}
	return b.Bytes(), nil
}

// azureEventHub: messages {"records":[...]} of 30 events, one a line, out of order.
func azureEventHub(evs []event) ([]byte, error) {
	var b bytes.Buffer
	for _, batch := range swapPairs(batches(evs, 30)) {
		var recs []map[string]any
		for _, e := range batch {
			recs = append(recs, azurePieces(e)...)
		}
		line, err := json.Marshal(map[string]any{"records": recs})
		if err != nil {
			return nil, err
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	return b.Bytes(), nil
}

// laSkipAbove is the size of an object over which the Log Analytics wrapper writes AKS's
// skipped-too-big-size-object in its place.
const laSkipAbove = 16 << 10

// LogAnalyticsRow is the row of an AKSAudit (admin: AKSAuditAdmin) table an event is, as `az
// monitor log-analytics query` prints it: a column for each field of the event but
// impersonatedUser and authenticationMetadata, which the tables do not have, a dynamic
// column's value its JSON as a string (None for a null), a time as the API gives it, an
// object over laSkipAbove bytes skipped.
func LogAnalyticsRow(raw []byte, admin bool) (map[string]any, error) {
	var ev map[string]json.RawMessage
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, err
	}
	table := "AKSAudit"
	if admin {
		table = "AKSAuditAdmin"
	}
	row := map[string]any{"TableName": "PrimaryResult", "Type": table, "TenantId": "00000000-0000-0000-0000-000000000000",
		"SourceSystem": "Azure", "_ResourceId": "/subscriptions/00000000-0000-0000-0000-000000000000/resourcegroups/vapc/providers/microsoft.containerservice/managedclusters/vapc"}
	var id string
	_ = json.Unmarshal(ev["auditID"], &id)
	row["PodName"] = fmt.Sprintf("kube-apiserver-%x", hash(id)%2+0x7c)
	for _, c := range []struct {
		field, column string
		dynamic       bool
	}{
		{"level", "Level", false}, {"auditID", "AuditId", false}, {"stage", "Stage", false}, {"requestURI", "RequestUri", false},
		{"verb", "Verb", false}, {"user", "User", true}, {"sourceIPs", "SourceIps", true},
		{"userAgent", "UserAgent", false}, {"objectRef", "ObjectRef", true}, {"responseStatus", "ResponseStatus", true},
		{"requestObject", "RequestObject", true}, {"responseObject", "ResponseObject", true},
		{"requestReceivedTimestamp", "RequestReceivedTime", false}, {"stageTimestamp", "StageReceivedTime", false},
		{"annotations", "Annotations", true},
	} {
		v, ok := ev[c.field]
		switch {
		case !ok && c.dynamic:
			row[c.column] = "None" // a null, as az prints it (Python's str())
		case !ok:
			row[c.column] = ""
		case c.dynamic && len(v) > laSkipAbove && (c.field == "requestObject" || c.field == "responseObject"):
			row[c.column] = "skipped-too-big-size-object"
		case c.dynamic:
			row[c.column] = string(v)
		case c.field == "requestReceivedTimestamp" || c.field == "stageTimestamp":
			var t time.Time
			if err := json.Unmarshal(v, &t); err != nil {
				return nil, err
			}
			row[c.column] = t.UTC().Format(time.RFC3339Nano) // as the API gives it: trailing zeros trimmed
			if c.field == "stageTimestamp" {
				row["TimeGenerated"] = t.Add(2 * time.Second).UTC().Format(time.RFC3339Nano)
			}
		default:
			var s string
			if err := json.Unmarshal(v, &s); err != nil {
				return nil, err
			}
			row[c.column] = s
		}
	}
	return row, nil
}

// LogAnalyticsKept is what a Log Analytics row keeps of an event (its JSON): every field AKS's
// table has a column for (not authenticationMetadata, not impersonatedUser), and where an object was over
// laSkipAbove bytes (skipped), neither object, at level Metadata, as package export's reader
// gives the event back (with the loss of its level).
func LogAnalyticsKept(raw []byte) (kept []byte, skipped bool) {
	var ev map[string]json.RawMessage
	if err := json.Unmarshal(raw, &ev); err != nil {
		return raw, false
	}
	delete(ev, "authenticationMetadata")
	delete(ev, "impersonatedUser")
	if len(ev["requestObject"]) > laSkipAbove || len(ev["responseObject"]) > laSkipAbove {
		delete(ev, "requestObject")
		delete(ev, "responseObject")
		ev["level"] = json.RawMessage(`"Metadata"`)
		skipped = true
	}
	kept, err := json.Marshal(ev)
	if err != nil {
		return raw, false
	}
	return kept, skipped
}

// logAnalytics: the rows of `union AKSAudit, AKSAuditAdmin | order by StageReceivedTime asc`
// as az prints them (an indented array): every event in AKSAudit, every one but gets and lists
// in AKSAuditAdmin too, right after it.
func logAnalytics(evs []event) ([]byte, error) {
	var rows []map[string]any
	for _, e := range evs {
		var v struct {
			Verb string `json:"verb"`
		}
		_ = json.Unmarshal(e.raw, &v)
		tables := []bool{false}
		if v.Verb != "get" && v.Verb != "list" && v.Verb != "watch" {
			tables = append(tables, true)
		}
		for _, admin := range tables {
			row, err := LogAnalyticsRow(e.raw, admin)
			if err != nil {
				return nil, err
			}
			rows = append(rows, row)
		}
	}
	sort.SliceStable(rows, func(i, j int) bool {
		return rows[i]["StageReceivedTime"].(string) < rows[j]["StageReceivedTime"].(string)
	})
	return json.MarshalIndent(rows, "", "  ")
}

// gkeArray: Cloud Logging entries, as gcloud prints them (newest, an indented array, newest
// first) or as a sink writes them (JSON lines). GKE's audit policy logs no RequestReceived
// stage.
func gkeArray(evs []event, gcloud bool, o GKEOptions) ([]byte, error) {
	started := map[string]bool{}
	for _, e := range evs {
		if e.Stage == "ResponseStarted" {
			started[e.id] = true
		}
	}
	var entries []json.RawMessage
	var stamps []string
	for _, e := range evs {
		if e.Stage == "RequestReceived" {
			continue
		}
		entry, err := gkeEntry(e.raw, started[e.id], o)
		if err != nil {
			return nil, err
		}
		pieces := []json.RawMessage{entry}
		if o.SplitOver > 0 && len(entry) > o.SplitOver {
			if pieces, err = splitEntry(entry); err != nil {
				return nil, err
			}
		}
		for _, entry := range pieces {
			entries = append(entries, entry)
			var at struct {
				Timestamp string `json:"timestamp"`
			}
			if err := json.Unmarshal(entry, &at); err != nil {
				return nil, err
			}
			stamps = append(stamps, at.Timestamp)
		}
	}
	if o.Stamp != StampCompleted {
		// In the order of their timestamps, as gcloud sorts them and as a sink roughly
		// delivers them.
		order := make([]int, len(entries))
		for i := range order {
			order[i] = i
		}
		sort.SliceStable(order, func(a, b int) bool { return stampTime(stamps[order[a]]).Before(stampTime(stamps[order[b]])) })
		sorted := make([]json.RawMessage, len(entries))
		for i, o := range order {
			sorted[i] = entries[o]
		}
		entries = sorted
	}
	if !gcloud {
		var b bytes.Buffer
		for _, e := range entries {
			b.Write(e)
			b.WriteByte('\n')
		}
		return b.Bytes(), nil
	}
	for i, j := 0, len(entries)-1; i < j; i, j = i+1, j-1 {
		entries[i], entries[j] = entries[j], entries[i]
	}
	return json.MarshalIndent(entries, "", "  ")
}

// stampTime is an entry's timestamp as a time (the zero time when it is not one).
func stampTime(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// GKEEntry is the Cloud Logging entry GKE writes for an event, field by field as package
// export's GKE reader reads it back (see the field list there): what GKE does not carry (the
// user's groups, uid and extra, the received time, the level, the query) is not in it.
// started says the request had a ResponseStarted stage (a long-running request), whose entry
// was its first.
func GKEEntry(raw []byte, started bool) (json.RawMessage, error) {
	return gkeEntry(raw, started, GKEOptions{})
}

// GKEStamp is which time of an event a GKE entry's timestamp is. GKE's documentation does not
// say whether it is when the request completed (its stage's time, StampCompleted, what
// Wrap writes) or when it was received (StampReceived): the replay's model of GKE's times
// must hold for both, and random parity wraps with either.
type GKEStamp int

const (
	StampCompleted GKEStamp = iota
	StampReceived
)

// GKEOptions are how WrapGKEWith writes a GKE format's entries.
type GKEOptions struct {
	// Stamp is which time of an event its entry's timestamp is.
	Stamp GKEStamp
	// DryRunsUnlabelled writes a dry run's entry without GKE's command.gke.io/dryRun label,
	// as a GKE that did not label them yet: no entry of the export says whether it was one.
	DryRunsUnlabelled bool
	// SplitOver, when set, splits an entry longer than it as Cloud Logging splits one over
	// its size limit (https://cloud.google.com/logging/docs/audit/split-logs): two entries,
	// each with a split (the same uid), its index appended to insertId, every member but
	// the payload's objects, the request in the first, the response in the second.
	SplitOver int
}

// WrapGKE is Wrap of a GKE format (export.GKE, GKESink) with the entries' timestamps the
// time stamp says.
func WrapGKE(f export.Format, log []byte, stamp GKEStamp) ([]byte, error) {
	return WrapGKEWith(f, log, GKEOptions{Stamp: stamp})
}

// WrapGKEWith is Wrap of a GKE format (export.GKE, GKESink) written as o says.
func WrapGKEWith(f export.Format, log []byte, o GKEOptions) ([]byte, error) {
	if f != export.GKE && f != GKESink {
		return nil, fmt.Errorf("exporttest: %q is no GKE format", f)
	}
	return gkeArray(events(log), f == export.GKE, o)
}

// splitEntry splits an entry in two as Cloud Logging splits one over its size limit (see
// GKEOptions.SplitOver).
func splitEntry(entry json.RawMessage) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for i, drop := range []string{"response", "request"} {
		d := json.NewDecoder(bytes.NewReader(entry))
		d.UseNumber()
		var e map[string]any
		if err := d.Decode(&e); err != nil {
			return nil, err
		}
		payload, _ := e["protoPayload"].(map[string]any)
		delete(payload, drop)
		e["split"] = map[string]any{"uid": fmt.Sprint(e["insertId"], "-split"), "index": i, "totalSplits": 2}
		e["insertId"] = fmt.Sprint(e["insertId"], i)
		b, err := json.Marshal(e)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	return out, nil
}

func gkeEntry(raw []byte, started bool, o GKEOptions) (json.RawMessage, error) {
	var ev struct {
		Level      string `json:"level"`
		AuditID    string `json:"auditID"`
		Stage      string `json:"stage"`
		RequestURI string `json:"requestURI"`
		Verb       string `json:"verb"`
		User       struct {
			Username string `json:"username"`
		} `json:"user"`
		ImpersonatedUser *struct {
			Username string `json:"username"`
		} `json:"impersonatedUser"`
		SourceIPs []string `json:"sourceIPs"`
		UserAgent string   `json:"userAgent"`
		ObjectRef *struct {
			Resource    string `json:"resource"`
			Namespace   string `json:"namespace"`
			Name        string `json:"name"`
			APIGroup    string `json:"apiGroup"`
			APIVersion  string `json:"apiVersion"`
			Subresource string `json:"subresource"`
		} `json:"objectRef"`
		ResponseStatus *struct {
			Code    int    `json:"code"`
			Reason  string `json:"reason"`
			Message string `json:"message"`
		} `json:"responseStatus"`
		RequestObject  json.RawMessage   `json:"requestObject"`
		ResponseObject json.RawMessage   `json:"responseObject"`
		StageTimestamp string            `json:"stageTimestamp"`
		Received       string            `json:"requestReceivedTimestamp"`
		Annotations    map[string]string `json:"annotations"`
	}
	if err := json.Unmarshal(raw, &ev); err != nil {
		return nil, err
	}
	// The authenticated user, and the user it impersonated as the authority it selected
	// (kyma-project/kyma#2811 shows such an entry).
	authentication := map[string]any{"principalEmail": ev.User.Username}
	if ev.ImpersonatedUser != nil {
		authentication["authoritySelector"] = ev.ImpersonatedUser.Username
	}
	// A request for no resource: io.k8s.VERB, and its path without the leading slash (and
	// without the query), as elastic/integrations' GKE test log has them (readyz, api/v1).
	path, query, _ := strings.Cut(ev.RequestURI, "?")
	method, resourceName := "io.k8s."+strings.TrimPrefix(ev.Verb, "/"), strings.TrimPrefix(path, "/")
	if r := ev.ObjectRef; r != nil && r.Resource != "" {
		group := "core"
		if r.APIGroup != "" {
			group = r.APIGroup
		}
		// The group's labels last to first (io.k8s and the labels without k8s.io for a
		// built-in group, a dotless one and one of k8s.io; the domain alone for another, as
		// liggitt/audit2rbac#18 shows: com.coreos.database.etcd), the version, the resource,
		// the subresource, the verb.
		domain := group
		if !strings.Contains(group, ".") {
			domain = group + ".k8s.io"
		}
		labels := strings.Split(domain, ".")
		for i, j := 0, len(labels)-1; i < j; i, j = i+1, j-1 {
			labels[i], labels[j] = labels[j], labels[i]
		}
		parts := labels
		parts = append(parts, r.APIVersion, r.Resource)
		if r.Subresource != "" {
			parts = append(parts, r.Subresource)
		}
		method = strings.Join(append(parts, ev.Verb), ".")
		path := []string{group, r.APIVersion}
		if r.Namespace != "" && r.Resource != "namespaces" {
			path = append(path, "namespaces", r.Namespace)
		}
		path = append(path, r.Resource)
		if r.Name != "" {
			path = append(path, r.Name)
			if r.Subresource != "" {
				path = append(path, r.Subresource)
			}
		}
		resourceName = strings.Join(path, "/")
	}
	// The payload's request and response are google.protobuf.Structs: an object, with a
	// "@type" member added. A body that is not an object (a JSON patch) is not in it.
	typed := func(raw json.RawMessage) map[string]any {
		var o map[string]any
		if json.Unmarshal(raw, &o) != nil || o == nil {
			return nil
		}
		kind, _ := o["kind"].(string)
		apiVersion, _ := o["apiVersion"].(string)
		group, version, ok := strings.Cut(apiVersion, "/")
		if !ok {
			group, version = "core", apiVersion
		}
		o["@type"] = group + "/" + version + "." + kind
		return o
	}
	payload := map[string]any{
		"@type":              "type.googleapis.com/google.cloud.audit.AuditLog",
		"authenticationInfo": authentication,
		"methodName":         method,
		"resourceName":       resourceName,
		"serviceName":        "k8s.io",
		"status":             map[string]any{},
	}
	if ev.ObjectRef != nil {
		payload["authorizationInfo"] = []any{map[string]any{"granted": true, "permission": method, "resource": resourceName}}
	}
	meta := map[string]any{"callerSuppliedUserAgent": ev.UserAgent}
	if len(ev.SourceIPs) > 0 {
		meta["callerIp"] = ev.SourceIPs[0]
	}
	payload["requestMetadata"] = meta
	if o := typed(ev.RequestObject); o != nil {
		payload["request"] = o
	}
	if o := typed(ev.ResponseObject); o != nil {
		payload["response"] = o
	}
	if s := ev.ResponseStatus; s != nil && (s.Code < 200 || s.Code >= 300) {
		// google.rpc.Status: the gRPC code of the HTTP code, and the reason.
		msg := s.Reason
		if msg == "" {
			msg = http.StatusText(s.Code)
		}
		payload["status"] = map[string]any{"code": grpcCode(s.Code), "message": msg}
	}
	stamped := ev.StageTimestamp
	if o.Stamp == StampReceived && ev.Received != "" {
		stamped = ev.Received
	}
	entry := map[string]any{
		"protoPayload": payload,
		"insertId":     ev.AuditID,
		"resource": map[string]any{"type": "k8s_cluster", "labels": map[string]any{
			"project_id": "vapc", "location": "europe-west1", "cluster_name": "vapc"}},
		"timestamp":        stamped,
		"severity":         "NOTICE",
		"logName":          "projects/vapc/logs/cloudaudit.googleapis.com%2Factivity",
		"operation":        map[string]any{"id": ev.AuditID, "producer": "k8s.io", "first": ev.Stage != "ResponseComplete" || !started, "last": ev.Stage != "ResponseStarted"},
		"receiveTimestamp": ev.StageTimestamp,
	}
	labels := maps.Clone(ev.Annotations)
	if q, err := url.ParseQuery(query); err == nil && len(q["dryRun"]) > 0 && !o.DryRunsUnlabelled {
		// GKE labels a dry run's entry (https://cloud.google.com/kubernetes-engine/docs/how-to/audit-logging).
		if labels == nil {
			labels = map[string]string{}
		}
		labels["command.gke.io/dryRun"] = strings.Join(q["dryRun"], ",")
	}
	if len(labels) > 0 {
		entry["labels"] = labels
	}
	return json.Marshal(entry)
}

// grpcCode is the gRPC code google/rpc/code.proto maps an HTTP code to. It is written here
// again, not taken from package export: the wrapper is what the reader is tested against.
func grpcCode(code int) int {
	switch code {
	case 400, 422:
		return 3
	case 401:
		return 16
	case 403:
		return 7
	case 404:
		return 5
	case 409:
		return 10
	case 429:
		return 8
	case 503:
		return 14
	case 504:
		return 4
	}
	return 13
}

// ReadLog reads a log backend's file, gzip-compressed or not, for a test: the log to wrap.
func ReadLog(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
		return b
	}
	zr, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	if b, err = io.ReadAll(zr); err != nil {
		t.Fatal(err)
	}
	return b
}
