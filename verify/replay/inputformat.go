package replay

import (
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// InputFormats are the formats a Source may be in (Source.Format), "auto" first: a file's
// format is detected from its first bytes unless one is given. Besides kube-apiserver's log
// backend ("audit"), they are its webhook backend and the exports of managed clusters' logging
// services (EKS's CloudWatch Logs, AKS's diagnostic settings, GKE's Cloud Logging); see
// README.md, "Where your audit log is".
func InputFormats() []string {
	var out []string
	for _, f := range export.Formats() {
		out = append(out, string(f))
	}
	return out
}

// CheckInputFormat says whether a replay reads the format named s ("" is auto).
func CheckInputFormat(s string) error {
	_, err := export.ParseFormat(s)
	return err
}
