package export_test

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// TestRealExports reads exports as the clouds hand them over, each file the minimal real
// entries of a public sample (testdata/real): every record is an event, the record of an
// error, or a record skipped and why. An event is described by its audit ID, verb, request
// URI and code, "(code lost)" where the export does not carry its exact HTTP code.
func TestRealExports(t *testing.T) {
	t.Parallel()
	tests := []struct {
		file   string
		format export.Format
		want   []string
	}{{
		// gcloud logging read of GKE: a lease create that failed in storage (ABORTED is a
		// 409: after admission) and one a policy denied (INVALID_ARGUMENT with a policy's
		// denial: 422). The second entry's label validation_failure, which the reviewer's
		// sample added, is left out: the server writes it for Audit bindings only.
		file:   "gke-failed-after-admission.json",
		format: export.GKE,
		want: []string{
			"1: 11111111-0000-0000-0000-000000000001 create /apis/coordination.k8s.io/v1/namespaces/kube-system/leases 409",
			"2: 11111111-0000-0000-0000-000000000005 create /apis/coordination.k8s.io/v1/namespaces/kube-system/leases 422",
		},
	}, {
		// A custom resource of a group outside k8s.io (liggitt/audit2rbac#18): the method is
		// its group's domain reversed, without io.k8s.
		file:   "gke-audit2rbac-crd.json",
		format: export.GKE,
		want:   []string{"2: ae820cad-230q-ae80-8ca0-ce0af238adwd create /apis/etcd.database.coreos.com/v1beta2/namespaces/test-ns/etcdbackups 403"},
	}, {
		// Requests for no resource (elastic/integrations' GCP audit test log): health
		// checks, discovery, a scanner's probe refused.
		file:   "gke-elastic-nonresource.json",
		format: export.GKE,
		want: []string{
			"3: k8s-nonmatch-0001 get /HNAP1 403", // completed first
			"1: e973134d-b4d5-4e2f-92b8-82bba13fdb92 get /readyz 200",
			"2: 03adfb9f-71a3-4f41-9701-29b5542f4d22 get /api/v1 200",
		},
	}, {
		// A sink of the project's activity log: another service's entry among GKE's.
		file:   "gke-sink-all-services.json",
		format: export.GKE,
		want: []string{
			"1: skipped: a Cloud Audit Logs entry of compute.googleapis.com, not of the Kubernetes API server (k8s.io)",
			"2: 85371f7c-2383-4041-96e8-dad63d2d1990 create /api/v1/namespaces/1-2-deployment-update/pods 201",
			"3: c7842d26-11fe-446a-b985-b2b67ddbab09 patch /api/v1/namespaces/1-2-deployment-update/pods/nginx-deployment-surge-8655b4b8c5-xf5f4/status 200 (code lost)",
			"4: 7bf65423-5d85-43a0-aaf7-30a2ce7475df patch /api/v1/namespaces/1-2-deployment-update/pods/nginx-deployment-surge-8655b4b8c5-xf5f4/status 200 (code lost)",
		},
	}, {
		// An event hub that receives the control plane's other logs too.
		file:   "aks-eventhub-mixed-categories.jsonl",
		format: export.AzureEventHub,
		want: []string{
			"1: 52c48496-e84d-4e0c-84c4-f2fbc2b2b5a1 get /openapi/v3 200",
			"1: skipped: an AKS record of the category kube-apiserver, not kube-audit or kube-audit-admin",
			"1: 36600c9d-1633-4a6e-9bce-c754e93557c2 watch /apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeout=7m41s&timeoutSeconds=461&watch=true 200",
			"1: 09a3b504-8fdc-43c7-8db2-1a85d703e966 watch /apis/flowcontrol.apiserver.k8s.io/v1/flowschemas?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeout=9m32s&timeoutSeconds=572&watch=true 200",
			"1: skipped: an AKS record of the category guard, not kube-audit or kube-audit-admin",
		},
	}, {
		// A diagnostic setting with kube-audit and kube-audit-admin: a delete twice.
		file:   "aks-eventhub-audit-and-admin.jsonl",
		format: export.AzureEventHub,
		want: []string{
			"1: 52c48496-e84d-4e0c-84c4-f2fbc2b2b5a1 get /openapi/v3 200",
			"1: 36600c9d-1633-4a6e-9bce-c754e93557c2 watch /apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeout=7m41s&timeoutSeconds=461&watch=true 200",
			"1: 7b981a48-eb24-4a55-a655-186846060fda delete /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/apiserver-wlv32tlttr4jl3gtroqexyxapa 404",
			"1: skipped: an AKS event read already (a diagnostic setting with kube-audit and kube-audit-admin sends each write in both, and a query of both Log Analytics tables holds it twice; Event Hubs may deliver a message again)",
		},
	}, {
		// A storage blob's record whose properties.log is the event itself, an object (a
		// record of Sumo Logic's docs, written again by a pipeline that decoded its log):
		// Azure Monitor writes it a string.
		file:   "aks-blob-log-object.json",
		format: export.AzureBlob,
		want:   []string{"1: 10e60f03-0635-429b-b324-315166f249cc update /apis/coordination.k8s.io/v1/namespaces/kube-system/leases/external-resizer-file-csi-azure-com 200"},
	}, {
		// aws logs filter-log-events --query events: the events array alone.
		file:   "eks-filter-log-events-query-events.json",
		format: export.CloudWatch,
		want: []string{
			"2: 52c48496-e84d-4e0c-84c4-f2fbc2b2b5a1 get /openapi/v3 200",
			"9: 36600c9d-1633-4a6e-9bce-c754e93557c2 watch /apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeout=7m41s&timeoutSeconds=461&watch=true 200",
		},
	}, {
		// Firehose with decompression and message extraction, and no delimiter appended.
		file:   "eks-firehose-message-extraction-nodelimiter",
		format: export.ConcatenatedEvents,
		want: []string{
			"1: 52c48496-e84d-4e0c-84c4-f2fbc2b2b5a1 get /openapi/v3 200",
			"1: 36600c9d-1633-4a6e-9bce-c754e93557c2 watch /apis/admissionregistration.k8s.io/v1/mutatingadmissionpolicies?allowWatchBookmarks=true&resourceVersionMatch=NotOlderThan&sendInitialEvents=true&timeout=7m41s&timeoutSeconds=461&watch=true 200",
		},
	}, {
		// An event CloudWatch Logs cut at its size limit (falcosecurity/plugins#297).
		file:   "eks-filter-log-events-truncated.json",
		format: export.CloudWatch,
		want: []string{
			// In the order of the events' times: the one cut is stamped with CloudWatch's
			// time, after the other's.
			"10: 52c48496-e84d-4e0c-84c4-f2fbc2b2b5a1 get /openapi/v3 200",
			"3: a06c6b29-4d84-4710-ab99-c91d83372c54 patch /apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/system-node-high/status?fieldManager=api-priority-and-fairness-config-consumer-v1&force=true 200 (cut by EKS CloudWatch Logs: Metadata)",
		},
	}}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			data, err := os.ReadFile(filepath.Join("testdata", "real", tt.file))
			if err != nil {
				t.Fatal(err)
			}
			format, lines := readAll(t, tt.file, data, export.Auto)
			if format != tt.format {
				t.Errorf("detected %s, want %s", format, tt.format)
			}
			got := []string{}
			for _, l := range lines {
				got = append(got, describeReal(l))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("lines mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// describeReal is a line as TestRealExports expects it.
func describeReal(l line) string {
	switch {
	case l.skip != "":
		return fmt.Sprintf("%d: skipped: %s", l.num, l.skip)
	case l.err != nil:
		return describe(l)
	}
	e, err := auditlog.Decode(l.data)
	if err != nil {
		return fmt.Sprintf("%d: not an event: %v", l.num, err)
	}
	s := fmt.Sprintf("%d: %s %s %s %d", l.num, e.AuditID, e.Verb, e.RequestURI, e.Code())
	if l.loss.Lost.Has(auditlog.LostCode) {
		s += " (code lost)"
	}
	if l.loss.Lost.Has(auditlog.LostAnnotations) {
		s += fmt.Sprintf(" (cut by %s: %s)", l.loss.Export, e.Level)
	}
	return s
}
