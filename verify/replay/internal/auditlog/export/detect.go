package export

import (
	"bytes"
	"regexp"
	"unicode"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// legacyFormat is kube-apiserver's legacy log format (--audit-log-format=legacy), a line of
// key="value" pairs for each event after its time and "AUDIT:"
// (k8s.io/apiserver/pkg/audit/format.go EventString), which vapc does not read: it holds no
// objects, annotations or level.
const legacyFormat Format = "legacy"

// kubectlPrefix is what `kubectl logs --prefix` prints: each line after the name of the pod and
// container it came from ("[pod/NAME/CONTAINER] "), the logs of several pods interleaved as
// they come (kubectl logs -l, --all-containers), which vapc does not read: detected and
// refused with how to print the log it reads (each server's log a file of its own).
const kubectlPrefix Format = "kubectl-prefix"

// kubectlPrefixHead is how a line kubectl logs --prefix printed begins
// (k8s.io/kubectl/pkg/cmd/logs: "[%s/%s/%s] ", the pod's kind, its name and the container's).
var kubectlPrefixHead = regexp.MustCompile(`^\[pod/[^/\]\s]+/[^/\]\s]+\] `)

// detectBytes is how much of a file detection reads: the first record of every envelope names
// its members in less, whatever the size of their values.
const detectBytes = 64 << 10

// detect tells the format of a file from its first bytes (decompressed), by the members its
// first record names: an envelope's own members come before or between its values, and a
// value's members are one level deeper, so that a key at its depth is the envelope's. It
// reads no further than it needs; what it does not recognize is read as the log backend's
// lines, whose reader says what is wrong with each.
func detect(head []byte) Format {
	head = trimHead(head)
	if len(head) == 0 {
		return Plain
	}
	if string(bytes.TrimSpace(head)) == awsWriteTestText {
		return awsWriteTest
	}
	if coloredText(head) {
		return colored
	}
	if f := azureCLI(head); f != "" && !cloudWatchTextHead.Match(head) {
		// (The AWS CLI's text output is tab-separated too: an EVENTS line of a stream
		// named kube-audit is not az's.)
		return f
	}
	switch c := head[0]; {
	case c >= '0' && c <= '9':
		if auditlog.LegacyLine(head) {
			return legacyFormat
		}
		if containerLogHead.Match(head) {
			return containerLog
		}
		if _, _, ok := cutTimestamp(head); ok {
			return CloudWatchS3
		}
		return Plain
	case insightsHead.Match(head):
		return insightsResults
	case insightsCSVHead.Match(head) && insightsCSVHeader(head):
		return insightsCSV
	case insightsObjectsHead.Match(head) && keysOf(head, 2).has(2, "@message"):
		return insightsResults
	case csvExport(head) != "":
		return csvExport(head) // once a file: the header's first line parsed twice
	case gcloudYAML.Match(head):
		return gkeYAML
	case cloudWatchTextHead.Match(head):
		return cloudWatchText
	case awsYAMLHead.Match(head):
		return awsYAML
	case awsTableHead.Match(head):
		return awsTable
	case kubectlPrefixHead.Match(head):
		return kubectlPrefix
	case c == '[':
		// An array of records: gcloud's, az's. Its first element's members say so.
		if emptyArray(head) {
			// gcloud logging read --format=json, and az, print [] where no entry matched (an
			// hour without audit entries among a day's files): no record, not a malformed line.
			return GKE
		}
		k := keysOf(head, 2)
		switch {
		case k.has(2, "protoPayload", "insertId", "logName"):
			return GKE
		case k.has(2, "message") && k.has(2, "logStreamName", "eventId", "ingestionTime", "timestamp"):
			// aws logs filter-log-events --query events: the events array alone.
			return CloudWatch
		case k.has(2, "properties") && k.has(2, "category", "resourceId", "operationName"):
			// AKS's records in an array (az, jq -s).
			return azureDocuments
		case k.has(2, "AuditId") && k.has(2, "Level", "StageReceivedTime", "RequestUri", "Verb"),
			k.has(2, "log_s") && k.has(2, "Category", "TimeGenerated"):
			// az monitor log-analytics query: AKSAudit's rows, or AzureDiagnostics'.
			return AzureLogAnalytics
		case k.has(2, "auditID") && k.has(2, "stage") && k.has(2, "verb", "requestURI"):
			// The log backend's events in an array (jq -s).
			return eventArray
		}
		return Plain
	case c != '{':
		return Plain
	}
	k := keysOf(head, 3)
	switch {
	case eventKeys(k):
		switch {
		case concatenated(head):
			return concatenatedEvents
		case multiline(head):
			return prettyEvents
		}
		return Plain
	case k.value["kind"] == "EventList" || k.has(1, "items") && k.value["apiVersion"] == "audit.k8s.io/v1":
		return Webhook
	case k.has(1, "messageType", "logEvents"):
		return Firehose
	case k.has(1, "events") && (k.has(1, "searchedLogStreams", "nextToken", "nextForwardToken", "nextBackwardToken") || k.has(3, "logStreamName", "eventId", "ingestionTime") || k.has(3, "timestamp") && k.has(3, "message")):
		// aws logs filter-log-events, get-log-events (its events' timestamp and message may
		// be all the first bytes hold: ingestionTime follows the message).
		return CloudWatch
	case k.has(1, "records"):
		return AzureEventHub
	case k.has(1, "properties") && k.has(1, "category", "resourceId", "operationName"):
		if multiline(head) {
			// Pretty-printed, not one a line.
			return azureDocuments
		}
		return AzureBlob
	case k.has(1, "protoPayload", "insertId", "logName", "receiveTimestamp"):
		return GKE
	case k.has(1, "tables") && k.has(3, "columns", "rows"):
		// The Log Analytics query API's response.
		return AzureLogAnalytics
	case k.has(1, "error") && k.has(2, "code") && k.has(2, "message") && !k.has(1, "kind", "auditID"):
		// Its response to a query that failed: the error, no tables.
		return AzureLogAnalytics
	}
	return Plain
}

// emptyArray says whether head, which begins with '[', is an empty array and nothing else.
func emptyArray(head []byte) bool {
	rest := bytes.TrimLeft(head[1:], " \t\r\n")
	return len(rest) > 0 && rest[0] == ']' && len(bytes.TrimSpace(rest[1:])) == 0
}

// keys are the member names a prefix of a document holds, by depth (the number of
// containers they are in: 1 for the outer object's members, 2 for those of an outer array's
// elements, 3 for those of the elements of an outer object's array member), and the string
// values of the outer object's members.
// trimHead is head without the white space and byte order mark before its first value.
func trimHead(head []byte) []byte {
	return bytes.TrimLeftFunc(bytes.TrimPrefix(bytes.TrimLeftFunc(head, unicode.IsSpace), []byte("\ufeff")), unicode.IsSpace)
}

// multiline says whether the object head begins with spans lines: a newline before its
// first member ends.
func multiline(head []byte) bool {
	first := bytes.IndexByte(head, ',')
	nl := bytes.IndexByte(head, '\n')
	return nl >= 0 && (first < 0 || nl < first)
}

// eventKeys says whether the keys of an object are an audit event's.
func eventKeys(k keys) bool {
	return k.value["kind"] == "Event" || k.has(1, "auditID") && k.has(1, "stage")
}

type keys struct {
	at    map[int]map[string]bool
	value map[string]string
}

func (k keys) has(depth int, names ...string) bool {
	for _, n := range names {
		if k.at[depth][n] {
			return true
		}
	}
	return false
}

// keysOf walks a prefix of JSON text, which may end anywhere, noting the member names down
// to maxDepth.
func keysOf(b []byte, maxDepth int) keys {
	k := keys{at: map[int]map[string]bool{}, value: map[string]string{}}
	// containers: for each open container, whether it is an object.
	var objects []bool
	expectKey := false
	lastKey := ""
	lastKeyDepth := 0
	for i := 0; i < len(b); i++ {
		c := b[i]
		switch c {
		case '{':
			objects = append(objects, true)
			expectKey = true
		case '[':
			objects = append(objects, false)
			expectKey = false
		case '}', ']':
			if len(objects) > 0 {
				objects = objects[:len(objects)-1]
			}
			expectKey = false
		case ',':
			expectKey = len(objects) > 0 && objects[len(objects)-1]
		case '"':
			j := i + 1
			for j < len(b) && b[j] != '"' {
				if b[j] == '\\' {
					j++
				}
				j++
			}
			if j >= len(b) {
				return k
			}
			s := string(b[i+1 : j])
			depth := len(objects)
			if expectKey {
				if depth <= maxDepth {
					if k.at[depth] == nil {
						k.at[depth] = map[string]bool{}
					}
					k.at[depth][s] = true
				}
				lastKey, lastKeyDepth = s, depth
				expectKey = false
			} else if depth == 1 && lastKeyDepth == 1 && lastKey != "" {
				if _, seen := k.value[lastKey]; !seen {
					k.value[lastKey] = s
				}
			}
			i = j
		case ':':
		default:
			if c != ' ' && c != '\t' && c != '\r' && c != '\n' && len(objects) == 1 {
				lastKey = "" // a number or literal value: not a string's
			}
		}
	}
	return k
}
