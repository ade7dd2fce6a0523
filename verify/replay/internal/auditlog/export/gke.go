package export

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// GKE writes the Kubernetes API server's audit events to Cloud Logging as Cloud Audit Logs:
// one LogEntry an event, in the log cloudaudit.googleapis.com/activity (most writes) or
// cloudaudit.googleapis.com/data_access (reads, and the writes GKE counts as data writes, such
// as a pod's status updates: off until DATA_WRITE is enabled)
// (https://cloud.google.com/kubernetes-engine/docs/how-to/audit-logging,
// https://cloud.google.com/kubernetes-engine/docs/concepts/audit-policy). The entry
// (https://cloud.google.com/logging/docs/reference/v2/rest/v2/LogEntry) carries the event's
// time (timestamp), its annotations (labels), its audit ID (operation.id, insertId) and which
// stage it is (operation.first, operation.last), and an AuditLog payload
// (https://cloud.google.com/logging/docs/reference/audit/auditlog/rest/Shared.Types/AuditLog)
// of serviceName "k8s.io": methodName io.k8s.GROUP.VERSION.RESOURCE[.SUBRESOURCE].VERB,
// resourceName GROUP/VERSION[/namespaces/NAMESPACE]/RESOURCE[/NAME[/SUBRESOURCE]] (group
// "core" for the core group), the user's name (authenticationInfo.principalEmail, and the
// name of the user it impersonated, authenticationInfo.authoritySelector), the client
// (requestMetadata.callerIp, callerSuppliedUserAgent), the request and response objects
// (request, response, with a "@type" member added) and the outcome as a google.rpc.Status
// (status: its code is gRPC's, https://github.com/googleapis/googleapis/blob/master/google/rpc/code.proto).
// `gcloud logging read --format=json` prints entries as one array, newest first unless
// --order=asc (https://cloud.google.com/sdk/gcloud/reference/logging/read); a log sink to
// Cloud Storage writes them as JSON lines
// (https://cloud.google.com/logging/docs/export/storage).
//
// An entry is mapped to the event as far as it goes: methodName to the verb, resourceName to
// objectRef (and the request URI, without its query), principalEmail to the user's name,
// request and response to the objects, the status (or the Status object of the response) to
// responseStatus, labels to annotations, operation.id (else insertId) to the audit ID,
// timestamp to stageTimestamp. What an entry does not carry is lost (auditlog.Lost), never
// guessed: the user's groups (and so whether they are a member of system:masters), uid and
// extra, when the request was received, the audit level (the event's is the lowest its
// objects allow), the query of the request URI (dryRun, fieldManager, a deletecollection's
// selectors), and the HTTP code where neither the response nor the status names it (whether a
// successful update or patch created its object, 201, or not). Falco's k8saudit-gke plugin
// maps entries to events too (https://github.com/falcosecurity/plugins/tree/main/plugins/k8saudit-gke),
// filling in what is lost with assumptions a replay cannot make.

// ExportGKE names GKE's export in what a replay says of it.
const ExportGKE = "GKE Cloud Logging"

// gkeLost is what every GKE entry loses.
const gkeLost = auditlog.LostGroups | auditlog.LostUID | auditlog.LostExtra | auditlog.LostReceived | auditlog.LostLevel | auditlog.LostQuery | auditlog.LostDryRun

// logEntry is the part of a LogEntry a replay reads.
type logEntry struct {
	InsertID     string            `json:"insertId"`
	Timestamp    string            `json:"timestamp"`
	Labels       map[string]string `json:"labels"`
	Operation    *logOperation     `json:"operation"`
	ProtoPayload *logPayload       `json:"protoPayload"`
	Split        *logSplit         `json:"split"`
	// JSONPayload and TextPayload are the payloads of entries of other logs than the audit
	// logs (a LogEntry's payload is one of protoPayload, jsonPayload, textPayload): set, not
	// read.
	JSONPayload json.RawMessage `json:"jsonPayload"`
	TextPayload json.RawMessage `json:"textPayload"`
}

// logSplit is a LogSplit: Cloud Logging splits an audit entry larger than its size limit
// into several, each with the entry's members but its payload's, the same split.uid, its
// index, and the number of pieces; the payload's request, response and metadata are spread
// over them, a string cut at any character, a list's elements split by position, a boolean
// or a number in one piece only; the payload's other members are in each
// (https://cloud.google.com/logging/docs/audit/split-logs).
type logSplit struct {
	UID         string `json:"uid"`
	Index       int    `json:"index"`
	TotalSplits int    `json:"totalSplits"`
}

// logOperation is a LogEntryOperation: the audit ID, and which stage.
type logOperation struct {
	ID    string `json:"id"`
	First bool   `json:"first"`
	Last  bool   `json:"last"`
}

// logPayload is the part of an AuditLog payload a replay reads.
type logPayload struct {
	Type               string `json:"@type"`
	ServiceName        string `json:"serviceName"`
	MethodName         string `json:"methodName"`
	ResourceName       string `json:"resourceName"`
	AuthenticationInfo struct {
		PrincipalEmail    string `json:"principalEmail"`
		AuthoritySelector string `json:"authoritySelector"`
	} `json:"authenticationInfo"`
	RequestMetadata struct {
		CallerIP                string `json:"callerIp"`
		CallerSuppliedUserAgent string `json:"callerSuppliedUserAgent"`
	} `json:"requestMetadata"`
	Status   *rpcStatus      `json:"status"`
	Request  json.RawMessage `json:"request"`
	Response json.RawMessage `json:"response"`
}

// rpcStatus is a google.rpc.Status.
type rpcStatus struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// gkeEvent is the audit.k8s.io/v1 Event an entry maps to.
type gkeEvent struct {
	Kind             string              `json:"kind"`
	APIVersion       string              `json:"apiVersion"`
	Level            string              `json:"level"`
	AuditID          string              `json:"auditID"`
	Stage            string              `json:"stage"`
	RequestURI       string              `json:"requestURI"`
	Verb             string              `json:"verb"`
	User             gkeUser             `json:"user"`
	ImpersonatedUser *gkeUser            `json:"impersonatedUser,omitempty"`
	SourceIPs        []string            `json:"sourceIPs,omitempty"`
	UserAgent        string              `json:"userAgent,omitempty"`
	ObjectRef        *auditlog.ObjectRef `json:"objectRef,omitempty"`
	ResponseStatus   *auditlog.Status    `json:"responseStatus,omitempty"`
	RequestObject    json.RawMessage     `json:"requestObject,omitempty"`
	ResponseObject   json.RawMessage     `json:"responseObject,omitempty"`
	StageTimestamp   string              `json:"stageTimestamp"`
	Annotations      map[string]string   `json:"annotations,omitempty"`

	// request and response are the payload's objects as the entry holds them: writeEvent
	// writes them without the member Cloud Logging added, and sets RequestObject and
	// ResponseObject to what it wrote.
	request, response payloadObject
	// dryRunLabelled says the entry has GKE's dry-run label (auditlog.Loss.DryRunLabelled).
	dryRunLabelled bool
}

// gkeUser is the part of a user an entry carries: the name.
type gkeUser struct {
	Username string `json:"username"`
}

// otherEntry is an entry a sink or a query holds besides the Kubernetes API server's audit
// entries, which is counted and skipped: another service's audit entry (a query of
// cloudaudit.googleapis.com without protoPayload.serviceName="k8s.io" holds the project's
// other services' too: compute.googleapis.com, ...), or an entry of another log than the audit
// logs (a sink of the cluster's entries, resource.labels.cluster_name alone, holds its
// containers' and nodes' logs, its Kubernetes Events, the autoscaler's visibility log: a
// jsonPayload or a textPayload, or a protoPayload of another type). why says which.
type otherEntry struct{ why string }

func (e *otherEntry) Error() string { return e.why }

func otherService(service string) error {
	return &otherEntry{fmt.Sprintf("a Cloud Audit Logs entry of %s, not of the Kubernetes API server (k8s.io)", service)}
}

func otherLog(payload string) error {
	return &otherEntry{fmt.Sprintf("a Cloud Logging entry of another log than the audit logs (its payload: %s), not an audit entry of the Kubernetes API server", payload)}
}

// gkeRecord maps one entry's JSON to the record of its event.
func gkeRecord(raw []byte, line int, where string) record {
	ev, at, lost, field, err := mapGKE(raw)
	if err != nil {
		if other, ok := err.(*otherEntry); ok {
			return record{line: line, skip: other.why}
		}
		return record{line: line, err: recordError(where, field, err)}
	}
	data := writeEvent(ev)
	dry := dryCheckOf(ev)
	putBuf(raw) // the entry's bytes: what the event holds of them is copied
	return record{data: data, line: line, at: at, loss: auditlog.Loss{Export: ExportGKE, Lost: lost, DryRunLabelled: ev.dryRunLabelled, Structs: true}, dry: dry}
}

// mapGKE maps an entry to its event; field names the entry's member an error is about.
func mapGKE(raw []byte) (ev *gkeEvent, at time.Time, lost auditlog.Lost, field string, err error) {
	e, ok := decodeEntry(raw)
	if !ok {
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, at, 0, "", fmt.Errorf("not a Cloud Logging LogEntry: %v", err)
		}
	}
	p := e.ProtoPayload
	switch {
	case p == nil && e.JSONPayload != nil:
		return nil, at, 0, "", otherLog("jsonPayload")
	case p == nil && e.TextPayload != nil:
		return nil, at, 0, "", otherLog("textPayload")
	case p == nil:
		return nil, at, 0, "protoPayload", errors.New("missing: not a Cloud Audit Logs entry")
	case p.Type != "" && p.Type != "type.googleapis.com/google.cloud.audit.AuditLog" && p.ServiceName == "" && p.MethodName == "":
		// Another log's protoPayload (an App Engine request log's, ...), not an AuditLog.
		return nil, at, 0, "", otherLog("a protoPayload of " + p.Type)
	case p.Type != "" && p.Type != "type.googleapis.com/google.cloud.audit.AuditLog":
		return nil, at, 0, "protoPayload.@type", fmt.Errorf("%q is not type.googleapis.com/google.cloud.audit.AuditLog", p.Type)
	case p.ServiceName != "k8s.io" && (p.ServiceName != "" || !strings.HasPrefix(p.MethodName, "io.k8s.")):
		// Without a serviceName, a method of the Kubernetes API's (io.k8s.*) names it.
		return nil, at, 0, "protoPayload.serviceName", otherService(p.ServiceName)
	}
	at, err = time.Parse(time.RFC3339Nano, e.Timestamp)
	if err != nil {
		return nil, at, 0, "timestamp", fmt.Errorf("%q is not an RFC 3339 time", e.Timestamp)
	}
	ev = &gkeEvent{Kind: "Event", APIVersion: "audit.k8s.io/v1", Stage: auditlog.StageResponseComplete,
		StageTimestamp: at.UTC().Format(time.RFC3339Nano), Annotations: e.Labels}
	ev.AuditID = e.InsertID
	if o := e.Operation; o != nil {
		if o.ID != "" {
			ev.AuditID = o.ID
		}
		if o.First && !o.Last {
			ev.Stage = auditlog.StageResponseStarted
		}
	}
	if ev.AuditID == "" {
		return nil, at, 0, "operation.id", errors.New("missing, and so is insertId: no audit ID")
	}
	ev.User.Username = p.AuthenticationInfo.PrincipalEmail
	if a := p.AuthenticationInfo.AuthoritySelector; a != "" {
		// A request that impersonated another user: its entry names the authenticated user
		// (principalEmail) and the user impersonated (authoritySelector, "the authority
		// selector specified by the requestor"), as the authorizer's reason (labels) names the
		// impersonated user (kyma-project/kyma#2811). Admission sees the impersonated user;
		// their groups, uid and extra are lost as every user's are.
		ev.ImpersonatedUser = &gkeUser{Username: a}
	}
	if p.RequestMetadata.CallerIP != "" {
		ev.SourceIPs = []string{p.RequestMetadata.CallerIP}
	}
	ev.UserAgent = p.RequestMetadata.CallerSuppliedUserAgent
	verb, ref, uri, field, err := mapResource(p.MethodName, p.ResourceName)
	if err != nil {
		return nil, at, 0, field, err
	}
	ev.Verb, ev.ObjectRef, ev.RequestURI = verb, ref, uri
	ev.request = payloadObjectOf(p.Request)
	ev.response = payloadObjectOf(p.Response)
	if sp := e.Split; sp != nil {
		// A piece of an entry Cloud Logging split (logSplit): its objects are parts of the
		// request's and the response's, which the replay does not put together (a field
		// that is not in this piece may be in another), and are dropped: the event is
		// replayed as at level Metadata (the level lost by the export), from whichever piece
		// comes first, each of the others the same event again, a duplicate. The audit ID is
		// the operation's, else the split's (insertId has each piece's index appended).
		ev.request, ev.response = payloadObject{}, payloadObject{}
		if (e.Operation == nil || e.Operation.ID == "") && sp.UID != "" {
			ev.AuditID = sp.UID
		}
	}
	switch {
	case ev.response.raw != nil:
		ev.Level = auditlog.LevelRequestResponse
	case ev.request.raw != nil:
		ev.Level = auditlog.LevelRequest
	default:
		ev.Level = auditlog.LevelMetadata
	}
	lost = gkeLost
	if e.Split != nil {
		lost |= auditlog.LostObjects // dropped above
	}
	switch label := e.Labels[gkeDryRunLabel]; {
	case label != "":
		// GKE labels a dry run's entry (kubectl --dry-run=server, ?dryRun=All): its URI says
		// so as the log backend's would ("false": known no dry run). The label is GKE's, not
		// an annotation of the server's. An entry without it may be of a GKE that did not
		// label dry runs yet: not known.
		if label != "false" {
			ev.RequestURI += "?dryRun=All"
		}
		lost &^= auditlog.LostDryRun
		ev.dryRunLabelled = true
		ev.Annotations = maps.Clone(ev.Annotations)
		delete(ev.Annotations, gkeDryRunLabel)
	case verb == "delete" && deleteOptions(ev.request.raw):
		// A delete sent with a body reads its options from the body alone (the handler
		// ignores the query), and the entry holds that body: its dryRun is known.
		lost &^= auditlog.LostDryRun
	}
	var exact, messageLost bool
	ev.ResponseStatus, exact, messageLost = gkeStatus(verb, p.Status, ev.response.raw) // its "@type" is not read
	if !exact {
		lost |= auditlog.LostCode
	}
	if messageLost {
		lost |= auditlog.LostMessage
	}
	return ev, at, lost, "", nil
}

// gkeYAML is gcloud logging read's default output, YAML documents, which vapc does not read
// (NewReader says to print JSON): detected, never read.
const gkeYAML Format = "gke-yaml"

// gcloudYAML is how gcloud logging read's YAML begins: an entry's members, sorted, at the
// start of a line, after a document marker.
var gcloudYAML = regexp.MustCompile(`^(---\s*\n)?(insertId|labels|logName|operation|protoPayload|receiveTimestamp|resource|severity|timestamp):[ \n]`)

// gkeDryRunLabel is the label GKE puts on the entries of dry-run requests
// (https://cloud.google.com/kubernetes-engine/docs/how-to/audit-logging: "GKE populates these
// audit entries with the command.gke.io/dryRun label").
const gkeDryRunLabel = "command.gke.io/dryRun"

// deleteOptions says whether a request's object is a DeleteOptions (by its kind, or by the
// "@type" GKE gives it).
func deleteOptions(raw []byte) bool {
	if v, ok := member(raw, "kind"); ok && string(v) == `"DeleteOptions"` {
		return true
	}
	v, ok := member(raw, "@type")
	return ok && bytes.HasSuffix(v, []byte(`DeleteOptions"`))
}

// mapResource reads the verb, the object reference and the request URI from an entry's
// methodName and resourceName. The method is the API group's domain reversed (io.k8s. before
// a built-in group: io.k8s.core, io.k8s.apps, io.k8s.authorization.rbac; a custom resource's
// group alone: com.coreos.database.etcd for etcd.database.coreos.com), the version, the
// resource, the subresource and the verb; the resource name begins with the group and the
// version, which is how the method's parts are found (a custom resource's version may be any
// name).
func mapResource(method, name string) (verb string, ref *auditlog.ObjectRef, uri, field string, err error) {
	segs := strings.Split(method, ".")
	verb = segs[len(segs)-1]
	parts := strings.Split(name, "/")
	v := methodVersion(segs, parts)
	if v < 0 {
		if path, ok := nonResourcePath(segs, name); ok {
			return verb, nil, path, "", nil
		}
		if len(parts) < 3 {
			return "", nil, "", "protoPayload.methodName", fmt.Errorf("%q names no resource, and resourceName %q no path", method, name)
		}
		return "", nil, "", "protoPayload.resourceName", fmt.Errorf("%q is not GROUP/VERSION/...: its version %s is not in methodName %q", name, parts[1], method)
	}
	resource := segs[v+1]
	sub := ""
	if v+3 < len(segs) {
		sub = strings.Join(segs[v+2:len(segs)-1], ".")
	}
	ref = &auditlog.ObjectRef{Resource: resource, APIVersion: parts[1], Subresource: sub}
	if parts[0] != "core" {
		ref.APIGroup = parts[0]
	}
	rest := parts[2:]
	if resource != "namespaces" && rest[0] == "namespaces" && len(rest) >= 3 {
		ref.Namespace, rest = rest[1], rest[2:]
	}
	var proxied []string
	if sub == "proxy" && len(rest) > 3 && rest[2] == sub {
		// A proxy's path goes on past the subresource (nodes/NAME/proxy/metrics/cadvisor):
		// the request URI keeps it.
		proxied, rest = rest[3:], rest[:3]
	}
	if rest[0] != resource || len(rest) > 3 {
		return "", nil, "", "protoPayload.resourceName", fmt.Errorf("%q does not name the resource %s of methodName %q", name, resource, method)
	}
	if len(rest) > 1 {
		ref.Name = rest[1]
	}
	if len(rest) > 2 {
		if sub != "" && rest[2] != sub {
			return "", nil, "", "protoPayload.resourceName", fmt.Errorf("%q names the subresource %s, methodName %q %s", name, rest[2], method, sub)
		}
		ref.Subresource = rest[2]
	}
	// A create is sent to its collection (its objectRef names the object it creates), but
	// for a subresource's (an eviction, a binding, a TokenRequest); a list or a watch too (its
	// objectRef names the object a field selector on metadata.name picks).
	inPath := ref.Name != "" && (verb != "create" || ref.Subresource != "") && verb != "list" && verb != "watch"
	if resource == "namespaces" && inPath {
		ref.Namespace = ref.Name // as kube-apiserver's request info gives it
	}
	var b strings.Builder
	if ref.APIGroup == "" {
		b.WriteString("/api/" + ref.APIVersion)
	} else {
		b.WriteString("/apis/" + ref.APIGroup + "/" + ref.APIVersion)
	}
	if ref.Namespace != "" && resource != "namespaces" {
		b.WriteString("/namespaces/" + ref.Namespace)
	}
	b.WriteString("/" + resource)
	if inPath {
		b.WriteString("/" + ref.Name)
	}
	if ref.Subresource != "" {
		b.WriteString("/" + ref.Subresource)
	}
	for _, p := range proxied {
		b.WriteString("/" + p)
	}
	return verb, ref, b.String(), "", nil
}

// methodVersion is the index of the version among the parts of a method (segs), which the
// resource name (parts: GROUP/VERSION/...) names, followed by at least the resource and the
// verb; -1 when it has none.
func methodVersion(segs, parts []string) int {
	if len(parts) < 3 || parts[1] == "" {
		return -1
	}
	for i := len(segs) - 3; i >= 0; i-- {
		if segs[i] == parts[1] {
			return i
		}
	}
	return -1
}

// nonResourcePath is the path of a request for no resource (a health check, discovery, a
// scanner's probe): its method is io.k8s.VERB, and its resource name the path, which GKE
// writes without its leading slash (readyz, api/v1); false for another method.
func nonResourcePath(segs []string, name string) (string, bool) {
	switch {
	case strings.HasPrefix(name, "/"):
		return name, true
	case len(segs) == 3 && segs[0] == "io" && segs[1] == "k8s":
		return "/" + name, true
	}
	return "", false
}

// payloadObject is an object of an AuditLog payload as the entry holds it (white space
// around it trimmed): the event's object but for the member "@type" that Cloud Logging adds,
// raw[from:to] (with the comma that separated it), which the event leaves out.
type payloadObject struct {
	raw      []byte
	from, to int
}

// payloadObjectOf is the object of a payload's member; its raw is nil when there is none.
func payloadObjectOf(raw json.RawMessage) payloadObject {
	raw = bytes.TrimSpace(raw)
	if !hasObject(raw) {
		return payloadObject{}
	}
	if raw[0] != '{' {
		return payloadObject{raw: raw}
	}
	from, to, ok := memberCut(raw, "@type")
	if !ok {
		return payloadObject{raw: raw}
	}
	return payloadObject{raw: raw, from: from, to: to}
}

// size is the length of the object without "@type".
func (o payloadObject) size() int { return len(o.raw) - (o.to - o.from) }

// appendTo appends the object without "@type" to dst.
func (o payloadObject) appendTo(dst []byte) []byte {
	return append(append(dst, o.raw[:o.from]...), o.raw[o.to:]...)
}

// dropMember is the object raw without its member of the name given, and without the comma
// that separated it; raw as it is when it has none.
func dropMember(raw []byte, name string) []byte {
	from, to, ok := memberCut(raw, name)
	if !ok {
		return raw
	}
	return append(append(make([]byte, 0, len(raw)-(to-from)), raw[:from]...), raw[to:]...)
}

// memberCut is where the member of the object raw of the name given, and the comma that
// separated it, begin and end; false when it has none.
func memberCut(raw []byte, name string) (from, to int, ok bool) {
	keyAt, start, ok := memberAt(raw, name)
	if !ok {
		return 0, 0, false
	}
	end, ok := valueEnd(raw, start)
	if !ok {
		return 0, 0, false
	}
	// The comma after it, or else the one before it.
	if after := skipSpace(raw, end); after < len(raw) && raw[after] == ',' {
		end = skipSpace(raw, after+1)
	} else if before := bytes.LastIndexByte(raw[:keyAt], ','); before >= 0 && len(bytes.TrimSpace(raw[before+1:keyAt])) == 0 {
		keyAt = before
	}
	return keyAt, end, true
}

func hasObject(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// gkeStatus is the response status of an entry, and whether its HTTP code is exact. A Status
// response names it; a success is 201 for a create (kube-apiserver's create handler answers
// nothing else) and a 2xx otherwise; a failure's gRPC code gives the HTTP code where only one
// Kubernetes code maps to it (google/rpc/code.proto's HTTP mapping), or its message names it
// (a Kubernetes StatusReason or an HTTP reason phrase that maps to that gRPC code), or the
// message is a policy's denial that only one code fits; otherwise the code is not known (see
// grpcDefaultHTTP). messageLost says the failure's message is not kube-apiserver's but its
// reason, a description of its gRPC code or none ("Invalid", "Permission denied"): what
// refused the request (a policy's denial names itself, "... is forbidden: ...") is not in it.
func gkeStatus(verb string, st *rpcStatus, response json.RawMessage) (status *auditlog.Status, exact, messageLost bool) {
	if s, ok := statusResponse(response); ok && s.Code != 0 {
		return s, true, false
	}
	if st == nil || st.Code == 0 {
		if verb == "create" {
			return &auditlog.Status{Code: http.StatusCreated}, true, false
		}
		return &auditlog.Status{Code: http.StatusOK}, verb == "get" || verb == "list" || verb == "watch", false
	}
	out := &auditlog.Status{Status: "Failure", Message: st.Message}
	messageLost = !strings.Contains(st.Message, ": ")
	if code, ok := reasonCodes[st.Message]; ok && grpcOf(code) == st.Code {
		out.Code = code
		if !strings.Contains(st.Message, " ") {
			out.Reason = st.Message
		}
		return out, true, messageLost
	}
	if code, ok := grpcToHTTP[st.Code]; ok {
		out.Code = code
		return out, true, messageLost
	}
	if code, ok := policyDenialCode(st); ok {
		out.Code = code
		return out, true, messageLost
	}
	// The exact code is lost: the failure keeps the code google/rpc/code.proto maps the gRPC
	// code to, never 0 (which reads as no response at all), and the event says the code is
	// lost, so that the replay does not tell from it whether admission ran.
	out.Code = grpcDefaultHTTP(st.Code)
	return out, false, messageLost
}

// statusResponse reads a response that is a Status; false when it is not one. The members a
// replay reads are walked, encoding/json decodes what the walk cannot read.
func statusResponse(response []byte) (*auditlog.Status, bool) {
	if k, ok := member(response, "kind"); !ok || string(k) != `"Status"` {
		return nil, false
	}
	var s struct {
		Kind string `json:"kind"`
		auditlog.Status
	}
	walked := eachMember(response, func(k, v []byte) bool {
		switch string(k) {
		case "kind":
			return unquoteTo(v, &s.Kind)
		case "code":
			var code int
			ok := parseCode(v, &code)
			s.Code = int32(code)
			return ok
		case "status":
			return unquoteTo(v, &s.Status.Status)
		case "reason":
			return unquoteTo(v, &s.Reason)
		case "message":
			return unquoteTo(v, &s.Message)
		case "details":
			if string(v) == "null" {
				s.Details = nil
				return true
			}
			d := &auditlog.StatusDetails{}
			s.Details = d
			return eachMember(v, func(k, v []byte) bool {
				switch string(k) {
				case "name":
					return unquoteTo(v, &d.Name)
				case "group":
					return unquoteTo(v, &d.Group)
				case "kind":
					return unquoteTo(v, &d.Kind)
				case "uid":
					return unquoteTo(v, &d.UID)
				}
				return true
			})
		}
		return true
	})
	if !walked {
		s = struct {
			Kind string `json:"kind"`
			auditlog.Status
		}{}
		if json.Unmarshal(response, &s) != nil {
			return nil, false
		}
	}
	return &s.Status, s.Kind == "Status"
}

// policyDenialCode is the HTTP code of a ValidatingAdmissionPolicy's denial of the request
// itself, when its gRPC code leaves one: the dispatcher answers such a denial with 401, 403,
// 413 or 422 (validating's reasonToCode), and of those only 422 is an INVALID_ARGUMENT (400,
// the other, is not a policy's).
func policyDenialCode(st *rpcStatus) (int32, bool) {
	if st.Code != 3 || !ownPolicyDenial.MatchString(st.Message) {
		return 0, false
	}
	return http.StatusUnprocessableEntity, true
}

// ownPolicyDenial is the message of a ValidatingAdmissionPolicy's denial of the request itself
// (admission.NewForbidden of the dispatcher's error), not of another request the server made
// while serving it.
var ownPolicyDenial = regexp.MustCompile(`^(\S+ "[^"]*" is forbidden: )?ValidatingAdmissionPolicy '[^']*' (with binding '[^']*' )?denied request: `)

// grpcDefaultHTTP is the HTTP code google/rpc/code.proto maps a gRPC code to.
func grpcDefaultHTTP(code int) int32 {
	switch code {
	case 1:
		return 499 // CANCELLED
	case 3, 9, 11:
		return http.StatusBadRequest // INVALID_ARGUMENT, FAILED_PRECONDITION, OUT_OF_RANGE
	case 4:
		return http.StatusGatewayTimeout
	case 5:
		return http.StatusNotFound
	case 6, 10:
		return http.StatusConflict
	case 7:
		return http.StatusForbidden
	case 8:
		return http.StatusTooManyRequests
	case 12:
		return http.StatusNotImplemented
	case 14:
		return http.StatusServiceUnavailable
	case 16:
		return http.StatusUnauthorized
	}
	return http.StatusInternalServerError // UNKNOWN, INTERNAL, DATA_LOSS, and any other
}

// reasonCodes are Kubernetes' StatusReasons and the HTTP reason phrases of the codes
// kube-apiserver answers with (k8s.io/apimachinery/pkg/api/errors), and their codes.
var reasonCodes = map[string]int32{
	"BadRequest": 400, "Unauthorized": 401, "Forbidden": 403, "NotFound": 404, "MethodNotAllowed": 405,
	"NotAcceptable": 406, "AlreadyExists": 409, "Conflict": 409, "Gone": 410, "Expired": 410,
	"RequestEntityTooLarge": 413, "UnsupportedMediaType": 415, "Invalid": 422, "TooManyRequests": 429,
	"InternalError": 500, "ServiceUnavailable": 503, "Timeout": 504,
}

func init() {
	for _, code := range []int32{400, 401, 403, 404, 405, 406, 409, 410, 413, 415, 422, 429, 500, 503, 504} {
		reasonCodes[http.StatusText(int(code))] = code
	}
}

// grpcOf is the gRPC code google/rpc/code.proto maps an HTTP code to (422, which it does not
// name, is an invalid argument: FAILED_PRECONDITION's "the system is not in a state required"
// is 409's too).
func grpcOf(code int32) int {
	switch code {
	case 400, 422:
		return 3 // INVALID_ARGUMENT
	case 401:
		return 16 // UNAUTHENTICATED
	case 403:
		return 7 // PERMISSION_DENIED
	case 404, 410:
		return 5 // NOT_FOUND
	case 409:
		return 10 // ABORTED (ALREADY_EXISTS is 6: see grpcToHTTP)
	case 429:
		return 8 // RESOURCE_EXHAUSTED
	case 500:
		return 13 // INTERNAL
	case 503:
		return 14 // UNAVAILABLE
	case 504:
		return 4 // DEADLINE_EXCEEDED
	}
	return -1
}

// grpcToHTTP are the gRPC codes only one HTTP code kube-apiserver answers with maps to.
var grpcToHTTP = map[int]int32{
	16: 401, // UNAUTHENTICATED
	7:  403, // PERMISSION_DENIED
	6:  409, // ALREADY_EXISTS
	10: 409, // ABORTED: GKE records a create's AlreadyExists and an update's Conflict so
	8:  429, // RESOURCE_EXHAUSTED
	14: 503, // UNAVAILABLE
	4:  504, // DEADLINE_EXCEEDED
}

func readGKE(in input, yield func(record) bool) {
	if firstByte(in.r) == '[' {
		s := newScanner(in.r)
		s.compact = true // the entries without gcloud's indentation
		readGKEArray(in, s, yield)
		return
	}
	if prettyObject(in.r) {
		// Entries pretty-printed, one after another (an entry copied from the Logs
		// Explorer, as JSON): each a document.
		s := in.scanner()
		s.compact = true
		s.documents(yield, func(doc int) error {
			line := s.startLine()
			where := fmt.Sprintf("entry %d (line %d)", doc, line)
			rec, err := s.element(2*in.maxLine, where, "", func(raw []byte, line int) record { return gkeEntryOf(raw, line, where, false) })
			if err != nil {
				return err
			}
			return send(yield, rec)
		})
		return
	}
	readLines(in, 2*in.maxLine, yield, func(text []byte, num int) record {
		return record{data: append(getBuf(len(text)), text...), line: num, unwrap: gkeUnwrap(fmt.Sprintf("entry at line %d", num))}
	})
}

// gkeEntryOf is the record of an entry's JSON, to unwrap (gkeRecord); with its time when
// timed, for the reverser to tell the array's order before the entries are unwrapped.
func gkeEntryOf(raw []byte, line int, where string, timed bool) record {
	rec := record{data: raw, line: line, unwrap: gkeUnwrap(where), where: where}
	if !timed {
		return rec
	}
	if ts, ok := memberString(raw, "timestamp"); ok {
		rec.at = auditlog.ParseTime(string(ts))
	}
	return rec
}

// gkeUnwrap maps a record's entry to its event.
func gkeUnwrap(where string) func(*record) {
	return func(r *record) { *r = gkeRecord(r.data, r.line, where) }
}

// prettyObject says whether the input begins with an object whose first line holds nothing
// else: pretty-printed, not one a line.
func prettyObject(r *bufio.Reader) bool {
	b, _ := r.Peek(r.Size())
	b = bytes.TrimLeft(b, " \t\r\n")
	line, _, _ := bytes.Cut(b, []byte("\n"))
	return string(bytes.TrimSpace(line)) == "{"
}

// firstByte is the first byte of the input that is not white space, without reading it; 0
// when there is none in what the reader holds.
func firstByte(r *bufio.Reader) byte {
	b, _ := r.Peek(r.Size())
	for _, c := range b {
		if c != ' ' && c != '\t' && c != '\r' && c != '\n' {
			return c
		}
	}
	return 0
}

// readGKEArray reads gcloud's array of entries; newest first, it is reversed (see reverser).
func readGKEArray(in input, s *scanner, yield func(record) bool) {
	readArray(in, s, yield, gkeEntryOf, gkeUnwrap)
}

// readArray reads an array of records (gcloud's entries, az's rows) whose elements entryOf
// makes records of (timed: with their time, for the reverser to tell the array's order), to
// unwrap as unwrap makes it; newest first, the array is reversed (see reverser). What the
// reader finds of a newest-first array read whole is kept in in.arrays: the readers after
// this one read its entries back without scanning the array (readKnownArray). Arrays one
// after another (each hour's query appended with >> to one file) are read one after another,
// each on its own, and none is kept.
func readArray(in input, s *scanner, yield func(record) bool, entryOf func(raw []byte, line int, where string, timed bool) record, unwrap func(where string) func(*record)) {
	max := 2 * in.maxLine
	if k := in.arrays.find(in.id, in.base, max); k != nil && (k.index == nil || in.at != nil) {
		readKnownArray(newReverser(yield, unwrap), in, k)
		return
	}
	keep := in.arrays != nil
	for doc := 1; ; doc++ {
		more, ok := readOneArray(in, s, yield, entryOf, unwrap, doc, keep)
		if !more || !ok {
			return
		}
		keep = false
	}
}

// readOneArray reads the doc-th array of the input (see readArray), kept in in.arrays when
// keep is set and it is the input's last; more says another array follows it, ok that the
// reading goes on.
func readOneArray(in input, s *scanner, yield func(record) bool, entryOf func(raw []byte, line int, where string, timed bool) record, unwrap func(where string) func(*record), doc int, keep bool) (more, ok bool) {
	rv := newReverser(yield, unwrap)
	max := 2 * in.maxLine
	var held []entryAt // where the entries held are, for in.arrays
	if in.at != nil {
		rv.file = &entryFile{at: in.at, base: in.base, max: max, kept: keep && doc == 1}
	}
	err := s.array(func(i int) error {
		line := s.startLine()
		from := s.off
		if rv.indexing() {
			// Newest first, in a file read again: where the entry is, not its bytes.
			if !s.skipIndented() {
				if err := s.skip(); err != nil {
					return err
				}
			}
			rv.index(i, line, from, s.off)
			return nil
		}
		where := fmt.Sprintf("entry %d (line %d)", i, line)
		if doc > 1 {
			where = fmt.Sprintf("array %d entry %d (line %d)", doc, i, line)
		}
		rec, err := s.element(max, where, "", func(raw []byte, line int) record { return entryOf(raw, line, where, !rv.decided()) })
		if err != nil {
			return err
		}
		if keep && rv.file != nil && !rv.rising {
			held = append(held, entryAt{off: from, end: s.off, i: i, line: line})
		}
		if !rv.add(rec) {
			return errStop
		}
		return nil
	})
	if err == nil {
		more, err = s.another("the array")
	}
	if err == nil && !more && rv.falling && keep {
		k := &knownArray{file: in.id, base: in.base, max: max}
		if rv.file != nil {
			k.index = append(held, rv.file.index...)
			in.arrays.keep(k)
		} else if rv.spillAll() {
			for _, f := range rv.spills {
				k.spills = append(k.spills, f.Name())
			}
			rv.spillsKept = in.arrays.keep(k)
		}
	}
	return more, finishArray(rv, err, s.line, yield) && err == nil
}

// readKnownArray hands over the entries of a newest-first array a reader before this one read
// whole, as it kept them (k), last first.
func readKnownArray(rv *reverser, in input, k *knownArray) {
	rv.falling = true
	if k.index != nil {
		rv.file = &entryFile{at: in.at, base: in.base, max: k.max, index: k.index}
		rv.finish()
		return
	}
	rv.spillsKept = true // Arrays.Close removes them
	for _, name := range k.spills {
		f, err := os.Open(name)
		if err != nil {
			rv.err = fmt.Errorf("reading back the entries held to reverse gcloud's order: %v", err)
			break
		}
		rv.spills = append(rv.spills, f)
	}
	rv.finish()
}

// finishArray hands over what the reverser holds of an array whose reading ended with err
// (errStop: the Reader wants no more, or the reverser could not hold the records on disk,
// which it says) at line, then the error, where the envelope stopped being readable.
// It says whether the reading goes on: the Reader wants more, and the reverser handed over
// what it held.
func finishArray(rv *reverser, err error, line int, yield func(record) bool) bool {
	var stopped *record
	if err != nil && !errors.Is(err, errStop) {
		r := streamStopped(err, line)
		stopped = &r
	}
	rv.waitSpill()
	if errors.Is(err, errStop) && rv.err == nil {
		rv.cleanup()
		return false
	}
	if !rv.finish() {
		return false
	}
	if stopped != nil {
		return yield(*stopped)
	}
	return true
}

// decodeEntry reads an entry's members without decoding its objects (which are only
// checked to be JSON) with encoding/json; false when it cannot, and the caller decodes the
// entry with encoding/json, whose error it reports.
func decodeEntry(raw []byte) (e logEntry, ok bool) {
	_, ok = walkObject(raw, 0, func(name []byte, _, start int) (int, bool) {
		if string(name) == "protoPayload" && start < len(raw) && raw[start] == '{' {
			// Walked into once: its end is where its walk ends.
			e.ProtoPayload = &logPayload{}
			return walkObject(raw, start, func(name []byte, _, start int) (int, bool) {
				end, ok := valueEnd(raw, start)
				return end, ok && end > start && payload(e.ProtoPayload, name, raw[start:end])
			})
		}
		end, ok := valueEnd(raw, start)
		return end, ok && end > start && entryMember(&e, name, raw[start:end])
	})
	return e, ok
}

// entryMember reads one member of an entry (but its payload) into e; false when it cannot.
func entryMember(e *logEntry, name, v []byte) bool {
	switch string(name) {
	case "insertId":
		return unquoteTo(v, &e.InsertID)
	case "timestamp":
		return unquoteTo(v, &e.Timestamp)
	case "labels":
		e.Labels = map[string]string{}
		return scalars(v, func(k, v []byte) bool {
			var s string
			ok := unquoteTo(v, &s)
			e.Labels[string(k)] = s
			return ok
		})
	case "split":
		if string(v) != "null" {
			e.Split = &logSplit{}
		}
		return scalars(v, func(k, v []byte) bool {
			switch string(k) {
			case "uid":
				return unquoteTo(v, &e.Split.UID)
			case "index":
				return intTo(v, &e.Split.Index)
			case "totalSplits":
				return intTo(v, &e.Split.TotalSplits)
			}
			return true
		})
	case "jsonPayload":
		e.JSONPayload = v
	case "textPayload":
		e.TextPayload = v
	case "operation":
		if string(v) != "null" {
			e.Operation = &logOperation{}
		}
		return scalars(v, func(k, v []byte) bool {
			switch string(k) {
			case "id":
				return unquoteTo(v, &e.Operation.ID)
			case "first", "last":
				b, err := strconv.ParseBool(string(v))
				if string(k) == "first" {
					e.Operation.First = b
				} else {
					e.Operation.Last = b
				}
				return err == nil
			}
			return true
		})
	}
	return true
}

// scalars calls each with the members of an object whose members are strings, numbers or
// booleans (what an entry's small members hold), by name; false when one is not.
func scalars(v []byte, each func(name, v []byte) bool) bool {
	return string(v) == "null" || eachMember(v, func(name, v []byte) bool {
		if v[0] == '{' || v[0] == '[' {
			return false
		}
		return each(name, v)
	})
}

// intTo reads the JSON number v, an integer, into to; false when it is not one (encoding/json
// then says what it is).
func intTo(v []byte, to *int) bool {
	n, err := strconv.Atoi(string(v))
	*to = n
	return err == nil
}

// unquoteTo decodes the JSON string v into to; false when v is not one.
func unquoteTo(v []byte, to *string) bool {
	if n := len(v) - 1; n >= 1 && v[0] == '"' && v[n] == '"' && plainRun(v[1:n]) == n-1 && utf8.Valid(v[1:n]) {
		*to = string(v[1:n]) // no escape: one copy
		return true
	}
	s, ok := unquote(v)
	*to = string(s)
	return ok
}

// payload reads one member of an AuditLog payload into p; false when it cannot.
func payload(p *logPayload, name, v []byte) bool {
	switch string(name) {
	case "@type":
		return unquoteTo(v, &p.Type)
	case "serviceName":
		return unquoteTo(v, &p.ServiceName)
	case "methodName":
		return unquoteTo(v, &p.MethodName)
	case "resourceName":
		return unquoteTo(v, &p.ResourceName)
	case "authenticationInfo":
		return string(v) == "null" || eachMember(v, func(k, v []byte) bool {
			switch string(k) {
			case "principalEmail":
				return unquoteTo(v, &p.AuthenticationInfo.PrincipalEmail)
			case "authoritySelector":
				return unquoteTo(v, &p.AuthenticationInfo.AuthoritySelector)
			}
			return true
		})
	case "requestMetadata":
		// Its attributes nest: the two strings read, the rest skipped; encoding/json when
		// they are not strings, as it reports.
		m := &p.RequestMetadata
		return string(v) == "null" || eachMember(v, func(k, v []byte) bool {
			switch string(k) {
			case "callerIp":
				return unquoteTo(v, &m.CallerIP)
			case "callerSuppliedUserAgent":
				return unquoteTo(v, &m.CallerSuppliedUserAgent)
			}
			return true
		}) || json.Unmarshal(v, m) == nil
	case "status":
		if string(v) == "null" {
			return true
		}
		p.Status = &rpcStatus{}
		return eachMember(v, func(k, v []byte) bool {
			switch string(k) {
			case "code":
				return parseCode(v, &p.Status.Code)
			case "message":
				return unquoteTo(v, &p.Status.Message)
			}
			return true // details may nest
		}) || json.Unmarshal(v, p.Status) == nil
	case "request":
		p.Request = v // checked with the event, by the replay's decoder
	case "response":
		p.Response = v
	}
	return true
}

// parseCode reads a status's code, an integer as JSON writes one; false when it is not one
// (encoding/json then says what it is).
func parseCode(v []byte, to *int) bool {
	digits := v
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 9 || (digits[0] == '0' && len(digits) > 1) {
		return false
	}
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
	}
	n, err := strconv.Atoi(string(v))
	*to = n
	return err == nil
}
