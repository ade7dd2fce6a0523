package export_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/verify/replay/exporttest"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog/export"
)

// TestGKEMapping maps every entry GKE would write for the events of real logs back to an
// event, and holds each field of it to the log's event: what GKE carries is the same, what it
// does not is lost and said to be.
func TestGKEMapping(t *testing.T) {
	levels := map[string]int{auditlog.LevelMetadata: 1, auditlog.LevelRequest: 2, auditlog.LevelRequestResponse: 3}
	for _, name := range recorded {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			log := readLog(t, name)
			byID := map[string]*auditlog.Event{}
			ips := map[string][]string{}
			for _, l := range bytes.Split(log, []byte("\n")) {
				if len(bytes.TrimSpace(l)) == 0 {
					continue
				}
				ev, err := auditlog.Decode(l)
				if err != nil {
					t.Fatal(err)
				}
				byID[ev.AuditID+"/"+ev.Stage] = ev
				ips[ev.AuditID+"/"+ev.Stage] = sourceIPs(t, l)
			}
			data, err := exporttest.Wrap(exporttest.GKESink, log)
			if err != nil {
				t.Fatal(err)
			}
			_, lines := readAll(t, "gke", data, export.GKE)
			dryRuns := 0
			for _, l := range lines {
				if l.err != nil {
					t.Fatalf("line %d: %v", l.num, l.err)
				}
				got, err := auditlog.Decode(l.data)
				if err != nil {
					t.Fatalf("line %d: %v", l.num, err)
				}
				got.Loss = l.loss // as the replay's decoding sets it
				want := byID[got.AuditID+"/"+got.Stage]
				if want == nil {
					t.Fatalf("line %d: no event %s at stage %s in the log", l.num, got.AuditID, got.Stage)
				}
				where := fmt.Sprintf("line %d (%s %s)", l.num, want.Verb, want.RequestURI)
				check := func(field string, got, want any) {
					t.Helper()
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%s: %s mismatch (-want +got):\n%s", where, field, diff)
					}
				}
				check("verb", got.Verb, want.Verb)
				wantPath, _, _ := strings.Cut(want.RequestURI, "?")
				gotPath, gotQuery, _ := strings.Cut(got.RequestURI, "?")
				check("requestURI's path", gotPath, wantPath)
				if q, _ := url.ParseQuery(gotQuery); q.Get("dryRun") != "" {
					dryRuns++
					check("dryRun", q.Get("dryRun"), want.Query().Get("dryRun"))
				}
				check("user", got.Requester().Username, want.Requester().Username)
				check("authenticated user", got.User.Username, want.User.Username)
				check("user's groups, uid, extra", got.User.Groups == nil && got.User.UID == "" && got.User.Extra == nil, true)
				if u := got.ImpersonatedUser; u != nil {
					check("impersonated user's groups, uid, extra", u.Groups == nil && u.UID == "" && u.Extra == nil, true)
				}
				if w := ips[got.AuditID+"/"+got.Stage]; len(w) > 0 {
					check("sourceIPs", sourceIPs(t, l.data), w[:1])
				}
				check("userAgent", got.UserAgent, want.UserAgent)
				if want.ObjectRef != nil {
					ref := *want.ObjectRef
					check("objectRef", got.ObjectRef, &ref)
				}
				check("stageTimestamp", auditlog.ParseTime(got.StageTimestamp), auditlog.ParseTime(want.StageTimestamp))
				check("annotations", got.Annotations, want.Annotations)
				for _, o := range []struct {
					field     string
					got, want json.RawMessage
				}{{"requestObject", got.RequestObject, want.RequestObject}, {"responseObject", got.ResponseObject, want.ResponseObject}} {
					if bytes.HasPrefix(o.want, []byte("{")) {
						check(o.field, normalized(t, o.got), normalized(t, o.want))
					} else {
						check(o.field+" (not an object: not in the entry)", len(o.got), 0)
					}
				}
				if levels[got.Level] > levels[want.Level] {
					t.Errorf("%s: level %s, above the log's %s", where, got.Level, want.Level)
				}
				if got.Loss.Export != export.ExportGKE || !got.Loss.Lost.Has(auditlog.LostGroups|auditlog.LostUID|auditlog.LostExtra|auditlog.LostReceived|auditlog.LostLevel|auditlog.LostQuery) {
					t.Errorf("%s: loss %+v, want GKE's", where, got.Loss)
				}
				wantReceived := auditlog.ParseTime(want.StageTimestamp).Add(-auditlog.MaxRequestDuration)
				if sub := ""; want.Verb == "watch" || want.Verb == "proxy" || func() bool {
					if want.ObjectRef != nil {
						sub = want.ObjectRef.Subresource
					}
					return sub == "attach" || sub == "exec" || sub == "proxy" || sub == "log" || sub == "portforward"
				}() {
					wantReceived = time.Time{} // long-running: --request-timeout does not bound it
				}
				check("received", got.Received(), wantReceived)
				switch code := want.Code(); {
				case !got.Loss.Lost.Has(auditlog.LostCode):
					check("code", got.Code(), code)
				case code >= 200 && code < 300:
					check("code's class", got.Code()/100, int32(2))
				default:
					// A failure, never code 0 (no response): the code google/rpc maps its gRPC
					// code to.
					check("unknown code is a failure's", got.Code() >= 400, true)
				}
				if want.ResponseStatus != nil && want.Code() >= 300 && got.Code() != 0 && bytes.HasPrefix(want.ResponseObject, []byte("{")) {
					check("message", got.Message(), want.Message())
				}
			}
			if name == "recorded-a/audit.log.gz" && dryRuns == 0 {
				t.Error("no dry run told from its response: the log has dry-run creates")
			}
		})
	}
}

func sourceIPs(t *testing.T, event []byte) []string {
	var e struct {
		SourceIPs []string `json:"sourceIPs"`
	}
	if err := json.Unmarshal(event, &e); err != nil {
		t.Fatal(err)
	}
	return e.SourceIPs
}

// TestGKEEntries maps entries as GKE's documentation and its users show them.
func TestGKEEntries(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, entry string
		want        map[string]any // of the event
		lost        auditlog.Lost
		// labelled says the entry carries GKE's dry-run label (command.gke.io/dryRun).
		labelled bool
		err      string
		skip     string // why the entry is skipped
	}{{
		// A create an admission webhook refused, as Binary Authorization's guide shows it:
		// the response is the Status, which gives the HTTP code.
		name: "refused create",
		entry: `{"protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog","authenticationInfo":{"principalEmail":"alice@example.com"},
			"methodName":"io.k8s.core.v1.pods.create","requestMetadata":{"callerIp":"179.220.250.109"},
			"request":{"@type":"core.k8s.io/v1.Pod","apiVersion":"v1","kind":"Pod","metadata":{"name":"image-without-attestation","namespace":"default"}},
			"resourceName":"core/v1/namespaces/default/pods/image-without-attestation",
			"response":{"@type":"core.k8s.io/v1.Status","apiVersion":"v1","code":403,"details":{"kind":"pods","name":"image-without-attestation"},"kind":"Status","message":"pods \"image-without-attestation\" is forbidden: denied","metadata":{},"reason":"Forbidden","status":"Failure"},
			"serviceName":"k8s.io","status":{"code":7,"message":"Forbidden"}},
			"insertId":"dac513c6-3104-4bb2-a526-b3926d2a1401","resource":{"type":"k8s_cluster","labels":{"cluster_name":"test-cluster"}},
			"timestamp":"2019-02-15T11:43:23.897797Z","labels":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":""},
			"logName":"projects/p/logs/cloudaudit.googleapis.com%2Factivity",
			"operation":{"id":"dac513c6-3104-4bb2-a526-b3926d2a1401","producer":"k8s.io","first":true,"last":true},"receiveTimestamp":"2019-02-15T11:43:54.317031365Z"}`,
		want: map[string]any{
			"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "RequestResponse", "auditID": "dac513c6-3104-4bb2-a526-b3926d2a1401",
			"stage": "ResponseComplete", "requestURI": "/api/v1/namespaces/default/pods", "verb": "create",
			"user": map[string]any{"username": "alice@example.com"}, "sourceIPs": []any{"179.220.250.109"},
			"objectRef":      map[string]any{"resource": "pods", "namespace": "default", "name": "image-without-attestation", "apiVersion": "v1"},
			"responseStatus": map[string]any{"code": 403.0, "status": "Failure", "reason": "Forbidden", "message": `pods "image-without-attestation" is forbidden: denied`, "details": map[string]any{"name": "image-without-attestation", "kind": "pods"}},
			"requestObject":  map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "image-without-attestation", "namespace": "default"}},
			"responseObject": map[string]any{"apiVersion": "v1", "code": 403.0, "details": map[string]any{"kind": "pods", "name": "image-without-attestation"}, "kind": "Status", "message": `pods "image-without-attestation" is forbidden: denied`, "metadata": map[string]any{}, "reason": "Forbidden", "status": "Failure"},
			"stageTimestamp": "2019-02-15T11:43:23.897797Z",
			"annotations":    map[string]any{"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": ""},
		},
		lost: auditlog.LostGroups | auditlog.LostUID | auditlog.LostExtra | auditlog.LostReceived | auditlog.LostLevel | auditlog.LostQuery | auditlog.LostDryRun,
	}, {
		// A request that impersonated another user: the user admission saw is the one
		// impersonated (the authorizer's reason names it).
		name: "impersonated",
		entry: `{"insertId":"c5b90d47-0112-4c79-bc6d-e55b565d681f","labels":{"authorization.k8s.io/decision":"allow","authorization.k8s.io/reason":"RBAC: allowed by ClusterRoleBinding \"kyma-admin-binding\" of ClusterRole \"kyma-admin\" to User \"admin@kyma.cx\""},
			"logName":"projects/p/logs/cloudaudit.googleapis.com%2Fdata_access",
			"protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog","authenticationInfo":{"authoritySelector":"admin@kyma.cx","principalEmail":"system:serviceaccount:kyma-system:kube-rbac-proxy"},
			"methodName":"io.k8s.core.v1.pods.list","resourceName":"core/v1/namespaces/default/pods","serviceName":"k8s.io"},
			"timestamp":"2019-02-20T10:00:00Z"}`,
		want: map[string]any{
			"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": "c5b90d47-0112-4c79-bc6d-e55b565d681f",
			"stage": "ResponseComplete", "requestURI": "/api/v1/namespaces/default/pods", "verb": "list",
			"user":             map[string]any{"username": "system:serviceaccount:kyma-system:kube-rbac-proxy"},
			"impersonatedUser": map[string]any{"username": "admin@kyma.cx"},
			"objectRef":        map[string]any{"resource": "pods", "namespace": "default", "apiVersion": "v1"},
			"responseStatus":   map[string]any{"code": 200.0},
			"stageTimestamp":   "2019-02-20T10:00:00Z",
			"annotations":      map[string]any{"authorization.k8s.io/decision": "allow", "authorization.k8s.io/reason": `RBAC: allowed by ClusterRoleBinding "kyma-admin-binding" of ClusterRole "kyma-admin" to User "admin@kyma.cx"`},
		},
		lost: auditlog.LostGroups | auditlog.LostUID | auditlog.LostExtra | auditlog.LostReceived | auditlog.LostLevel | auditlog.LostQuery | auditlog.LostDryRun,
	}, {
		// GKE labels a dry run's entry (command.gke.io/dryRun): its URI says so, as the log
		// backend's would, and whether it was one is not lost.
		name:     "dry run",
		labelled: true,
		entry: `{"insertId":"d1","labels":{"authorization.k8s.io/decision":"allow","command.gke.io/dryRun":"All"},
			"protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog","authenticationInfo":{"principalEmail":"alice@example.com"},
			"methodName":"io.k8s.core.v1.pods.status.patch","resourceName":"core/v1/namespaces/default/pods/p/status","serviceName":"k8s.io",
			"request":{"@type":"k8s.io/Patch","status":{"phase":"Running"}}},
			"timestamp":"2026-08-04T10:00:00Z"}`,
		want: map[string]any{
			"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Request", "auditID": "d1",
			"stage": "ResponseComplete", "requestURI": "/api/v1/namespaces/default/pods/p/status?dryRun=All", "verb": "patch",
			"user":           map[string]any{"username": "alice@example.com"},
			"objectRef":      map[string]any{"resource": "pods", "namespace": "default", "name": "p", "subresource": "status", "apiVersion": "v1"},
			"responseStatus": map[string]any{"code": 200.0},
			"requestObject":  map[string]any{"status": map[string]any{"phase": "Running"}},
			"stageTimestamp": "2026-08-04T10:00:00Z",
			"annotations":    map[string]any{"authorization.k8s.io/decision": "allow"},
		},
		lost: auditlog.LostGroups | auditlog.LostUID | auditlog.LostExtra | auditlog.LostReceived | auditlog.LostLevel | auditlog.LostQuery | auditlog.LostCode,
	}, {
		// Labelled no dry run: known, and the label is GKE's, not an annotation.
		name:     "labelled no dry run",
		labelled: true,
		entry: `{"insertId":"d3","labels":{"command.gke.io/dryRun":"false"},
			"protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog","authenticationInfo":{"principalEmail":"alice@example.com"},
			"methodName":"io.k8s.core.v1.configmaps.delete","resourceName":"core/v1/namespaces/default/configmaps/c","serviceName":"k8s.io"},
			"timestamp":"2026-08-04T10:00:00Z"}`,
		want: map[string]any{
			"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": "d3",
			"stage": "ResponseComplete", "requestURI": "/api/v1/namespaces/default/configmaps/c", "verb": "delete",
			"user":           map[string]any{"username": "alice@example.com"},
			"objectRef":      map[string]any{"resource": "configmaps", "namespace": "default", "name": "c", "apiVersion": "v1"},
			"responseStatus": map[string]any{"code": 200.0},
			"stageTimestamp": "2026-08-04T10:00:00Z",
		},
		lost: auditlog.LostGroups | auditlog.LostUID | auditlog.LostExtra | auditlog.LostReceived | auditlog.LostLevel | auditlog.LostQuery | auditlog.LostCode,
	}, {
		// A delete sent with a body reads its options from it alone (the handler ignores
		// the query): whether it was a dry run is the body's.
		name: "delete with its options",
		entry: `{"insertId":"d2","labels":{"authorization.k8s.io/decision":"allow"},
			"protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog","authenticationInfo":{"principalEmail":"alice@example.com"},
			"methodName":"io.k8s.core.v1.configmaps.delete","resourceName":"core/v1/namespaces/default/configmaps/c","serviceName":"k8s.io",
			"request":{"@type":"k8s.io/DeleteOptions","apiVersion":"meta.k8s.io/v1","kind":"DeleteOptions","propagationPolicy":"Background"}},
			"timestamp":"2026-08-04T10:00:00Z"}`,
		want: map[string]any{
			"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Request", "auditID": "d2",
			"stage": "ResponseComplete", "requestURI": "/api/v1/namespaces/default/configmaps/c", "verb": "delete",
			"user":           map[string]any{"username": "alice@example.com"},
			"objectRef":      map[string]any{"resource": "configmaps", "namespace": "default", "name": "c", "apiVersion": "v1"},
			"responseStatus": map[string]any{"code": 200.0},
			"requestObject":  map[string]any{"apiVersion": "meta.k8s.io/v1", "kind": "DeleteOptions", "propagationPolicy": "Background"},
			"stageTimestamp": "2026-08-04T10:00:00Z",
			"annotations":    map[string]any{"authorization.k8s.io/decision": "allow"},
		},
		lost: auditlog.LostGroups | auditlog.LostUID | auditlog.LostExtra | auditlog.LostReceived | auditlog.LostLevel | auditlog.LostQuery | auditlog.LostCode,
	}, {
		// A list in the Data Access log, without objects: level Metadata.
		name: "list",
		entry: `{"insertId":"b2c2e792-aaa9-4422-82d0-de32940b1234","labels":{"authorization.k8s.io/decision":"allow"},
			"logName":"projects/gke-audit-logs/logs/cloudaudit.googleapis.com%2Fdata_access",
			"operation":{"first":true,"id":"b2c2e792-aaa9-4422-82d0-de32940b1234","last":true,"producer":"k8s.io"},
			"protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog","authenticationInfo":{"principalEmail":"john.doe@email.com"},
			"methodName":"io.k8s.core.v1.pods.list","requestMetadata":{"callerIp":"35.195.195.195","callerSuppliedUserAgent":"kubectl/v1.18.6 (linux/amd64) kubernetes/dff82dc"},
			"resourceName":"core/v1/namespaces/default/pods","serviceName":"k8s.io"},"receiveTimestamp":"2020-08-17T17:09:19.068723691Z",
			"timestamp":"2020-08-17T17:09:18.5Z"}`,
		want: map[string]any{
			"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": "b2c2e792-aaa9-4422-82d0-de32940b1234",
			"stage": "ResponseComplete", "requestURI": "/api/v1/namespaces/default/pods", "verb": "list",
			"user": map[string]any{"username": "john.doe@email.com"}, "sourceIPs": []any{"35.195.195.195"},
			"userAgent":      "kubectl/v1.18.6 (linux/amd64) kubernetes/dff82dc",
			"objectRef":      map[string]any{"resource": "pods", "namespace": "default", "apiVersion": "v1"},
			"responseStatus": map[string]any{"code": 200.0},
			"stageTimestamp": "2020-08-17T17:09:18.5Z",
			"annotations":    map[string]any{"authorization.k8s.io/decision": "allow"},
		},
		lost: auditlog.LostGroups | auditlog.LostUID | auditlog.LostExtra | auditlog.LostReceived | auditlog.LostLevel | auditlog.LostQuery | auditlog.LostDryRun,
	}, {
		// A lease update in another group; the code of a successful update is not known
		// (it may have created the lease).
		name: "update",
		entry: `{"labels":{"authorization.k8s.io/decision":"allow"},"protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog","authenticationInfo":{"principalEmail":"system:kube-scheduler"},
			"methodName":"io.k8s.coordination.v1.leases.update","resourceName":"coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler",
			"serviceName":"k8s.io","status":{"code":0}},"insertId":"i","operation":{"id":"2f93b0a6-f932-4d91-ad61-785ae9587360","first":true,"last":true},
			"timestamp":"2022-06-03T12:09:42.501046130Z"}`,
		want: map[string]any{
			"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": "2f93b0a6-f932-4d91-ad61-785ae9587360",
			"stage": "ResponseComplete", "requestURI": "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler", "verb": "update",
			"user":           map[string]any{"username": "system:kube-scheduler"},
			"objectRef":      map[string]any{"resource": "leases", "namespace": "kube-system", "name": "kube-scheduler", "apiGroup": "coordination.k8s.io", "apiVersion": "v1"},
			"responseStatus": map[string]any{"code": 200.0},
			"stageTimestamp": "2022-06-03T12:09:42.50104613Z",
			"annotations":    map[string]any{"authorization.k8s.io/decision": "allow"},
		},
		lost: auditlog.LostGroups | auditlog.LostUID | auditlog.LostExtra | auditlog.LostReceived | auditlog.LostLevel | auditlog.LostQuery | auditlog.LostDryRun | auditlog.LostCode,
	}, {
		// Without a serviceName, its method names the Kubernetes API.
		name: "without a serviceName",
		entry: `{"protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog","authenticationInfo":{"principalEmail":"system:kube-scheduler"},
			"methodName":"io.k8s.coordination.v1.leases.update","resourceName":"coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler",
			"status":{"code":0}},"insertId":"i","operation":{"id":"2f93b0a6-f932-4d91-ad61-785ae9587360","first":true,"last":true},
			"timestamp":"2022-06-03T12:09:42.501046130Z"}`,
		want: map[string]any{
			"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": "2f93b0a6-f932-4d91-ad61-785ae9587360",
			"stage": "ResponseComplete", "requestURI": "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler", "verb": "update",
			"user":           map[string]any{"username": "system:kube-scheduler"},
			"objectRef":      map[string]any{"resource": "leases", "namespace": "kube-system", "name": "kube-scheduler", "apiGroup": "coordination.k8s.io", "apiVersion": "v1"},
			"responseStatus": map[string]any{"code": 200.0},
			"stageTimestamp": "2022-06-03T12:09:42.50104613Z",
		},
		lost: auditlog.LostGroups | auditlog.LostUID | auditlog.LostExtra | auditlog.LostReceived | auditlog.LostLevel | auditlog.LostQuery | auditlog.LostDryRun | auditlog.LostCode,
	}, {
		// A refused delete at level Metadata: the gRPC code gives the HTTP code where only
		// one maps to it, and a subresource, a namespace's finalize.
		name: "refused finalize",
		entry: `{"labels":{"authorization.k8s.io/decision":"allow"},"protoPayload":{"authenticationInfo":{"principalEmail":"bob"},"methodName":"io.k8s.core.v1.namespaces.finalize.update",
			"resourceName":"core/v1/namespaces/shop/finalize","serviceName":"k8s.io","status":{"code":7,"message":"Permission denied"}},
			"insertId":"x1","timestamp":"2024-01-01T00:00:00Z"}`,
		want: map[string]any{
			"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": "x1",
			"stage": "ResponseComplete", "requestURI": "/api/v1/namespaces/shop/finalize", "verb": "update",
			"user":           map[string]any{"username": "bob"},
			"objectRef":      map[string]any{"resource": "namespaces", "namespace": "shop", "name": "shop", "apiVersion": "v1", "subresource": "finalize"},
			"responseStatus": map[string]any{"code": 403.0, "status": "Failure", "message": "Permission denied"},
			"stageTimestamp": "2024-01-01T00:00:00Z",
			"annotations":    map[string]any{"authorization.k8s.io/decision": "allow"},
		},
		// Its message describes the gRPC code, not what refused it.
		lost: auditlog.LostGroups | auditlog.LostUID | auditlog.LostExtra | auditlog.LostReceived | auditlog.LostLevel | auditlog.LostQuery | auditlog.LostDryRun | auditlog.LostMessage,
	}, {
		// An invalid argument is a 400 or a 422: not known (google/rpc's 400, lost).
		name: "invalid",
		entry: `{"labels":{"authorization.k8s.io/decision":"allow"},"protoPayload":{"authenticationInfo":{"principalEmail":"bob"},"methodName":"io.k8s.apps.v1.deployments.scale.patch",
			"resourceName":"apps/v1/namespaces/shop/deployments/web/scale","serviceName":"k8s.io","status":{"code":3,"message":"bad"}},
			"operation":{"id":"x2","first":false,"last":true},"timestamp":"2024-01-01T00:00:00Z"}`,
		want: map[string]any{
			"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": "x2",
			"stage": "ResponseComplete", "requestURI": "/apis/apps/v1/namespaces/shop/deployments/web/scale", "verb": "patch",
			"user":           map[string]any{"username": "bob"},
			"objectRef":      map[string]any{"resource": "deployments", "namespace": "shop", "name": "web", "apiGroup": "apps", "apiVersion": "v1", "subresource": "scale"},
			"responseStatus": map[string]any{"code": 400.0, "status": "Failure", "message": "bad"},
			"stageTimestamp": "2024-01-01T00:00:00Z",
			"annotations":    map[string]any{"authorization.k8s.io/decision": "allow"},
		},
		lost: auditlog.LostGroups | auditlog.LostUID | auditlog.LostExtra | auditlog.LostReceived | auditlog.LostLevel | auditlog.LostQuery | auditlog.LostDryRun | auditlog.LostCode | auditlog.LostMessage,
	}, {
		// A policy's denial in the entry's status: its code is a 422, and its message kept.
		name: "denied by a policy",
		entry: `{"labels":{"authorization.k8s.io/decision":"allow"},"protoPayload":{"authenticationInfo":{"principalEmail":"bob"},"methodName":"io.k8s.core.v1.configmaps.create",
			"resourceName":"core/v1/namespaces/shop/configmaps/c","serviceName":"k8s.io","status":{"code":3,"message":"configmaps \"c\" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no"}},
			"insertId":"x3","timestamp":"2024-01-01T00:00:00Z"}`,
		want: map[string]any{
			"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": "x3",
			"stage": "ResponseComplete", "requestURI": "/api/v1/namespaces/shop/configmaps", "verb": "create",
			"user":           map[string]any{"username": "bob"},
			"objectRef":      map[string]any{"resource": "configmaps", "namespace": "shop", "name": "c", "apiVersion": "v1"},
			"responseStatus": map[string]any{"code": 422.0, "status": "Failure", "message": `configmaps "c" is forbidden: ValidatingAdmissionPolicy 'p' with binding 'b' denied request: no`},
			"stageTimestamp": "2024-01-01T00:00:00Z",
			"annotations":    map[string]any{"authorization.k8s.io/decision": "allow"},
		},
		lost: auditlog.LostGroups | auditlog.LostUID | auditlog.LostExtra | auditlog.LostReceived | auditlog.LostLevel | auditlog.LostQuery | auditlog.LostDryRun,
	}, {
		name:  "another service",
		entry: `{"protoPayload":{"serviceName":"container.googleapis.com","methodName":"google.container.v1.ClusterManager.CreateCluster"},"insertId":"y","timestamp":"2024-01-01T00:00:00Z"}`,
		skip:  `a Cloud Audit Logs entry of container.googleapis.com, not of the Kubernetes API server (k8s.io)`,
	}, {
		// Another log of the cluster's, in a sink whose filter names the cluster alone.
		name:  "another log: jsonPayload",
		entry: `{"jsonPayload":{"message":"scale-up"},"logName":"projects/p/logs/container.googleapis.com%2Fcluster-autoscaler-visibility","insertId":"y","timestamp":"2024-01-01T00:00:00Z"}`,
		skip:  `a Cloud Logging entry of another log than the audit logs (its payload: jsonPayload), not an audit entry of the Kubernetes API server`,
	}, {
		name:  "another log: textPayload",
		entry: `{"textPayload":"I0101 started","logName":"projects/p/logs/stderr","insertId":"y","timestamp":"2024-01-01T00:00:00Z"}`,
		skip:  `a Cloud Logging entry of another log than the audit logs (its payload: textPayload), not an audit entry of the Kubernetes API server`,
	}, {
		name:  "another log: a protoPayload of another type",
		entry: `{"protoPayload":{"@type":"type.googleapis.com/google.appengine.logging.v1.RequestLog","resource":"/"},"insertId":"y","timestamp":"2024-01-01T00:00:00Z"}`,
		skip:  `a Cloud Logging entry of another log than the audit logs (its payload: a protoPayload of type.googleapis.com/google.appengine.logging.v1.RequestLog), not an audit entry of the Kubernetes API server`,
	}, {
		// A piece of an entry Cloud Logging split over its size limit: the objects are parts
		// of the request's and the response's (here the pod's containers without their
		// securityContext, which the other piece holds), not replayed; the audit ID is the
		// operation's.
		name: "a piece of a split entry",
		entry: `{"protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog","authenticationInfo":{"principalEmail":"bob"},"methodName":"io.k8s.core.v1.pods.create",
			"resourceName":"core/v1/namespaces/shop/pods/web","serviceName":"k8s.io","status":{"code":0},
			"request":{"@type":"core.k8s.io/v1.Pod","apiVersion":"v1","kind":"Pod","metadata":{"name":"web","namespace":"shop"},"spec":{"containers":[{"name":"c","image":"nginx"}]}}},
			"split":{"uid":"s-1","index":0,"totalSplits":2},"insertId":"abc0","operation":{"id":"op-1","producer":"k8s.io","first":true,"last":true},"timestamp":"2024-01-01T00:00:00Z"}`,
		want: map[string]any{
			"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": "op-1",
			"stage": "ResponseComplete", "requestURI": "/api/v1/namespaces/shop/pods", "verb": "create",
			"user":           map[string]any{"username": "bob"},
			"objectRef":      map[string]any{"resource": "pods", "namespace": "shop", "name": "web", "apiVersion": "v1"},
			"responseStatus": map[string]any{"code": 201.0},
			"stageTimestamp": "2024-01-01T00:00:00Z",
		},
		lost: auditlog.LostGroups | auditlog.LostUID | auditlog.LostExtra | auditlog.LostReceived | auditlog.LostLevel | auditlog.LostQuery | auditlog.LostDryRun | auditlog.LostObjects,
	}, {
		// Without an operation, the split's uid is the audit ID: insertId differs by piece.
		name: "a later piece of a split entry, without an operation",
		entry: `{"protoPayload":{"authenticationInfo":{"principalEmail":"bob"},"methodName":"io.k8s.core.v1.pods.create","resourceName":"core/v1/namespaces/shop/pods/web","serviceName":"k8s.io",
			"request":{"spec":{"containers":[{"securityContext":{"privileged":true}}]}}},
			"split":{"uid":"s-1","index":1,"totalSplits":2},"insertId":"abc1","timestamp":"2024-01-01T00:00:00Z"}`,
		want: map[string]any{
			"kind": "Event", "apiVersion": "audit.k8s.io/v1", "level": "Metadata", "auditID": "s-1",
			"stage": "ResponseComplete", "requestURI": "/api/v1/namespaces/shop/pods", "verb": "create",
			"user":           map[string]any{"username": "bob"},
			"objectRef":      map[string]any{"resource": "pods", "namespace": "shop", "name": "web", "apiVersion": "v1"},
			"responseStatus": map[string]any{"code": 201.0},
			"stageTimestamp": "2024-01-01T00:00:00Z",
		},
		lost: auditlog.LostGroups | auditlog.LostUID | auditlog.LostExtra | auditlog.LostReceived | auditlog.LostLevel | auditlog.LostQuery | auditlog.LostDryRun | auditlog.LostObjects,
	}, {
		name:  "no timestamp",
		entry: `{"protoPayload":{"serviceName":"k8s.io","methodName":"io.k8s.core.v1.pods.create","resourceName":"core/v1/namespaces/a/pods"},"insertId":"y"}`,
		err:   `timestamp: "" is not an RFC 3339 time`,
	}, {
		name:  "resource name of another resource",
		entry: `{"protoPayload":{"serviceName":"k8s.io","methodName":"io.k8s.core.v1.pods.create","resourceName":"core/v1/namespaces/a/secrets/b"},"insertId":"y","timestamp":"2024-01-01T00:00:00Z"}`,
		err:   `protoPayload.resourceName: "core/v1/namespaces/a/secrets/b" does not name the resource pods`,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			entry := strings.Join(strings.Fields(tt.entry), " ")
			_, lines := readAll(t, "gke.json", []byte(entry+"\n"), export.Auto)
			if len(lines) != 1 {
				t.Fatalf("%d lines, want 1", len(lines))
			}
			l := lines[0]
			if l.skip != tt.skip {
				t.Fatalf("skipped %q, want %q", l.skip, tt.skip)
			}
			if tt.skip != "" {
				return
			}
			if tt.err != "" {
				if l.err == nil || !strings.Contains(l.err.Error(), tt.err) {
					t.Fatalf("error %v, want one with %q", l.err, tt.err)
				}
				if !strings.HasPrefix(l.err.Error(), "entry at line 1: ") {
					t.Errorf("error %q does not say where", l.err)
				}
				return
			}
			if l.err != nil {
				t.Fatal(l.err)
			}
			if diff := cmp.Diff(tt.want, normalized(t, l.data)); diff != "" {
				t.Errorf("event mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(auditlog.Loss{Export: export.ExportGKE, Lost: tt.lost, DryRunLabelled: tt.labelled, Structs: true}, l.loss); diff != "" {
				t.Errorf("loss mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDropType removes the member Cloud Logging adds to a payload's objects wherever it is.
func TestDropType(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{`{"@type":"core.k8s.io/v1.Pod","kind":"Pod"}`, `{"kind":"Pod"}`},
		{`{"kind":"Pod", "@type" : "x"}`, `{"kind":"Pod"}`},
		{`{"kind":"Pod", "@type" : "x" ,"a":1}`, `{"kind":"Pod", "a":1}`},
		{`{"a":{"@type":"nested"},"@type":"x","b":[1,"@type"]}`, `{"a":{"@type":"nested"},"b":[1,"@type"]}`},
		{`{"s":"\"@type\":","@type":"x"}`, `{"s":"\"@type\":"}`},
		{`{"@type":"x"}`, `{}`},
		{`{"kind":"Pod"}`, `{"kind":"Pod"}`},
	} {
		if got := string(export.DropMember([]byte(tt.in), "@type")); got != tt.want {
			t.Errorf("dropMember(%s) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

// TestGKEUpdateDryRun: an update whose object gave a resourceVersion (a precondition) and that
// answered with another was stored, not a dry run (which answers at the version it was given),
// and so was such a patch; one answered at that version, one without a precondition (or with
// "0", unconditional), and a JSON patch stay unknown.
func TestGKEUpdateDryRun(t *testing.T) {
	t.Parallel()
	entry := func(method, resource, requested, answered string) string {
		meta := func(rv string) string {
			if rv == "" {
				return `{"name":"d","namespace":"a"}`
			}
			return `{"name":"d","namespace":"a","resourceVersion":"` + rv + `"}`
		}
		return `{"insertId":"u1","protoPayload":{"@type":"type.googleapis.com/google.cloud.audit.AuditLog","authenticationInfo":{"principalEmail":"alice@example.com"},` +
			`"methodName":"io.k8s.apps.v1.deployments.` + method + `","resourceName":"apps/v1/namespaces/a/deployments/` + resource + `","serviceName":"k8s.io",` +
			`"request":{"@type":"apps.k8s.io/v1.Deployment","apiVersion":"apps/v1","kind":"Deployment","metadata":` + meta(requested) + `},` +
			`"response":{"@type":"apps.k8s.io/v1.Deployment","apiVersion":"apps/v1","kind":"Deployment","metadata":` + meta(answered) + `}},` +
			`"timestamp":"2026-08-04T10:00:00Z"}`
	}
	for _, tt := range []struct {
		name, entry string
		lost        bool
	}{
		{"stored: answered with another version", entry("update", "d", "5", "6"), false},
		{"a status update stored", entry("status.update", "d/status", "5", "7"), false},
		{"answered at its precondition's version: a dry run or a no-op", entry("update", "d", "5", "5"), true},
		{"the same version, written otherwise", entry("update", "d", "05", "5"), true},
		{"no precondition", entry("update", "d", "", "6"), true},
		// "0" asks for none: the update is unconditional, and a dry run answers with the
		// version the object has (Store.Update's doUnconditionalUpdate).
		{"an unconditional update", entry("update", "d", "0", "6"), true},
		// A patch whose body gives a resourceVersion sets the patched object's, which the
		// store compares as an update's.
		{"a patch with a precondition, stored", entry("patch", "d", "5", "6"), false},
		{"a status patch with a precondition, stored", entry("status.patch", "d/status", "5", "7"), false},
		{"a patch answered at its precondition's version", entry("patch", "d", "5", "5"), true},
		{"a patch without a precondition", entry("patch", "d", "", "6"), true},
		// A merge patch gives no kind (kubectl patch, kubectl label --resource-version).
		{"a merge patch with a precondition, stored", strings.Replace(entry("patch", "d", "", "6"), `"request":{"@type":"apps.k8s.io/v1.Deployment","apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"a"}}`, `"request":{"@type":"apps.k8s.io/v1.Deployment","metadata":{"resourceVersion":"5","labels":{"a":"b"}}}`, 1), false},
		{"a JSON patch", strings.Replace(entry("patch", "d", "", "6"), `"request":{"@type":"apps.k8s.io/v1.Deployment","apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d","namespace":"a"}}`, `"request":[{"op":"test","path":"/metadata/resourceVersion","value":"5"}]`, 1), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, lines := readAll(t, "gke.json", []byte(tt.entry+"\n"), export.Auto)
			if len(lines) != 1 || lines[0].err != nil {
				t.Fatalf("lines %+v", lines)
			}
			if got := lines[0].loss.Lost.Has(auditlog.LostDryRun); got != tt.lost {
				t.Errorf("whether it was a dry run lost: %v, want %v", got, tt.lost)
			}
		})
	}
}
