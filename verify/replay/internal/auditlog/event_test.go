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
	} {
		if _, err := Decode([]byte(tt.line)); err == nil || err.Error() != tt.want {
			t.Errorf("Decode(%s) = %v, want %q", tt.line, err, tt.want)
		}
	}
}
