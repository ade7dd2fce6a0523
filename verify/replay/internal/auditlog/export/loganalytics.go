package export

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// An AKS cluster's diagnostic setting most often sends kube-audit and kube-audit-admin to a
// Log Analytics workspace, where they are rows of a table, read back with a KQL query:
// `az monitor log-analytics query --workspace ID --analytics-query QUERY` prints the result
// as one JSON array of rows, each an object of the row's columns by name (and the table's
// name, TableName)
// (https://learn.microsoft.com/cli/azure/monitor/log-analytics#az-monitor-log-analytics-query).
// A dynamic column's value is its JSON as a string in the REST API's rows
// (https://learn.microsoft.com/azure/azure-monitor/logs/api/response-format), which the CLI
// prints as it gets it; one given as JSON is read as well. Which table the rows are of
// depends on the setting's destination table:
//
//   - resource-specific (the default for AKS): AKSAudit (kube-audit) or AKSAuditAdmin
//     (kube-audit-admin), one column for each of the event's fields
//     (https://learn.microsoft.com/azure/azure-monitor/reference/tables/aksaudit): AuditId,
//     Level, Stage, RequestUri, Verb, User, ImpersonatedUser, SourceIps, UserAgent,
//     ObjectRef, ResponseStatus, RequestObject, ResponseObject, RequestReceivedTime,
//     StageReceivedTime and Annotations. An object the table does not hold is the string
//     "skipped-too-big-size-object": what the event loses is then what kube-apiserver's own
//     truncation drops (both objects, the event read at level Metadata), and the replay says
//     the export does not carry the event's level;
//   - Azure diagnostics (the legacy AzureDiagnostics table): the resource log's properties
//     as columns with a type suffix, the event as a string in log_s (pod_s the pod that
//     wrote it), as an archive's records hold it in properties.log: AKS's pieces of a long
//     line are joined again the same way (see joiner).
//
// Rows are in the order the query gives them: a query ends with `| order by
// StageReceivedTime asc` (TimeGenerated for AzureDiagnostics), or newest first (`desc`, the
// portal's order), which is reversed as gcloud's array is (see reverser); another order is
// put back only within the reorder window. Both tables together (a union of AKSAudit and
// AKSAuditAdmin) hold every write twice, identical: the second is counted and skipped (see
// copies).

// ExportLogAnalytics names the Log Analytics export in what a replay says of it.
const ExportLogAnalytics = "AKS Log Analytics"

// skippedObject is what AKS writes in a Log Analytics row in place of an object too big.
const skippedObject = "skipped-too-big-size-object"

// laColumn is a column of AKSAudit an event's field is read from.
type laColumn struct {
	column, field string
	dynamic       bool
}

// laColumns are the columns of AKSAudit and AKSAuditAdmin an event's field is read from, in
// the event's order, with the field and whether the column is dynamic (JSON).
var laColumns = []laColumn{
	{"Level", "level", false},
	{"AuditId", "auditID", false},
	{"Stage", "stage", false},
	{"RequestUri", "requestURI", false},
	{"Verb", "verb", false},
	{"User", "user", true},
	{"ImpersonatedUser", "impersonatedUser", true},
	{"SourceIps", "sourceIPs", true},
	{"UserAgent", "userAgent", false},
	{"ObjectRef", "objectRef", true},
	{"ResponseStatus", "responseStatus", true},
	{"RequestObject", "requestObject", true},
	{"ResponseObject", "responseObject", true},
	{"RequestReceivedTime", "requestReceivedTimestamp", false},
	{"StageReceivedTime", "stageTimestamp", false},
	{"Annotations", "annotations", true},
}

// laRequired are the columns of AKSAudit a row must have: what no replay can do without.
var laRequired = []string{"Level", "Stage", "RequestUri", "Verb", "User", "ObjectRef", "ResponseStatus", "StageReceivedTime"}

// kind is the first byte of the JSON a dynamic column holds: its field's type; 0 for the
// objects of the request and the response, which may be any JSON (a JSON patch is an array).
func (c laColumn) kind() byte {
	switch c.field {
	case "sourceIPs":
		return '['
	case "requestObject", "responseObject":
		return 0
	}
	return '{'
}

// firstNonSpace is the first byte of b that is not JSON's white space; 0 when none.
func firstNonSpace(b []byte) byte {
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return c
		}
	}
	return 0
}

// laTimeOf is a row's time, to tell the rows' order: StageReceivedTime (AKSAudit), else
// TimeGenerated (AzureDiagnostics); the zero time when it has neither.
func laTimeOf(raw []byte) time.Time {
	for _, c := range []string{"StageReceivedTime", "TimeGenerated"} {
		if v, ok := memberString(raw, c); ok {
			if t := auditlog.ParseTime(string(v)); !t.IsZero() {
				return t
			}
		}
	}
	return time.Time{}
}

func readAzureLogAnalytics(in input, yield func(record) bool) {
	s := newScanner(in.r)
	s.compact = true // the rows without the CLI's indentation
	readArray(in, s, yield, laEntryOf, laUnwrap)
}

// laEntryOf is the record of a row's JSON, to unwrap (laRecord); with its time when timed, for
// the reverser.
func laEntryOf(raw []byte, line int, where string, timed bool) record {
	rec := record{data: raw, line: line, unwrap: laUnwrap(where), where: where}
	if timed {
		rec.at = laTimeOf(raw)
	}
	return rec
}

// laUnwrap maps a record's row to its event.
func laUnwrap(where string) func(*record) {
	return func(r *record) { *r = laRecord(r.data, r.line, where) }
}

// laRecord maps one row's JSON to the record of its event.
func laRecord(raw []byte, line int, where string) record {
	var row map[string]json.RawMessage
	if err := json.Unmarshal(raw, &row); err != nil {
		return record{line: line, err: recordError(where, "", fmt.Errorf("not a Log Analytics row: %v", err))}
	}
	if _, ok := row["log_s"]; ok {
		rec := laDiagnostics(row, line, where)
		putBuf(raw)
		return rec
	}
	data, lost, field, err := laEvent(row)
	if err != nil {
		return record{line: line, err: recordError(where, field, err)}
	}
	putBuf(raw)
	var loss auditlog.Loss
	if lost != 0 {
		loss = auditlog.Loss{Export: ExportLogAnalytics, Lost: lost}
	}
	return eventRecord(data, line, loss)
}

// laDiagnostics is the record of an AzureDiagnostics row: its log_s, a piece of an event's
// line the joiner may join, as an archive's record's properties.log.
func laDiagnostics(row map[string]json.RawMessage, line int, where string) record {
	var category, log, pod string
	for _, f := range []struct {
		column string
		to     *string
	}{{"Category", &category}, {"log_s", &log}, {"pod_s", &pod}} {
		if v, ok := row[f.column]; ok && string(v) != "null" {
			if err := json.Unmarshal(v, f.to); err != nil {
				return record{line: line, err: recordError(where, f.column, errors.New("not a string"))}
			}
		}
	}
	if category != "kube-audit" && category != "kube-audit-admin" {
		return otherCategory(line, category)
	}
	b := []byte(log)
	p := &pieceOf{key: pod + "\x00" + category, where: where, starts: startsEvent(b), event: startsAuditEvent(b), whole: whole(b)}
	r := record{data: b, line: line, piece: p}
	if p.whole || !p.starts {
		r.at = stageOf(b)
	}
	return r
}

// laEvent writes the event of an AKSAudit or AKSAuditAdmin row, and what it lost; field names
// the column an error is about.
func laEvent(row map[string]json.RawMessage) (data []byte, lost auditlog.Lost, field string, err error) {
	if _, ok := row["AuditId"]; !ok {
		return nil, 0, "AuditId", errors.New("missing: not a row of AKSAudit or AKSAuditAdmin (nor of AzureDiagnostics: no log_s)")
	}
	for _, c := range laRequired {
		if _, ok := row[c]; !ok {
			return nil, 0, c, errors.New("missing: the query left out a column the replay needs (keep the table's columns: no project)")
		}
	}
	// A column a query left out (project) is lost: the event's objects as if the table had
	// skipped them, its annotations, its received time.
	_, hasRequest := row["RequestObject"]
	_, hasResponse := row["ResponseObject"]
	skipped := !hasRequest || !hasResponse
	if _, ok := row["Annotations"]; !ok {
		lost |= auditlog.LostAnnotations
	}
	if _, ok := row["RequestReceivedTime"]; !ok {
		lost |= auditlog.LostReceived
	}
	values := map[string]json.RawMessage{}
	for _, c := range laColumns {
		v, ok := row[c.column]
		if !ok || string(v) == "null" || string(v) == `""` {
			continue
		}
		var s string
		isString := json.Unmarshal(v, &s) == nil
		switch {
		case (c.field == "requestObject" || c.field == "responseObject") && isString && s == skippedObject:
			skipped = true
			continue
		case c.dynamic && isString:
			// The CLI prints a dynamic value as the API gives it: its JSON, as a string.
			if !json.Valid([]byte(s)) {
				return nil, 0, c.column, fmt.Errorf("%q is not JSON", shorten(s, 80))
			}
			v = json.RawMessage(s)
		}
		if c.dynamic {
			if want := c.kind(); want != 0 && firstNonSpace(v) != want {
				return nil, 0, c.column, fmt.Errorf("%s is not a JSON %s", shorten(string(v), 80), map[byte]string{'{': "object", '[': "array"}[want])
			}
			values[c.field] = v
			continue
		}
		switch {
		case !isString:
			return nil, 0, c.column, fmt.Errorf("%s is not a string", shorten(string(v), 80))
		case c.field == "requestReceivedTimestamp" || c.field == "stageTimestamp":
			// Log Analytics keeps a time to 100 ns (2026-11-21T19:46:24.7812560Z): the
			// event's, kube-apiserver's MicroTime, to the microsecond.
			t, err := time.Parse(time.RFC3339Nano, s)
			if err != nil {
				return nil, 0, c.column, fmt.Errorf("%q is not an RFC 3339 time", s)
			}
			v, _ = json.Marshal(t.UTC().Format("2006-01-02T15:04:05.000000Z07:00"))
		}
		values[c.field] = v
	}
	if skipped {
		// As kube-apiserver's truncating backend leaves an event: its objects dropped, the
		// level Metadata.
		delete(values, "requestObject")
		delete(values, "responseObject")
		values["level"] = json.RawMessage(`"Metadata"`)
		lost |= auditlog.LostLevel
	}
	var b bytes.Buffer
	b.WriteString(`{"kind":"Event","apiVersion":"audit.k8s.io/v1"`)
	for _, c := range laColumns {
		if v, ok := values[c.field]; ok {
			b.WriteString(`,"` + c.field + `":`)
			if err := json.Compact(&b, v); err != nil {
				return nil, 0, c.column, err
			}
		}
	}
	b.WriteByte('}')
	return b.Bytes(), lost, "", nil
}

// shorten shortens s for an error message.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}
