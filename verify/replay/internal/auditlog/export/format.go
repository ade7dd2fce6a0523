package export

import (
	"fmt"
	"strings"
)

// Format is how an audit log is wrapped: kube-apiserver's log backend, its webhook backend, or
// the envelope of a managed cluster's logging service.
type Format string

// The formats a replay reads.
const (
	// Auto detects the format of each file from its first bytes.
	Auto Format = "auto"
	// Plain is kube-apiserver's log backend: audit.k8s.io/v1 Event JSON lines.
	Plain Format = "audit"
	// Webhook is kube-apiserver's webhook backend as a receiver that keeps each POST body
	// writes it: one EventList a line.
	Webhook Format = "webhook"
	// CloudWatch is what `aws logs filter-log-events --output json` prints of an EKS
	// cluster's log group: {"events":[{"message": EVENT, ...}]}, one document or several.
	CloudWatch Format = "eks-cloudwatch"
	// CloudWatchS3 is a CloudWatch Logs export task's files in S3: lines "TIMESTAMP MESSAGE";
	// and what `aws logs tail` prints, "TIMESTAMP STREAM MESSAGE" (or, --format short,
	// "TIMESTAMP MESSAGE").
	CloudWatchS3 Format = "eks-s3"
	// Firehose is a CloudWatch Logs subscription filter delivered by Firehose to S3: gzip
	// streams of DATA_MESSAGE objects concatenated without a delimiter, or the audit events
	// Firehose's message extraction took from them (concatenatedEvents).
	Firehose Format = "eks-firehose"
	// AzureBlob is an AKS diagnostic setting archiving to a storage account: one record a
	// line, the event as a string in properties.log.
	AzureBlob Format = "aks-blob"
	// AzureEventHub is an AKS diagnostic setting streaming to Event Hubs: messages
	// {"records":[...]}.
	AzureEventHub Format = "aks-eventhub"
	// AzureLogAnalytics is an AKS diagnostic setting sending to a Log Analytics workspace,
	// as `az monitor log-analytics query` prints a query's rows: an array of AKSAudit or
	// AKSAuditAdmin rows (AzureDiagnostics rows with the event in log_s), or the query API's
	// response of tables, columns and rows.
	AzureLogAnalytics Format = "aks-loganalytics"
	// GKE is Cloud Logging's LogEntry with an AuditLog payload (serviceName k8s.io), as
	// `gcloud logging read --format=json` prints them (an array) or a log sink writes them
	// (JSON lines).
	GKE Format = "gke"
)

// Formats are the formats a replay reads, Auto first.
func Formats() []Format {
	return []Format{Auto, Plain, Webhook, CloudWatch, CloudWatchS3, Firehose, AzureBlob, AzureEventHub, AzureLogAnalytics, GKE}
}

// ParseFormat reads a format's name; "" is Auto.
func ParseFormat(s string) (Format, error) {
	if s == "" {
		return Auto, nil
	}
	for _, f := range Formats() {
		if string(f) == s {
			return f, nil
		}
	}
	var names []string
	for _, f := range Formats() {
		names = append(names, string(f))
	}
	return "", fmt.Errorf("unknown input format %q: one of %s", s, strings.Join(names, ", "))
}

// Filterable says whether an event of a file in the format holds a filter (bytes a JSON
// string holds as they are) only where the file's bytes, decompressed, hold it, and a
// Reader given a Filter passes over the records that do not: every format's but AKS's, whose
// records may be pieces of an event, cut anywhere (a filter too), and are all decoded and
// joined.
func (f Format) Filterable() bool {
	switch f {
	case AzureBlob, azureDocuments, AzureEventHub, AzureLogAnalytics:
		return false
	}
	return true
}

// describe names the format for people, in errors and notes.
func (f Format) describe() string {
	switch f {
	case Plain:
		return "audit log"
	case Webhook:
		return "webhook backend EventList"
	case CloudWatch:
		return "CloudWatch Logs filter-log-events"
	case CloudWatchS3:
		return "CloudWatch Logs S3 export (or aws logs tail)"
	case Firehose:
		return "CloudWatch Logs subscription (Firehose)"
	case AzureBlob:
		return "AKS diagnostic setting (storage account)"
	case cloudWatchText:
		return "CloudWatch Logs filter-log-events or get-log-events, the AWS CLI's text output"
	case insightsResults:
		return "CloudWatch Logs Insights query results"
	case azureDocuments:
		return "AKS diagnostic setting's records, pretty-printed or in an array"
	case AzureEventHub:
		return "AKS diagnostic setting (Event Hubs)"
	case AzureLogAnalytics:
		return "AKS diagnostic setting (Log Analytics query)"
	case GKE:
		return "GKE Cloud Logging"
	case containerLog:
		return "container log file (the kubelet's CRI logging format)"
	case eventArray:
		return "audit events in an array (as jq -s writes them)"
	case prettyEvents:
		return "audit events pretty-printed, one after the other (as jq writes them without -c)"
	case concatenatedEvents:
		return "audit events extracted by Firehose from a CloudWatch Logs subscription (put back in the server's order)"
	case InStageOrder:
		return "audit log, out of the order kube-apiserver wrote it (put back in the server's order)"
	}
	return string(f)
}
