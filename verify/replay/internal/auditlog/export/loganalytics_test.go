package export_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// TestLogAnalyticsMapping reads AKSAudit rows as az prints them, column by column: a dynamic
// column as the API gives it (its JSON as a string) or as JSON, a time to 100 ns, an empty
// column; an object the table skipped; an AzureDiagnostics row.
func TestLogAnalyticsMapping(t *testing.T) {
	t.Parallel()
	const user = `{"username":"alice","uid":"u-1","groups":["dev","system:authenticated"],"extra":{"team":["red"]}}`
	row := map[string]any{
		"TableName": "PrimaryResult", "Type": "AKSAudit", "TimeGenerated": "2026-11-21T12:35:40.0000000Z", "PodName": "kube-apiserver-7c",
		"Level": "RequestResponse", "AuditId": "a-1", "Stage": "ResponseComplete",
		"RequestUri": "/api/v1/namespaces/ns/configmaps?fieldManager=kubectl&dryRun=All", "Verb": "create",
		"User": user, "ImpersonatedUser": "", "SourceIps": `["10.0.0.1"]`, "UserAgent": "kubectl/v1.37.0",
		"ObjectRef":           `{"resource":"configmaps","namespace":"ns","name":"cm","apiVersion":"v1"}`,
		"ResponseStatus":      `{"metadata":{},"code":201}`,
		"RequestObject":       `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm"},"data":{"k":"v"}}`,
		"ResponseObject":      map[string]any{"kind": "ConfigMap", "apiVersion": "v1", "metadata": map[string]any{"name": "cm", "namespace": "ns", "resourceVersion": "7"}},
		"RequestReceivedTime": "2026-11-21T12:35:37.4579340Z", "StageReceivedTime": "2026-11-21T12:35:37.4656350Z",
		"Annotations": `{"authorization.k8s.io/decision":"allow"}`,
	}
	want := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"a-1","stage":"ResponseComplete",` +
		`"requestURI":"/api/v1/namespaces/ns/configmaps?fieldManager=kubectl\u0026dryRun=All","verb":"create","user":` + user + `,"sourceIPs":["10.0.0.1"],` +
		`"userAgent":"kubectl/v1.37.0","objectRef":{"resource":"configmaps","namespace":"ns","name":"cm","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},` +
		`"requestObject":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"cm"},"data":{"k":"v"}},` +
		`"responseObject":{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","namespace":"ns","resourceVersion":"7"}},` +
		`"requestReceivedTimestamp":"2026-11-21T12:35:37.457934Z","stageTimestamp":"2026-11-21T12:35:37.465635Z","annotations":{"authorization.k8s.io/decision":"allow"}}`

	skipped := map[string]any{}
	for k, v := range row {
		skipped[k] = v
	}
	skipped["AuditId"], skipped["ResponseObject"] = "a-2", "skipped-too-big-size-object"
	skipped["StageReceivedTime"] = "2026-11-21T12:35:38.0000000Z"

	diag := map[string]any{"TableName": "PrimaryResult", "Category": "kube-audit-admin", "TimeGenerated": "2026-11-21T12:35:39Z", "pod_s": "kube-apiserver-7c",
		"log_s": ev("a-3", 39)}
	other := map[string]any{"Category": "kube-apiserver", "TimeGenerated": "2026-11-21T12:35:39Z", "log_s": "I1121 started"}

	data, err := json.MarshalIndent([]any{row, skipped, diag, other}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	format, lines := readAll(t, "rows.json", data, export.Auto)
	if format != export.AzureLogAnalytics {
		t.Fatalf("detected %q, want %q", format, export.AzureLogAnalytics)
	}
	var got []string
	var losses []auditlog.Loss
	for _, l := range lines {
		got = append(got, describe(l))
		losses = append(losses, l.loss)
	}
	// The AzureDiagnostics row's event (a-3) completed first: it is handed over first.
	wantLines := []string{"54: a-3", "2: a-1", "32: a-2", "61: skipped: an AKS record of the category kube-apiserver, not kube-audit or kube-audit-admin"}
	if diff := cmp.Diff(wantLines, got); diff != "" {
		t.Fatalf("lines (-want +got):\n%s", diff)
	}
	if string(bytes.TrimSpace(lines[1].data)) != want {
		t.Errorf("event:\n got %s\nwant %s", lines[1].data, want)
	}
	if losses[1].Any() || losses[0].Any() {
		t.Errorf("whole rows lost %v, %v", losses[1], losses[0])
	}
	e, err := auditlog.Decode(lines[2].data)
	if err != nil {
		t.Fatal(err)
	}
	if e.Level != auditlog.LevelMetadata || e.RequestObject != nil || e.ResponseObject != nil {
		t.Errorf("a row whose object was skipped: level %s, objects %s, %s; want Metadata without objects", e.Level, e.RequestObject, e.ResponseObject)
	}
	if wantLoss := (auditlog.Loss{Export: export.ExportLogAnalytics, Lost: auditlog.LostLevel}); losses[2] != wantLoss {
		t.Errorf("a row whose object was skipped lost %+v, want %+v", losses[2], wantLoss)
	}
}

// laRow is the JSON of an AKSAudit row (its columns: no ImpersonatedUser) of a get that completed at second sec, its columns
// set (or, nil, left out) by set.
func laRow(id string, sec int, set map[string]any) string {
	row := map[string]any{"AuditId": id, "Level": "Metadata", "Stage": "ResponseComplete", "RequestUri": "/api/v1/namespaces/a/pods/p", "Verb": "get",
		"User": `{"username":"u"}`, "ObjectRef": `{"resource":"pods","namespace":"a","name":"p","apiVersion":"v1"}`, "ResponseStatus": `{"code":200}`,
		"RequestObject": "", "ResponseObject": "", "Annotations": "", "RequestReceivedTime": fmt.Sprintf("2026-01-01T00:00:%02d.0000000Z", sec),
		"StageReceivedTime": fmt.Sprintf("2026-01-01T00:00:%02d.0000000Z", sec)}
	for k, v := range set {
		if v == nil {
			delete(row, k)
		} else {
			row[k] = v
		}
	}
	b, _ := json.Marshal(row)
	return string(b)
}

// TestLogAnalyticsProjected reads rows of a query that left out columns the replay can do
// without: what they held is lost, and the replay is told so.
func TestLogAnalyticsProjected(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		left []string
		want auditlog.Lost
	}{
		{"the objects", []string{"RequestObject", "ResponseObject"}, auditlog.LostLevel},
		{"the response object", []string{"ResponseObject"}, auditlog.LostLevel},
		{"the annotations", []string{"Annotations"}, auditlog.LostAnnotations},
		{"the received time", []string{"RequestReceivedTime"}, auditlog.LostReceived},
		{"the user agent", []string{"UserAgent", "SourceIps"}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			set := map[string]any{"Level": "RequestResponse", "ResponseObject": `{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"}}`}
			for _, c := range tt.left {
				set[c] = nil
			}
			_, lines := readAll(t, "f", []byte("["+laRow("a", 1, set)+"]"), export.AzureLogAnalytics)
			if len(lines) != 1 || lines[0].err != nil {
				t.Fatalf("lines %v", lines)
			}
			// AKS's tables have no ImpersonatedUser column (laRow has none): every row lost
			// whether the request impersonated another user.
			if got, want := lines[0].loss.Lost, tt.want|auditlog.LostImpersonation; got != want {
				t.Errorf("lost %v, want %v", got, want)
			}
			e, err := auditlog.Decode(lines[0].data)
			if err != nil {
				t.Fatal(err)
			}
			if wantLevel := map[bool]string{true: auditlog.LevelMetadata, false: auditlog.LevelRequestResponse}[tt.want == auditlog.LostLevel]; e.Level != wantLevel {
				t.Errorf("level %s, want %s", e.Level, wantLevel)
			}
		})
	}
}

// TestLogAnalyticsAPIResponse reads the query API's own response (tables, columns, rows of
// values) as the rows az prints: the same events; a row that does not fit its columns is an
// error naming it.
func TestLogAnalyticsAPIResponse(t *testing.T) {
	t.Parallel()
	rowsOf := func(rows ...string) (columns []map[string]string, values [][]json.RawMessage) {
		var names []string
		for _, r := range rows {
			var m map[string]json.RawMessage
			if err := json.Unmarshal([]byte(r), &m); err != nil {
				t.Fatal(err)
			}
			if names == nil {
				for k := range m {
					names = append(names, k)
				}
				slices.Sort(names)
				for _, n := range names {
					columns = append(columns, map[string]string{"name": n, "type": "string"})
				}
			}
			var vs []json.RawMessage
			for _, n := range names {
				vs = append(vs, m[n])
			}
			values = append(values, vs)
		}
		return columns, values
	}
	rows := []string{laRow("a", 1, nil), laRow("b", 2, map[string]any{"Level": "Request", "RequestObject": `{"kind":"Pod","apiVersion":"v1"}`}), laRow("c", 3, nil)}
	columns, values := rowsOf(rows...)
	api, err := json.Marshal(map[string]any{"tables": []any{map[string]any{"name": "PrimaryResult", "columns": columns, "rows": values}}})
	if err != nil {
		t.Fatal(err)
	}
	format, got := readAll(t, "api.json", api, export.Auto)
	if format != export.AzureLogAnalytics {
		t.Fatalf("detected %q, want %q", format, export.AzureLogAnalytics)
	}
	_, want := readAll(t, "az.json", []byte("["+strings.Join(rows, ",")+"]"), export.AzureLogAnalytics)
	if len(got) != len(want) {
		t.Fatalf("%d lines, az's rows %d", len(got), len(want))
	}
	for i := range want {
		if got[i].err != nil || string(got[i].data) != string(want[i].data) {
			t.Errorf("row %d: %s (%v), az's row %s", i, got[i].data, got[i].err, want[i].data)
		}
	}

	short := `{"tables":[{"name":"PrimaryResult","columns":[{"name":"AuditId"},{"name":"Verb"}],"rows":[["a","get","x"],["b"]]}]}`
	_, lines := readAll(t, "f", []byte(short), export.AzureLogAnalytics)
	var descs []string
	for _, l := range lines {
		descs = append(descs, describe(l))
	}
	wantDescs := []string{"1: error: tables[0].rows[0] (line 1): a row of more values than its table's 2 columns", "1: error: tables[0].rows[1] (line 1): a row of 1 values, its table 2 columns"}
	if diff := cmp.Diff(wantDescs, descs); diff != "" {
		t.Errorf("rows that do not fit their columns (-want +got):\n%s", diff)
	}

	// A partial result (https://learn.microsoft.com/azure/azure-monitor/logs/api/errors): the
	// rows it holds, and its error, which says that rows are missing; a failed query, its error.
	partial, err := json.Marshal(map[string]any{"tables": []any{map[string]any{"name": "PrimaryResult", "columns": columns, "rows": values[:2]}},
		"error": map[string]any{"code": "PartialError", "message": "There were some errors when processing your query.", "details": []any{map[string]any{
			"code": "EngineError", "message": "Something went wrong processing your query on the server.",
			"innererror": map[string]any{"code": "-2133196797", "message": "Query result set has exceeded the internal data size limit 8388608 (E_QUERY_RESULT_SET_TOO_LARGE)"}}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, data string
		want       []string
	}{
		{"partial", string(partial), []string{"1: a", "1: b",
			"1: error: the response (line 1): error: the query's result is partial (PartialError: There were some errors when processing your query.; EngineError: Something went wrong processing your query on the server.; -2133196797: Query result set has exceeded the internal data size limit 8388608 (E_QUERY_RESULT_SET_TOO_LARGE)): the rows of the events it lost are not in the response; query a shorter time, a file each, and give vapc the files"}},
		{"failed", `{"error":{"code":"BadArgumentError","message":"The request had some invalid properties"}}`, []string{
			"1: error: the response (line 1): error: the query failed (BadArgumentError: The request had some invalid properties): its rows are not in the response"}},
		{"an error that says nothing", `{"tables":[{"name":"PrimaryResult","columns":[{"name":"AuditId"}],"rows":[]}],"error":null}`, nil},
	} {
		// Detected: the failed query's response holds no tables.
		_, lines := readAll(t, "f", []byte(tc.data), export.Auto)
		var descs []string
		for _, l := range lines {
			descs = append(descs, describe(l))
		}
		if diff := cmp.Diff(tc.want, descs); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestAKSSkippedObject reads an event in which AKS wrote "skipped-too-big-size-object" in place
// of an object, from each of AKS's destinations: it is the event kube-apiserver's truncation
// leaves (no objects, level Metadata), the level lost by the export; an event without the
// marker is read as AKS sent it.
func TestAKSSkippedObject(t *testing.T) {
	t.Parallel()
	skipped := `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":"RequestResponse","auditID":"s","stage":"ResponseComplete","requestURI":"/api/v1/namespaces/a/configmaps","verb":"create",` +
		`"user":{"username":"u"},"objectRef":{"resource":"configmaps","namespace":"a","name":"c","apiVersion":"v1"},"responseStatus":{"metadata":{},"code":201},` +
		`"requestObject":"skipped-too-big-size-object","responseObject":{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"c"}},"stageTimestamp":"2026-01-01T00:00:01.000000Z"}`
	whole := ev("w", 2)
	record := func(log string) string {
		b, _ := json.Marshal(map[string]any{"category": "kube-audit", "properties": map[string]any{"log": log, "pod": "p"}})
		return string(b)
	}
	diag := func(log string) string {
		b, _ := json.Marshal(map[string]any{"Category": "kube-audit", "TimeGenerated": "2026-01-01T00:00:03Z", "log_s": log, "pod_s": "p"})
		return string(b)
	}
	tests := []struct {
		name   string
		format export.Format
		data   string
	}{
		{"storage blob", export.AzureBlob, record(skipped) + "\n" + record(whole) + "\n"},
		{"event hub", export.AzureEventHub, `{"records":[` + record(skipped) + "," + record(whole) + "]}\n"},
		{"log analytics, AzureDiagnostics", export.AzureLogAnalytics, "[" + diag(skipped) + "," + diag(whole) + "]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, lines := readAll(t, "f", []byte(tt.data), tt.format)
			if len(lines) != 2 || lines[0].err != nil || lines[1].err != nil {
				t.Fatalf("lines %+v", lines)
			}
			e, err := auditlog.Decode(lines[0].data)
			if err != nil {
				t.Fatal(err)
			}
			if e.AuditID != "s" || e.Level != auditlog.LevelMetadata || e.RequestObject != nil || e.ResponseObject != nil {
				t.Errorf("the skipped event: %s %s, objects %s %s; want s at level Metadata without objects", e.AuditID, e.Level, e.RequestObject, e.ResponseObject)
			}
			if want := (auditlog.Loss{Export: export.ExportAKS, Lost: auditlog.LostLevel}); lines[0].loss != want {
				t.Errorf("the skipped event lost %+v, want %+v", lines[0].loss, want)
			}
			if lines[1].loss.Any() || string(bytes.TrimSpace(lines[1].data)) != whole {
				t.Errorf("a whole event: %s, lost %v; want it as AKS sent it", lines[1].data, lines[1].loss)
			}
		})
	}
}

// TestLogAnalyticsNewestFirst reads rows a query ordered newest first (the portal's order):
// they are handed over oldest first, at their rows' lines.
func TestLogAnalyticsNewestFirst(t *testing.T) {
	t.Parallel()
	var rows []string
	for i := 9; i >= 1; i-- {
		rows = append(rows, laRow(fmt.Sprintf("e%d", i), i, nil))
	}
	_, lines := readAll(t, "f", []byte("[\n"+strings.Join(rows, ",\n")+"\n]"), export.Auto)
	var got []string
	for _, l := range lines {
		got = append(got, describe(l))
	}
	var want []string
	for i := 1; i <= 9; i++ {
		want = append(want, fmt.Sprintf("%d: e%d", 11-i, i))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("lines (-want +got):\n%s", diff)
	}
}

// TestLogAnalyticsSkippedQuoted: the marker AKS writes in place of an object too big, in a
// dynamic column as the column holds it or as the JSON of a string (a helper's export from
// Log Analytics' documentation): either way the event is read at level Metadata without its
// objects, not the marker taken for a patch's body.
func TestLogAnalyticsSkippedQuoted(t *testing.T) {
	t.Parallel()
	for _, marker := range []string{"skipped-too-big-size-object", `"skipped-too-big-size-object"`} {
		t.Run(marker, func(t *testing.T) {
			t.Parallel()
			data := "[\n" + laRow("s", 1, map[string]any{"Level": "RequestResponse", "Verb": "patch", "RequestObject": marker, "ResponseObject": marker}) + "\n]"
			_, lines := readAll(t, "f", []byte(data), export.AzureLogAnalytics)
			if len(lines) != 1 || lines[0].err != nil {
				t.Fatalf("lines %+v", lines)
			}
			e, err := auditlog.Decode(lines[0].data)
			if err != nil {
				t.Fatal(err)
			}
			if e.Level != auditlog.LevelMetadata || e.RequestObject != nil || e.ResponseObject != nil {
				t.Errorf("level %s, objects %s %s; want Metadata without objects", e.Level, e.RequestObject, e.ResponseObject)
			}
			if !lines[0].loss.Lost.Has(auditlog.LostLevel) {
				t.Errorf("lost %+v, want the level", lines[0].loss)
			}
		})
	}
}

// TestLogAnalyticsBothTables reads a query of both of AKS's tables (union AKSAudit,
// AKSAuditAdmin), each write in both: Kusto keeps no order of a dynamic column's members, and
// the copy in the other table may hold them in another (the same event in other bytes): the
// second is skipped as a copy. The same audit ID and stage in other bytes within one table is
// not a copy: handed over, for the replay to say what is wrong with it.
func TestLogAnalyticsBothTables(t *testing.T) {
	t.Parallel()
	write := map[string]any{"Verb": "delete", "Type": "AKSAudit", "ObjectRef": `{"resource":"pods","namespace":"a","name":"p","apiVersion":"v1"}`}
	reordered := maps.Clone(write)
	reordered["Type"], reordered["ObjectRef"] = "AKSAuditAdmin", `{"apiVersion":"v1","name":"p","namespace":"a","resource":"pods"}`
	sameTable := maps.Clone(reordered)
	sameTable["Type"] = "AKSAudit"
	for _, tc := range []struct {
		name string
		rows []string
		want []string
	}{
		{"the other table's copy, its members in another order", []string{laRow("a", 1, write), laRow("a", 1, reordered)}, []string{"1: a", "1: skipped: " + aksCopyReason}},
		{"the other table's copy first", []string{laRow("a", 1, reordered), laRow("a", 1, write)}, []string{"1: a", "1: skipped: " + aksCopyReason}},
		{"the same table, other bytes", []string{laRow("a", 1, write), laRow("a", 1, sameTable)}, []string{"1: a", "1: a"}},
	} {
		_, lines := readAll(t, "f", []byte("["+strings.Join(tc.rows, ",")+"]"), export.AzureLogAnalytics)
		var got []string
		for _, l := range lines {
			got = append(got, describe(l))
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// aksCopyReason is why an AKS event read already is skipped.
const aksCopyReason = "an AKS event read already (a diagnostic setting with kube-audit and kube-audit-admin sends each write in both, and a query of both Log Analytics tables holds it twice; Event Hubs may deliver a message again)"
