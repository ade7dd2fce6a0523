package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// An AKS cluster's diagnostic setting sends the categories kube-audit (every request) and
// kube-audit-admin (every request but get and list) of its resource logs to a storage account
// or an event hub
// (https://learn.microsoft.com/azure/aks/monitor-aks-reference#resource-logs). Each record has
// Azure Monitor's common schema, {"time","resourceId","category","operationName",
// "properties":{...}}
// (https://learn.microsoft.com/azure/azure-monitor/essentials/resource-logs-schema); an AKS
// control plane record's properties hold the line its container wrote in "log" (with "pod"
// and "stream"): for kube-audit, the audit.k8s.io/v1 Event's JSON, whole, as a string.
//
//   - A storage account receives blobs .../y=YYYY/m=MM/d=DD/h=HH/m=00/PT1H.json, one record a
//     line (https://learn.microsoft.com/azure/azure-monitor/essentials/resource-logs#send-to-azure-storage).
//   - Event Hubs receives messages {"records":[RECORD, ...]}
//     (https://learn.microsoft.com/azure/azure-monitor/essentials/resource-logs#send-to-azure-event-hubs).
//
// The container runtime splits a line longer than 16 KiB, and AKS sends each piece as a record
// of its own (https://github.com/Azure/AKS/issues/4635): a piece is joined with those that
// follow it from the same pod until the event is whole; one whose rest never comes is reported
// where it begins. Records of other categories (kube-apiserver, guard, cluster-autoscaler,
// ...: klog lines), which a diagnostic setting sends to the same event hub or storage account,
// are not audit events: they are counted and skipped (see otherCategory). A setting with both
// kube-audit and kube-audit-admin sends every event but gets and lists twice, once in each,
// identical: the second is counted and skipped (see copies).
//
// The events lose nothing but what AKS cut, and an object AKS skipped (see aksEvent): Falco's k8saudit-aks plugin reads
// records[].properties.log the same way
// (https://github.com/falcosecurity/plugins/tree/main/plugins/k8saudit-aks).

// azureRecord is the part of a resource log record a replay reads.
type azureRecord struct {
	Category   string `json:"category"`
	Properties *struct {
		// Log is the container's line, a string as Azure Monitor writes it; an object (the
		// event itself) as a pipeline that decoded it and wrote the record again has it.
		Log json.RawMessage `json:"log"`
		Pod string          `json:"pod"`
	} `json:"properties"`
}

// maxPieces bounds the pieces held, waiting for the rest of their line: one a pod.
const maxPieces = 64

// pieceOf says which lines a record's log may continue or be continued by (those of the same
// pod and category), and what the worker that unwrapped it found: whether it begins an event,
// and whether it is one whole (the record's at is then its stageTimestamp).
type pieceOf struct {
	key           string
	where, field  string // the record, and its member that holds the log
	starts, whole bool
	// event says it begins an audit event (startsAuditEvent), not only a JSON object.
	event bool
}

// joiner joins the pieces of the lines the container runtime split, in the file's order.
type joiner struct {
	maxLine int
	pending map[string]*piece // by pod and category
	order   []string
}

type piece struct {
	data         []byte
	line         int
	where, field string
}

func newJoiner(maxLine int) *joiner { return &joiner{maxLine: maxLine, pending: map[string]*piece{}} }

// add takes a record whose data is a log and emits the records it completes: an event, a
// piece that is not one (cut), or nothing yet.
func (j *joiner) add(rec record, emit func(record)) {
	log, key, line, where := rec.data, rec.piece.key, rec.line, rec.piece.where
	if len(j.pending) > 0 {
		if p := j.pending[key]; p != nil {
			if rec.piece.event {
				// A new event: the held piece's rest never came.
				emit(j.cut(key))
			} else {
				p.data = append(p.data, log...)
				if len(p.data) > j.maxLine {
					delete(j.pending, key)
					j.forget(key)
					emit(record{line: p.line, err: recordError(p.where, p.field, fmt.Errorf("joined from pieces, longer than %d bytes: skipped", j.maxLine))})
					return
				}
				if whole(p.data) {
					delete(j.pending, key)
					j.forget(key)
					emit(inField(aksEvent(record{data: p.data, line: p.line, at: stageOf(p.data)}), p.field))
				}
				return
			}
		}
	}
	switch {
	case !rec.piece.starts && len(bytes.TrimSpace(log)) > 0 && len(log) <= pieceBytes:
		// Not an event's beginning, in a category of audit events: the rest of one whose
		// beginning is not before it.
		emit(record{line: line, err: recordError(where, rec.piece.field, errors.New("not the beginning of an audit event: the rest of one AKS split (lines longer than 16 KiB are split into records) whose beginning is not before it in the export; read the records in the order AKS wrote them (a Log Analytics query: | sort by TimeGenerated asc; the pieces of one event share it, and Kusto keeps no order among them)"))})
		return
	case rec.piece.whole || !rec.piece.starts:
		// Whole, or not an event at all (which the decoder says).
		// With the hash the worker took of its bytes (an event whole: see Reader.start).
		emit(inField(aksEvent(record{data: log, line: line, at: rec.at, sum: rec.sum, summed: rec.summed}), rec.piece.field))
		return
	}
	if len(j.pending) >= maxPieces {
		emit(j.cut(j.order[0]))
	}
	j.pending[key] = &piece{data: log, line: line, where: where, field: rec.piece.field}
	j.order = append(j.order, key)
}

// cut reports the piece held for key, whose rest is not in the export.
func (j *joiner) cut(key string) record {
	p := j.pending[key]
	delete(j.pending, key)
	j.forget(key)
	why := "AKS splits lines longer than 16 KiB into records"
	if len(p.data) == azureDiagnosticsColumn {
		// Azure/AKS#3316: the AzureDiagnostics table keeps 32,766 bytes of a column.
		why = "Log Analytics' AzureDiagnostics table keeps 32,766 bytes of a column; its resource-specific tables (AKSAudit, AKSAuditAdmin) keep the event whole"
	}
	return record{line: p.line, err: recordError(p.where, p.field, fmt.Errorf("an event cut after %d bytes (%s), whose rest is not in the export", len(p.data), why))}
}

// azureDiagnosticsColumn is how many bytes of a column Log Analytics' AzureDiagnostics table
// keeps.
const azureDiagnosticsColumn = 32766

func (j *joiner) forget(key string) {
	for i, k := range j.order {
		if k == key {
			j.order = append(j.order[:i], j.order[i+1:]...)
			return
		}
	}
}

// flush reports the pieces still held at the end of the file.
func (j *joiner) flush(emit func(record)) {
	for len(j.order) > 0 {
		emit(j.cut(j.order[0]))
	}
}

// startsEvent says whether a log begins an audit event's JSON.
func startsEvent(log []byte) bool {
	return bytes.HasPrefix(bytes.TrimLeft(log, " \t\r\n"), []byte("{"))
}

// startsAuditEvent says whether a log begins an audit event as kube-apiserver writes one (its
// kind first). The rest of a cut line may begin with "{" too, where the runtime cut it before
// an object: only an event's own beginning ends the piece held before it.
func startsAuditEvent(log []byte) bool {
	return bytes.HasPrefix(bytes.TrimLeft(log, " \t\r\n"), []byte(`{"kind":"Event","apiVersion":"audit.k8s.io/`))
}

// whole says whether a log is a complete JSON value: one shorter than the pieces the runtime
// cuts is (a line's last piece has followed its first), a longer one when it is JSON.
func whole(log []byte) bool {
	t := bytes.TrimRight(log, " \t\r\n")
	return len(t) > 0 && t[len(t)-1] == '}' && (len(log) < pieceBytes || json.Valid(t))
}

// azureWhole says, from a resource log record's bytes before they are decoded, that its
// properties.log holds an audit event whole: it begins one (its quotes escaped as
// encoding/json and Azure's serializers escape them: the key's own quotes are not, so the
// bytes cannot be inside the log's string), and the record is shorter than the pieces the
// runtime cuts a line into, so its log cannot be the first of them (whole's rule). False when
// it cannot tell, as for a record written another way: it is then decoded.
func azureWhole(raw []byte) bool {
	return len(raw) < pieceBytes && bytes.Contains(raw, azureEventStart)
}

var azureEventStart = []byte(`"log":"{\"kind\":\"Event\",\"apiVersion\":\"audit.k8s.io/`)

// azureLineWhole says, from the bytes of a line of resource log records (an Event Hubs
// message), that every record's log holds an audit event whole, as azureWhole says of one:
// each "log" in its bytes begins a member that begins an audit event (a piece after an event's
// first does not), and none is as long as the pieces the runtime cuts a line into (the first
// piece is that long): from each log's beginning to the next's, or to the line's end, is
// shorter. False when it cannot tell (a "log" that is another string, a member written another
// way): the line is then read.
func azureLineWhole(line []byte) bool {
	key := []byte(`"log"`)
	prev := -1
	for i := 0; ; {
		j := bytes.Index(line[i:], key)
		if j < 0 {
			break
		}
		at := i + j
		if !bytes.HasPrefix(line[at:], azureEventStart) || prev >= 0 && at-prev >= pieceBytes {
			return false
		}
		prev, i = at, at+len(key)
	}
	return prev >= 0 && len(line)-prev < pieceBytes
}

// pieceBytes is the length of the pieces the container runtime cuts a long line into.
const pieceBytes = 16 << 10

// azureRecordOf is the record of one resource log record's JSON, to unwrap: its log, which
// the Reader joins with the pieces around it. The record's bytes are the record's own: the
// log is decoded into them, in place.
func azureRecordOf(raw []byte, line int, where string) record {
	return record{data: raw, line: line, unwrap: func(r *record) {
		category, log, pod, hasLog, ok := azureFast(r.data)
		if !ok {
			var rec azureRecord
			if err := json.Unmarshal(r.data, &rec); err != nil {
				*r = record{line: line, err: recordError(where, "", fmt.Errorf("not an Azure Monitor resource log record: %v", err))}
				return
			}
			category = rec.Category
			if hasLog = rec.Properties != nil && len(rec.Properties.Log) > 0 && string(rec.Properties.Log) != "null"; hasLog {
				pod = rec.Properties.Pod
				switch rec.Properties.Log[0] {
				case '"':
					var l string
					if err := json.Unmarshal(rec.Properties.Log, &l); err != nil {
						*r = record{line: line, err: recordError(where, "properties.log", err)}
						return
					}
					log = []byte(l)
				case '{':
					log = append([]byte(nil), rec.Properties.Log...)
				default:
					*r = record{line: line, err: recordError(where, "properties.log", errors.New("neither the container's line (a string) nor an audit event (an object)"))}
					return
				}
			}
		}
		switch {
		case category != "kube-audit" && category != "kube-audit-admin":
			*r = otherCategory(line, category)
		case !hasLog:
			*r = record{line: line, err: recordError(where, "properties.log", errors.New("missing"))}
		default:
			p := &pieceOf{key: pod + "\x00" + category, where: where, field: "properties.log", starts: startsEvent(log), event: startsAuditEvent(log), whole: whole(log)}
			*r = record{data: log, line: line, piece: p}
			if p.whole || !p.starts {
				r.at = stageOf(log)
			}
		}
	}}
}

// unquoteBuf holds the buffers azureFast decodes a log into before it copies it in place.
var unquoteBuf = sync.Pool{New: func() any { return new([]byte) }}

// azureFast reads a record's category, properties.log and pod without encoding/json, in one
// walk of the record: the log, which is most of it, is read once, decoded into a buffer, and
// copied over the record's bytes once the walk has read the record to its end (a JSON
// string's decoding is never longer than the string), so that it allocates nothing for the
// event. False when it cannot tell (encoding/json then decodes the record, and says what is
// wrong): raw is then as it was.
func azureFast(raw []byte) (category string, log []byte, pod string, hasLog, ok bool) {
	bp := unquoteBuf.Get().(*[]byte)
	defer unquoteBuf.Put(bp)
	buf := (*bp)[:0]
	logAt := -1
	_, ok = walkObject(raw, 0, func(name []byte, _, start int) (int, bool) {
		switch string(name) {
		case "category":
			for _, c := range []string{`"kube-audit"`, `"kube-audit-admin"`} {
				if bytes.HasPrefix(raw[start:], []byte(c)) {
					category = c[1 : len(c)-1]
					return start + len(c), true
				}
			}
			c, n, ok := unquotePrefix(raw[start:])
			category = string(c)
			return start + n, ok
		case "properties":
			return walkObject(raw, start, func(name []byte, _, start int) (int, bool) {
				switch string(name) {
				case "log":
					var n int
					buf, n, ok = auditlog.AppendUnquoted(buf[:0], raw[start:])
					hasLog, logAt = ok, start
					return start + n, ok
				case "pod":
					p, n, ok := unquotePrefix(raw[start:])
					pod = string(p)
					return start + n, ok
				}
				return -1, true
			})
		}
		return -1, true
	})
	*bp = buf
	if !ok || !hasLog || category == "" {
		return "", nil, "", false, false
	}
	log = raw[logAt : logAt+copy(raw[logAt:], buf)]
	return category, log[:len(log):len(log)], pod, true, true
}

func readAzureBlob(in input, yield func(record) bool) {
	readLines(in, 2*in.maxLine, yield, func(text []byte, num int) record {
		return azureRecordOf(append(getBuf(len(text)), text...), num, fmt.Sprintf("record at line %d", num))
	})
}

// azureDocuments are AKS's records not one a line: pretty-printed (a record copied from the
// portal, jq's or az's output), one after the other or in an array. Detected, or read for
// aks-blob when the file is so, not named in Formats.
const azureDocuments Format = "aks-blob-documents"

func init() { readers[azureDocuments] = readAzureDocuments }

// readAzureDocuments reads records that are JSON documents of their own, or arrays of them.
func readAzureDocuments(in input, yield func(record) bool) {
	s := in.scanner()
	s.documents(yield, func(doc int) error {
		one := func(where string) error {
			rec, err := s.element(2*in.maxLine, where, "", func(raw []byte, line int) record { return azureRecordOf(raw, line, where) })
			if err != nil {
				return err
			}
			return send(yield, rec)
		}
		if c, err := s.peek(); err == nil && c == '[' {
			return s.array(func(i int) error { return one(fmt.Sprintf("document %d [%d]", doc, i)) })
		}
		return one(fmt.Sprintf("record %d", doc))
	})
}

func readAzureEventHub(in input, yield func(record) bool) {
	s := in.scanner()
	s.lineDocuments(yield, azureLineWhole, func(msg int) error {
		where := fmt.Sprintf("message %d", msg)
		return s.object(func(name string) error {
			if name != "records" {
				return s.skip()
			}
			return s.array(func(i int) error {
				field := fmt.Sprintf("%s records[%d]", where, i)
				rec, err := s.element(2*in.maxLine, field, "", func(raw []byte, line int) record { return azureRecordOf(raw, line, field) })
				if err != nil {
					return err
				}
				return send(yield, rec)
			})
		})
	})
}
