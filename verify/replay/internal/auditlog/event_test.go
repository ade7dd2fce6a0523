package auditlog

import (
	"fmt"
	"testing"
)

// TestDecodeTruncated: an event the truncating backend cut is one at level Metadata, whatever
// level its rule gave it; an event that only carries the annotation's key with another value
// is left as it is.
func TestDecodeTruncated(t *testing.T) {
	const line = `{"kind":"Event","apiVersion":"audit.k8s.io/v1","level":%q,"auditID":"a","stage":"ResponseComplete",` +
		`"requestURI":"/api/v1/namespaces/n/configmaps","verb":"create","requestObject":{"kind":"ConfigMap"},"annotations":{"audit.k8s.io/truncated":%q}}`
	for _, tc := range []struct {
		level, value, want string
		objects            bool
	}{
		{LevelRequestResponse, "true", LevelMetadata, false},
		{LevelRequest, "true", LevelMetadata, false},
		{LevelMetadata, "true", LevelMetadata, true}, // (a truncated event has none; kept as logged)
		{LevelRequestResponse, "false", LevelRequestResponse, true},
	} {
		ev, err := Decode([]byte(fmt.Sprintf(line, tc.level, tc.value)))
		if err != nil {
			t.Fatal(err)
		}
		if ev.Level != tc.want || (len(ev.RequestObject) > 0) != tc.objects {
			t.Errorf("%s truncated=%s: level %s, request object %s; want level %s, objects %v", tc.level, tc.value, ev.Level, ev.RequestObject, tc.want, tc.objects)
		}
	}
}

// TestDecodeNotAnEvent: JSON that is not an event is said to be so, with the field that is not
// an event's, not "not JSON".
func TestDecodeNotAnEvent(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ line, want string }{
		{`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a","stage":"ResponseComplete","verb":5}`, "not an audit.k8s.io/v1 Event: verb is a JSON number, not a string"},
		{`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a","stage":"ResponseComplete","objectRef":"pods"}`, "not an audit.k8s.io/v1 Event: objectRef is a JSON string, not an object"},
		{`[{"kind":"Event"}]`, "not an audit.k8s.io/v1 Event: a JSON array, not an object"},
		{`{"kind":"Event",x}`, `not JSON: invalid character 'x' looking for beginning of object key string`},
		// A line of the legacy format among JSON lines (a log backend switched formats).
		{`2026-12-01T17:05:18.651294472Z AUDIT: id="253a9073-d086-40ee-9578-56a4faec3372" stage="ResponseComplete" ip="127.0.0.1" method="get"`,
			"a line of kube-apiserver's legacy audit log format (--audit-log-format=legacy), not JSON: it holds no objects, annotations or audit levels to replay"},
	} {
		if _, err := Decode([]byte(tt.line)); err == nil || err.Error() != tt.want {
			t.Errorf("Decode(%s) = %v, want %q", tt.line, err, tt.want)
		}
	}
}

// TestAuthorizedUsername: the user RBAC's reason names when a binding to a User or a
// ServiceAccount allowed the request, and no other.
func TestAuthorizedUsername(t *testing.T) {
	for _, tc := range []struct{ reason, want string }{
		{`RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "edit" to User "alice"`, "alice"},
		{`RBAC: allowed by RoleBinding "b/team" of ClusterRole "edit" to User "alice@example.com"`, "alice@example.com"},
		{`RBAC: allowed by RoleBinding "b/kube-system" of Role "r" to ServiceAccount "node-controller/kube-system"`, "system:serviceaccount:kube-system:node-controller"},
		{`RBAC: allowed by ClusterRoleBinding "system:controller:node-controller" of ClusterRole "system:controller:node-controller" to ServiceAccount "node-controller/kube-system"`, "system:serviceaccount:kube-system:node-controller"},
		// A name with a quote, as %q writes it.
		{`RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "edit" to User "o\"brien"`, `o"brien`},
		// A binding's name cannot fake the subject: %q escapes its quotes.
		{`RBAC: allowed by ClusterRoleBinding "x\" to User \"root" of ClusterRole "edit" to Group "team"`, ""},
		{`RBAC: allowed by ClusterRoleBinding "b" of ClusterRole "edit" to Group "system:masters"`, ""},
		{`RBAC: allowed by RoleBinding "b/team" of Role "r" to ServiceAccount "sa/"`, ""},
		{"", ""}, // system:masters, the Node authorizer
		{`allowed by webhook to User "alice"`, ""},
	} {
		e := &Event{Annotations: map[string]string{AnnotationAuthzReason: tc.reason}}
		if got := e.AuthorizedUsername(); got != tc.want {
			t.Errorf("AuthorizedUsername of %q = %q, want %q", tc.reason, got, tc.want)
		}
	}
}

// TestKlogLine tells klog's lines (k8s.io/klog/v2's header: severity, date, time to the
// microsecond, thread, file:line]) from what merely begins like one.
func TestKlogLine(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		line string
		want bool
	}{
		{"I1204 10:00:01.123456       1 controller.go:615] quota admission added evaluator", true},
		{"W0101 00:00:00.000000 17 dispatcher.go:217] Failed calling webhook", true},
		{"E1204 10:00:02.500000   12345 cacher.go:478] cacher (pods): unexpected ListAndWatch error", true},
		{"F1204 10:00:02.500000 1 server.go:1] fatal", true},
		{"E1204 10:00:02 not klog's header", false},
		{"I1204 10:00:01.123456 controller.go:615] no thread", false},
		{`{"kind":"Event","apiVersion":"audit.k8s.io/v1"}`, false},
		{"", false},
	} {
		if got := KlogLine([]byte(tt.line)); got != tt.want {
			t.Errorf("KlogLine(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}

// TestOwnLogLine tells the lines of kube-apiserver's own log that are not klog's (a trace's
// later lines, structured JSON lines) from events and from what merely looks like them.
func TestOwnLogLine(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		line string
		want bool
	}{
		{"I1204 10:00:01.123456       1 controller.go:615] quota admission added evaluator", true},
		{`Trace[7816759]: ---"limitedReadBody succeeded" len:629048 11ms (12:35:37.211)`, true},
		{`Trace[1]: [611.2ms] [611.2ms] END`, true},
		{`{"level":"warn","ts":"2026-11-21T12:40:39.000Z","logger":"etcd-client","caller":"v3@v3.6.5/retry_interceptor.go:63","msg":"retrying of unary invoker failed"}`, true},
		{` {"ts":1763728839000.123,"caller":"app/server.go:170","msg":"Version info","v":0} `, true},
		{`Trace[x]: not a trace`, false},
		{`Trace[1]:no space`, false},
		{`{"ts":1,"msg":"m","auditID":"a"}`, false},
		{`{"level":"warn","msg":"no ts"}`, false},
		{`{"ts":1,"msg":"cut`, false},
		{`{"kind":"Event","apiVersion":"audit.k8s.io/v1","auditID":"a","stage":"ResponseComplete"}`, false},
		{"", false},
	} {
		if got := OwnLogLine([]byte(tt.line)); got != tt.want {
			t.Errorf("OwnLogLine(%q) = %v, want %v", tt.line, got, tt.want)
		}
	}
}
