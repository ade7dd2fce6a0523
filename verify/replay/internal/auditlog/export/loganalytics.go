package export

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// An AKS cluster's diagnostic setting most often sends kube-audit and kube-audit-admin to a
// Log Analytics workspace, where they are rows of a table, read back with a KQL query:
// `az monitor log-analytics query --workspace ID --analytics-query QUERY` prints the result
// as one JSON array of rows, each an object of the row's columns by name (and the table's
// name, TableName)
// (https://learn.microsoft.com/cli/azure/monitor/log-analytics#az-monitor-log-analytics-query).
// A dynamic column's value is its JSON as a string in the REST API's rows (the example
// responses of https://github.com/Azure/azure-rest-api-specs, specification/operationalinsights),
// which the CLI prints as it gets it; one given as JSON is read as well. A time is as the API
// gives it (2026-11-21T19:46:24.781256Z, trailing zeros trimmed), or as Kusto's tostring()
// and the portal write it, to 100 ns. Which table the rows are of
// depends on the setting's destination table:
//
//   - resource-specific (the default for AKS): AKSAudit (kube-audit) or AKSAuditAdmin
//     (kube-audit-admin), one column for each of the event's fields
//     (https://learn.microsoft.com/azure/azure-monitor/reference/tables/aksaudit): AuditId,
//     Level, Stage, RequestUri, Verb, User, SourceIps, UserAgent, ObjectRef,
//     ResponseStatus, RequestObject, ResponseObject, RequestReceivedTime, StageReceivedTime
//     and Annotations. There is no column for impersonatedUser: User is the authenticated
//     user, and whether the request impersonated another, whom admission saw, is lost
//     (auditlog.LostImpersonation; a row that has the column loses nothing of the user). An
//     object too big is the string "skipped-too-big-size-object" (AKS writes it in the
//     event's line): what the event loses is then what kube-apiserver's own truncation drops
//     (both objects, the event read at level Metadata), and the replay says the export does
//     not carry the event's level. A null is printed by az as "None" (Python's str()), read
//     as an empty column;
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

// laColumn is a column of AKSAudit an event's field is read from: whether it is dynamic
// (JSON), whether a row must have it (no replay can do without it) and whether its value may
// not be empty (an event always has one).
type laColumn struct {
	column, field               string
	dynamic, required, nonEmpty bool
}

// The indexes of laColumns, in the event's order.
const (
	laLevel = iota
	laAuditID
	laStage
	laRequestURI
	laVerb
	laUser
	laImpersonatedUser
	laSourceIPs
	laUserAgent
	laObjectRef
	laResponseStatus
	laRequestObject
	laResponseObject
	laRequestReceived
	laStageReceived
	laAnnotations
)

// laColumns are the columns of AKSAudit and AKSAuditAdmin an event's field is read from, in
// the event's order.
var laColumns = [...]laColumn{
	laLevel:            {"Level", "level", false, true, true},
	laAuditID:          {"AuditId", "auditID", false, true, true},
	laStage:            {"Stage", "stage", false, true, true},
	laRequestURI:       {"RequestUri", "requestURI", false, true, true},
	laVerb:             {"Verb", "verb", false, true, true},
	laUser:             {"User", "user", true, true, true},
	laImpersonatedUser: {"ImpersonatedUser", "impersonatedUser", true, false, false},
	laSourceIPs:        {"SourceIps", "sourceIPs", true, false, false},
	laUserAgent:        {"UserAgent", "userAgent", false, false, false},
	laObjectRef:        {"ObjectRef", "objectRef", true, true, false}, // none for a non-resource request
	laResponseStatus:   {"ResponseStatus", "responseStatus", true, true, false},
	laRequestObject:    {"RequestObject", "requestObject", true, false, false},
	laResponseObject:   {"ResponseObject", "responseObject", true, false, false},
	laRequestReceived:  {"RequestReceivedTime", "requestReceivedTimestamp", false, false, false},
	laStageReceived:    {"StageReceivedTime", "stageTimestamp", false, true, true},
	laAnnotations:      {"Annotations", "annotations", true, false, false},
}

// laEmpty says whether a column's value is empty: null, "", or for a dynamic column or a
// time, "None" (az prints every value with Python's str(), a null as None).
func laEmpty(v []byte, c laColumn) bool {
	switch string(v) {
	case "", "null", `""`:
		return true
	case `"None"`:
		return c.dynamic || c.field == "requestReceivedTimestamp" || c.field == "stageTimestamp"
	}
	return false
}

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
	if firstByte(in.r) == '{' {
		readLogAnalyticsTables(in, s, yield)
		return
	}
	readArray(in, s, yield, laEntryOf, laUnwrap)
}

// readLogAnalyticsTables reads the query API's own response, which `az rest` or a script
// prints: {"tables":[{"name","columns":[{"name","type"}],"rows":[[VALUE, ...], ...]}]}
// (https://learn.microsoft.com/azure/azure-monitor/logs/api/response-format), each row an
// array of the columns' values, in the columns' order: a row is read as the object of its
// columns by name, as az prints it. Newest first, the rows are reversed (see reverser).
func readLogAnalyticsTables(in input, s *scanner, yield func(record) bool) {
	rv := newReverser(yield, laUnwrap)
	var failed []record // the response's error: its rows are not all there
	err := s.object(func(name string) error {
		if name == "error" {
			line := s.startLine()
			raw, err := s.value(1<<20, nil)
			if err != nil {
				return err
			}
			if err := queryFailed(raw); err != nil {
				failed = append(failed, record{line: line, err: recordError(fmt.Sprintf("the response (line %d)", line), "error", err)})
			}
			return nil
		}
		if name != "tables" {
			return s.skip()
		}
		return s.array(func(t int) error {
			var columns []string
			return s.object(func(name string) error {
				switch name {
				case "columns":
					line := s.startLine()
					raw, err := s.value(1<<20, nil)
					if err != nil {
						return err
					}
					var cs []struct {
						Name string `json:"name"`
					}
					if err := json.Unmarshal(raw, &cs); err != nil {
						if !rv.add(record{line: line, err: recordError(fmt.Sprintf("tables[%d] (line %d)", t, line), "columns", fmt.Errorf("not the query API's columns: %v", err))}) {
							return errStop
						}
						return nil
					}
					columns = columns[:0]
					for _, c := range cs {
						columns = append(columns, c.Name)
					}
					return nil
				case "rows":
					return s.array(func(i int) error {
						line := s.startLine()
						where := fmt.Sprintf("tables[%d].rows[%d] (line %d)", t, i, line)
						rec, err := s.element(2*in.maxLine, where, "", func(raw []byte, line int) record {
							obj, err := laRowObject(columns, raw)
							if err != nil {
								return record{line: line, err: recordError(where, "", err)}
							}
							return laEntryOf(obj, line, where, !rv.decided())
						})
						if err != nil {
							return err
						}
						if !rv.add(rec) {
							return errStop
						}
						return nil
					})
				}
				return s.skip()
			})
		})
	})
	if err == nil {
		err = s.ended(in.file, "the response")
	}
	if finishArray(rv, err, s.line, yield) {
		for _, r := range failed {
			if !yield(r) {
				return
			}
		}
	}
}

// queryFailed is the error the query API's response holds besides its tables, or in their
// place: a query that failed, or whose result is partial (PartialError: a result larger than
// the API returns, a query that timed out), which the response holds the rows of it got
// (https://learn.microsoft.com/azure/azure-monitor/logs/api/errors): its code and messages,
// the innermost last; nil for an error that says nothing (null, {}).
func queryFailed(raw []byte) error {
	type apiError struct {
		Code       string     `json:"code"`
		Message    string     `json:"message"`
		Details    []apiError `json:"details"`
		InnerError *apiError  `json:"innererror"`
	}
	var e apiError
	if err := json.Unmarshal(raw, &e); err != nil {
		return fmt.Errorf("not the query API's error: %v", err)
	}
	var said []string
	var walk func(apiError)
	walk = func(e apiError) {
		if m := strings.TrimSpace(strings.Join(slices.DeleteFunc([]string{e.Code, e.Message}, func(s string) bool { return s == "" }), ": ")); m != "" && !slices.Contains(said, m) {
			said = append(said, m)
		}
		for _, d := range e.Details {
			walk(d)
		}
		if e.InnerError != nil {
			walk(*e.InnerError)
		}
	}
	walk(e)
	switch {
	case len(said) == 0:
		return nil
	case e.Code == "PartialError":
		return fmt.Errorf("the query's result is partial (%s): the rows of the events it lost are not in the response; query a shorter time, a file each, and give vapc the files", strings.Join(said, "; "))
	}
	return fmt.Errorf("the query failed (%s): its rows are not in the response", strings.Join(said, "; "))
}

// laRowObject is the object of a row of the query API's response (an array of values) with
// its columns' names: what az prints of it.
func laRowObject(columns []string, raw []byte) ([]byte, error) {
	if len(columns) == 0 {
		return nil, errors.New("a row before its table's columns")
	}
	i := skipSpace(raw, 0)
	if i >= len(raw) || raw[i] != '[' {
		return nil, errors.New("not a row: not an array")
	}
	out := make([]byte, 0, len(raw)+16*len(columns))
	out = append(out, '{')
	for n := 0; ; n++ {
		i = skipSpace(raw, i+1)
		if n == 0 && i < len(raw) && raw[i] == ']' {
			break
		}
		end, ok := valueEnd(raw, i)
		if !ok || end <= i {
			return nil, fmt.Errorf("not a row: value %d is not JSON", n)
		}
		if n >= len(columns) {
			return nil, fmt.Errorf("a row of more values than its table's %d columns", len(columns))
		}
		if n > 0 {
			out = append(out, ',')
		}
		name, _ := json.Marshal(columns[n])
		out = append(out, name...)
		out = append(out, ':')
		out = append(out, raw[i:end]...)
		i = skipSpace(raw, end)
		if i < len(raw) && raw[i] == ']' {
			if n+1 != len(columns) {
				return nil, fmt.Errorf("a row of %d values, its table %d columns", n+1, len(columns))
			}
			break
		}
		if i >= len(raw) || raw[i] != ',' {
			return nil, fmt.Errorf("not a row: ',' or ']' expected after value %d", n)
		}
	}
	return append(out, '}'), nil
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
	row := laRow{buf: getBuf(len(raw))}
	defer func() { putBuf(row.buf) }()
	ok, err := row.read(raw)
	if err != nil {
		return record{line: line, err: recordError(where, "", fmt.Errorf("not a Log Analytics row: %v", err))}
	}
	if !ok {
		return record{line: line, err: recordError(where, "", errors.New("not a Log Analytics row: not a JSON object"))}
	}
	if row.has(laLog) {
		rec := laDiagnostics(&row, line, where)
		putBuf(raw)
		return rec
	}
	data, lost, field, err := laEvent(&row)
	if err != nil {
		return record{line: line, err: recordError(where, field, err)}
	}
	putBuf(raw)
	var loss auditlog.Loss
	if lost != 0 {
		loss = auditlog.Loss{Export: ExportLogAnalytics, Lost: lost}
	}
	rec := eventRecord(data, line, loss)
	rec.table = laTable(row.values[laType])
	return rec
}

// laTable numbers AKS's two tables by a row's Type (record.table), 0 for neither: a row of one
// and a row of the other with the same audit ID and stage are the same event, which a query of
// both holds twice.
func laTable(typ []byte) uint8 {
	switch string(typ) {
	case `"AKSAudit"`:
		return 1
	case `"AKSAuditAdmin"`:
		return 2
	}
	return 0
}

// The columns of a row read besides laColumns' (whose index is their own): AzureDiagnostics'.
const (
	laCategory = len(laColumns) + iota
	laLog
	laPod
	laType
	laColumnCount
)

// laRow is a row's JSON by column: each column's value as the row holds it, nil when the row
// does not have it; and a dynamic column's JSON string, decoded (unquoted), nil when it is
// not one.
type laRow struct {
	values   [laColumnCount][]byte
	unquoted [laColumnCount][]byte
	// buf holds the decoded strings.
	buf []byte
}

func (r *laRow) has(c int) bool { return r.values[c] != nil }

// read walks a row's members once, keeping the values of the columns read; false when the
// row is not a JSON object, an error when a member is not JSON. A dynamic column's string is
// decoded in the pass that finds its end (it has an escape every few bytes: each quote of the
// JSON it holds), a string it cannot decode left to laEvent, which says what is wrong with it.
func (r *laRow) read(raw []byte) (bool, error) {
	if firstNonSpace(raw) != '{' {
		return false, nil
	}
	_, ok := walkObject(raw, 0, func(name []byte, _, start int) (int, bool) {
		c := laColumnIndex(name)
		if c < 0 {
			return -1, true
		}
		if c < len(laColumns) && laColumns[c].dynamic && start < len(raw) && raw[start] == '"' {
			if out, n, ok := auditlog.AppendUnquoted(r.buf, raw[start:]); ok {
				r.values[c], r.unquoted[c] = raw[start:start+n], out[len(r.buf):]
				r.buf = out
				return start + n, true
			}
		}
		end, ok := valueEnd(raw, start)
		if ok && end > start {
			r.values[c] = raw[start:end]
		}
		return end, ok && end > start
	})
	if !ok {
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return false, err
		}
		return false, errors.New("not a JSON object")
	}
	return true, nil
}

// laColumnIndex is the index of the column name in a laRow, -1 for a column not read.
func laColumnIndex(name []byte) int {
	if c, ok := laColumnIndexes[string(name)]; ok {
		return c
	}
	return -1
}

// laColumnIndexes are the indexes in a laRow of the columns read, by name: looked up for
// every member of every row (a loop of string comparisons took a tenth of reading them).
var laColumnIndexes = func() map[string]int {
	m := map[string]int{"Category": laCategory, "log_s": laLog, "pod_s": laPod, "Type": laType}
	for i, c := range laColumns {
		m[c.column] = i
	}
	return m
}()

// laString decodes a column's value, a JSON string; false when it is not one.
func laString(v []byte) (string, bool) {
	var s string
	ok := unquoteTo(v, &s)
	return s, ok
}

// laDiagnostics is the record of an AzureDiagnostics row: its log_s, a piece of an event's
// line the joiner may join, as an archive's record's properties.log.
func laDiagnostics(row *laRow, line int, where string) record {
	var category, log, pod string
	for _, f := range []struct {
		column int
		name   string
		to     *string
	}{{laCategory, "Category", &category}, {laLog, "log_s", &log}, {laPod, "pod_s", &pod}} {
		if v := row.values[f.column]; v != nil && string(v) != "null" {
			s, ok := laString(v)
			if !ok {
				return record{line: line, err: recordError(where, f.name, errors.New("not a string"))}
			}
			*f.to = s
		}
	}
	switch {
	case !row.has(laCategory):
		return record{line: line, err: recordError(where, "Category", errors.New("missing: the query left out the column that tells kube-audit's rows from the other categories'"))}
	case category != "kube-audit" && category != "kube-audit-admin":
		return otherCategory(line, category)
	}
	b := []byte(log)
	p := &pieceOf{key: pod + "\x00" + category, where: where, field: "log_s", starts: startsEvent(b), event: startsAuditEvent(b), whole: whole(b)}
	r := record{data: b, line: line, piece: p}
	if p.whole || !p.starts {
		r.at = stageOf(b)
	}
	return r
}

// laEvent writes the event of an AKSAudit or AKSAuditAdmin row, and what it lost; field names
// the column an error is about.
func laEvent(row *laRow) (data []byte, lost auditlog.Lost, field string, err error) {
	if !row.has(laAuditID) {
		return nil, 0, "AuditId", errors.New("missing: not a row of AKSAudit or AKSAuditAdmin (nor of AzureDiagnostics: no log_s)")
	}
	for i, c := range laColumns {
		if c.required && !row.has(i) {
			return nil, 0, c.column, errors.New("missing: the query left out a column the replay needs (keep the table's columns: no project)")
		}
	}
	// A column a query left out (project) is lost: the event's objects as if the table had
	// skipped them, its annotations, its received time.
	skipped := !row.has(laRequestObject) || !row.has(laResponseObject)
	if !row.has(laAnnotations) {
		lost |= auditlog.LostAnnotations
	}
	if !row.has(laRequestReceived) {
		lost |= auditlog.LostReceived
	}
	if !row.has(laImpersonatedUser) {
		// AKS's tables have no column for it: User is the authenticated user, whom the
		// request may have impersonated another as.
		lost |= auditlog.LostImpersonation
	}
	var values [len(laColumns)][]byte
	size := 64
	for i, c := range laColumns {
		v := row.values[i]
		if laEmpty(v, c) {
			if v != nil && c.nonEmpty {
				return nil, 0, c.column, errors.New("empty")
			}
			continue
		}
		isString := v[0] == '"'
		if c.dynamic && isString {
			// The CLI prints a dynamic value as the API gives it: its JSON, as a string.
			s := row.unquoted[i]
			if s == nil {
				var n int
				var ok bool
				if s, n, ok = auditlog.AppendUnquoted(nil, v); !ok || n != len(v) {
					return nil, 0, c.column, errors.New("not a JSON string")
				}
			}
			if (c.field == "requestObject" || c.field == "responseObject") && (string(s) == skippedObject || string(s) == `"`+skippedObject+`"`) {
				// The marker as the column holds it, or as the JSON of a string (a dynamic
				// column's value written as JSON text).
				skipped = true
				continue
			}
			// The objects, most of a row, are checked by their structure (the replay's decoder
			// reports what else is wrong with them at the row's line); the other columns'
			// JSON, a few hundred bytes, in full.
			if end, ok := valueEnd(s, skipSpace(s, 0)); !ok || skipSpace(s, end) != len(s) || c.kind() != 0 && !validJSON(s) {
				return nil, 0, c.column, fmt.Errorf("%q is not JSON", shorten(string(s), 80))
			}
			v = s
		}
		switch {
		case c.dynamic:
			if want := c.kind(); want != 0 && firstNonSpace(v) != want {
				return nil, 0, c.column, fmt.Errorf("%s is not a JSON %s", shorten(string(v), 80), map[byte]string{'{': "object", '[': "array"}[want])
			}
		case !isString:
			return nil, 0, c.column, fmt.Errorf("%s is not a string", shorten(string(v), 80))
		case c.field == "requestReceivedTimestamp" || c.field == "stageTimestamp":
			t, ok := laTime(v)
			if !ok {
				return nil, 0, c.column, fmt.Errorf("%s is not an RFC 3339 time", v)
			}
			v = t
		default:
			if !isJSONString(v) {
				return nil, 0, c.column, fmt.Errorf("%s is not a string", shorten(string(v), 80))
			}
		}
		values[i] = v
		size += len(c.field) + 4 + len(v)
	}
	if skipped {
		// As kube-apiserver's truncating backend leaves an event: its objects dropped, the
		// level Metadata.
		values[laRequestObject], values[laResponseObject] = nil, nil
		values[laLevel] = []byte(`"Metadata"`)
		lost |= auditlog.LostLevel
	}
	b := getBuf(size) // the record's: handed back once the Reader has copied it out
	b = append(b, `{"kind":"Event","apiVersion":"audit.k8s.io/v1"`...)
	for i, c := range laColumns {
		if v := values[i]; v != nil {
			b = append(b, `,"`...)
			b = append(b, c.field...)
			b = append(b, `":`...)
			b = append(b, v...)
		}
	}
	b = append(b, '}')
	return b, lost, "", nil
}

// laTime is the event's time (kube-apiserver's MicroTime, to the microsecond) of a Log
// Analytics time, a JSON string: as the API gives it (trailing zeros trimmed), or to 100 ns
// (2026-11-21T19:46:24.7812560Z) as Kusto's tostring() and the portal write it; false when it
// is not a time.
func laTime(v []byte) ([]byte, bool) {
	s, ok := laString(v)
	if !ok {
		return nil, false
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, false
	}
	const micro = "2006-01-02T15:04:05.000000Z07:00"
	if len(s) == len("2006-01-02T15:04:05.000000Z") && len(v) == len(s)+2 && s[len(s)-1] == 'Z' && s[19] == '.' {
		return v, true // a UTC time to the microsecond, as the event writes it already
	}
	out, _ := json.Marshal(t.UTC().Format(micro))
	return out, true
}

// isJSONString says whether v is a JSON string (valid UTF-8, its escapes too), without decoding
// one that holds no escape.
func isJSONString(v []byte) bool {
	if n := len(v) - 1; n >= 1 && v[0] == '"' && v[n] == '"' && plainRun(v[1:n]) == n-1 {
		return utf8.Valid(v[1:n])
	}
	_, ok := laString(v)
	return ok
}

// shorten shortens s for an error message.
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return strings.ToValidUTF8(s[:n], "") + "..."
}
