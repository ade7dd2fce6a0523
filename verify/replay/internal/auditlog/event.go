package auditlog

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"k8s.io/apiserver/pkg/authentication/serviceaccount"

	"github.com/vapc-dev/vapc/verify"
)

// Audit stages (audit.k8s.io/v1).
const (
	StageRequestReceived  = "RequestReceived"
	StageResponseStarted  = "ResponseStarted"
	StageResponseComplete = "ResponseComplete"
	StagePanic            = "Panic"
)

// Audit levels (audit.k8s.io/v1).
const (
	LevelNone            = "None"
	LevelMetadata        = "Metadata"
	LevelRequest         = "Request"
	LevelRequestResponse = "RequestResponse"
)

// AnnotationTruncated marks an event whose request and response objects kube-apiserver's
// truncating audit backend (--audit-log-truncate-enabled) dropped, the event being larger than
// --audit-log-truncate-max-event-size (k8s.io/apiserver/plugin/pkg/audit/truncate).
const AnnotationTruncated = "audit.k8s.io/truncated"

// Truncated says whether the truncating backend dropped the event's objects.
func (e *Event) Truncated() bool { return e.Annotations[AnnotationTruncated] == "true" }

// Event is an audit.k8s.io/v1 Event, decoded lazily: the fields a replay needs to classify a
// request are decoded, the request and response objects are kept as raw JSON and decoded only
// when a policy or the State needs them.
type Event struct {
	Kind             string            `json:"kind"`
	APIVersion       string            `json:"apiVersion"`
	Level            string            `json:"level"`
	AuditID          string            `json:"auditID"`
	Stage            string            `json:"stage"`
	RequestURI       string            `json:"requestURI"`
	Verb             string            `json:"verb"`
	User             verify.UserInfo   `json:"user"`
	ImpersonatedUser *verify.UserInfo  `json:"impersonatedUser,omitempty"`
	ObjectRef        *ObjectRef        `json:"objectRef,omitempty"`
	ResponseStatus   *Status           `json:"responseStatus,omitempty"`
	RequestObject    json.RawMessage   `json:"requestObject,omitempty"`
	ResponseObject   json.RawMessage   `json:"responseObject,omitempty"`
	StageTimestamp   string            `json:"stageTimestamp,omitempty"`
	Annotations      map[string]string `json:"annotations,omitempty"`
	// RequestReceivedTimestamp is when the apiserver received the request.
	RequestReceivedTimestamp string `json:"requestReceivedTimestamp,omitempty"`
	// UserAgent is the client's User-Agent: the field manager names the manager of a write
	// without fieldManager after it.
	UserAgent string `json:"userAgent,omitempty"`
	// Loss is what the export the event was read from does not carry of it (the zero Loss
	// for a log backend's event); the reader of the export sets it on the line.
	Loss Loss `json:"-"`
}

// ObjectRef is the object an audited request is about.
type ObjectRef struct {
	Resource    string `json:"resource,omitempty"`
	Namespace   string `json:"namespace,omitempty"`
	Name        string `json:"name,omitempty"`
	APIGroup    string `json:"apiGroup,omitempty"`
	APIVersion  string `json:"apiVersion,omitempty"`
	Subresource string `json:"subresource,omitempty"`
}

// Status is the part of a response status (metav1.Status) a replay reads.
type Status struct {
	Code    int32  `json:"code"`
	Status  string `json:"status,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Details name the object of a refusal (the name the server generated for a refused
	// create with generateName), or of a DELETE that removed it.
	Details *StatusDetails `json:"details,omitempty"`
}

// StatusDetails is the part of a status's details a replay reads.
type StatusDetails struct {
	Name  string `json:"name,omitempty"`
	Group string `json:"group,omitempty"`
	Kind  string `json:"kind,omitempty"`
	// UID is the uid of the object a DELETE removed: the store answers a DELETE that removes
	// its object with a Status that names it, which the event's responseStatus holds at every
	// level (audit.LogResponseObject).
	UID string `json:"uid,omitempty"`
}

// Received is when the apiserver received the request (the end of its last stage when the
// event does not say); the zero time when the event has neither. When the export the event was
// read from lost it, it is the earliest the request can have been received (receivedBound).
func (e *Event) Received() time.Time {
	if e.Loss.Lost.Has(LostReceived) {
		return e.receivedBound()
	}
	if t := ParseTime(e.RequestReceivedTimestamp); !t.IsZero() {
		return t
	}
	return ParseTime(e.StageTimestamp)
}

// ParseTime reads a timestamp of an event; the zero time when there is none.
func ParseTime(s string) time.Time {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}
	}
	return t
}

// Code returns the response code, or 0 when the event has none.
func (e *Event) Code() int32 {
	if e.ResponseStatus == nil {
		return 0
	}
	return e.ResponseStatus.Code
}

// Message returns the response status message.
func (e *Event) Message() string {
	if e.ResponseStatus == nil {
		return ""
	}
	return e.ResponseStatus.Message
}

// Requester is the user admission sees: the impersonated user when there is one. When the
// export lost whom the request impersonated (LostImpersonation), it is the user its
// authorization names when that is another (AuthorizedUsername), with nothing but its name.
func (e *Event) Requester() verify.UserInfo {
	if e.ImpersonatedUser != nil {
		return *e.ImpersonatedUser
	}
	if e.Loss.Lost.Has(LostImpersonation) {
		if name := e.AuthorizedUsername(); name != "" && name != e.User.Username {
			return verify.UserInfo{Username: name}
		}
	}
	return e.User
}

// AnnotationAuthzReason is the audit annotation in which kube-apiserver's authorization filter
// says why it allowed the request (k8s.io/apiserver/pkg/endpoints/filters/authorization.go).
const AnnotationAuthzReason = "authorization.k8s.io/reason"

// rbacSubject is the end of the reason RBAC gives when a binding allowed a request: the
// binding's subject ("RBAC: allowed by ClusterRoleBinding %q of %s %q to %s", the subject as
// describeSubject writes it: `User "alice"`, `ServiceAccount "name/namespace"`;
// k8s.io/kubernetes/pkg/registry/rbac/validation/rule.go).
var rbacSubject = regexp.MustCompile(`^RBAC: allowed by (?:Cluster)?RoleBinding ".*" of (?:Cluster)?Role ".*" to (User|ServiceAccount) ("(?:[^"\\]|\\.)*")$`)

// AuthorizedUsername is the username the request's authorization names: the user admission
// saw, as authorization runs after impersonation. RBAC allowed the request by a binding to a
// User, which applies to that username alone, or to a ServiceAccount, which applies to its
// username alone (appliesToUser). "" when the log does not say.
func (e *Event) AuthorizedUsername() string {
	m := rbacSubject.FindStringSubmatch(e.Annotations[AnnotationAuthzReason])
	if m == nil {
		return ""
	}
	name, err := strconv.Unquote(m[2])
	if err != nil {
		return ""
	}
	if m[1] == "User" {
		return name
	}
	sa, ns, ok := strings.Cut(name, "/")
	if !ok || sa == "" || ns == "" {
		return ""
	}
	return serviceaccount.MakeUsername(ns, sa)
}

// Query returns the request URI's query parameters.
func (e *Event) Query() url.Values {
	i := strings.IndexByte(e.RequestURI, '?')
	if i < 0 {
		return url.Values{}
	}
	q, _ := url.ParseQuery(e.RequestURI[i+1:])
	return q
}

// Final says whether the event is the last record of its request.
func (e *Event) Final() bool { return e.Stage == StageResponseComplete || e.Stage == StagePanic }

// jsonKind names what a field of the kind k is in JSON.
func jsonKind(k reflect.Kind) string {
	switch k {
	case reflect.String:
		return "a string"
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Bool:
		return "a boolean"
	case reflect.Pointer, reflect.Interface:
		return "what the event holds there"
	}
	return "a number"
}

// legacyAudit is how a line of kube-apiserver's legacy log format (--audit-log-format=legacy:
// key="value" pairs after the event's time and "AUDIT:", k8s.io/apiserver/pkg/audit/format.go
// EventString) begins; after an export task's time too (TIMESTAMP MESSAGE).
var legacyAudit = regexp.MustCompile(`^(\S+ ){1,2}AUDIT: id="`)

// LegacyLine says whether a line is one of kube-apiserver's legacy audit log format.
func LegacyLine(line []byte) bool {
	return len(line) > 0 && line[0] >= '0' && line[0] <= '9' && legacyAudit.Match(line)
}

// klogHeader is how a line of klog, kube-apiserver's own log, begins: its severity and date,
// time to the microsecond, thread, file:line] (k8s.io/klog/v2 formatHeader).
var klogHeader = regexp.MustCompile(`^[IWEF]\d{4} \d{2}:\d{2}:\d{2}\.\d{6} +\d+ [^ \]]+:\d+\] `)

// KlogLine says whether a line is one of klog's, kube-apiserver's own log: what kubectl logs
// and the container's log file hold among the audit events where kube-apiserver writes its
// audit log to standard output (--audit-log-path=-), its own log to standard error.
func KlogLine(line []byte) bool {
	return len(line) > 0 && bytes.IndexByte([]byte("IWEF"), line[0]) >= 0 && klogHeader.Match(line)
}

// traceLine is how the lines of a trace after its first begin: kube-apiserver logs a slow
// request's trace (k8s.io/utils/trace) as one klog message of several lines, klog's header on
// the first only, each step and the end on a line "Trace[ID]: " of its own.
var traceLine = regexp.MustCompile(`^Trace\[\d+\]: `)

// TraceLine says whether a line goes on a trace klog began on a line above (traceLine).
func TraceLine(line []byte) bool {
	return bytes.HasPrefix(line, []byte("Trace[")) && traceLine.Match(line)
}

// StructuredLogLine says whether a line is a structured log line of kube-apiserver's process,
// not an audit event: a JSON object with the members "ts" and "msg" and no "auditID", as klog
// writes in kube-apiserver's JSON logging format (--logging-format=json:
// {"ts":1700000000000.1,"caller":"...","msg":"...","v":0}) and the etcd client's logger
// does ({"level":"warn","ts":"...","logger":"etcd-client","caller":"...","msg":"..."}).
func StructuredLogLine(line []byte) bool {
	line = bytes.TrimSpace(line)
	if len(line) < 2 || line[0] != '{' || !bytes.Contains(line, []byte(`"msg"`)) {
		return false
	}
	var members map[string]json.RawMessage
	if json.Unmarshal(line, &members) != nil {
		return false
	}
	_, ts := members["ts"]
	_, msg := members["msg"]
	_, id := members["auditID"]
	return ts && msg && !id
}

// OwnLogLine says whether a line is one of kube-apiserver's own log, which it writes to
// standard error: klog's (KlogLine), a trace's after its first (TraceLine), a structured
// log line (StructuredLogLine). kubectl logs of a kube-apiserver whose audit log goes to
// standard output interleaves them with its events.
func OwnLogLine(line []byte) bool {
	return KlogLine(line) || TraceLine(line) || StructuredLogLine(line)
}

// Decode decodes one log line. It never panics; an error describes why the line is not an
// audit event.
func Decode(line []byte) (*Event, error) {
	ev, ok := decodeEventFast(line)
	if !ok {
		ev = &Event{}
		if err := json.Unmarshal(line, ev); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) && se.Offset >= int64(len(bytes.TrimRight(line, " \t\r\n"))) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("truncated JSON (%d bytes)", len(line))
			}
			var te *json.UnmarshalTypeError
			switch {
			case errors.As(err, &te) && te.Field != "":
				// JSON, but not an event's: say which field.
				return nil, fmt.Errorf("not an audit.k8s.io/v1 Event: %s is a JSON %s, not %s", te.Field, te.Value, jsonKind(te.Type.Kind()))
			case te != nil:
				return nil, fmt.Errorf("not an audit.k8s.io/v1 Event: a JSON %s, not an object", te.Value)
			}
			if LegacyLine(line) {
				return nil, errors.New("a line of kube-apiserver's legacy audit log format (--audit-log-format=legacy), not JSON: it holds no objects, annotations or audit levels to replay")
			}
			return nil, fmt.Errorf("not JSON: %v", err)
		}
	}
	switch {
	case ev.APIVersion != "" && ev.APIVersion != "audit.k8s.io/v1" || ev.Kind != "" && ev.Kind != "Event":
		return nil, fmt.Errorf("not an audit.k8s.io/v1 Event: apiVersion %q, kind %q", ev.APIVersion, ev.Kind)
	case ev.AuditID == "" || ev.Stage == "":
		return nil, fmt.Errorf("not an audit.k8s.io/v1 Event: no auditID or stage")
	}
	if ev.Truncated() && (ev.Level == LevelRequest || ev.Level == LevelRequestResponse) {
		// What is left of it is what level Metadata logs.
		ev.Level, ev.RequestObject, ev.ResponseObject = LevelMetadata, nil, nil
	}
	return ev, nil
}
