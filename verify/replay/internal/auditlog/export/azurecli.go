package export

import (
	"bytes"
	"regexp"
)

// The Azure CLI prints a Log Analytics query's rows in the output format its --output (-o)
// flag, or `az config set core.output=...`, chooses
// (https://learn.microsoft.com/cli/azure/format-output-azure-cli): json (what vapc reads,
// AzureLogAnalytics), jsonc (the same JSON coloured with terminal escape codes), yaml, table,
// tsv and none. The others than json are detected and refused with the flag that prints what
// vapc reads: YAML folds long strings over lines, a table cuts its columns to the terminal's
// width, and TSV prints the row's values without their columns' names. A file holding a
// terminal's colour codes (jsonc, jq -C, a log copied out of a terminal) is refused alike.
const (
	azYAML  Format = "aks-loganalytics-yaml"
	azTable Format = "aks-loganalytics-table"
	azTSV   Format = "aks-loganalytics-tsv"
	colored Format = "colored"
)

// azYAMLHead is how az's YAML of a query's rows begins: a list of rows, each a mapping of
// its columns by name.
var azYAMLHead = regexp.MustCompile(`^(---\s*\n)?- [A-Za-z_][A-Za-z0-9_]*:[ \n]`)

// azTableRule is the line of dashes under a table's header (knack's table output, tabulate's
// simple format): a group of dashes for each column, two spaces apart.
var azTableRule = regexp.MustCompile(`^-+(  -+)*\s*$`)

// azColumns are names of the columns of AKSAudit and AzureDiagnostics a query's rows hold
// (loganalytics.go), one of which an output of them names.
var azColumns = [][]byte{[]byte("AuditId"), []byte("log_s"), []byte("RequestUri"), []byte("StageReceivedTime")}

// azureCLI is the Azure CLI's output format that head is in, other than JSON; "" for none.
func azureCLI(head []byte) Format {
	names := func(b []byte) bool {
		for _, c := range azColumns {
			if bytes.Contains(b, c) {
				return true
			}
		}
		return false
	}
	first, rest, _ := bytes.Cut(head, []byte("\n"))
	second, _, _ := bytes.Cut(rest, []byte("\n"))
	switch {
	case azYAMLHead.Match(head) && names(head):
		return azYAML
	case azTableRule.Match(second) && names(first):
		return azTable
	case azTSVRow(first):
		return azTSV
	}
	return ""
}

// uuid is an audit ID's form.
var uuid = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// azTSVRow says whether line is a row of AKSAudit's or AzureDiagnostics' columns as az's TSV
// prints it: tab-separated values, an audit ID and a level among them (AKSAudit), or a
// diagnostic category (AzureDiagnostics).
func azTSVRow(line []byte) bool {
	fields := bytes.Split(bytes.TrimRight(line, "\r"), []byte("\t"))
	if len(fields) < 4 {
		return false
	}
	id, level := false, false
	for _, f := range fields {
		switch s := string(f); {
		case s == "kube-audit" || s == "kube-audit-admin":
			return true
		case s == "Metadata" || s == "Request" || s == "RequestResponse":
			level = true
		case uuid.MatchString(s):
			id = true
		}
	}
	return id && level
}

// coloredText says whether the first bytes of head hold a terminal's colour codes (an escape
// and '['), which no JSON text or audit log line holds: JSON writes the escape character as
// \u001b. A coloured output colours its first member (az -o jsonc, jq -C); a line further
// on that holds one (another container's line in a container log) is that line's fault only.
func coloredText(head []byte) bool {
	return bytes.Contains(head[:min(len(head), coloredBytes)], []byte("\x1b["))
}

// coloredBytes is how far coloredText looks.
const coloredBytes = 512
