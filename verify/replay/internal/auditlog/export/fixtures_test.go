package export_test

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/vapc-dev/vapc/verify/replay/exporttest"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

var update = flag.Bool("update", false, "rewrite testdata/audit/exports from kosmos-denied-variants")

// fixtures are the files of testdata/audit/exports: the log of kosmos-denied-variants as each
// export hands it over, named as the vendor names its files, for the CLI's tests and for
// trying vapc replay on an export.
var fixtures = map[export.Format]string{
	export.Webhook:           "webhook-eventlists.jsonl",
	export.CloudWatch:        "eks-filter-log-events.json",
	exporttest.EKSText:       "eks-filter-log-events.txt",
	export.CloudWatchS3:      "eks-s3-export-000000.gz",
	exporttest.EKSTail:       "eks-logs-tail.txt",
	export.Firehose:          "eks-firehose-vapc-audit-1-2026-11-20-08-00-00.gz",
	exporttest.FirehoseLines: "eks-firehose-lines-vapc-audit-1-2026-11-20-08-00-00-8c7a1f3e-25ea-4c64-9b75-44b73ddc6b3b",
	export.AzureBlob:         "aks-PT1H.json",
	export.AzureEventHub:     "aks-eventhub-messages.jsonl",
	export.AzureLogAnalytics: "aks-loganalytics-query.json",
	export.GKE:               "gke-gcloud-logging-read.json",
	exporttest.GKESink:       "gke-sink-08_00_00_08_59_59_S0.json",
}

// TestFixtures keeps testdata/audit/exports the wrapping of its log (go test -update
// rewrites it).
func TestFixtures(t *testing.T) {
	t.Parallel()
	log, err := os.ReadFile(filepath.Join(auditData, "kosmos-denied-variants", "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(auditData, "exports")
	for _, f := range exporttest.Formats() {
		want, err := exporttest.Wrap(f, log)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, fixtures[f])
		if *update {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%v (go test ./verify/replay/internal/auditlog/export -update writes it)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is not the wrapping of its log: go test ./verify/replay/internal/auditlog/export -update", path)
		}
	}
}

// secretsFixtures are the log of verify/report's redaction test, which writes the values of
// Secrets, as exports hand it over: the report must redact them whatever the envelope.
var secretsFixtures = map[export.Format]string{
	export.CloudWatch:  "eks-filter-log-events.json",
	exporttest.GKESink: "gke-sink.json",
}

// TestSecretsFixtures keeps verify/report/testdata/secrets's exports the wrapping of its log
// (go test -update rewrites them).
func TestSecretsFixtures(t *testing.T) {
	t.Parallel()
	dir := filepath.Join("..", "..", "..", "..", "report", "testdata", "secrets")
	log, err := os.ReadFile(filepath.Join(dir, "audit.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	for f, name := range secretsFixtures {
		want, err := exporttest.Wrap(f, log)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name)
		if *update {
			if err := os.WriteFile(path, want, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if got, err := os.ReadFile(path); err != nil || !bytes.Equal(got, want) {
			t.Errorf("%s is not the wrapping of its log (%v): go test ./verify/replay/internal/auditlog/export -update", path, err)
		}
	}
}
