package export

import (
	"bytes"
	"encoding/csv"
	"strings"
	"unicode"
)

// Log Analytics and Cloud Logging hand a query's rows, or a day's entries, over as CSV too: the
// Azure portal's export of a Log Analytics query's results (Export to CSV,
// https://learn.microsoft.com/azure/azure-monitor/logs/log-analytics-tutorial), and the Logs
// Explorer's download of entries, or gcloud logging read --format=csv(...)
// (https://cloud.google.com/sdk/gcloud/reference/topic/formats). Neither is read: a CSV cell
// holds an object's JSON as text the exporter wrote as it displays it, and Cloud Logging's CSV
// flattens an entry into columns of the projection's naming. They are known by the columns
// their header names, and refused with the command that prints the JSON vapc reads. (Logs
// Insights' CSV, which keeps each event whole in @message, is read: insightsCSV.)
const (
	laCSV  Format = "aks-loganalytics-csv"
	gkeCSV Format = "gke-csv"
)

// csvExport is the CSV export of Log Analytics' AKSAudit or AzureDiagnostics rows, or of
// Cloud Logging's entries, whose header is head's first line; "" for none.
func csvExport(head []byte) Format {
	if len(head) == 0 || head[0] == '{' || head[0] == '[' {
		return ""
	}
	first, _, _ := bytes.Cut(head, []byte("\n"))
	if bytes.IndexByte(first, ',') < 0 {
		return ""
	}
	header, err := csv.NewReader(bytes.NewReader(first)).Read()
	if err != nil || len(header) < 3 {
		return ""
	}
	// A column's name as a key: the portal's "TimeGenerated [UTC]" as TimeGenerated,
	// gcloud's insert_id and the Logs Explorer's insertId alike.
	names := map[string]bool{}
	payload := false
	for _, h := range header {
		if strings.HasPrefix(h, "@") {
			return "" // Logs Insights' own fields: its table of fields the events hold
		}
		h, _, _ = strings.Cut(h, " [")
		k := strings.ToLower(strings.Map(func(r rune) rune {
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				return r
			}
			return -1
		}, h))
		names[k] = true
		payload = payload || strings.HasPrefix(k, "protopayload")
	}
	switch {
	case names["auditid"] && (names["requesturi"] || names["stagereceivedtime"] || names["verb"]),
		names["logs"] && names["category"]: // AzureDiagnostics' log_s
		return laCSV
	case payload, names["insertid"] && names["logname"]:
		return gkeCSV
	}
	return ""
}

// csvRefused is the CSV export head begins, where format is the one its JSON would be given
// as (Log Analytics' for the portal's, GKE's for Cloud Logging's); "" for none.
func csvRefused(format Format, head []byte) Format {
	switch f := csvExport(head); {
	case f == laCSV && (format == AzureLogAnalytics || format == AzureEventHub || format == AzureBlob),
		f == gkeCSV && format == GKE:
		return f
	}
	return ""
}
