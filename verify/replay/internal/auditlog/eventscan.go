package auditlog

import (
	"encoding/json"
	"strings"
	"unicode/utf8"

	"github.com/vapc-dev/vapc/verify"
)

// decodeEventFast decodes an audit event in one pass over the line, with the same result as
// json.Unmarshal into an Event, or reports false when the line needs json.Unmarshal itself.
//
// json.Unmarshal reads a line twice (it validates the whole line, then decodes it, skipping
// the request and response objects byte by byte) and that is most of what reading a log costs.
// decodeEventFast validates the line once, keeps the objects as the slices it validated, and
// decodes only the small members with encoding/json. It takes the common shape only: members
// named exactly as the Event's fields (or not at all), each at most once, strings without
// escapes; anything else (a syntax error, a duplicate or case-folded key, a value of the wrong
// type) is left to json.Unmarshal, so that errors and edge cases are exactly encoding/json's.
// FuzzDecodeEventFast holds the two to the same results.
func decodeEventFast(line []byte) (*Event, bool) {
	s := scanner{b: line}
	s.space()
	if !s.byte('{') {
		return nil, false
	}
	ev := &Event{}
	var seen uint16
	s.space()
	if s.byte('}') {
		return finishFast(ev, &s)
	}
	for {
		s.space()
		key, ok := s.plainString()
		if !ok {
			return nil, false
		}
		s.space()
		if !s.byte(':') {
			return nil, false
		}
		s.space()
		start := s.i
		if !s.value() {
			return nil, false
		}
		f := eventField(key)
		if f < 0 {
			if foldsToField(key) {
				return nil, false // encoding/json matches keys case-insensitively
			}
		} else {
			if seen&(1<<f) != 0 {
				return nil, false // encoding/json merges duplicates into the first value
			}
			seen |= 1 << f
			if !setField(ev, f, line[start:s.i]) {
				return nil, false
			}
		}
		s.space()
		if s.byte(',') {
			continue
		}
		if s.byte('}') {
			return finishFast(ev, &s)
		}
		return nil, false
	}
}

func finishFast(ev *Event, s *scanner) (*Event, bool) {
	s.space()
	if s.i != len(s.b) {
		return nil, false
	}
	return ev, true
}

// The Event fields, by their JSON names.
const (
	fLevel = iota
	fAuditID
	fStage
	fRequestURI
	fVerb
	fUser
	fImpersonatedUser
	fObjectRef
	fResponseStatus
	fRequestObject
	fResponseObject
	fStageTimestamp
	fAnnotations
	fKind
	fAPIVersion
	fRequestReceivedTimestamp
	fUserAgent
)

var eventFields = []string{
	fLevel: "level", fAuditID: "auditID", fStage: "stage", fRequestURI: "requestURI", fVerb: "verb",
	fUser: "user", fImpersonatedUser: "impersonatedUser", fObjectRef: "objectRef",
	fResponseStatus: "responseStatus", fRequestObject: "requestObject",
	fResponseObject: "responseObject", fStageTimestamp: "stageTimestamp", fAnnotations: "annotations",
	fKind: "kind", fAPIVersion: "apiVersion",
	fRequestReceivedTimestamp: "requestReceivedTimestamp", fUserAgent: "userAgent",
}

func eventField(key []byte) int {
	for i, name := range eventFields {
		if string(key) == name {
			return i
		}
	}
	return -1
}

// foldsToField says whether encoding/json could match the key to a field without it being the
// field's exact name: it equals a name but for case, or it is not ASCII (encoding/json folds
// some non-ASCII letters to ASCII ones, as K to k).
func foldsToField(key []byte) bool {
	for _, c := range key {
		if c >= utf8.RuneSelf {
			return true
		}
	}
	for _, name := range eventFields {
		if len(name) == len(key) && equalFoldASCII(name, key) {
			return true
		}
	}
	return false
}

func equalFoldASCII(a string, b []byte) bool {
	for i := 0; i < len(a); i++ {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

// setField decodes a member's value, validated already, into the field as json.Unmarshal
// would; false when the line needs json.Unmarshal (an error, most likely a wrong type).
func setField(ev *Event, f int, raw []byte) bool {
	switch f {
	case fLevel:
		return setConst(&ev.Level, raw)
	case fAuditID:
		return setString(&ev.AuditID, raw)
	case fStage:
		return setConst(&ev.Stage, raw)
	case fRequestURI:
		return setString(&ev.RequestURI, raw)
	case fVerb:
		return setConst(&ev.Verb, raw)
	case fStageTimestamp:
		return setString(&ev.StageTimestamp, raw)
	case fKind:
		return setConst(&ev.Kind, raw)
	case fAPIVersion:
		return setConst(&ev.APIVersion, raw)
	case fRequestReceivedTimestamp:
		return setString(&ev.RequestReceivedTimestamp, raw)
	case fUserAgent:
		return setString(&ev.UserAgent, raw)
	case fRequestObject:
		return setRaw(&ev.RequestObject, raw)
	case fResponseObject:
		return setRaw(&ev.ResponseObject, raw)
	case fUser:
		return setUser(&ev.User, raw) || json.Unmarshal(raw, &ev.User) == nil
	case fImpersonatedUser:
		if isNull(raw) {
			return true
		}
		ev.ImpersonatedUser = &verify.UserInfo{}
		return setUser(ev.ImpersonatedUser, raw) || json.Unmarshal(raw, &ev.ImpersonatedUser) == nil
	case fObjectRef:
		if isNull(raw) {
			return true
		}
		ev.ObjectRef = &ObjectRef{}
		return setObjectRef(ev.ObjectRef, raw) || json.Unmarshal(raw, &ev.ObjectRef) == nil
	case fResponseStatus:
		if isNull(raw) {
			return true
		}
		ev.ResponseStatus = &Status{}
		return setStatus(ev.ResponseStatus, raw) || json.Unmarshal(raw, &ev.ResponseStatus) == nil
	case fAnnotations:
		return setStringMap(&ev.Annotations, raw) || json.Unmarshal(raw, &ev.Annotations) == nil
	}
	return false
}

func isNull(raw []byte) bool { return string(raw) == "null" }

// The small members of an event decoded without encoding/json, in the common shape only
// (members named exactly as the fields, once, with plain strings); false when encoding/json
// must decode the member, from the zero value.

var objectRefFields = []string{"resource", "namespace", "name", "apiGroup", "apiVersion", "subresource"}

func setObjectRef(o *ObjectRef, raw []byte) bool {
	var v [6][]byte
	if !members(raw, objectRefFields, v[:]) {
		return false
	}
	for i, dst := range []*string{&o.Resource, &o.Namespace, &o.Name, &o.APIGroup, &o.APIVersion, &o.Subresource} {
		set := plainString
		if i != 1 && i != 2 {
			set = plainConst // not the namespace or the name
		}
		if v[i] != nil && !set(dst, v[i]) {
			*o = ObjectRef{}
			return false
		}
	}
	return true
}

var statusFields = []string{"code", "status", "reason", "message", "details"}

func setStatus(st *Status, raw []byte) bool {
	var v [5][]byte
	if !members(raw, statusFields, v[:]) {
		return false
	}
	ok := v[0] == nil || smallInt(&st.Code, v[0])
	for i, dst := range []*string{&st.Status, &st.Reason, &st.Message} {
		ok = ok && (v[i+1] == nil || plainString(dst, v[i+1]))
	}
	if ok && v[4] != nil && !isNull(v[4]) {
		// Only refusals have details: encoding/json is fine.
		ok = json.Unmarshal(v[4], &st.Details) == nil
	}
	if !ok {
		*st = Status{}
	}
	return ok
}

var userFields = []string{"username", "uid", "groups", "extra"}

func setUser(u *verify.UserInfo, raw []byte) bool {
	var v [4][]byte
	if !members(raw, userFields, v[:]) {
		return false
	}
	ok := (v[0] == nil || plainString(&u.Username, v[0])) && (v[1] == nil || plainString(&u.UID, v[1]))
	if ok && v[2] != nil && !isNull(v[2]) {
		ok = stringArray(&u.Groups, v[2])
	}
	if ok && v[3] != nil && !isNull(v[3]) {
		ok = stringArrayMap(&u.Extra, v[3])
	}
	if !ok {
		*u = verify.UserInfo{}
	}
	return ok
}

// members finds the raw values of the named members of an object, validated already.
func members(raw []byte, names []string, vals [][]byte) bool {
	ok := eachMember(raw, func(key, val []byte) bool {
		for i, n := range names {
			if string(key) == n {
				if vals[i] != nil {
					return false // a duplicate
				}
				vals[i] = val
				return true
			}
			if len(n) == len(key) && equalFoldASCII(n, key) {
				return false
			}
		}
		return true
	})
	return ok
}

// eachMember calls fn with every member of an object, validated already, whose keys are plain
// ASCII; false when raw is not such an object or fn returns false.
func eachMember(raw []byte, fn func(key, val []byte) bool) bool {
	s := scanner{b: raw}
	var key []byte
	return s.members(func() bool {
		k, ok := s.plainString()
		for _, c := range k {
			ok = ok && c < utf8.RuneSelf
		}
		key = k
		return ok
	}, func() bool {
		start := s.i
		return s.value() && fn(key, raw[start:s.i])
	})
}

// plainString sets a string from a plain JSON string; null leaves it as it is.
func plainString(dst *string, raw []byte) bool {
	if isNull(raw) {
		return true
	}
	if len(raw) < 2 || raw[0] != '"' {
		return false
	}
	v, ok := unquote(raw)
	if ok {
		*dst = v
	}
	return ok
}

// smallInt sets an int32 from a JSON integer of up to 9 digits.
func smallInt(dst *int32, raw []byte) bool {
	if isNull(raw) {
		return true
	}
	neg := len(raw) > 0 && raw[0] == '-'
	digits := raw
	if neg {
		digits = raw[1:]
	}
	if len(digits) == 0 || len(digits) > 9 {
		return false
	}
	var n int32
	for _, c := range digits {
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + int32(c-'0')
	}
	if neg {
		n = -n
	}
	*dst = n
	return true
}

// stringArray sets a []string from an array of plain strings.
func stringArray(dst *[]string, raw []byte) bool {
	s := scanner{b: raw}
	if !s.byte('[') {
		return false
	}
	out := []string{}
	s.space()
	if s.byte(']') {
		*dst = out
		return true
	}
	for {
		s.space()
		start := s.i
		if !s.value() {
			return false
		}
		var v string
		val := raw[start:s.i]
		if isNull(val) || !plainConst(&v, val) {
			return false
		}
		out = append(out, v)
		s.space()
		if s.byte(']') {
			*dst = out
			return true
		}
		if !s.byte(',') {
			return false
		}
	}
}

// stringArrayMap sets a map[string][]string from an object of arrays of plain strings, each
// key once.
func stringArrayMap(dst *map[string][]string, raw []byte) bool {
	m := map[string][]string{}
	ok := eachMember(raw, func(key, val []byte) bool {
		var v []string
		if _, dup := m[string(key)]; dup || isNull(val) || !stringArray(&v, val) {
			return false
		}
		m[string(key)] = v
		return true
	})
	if ok {
		*dst = m
	}
	return ok
}

// setStringMap sets a map[string]string from an object of plain strings, each key once.
func setStringMap(dst *map[string]string, raw []byte) bool {
	if isNull(raw) {
		return true
	}
	m := map[string]string{}
	ok := eachMember(raw, func(key, val []byte) bool {
		var v string
		if _, dup := m[string(key)]; dup || isNull(val) || !plainConst(&v, val) {
			return false
		}
		if k, found := constStrings[string(key)]; found {
			m[k] = v
		} else {
			m[string(key)] = v
		}
		return true
	})
	if ok {
		*dst = m
	}
	return ok
}

// setConst is setString for a field whose values are mostly among constStrings, which are not
// allocated again.
func setConst(dst *string, raw []byte) bool {
	if len(raw) >= 2 && raw[0] == '"' {
		if v, ok := constStrings[string(raw[1:len(raw)-1])]; ok {
			*dst = v
			return true
		}
	}
	return setString(dst, raw)
}

// plainConst is plainString for a value mostly among constStrings.
func plainConst(dst *string, raw []byte) bool {
	if len(raw) >= 2 && raw[0] == '"' {
		if v, ok := constStrings[string(raw[1:len(raw)-1])]; ok {
			*dst = v
			return true
		}
	}
	return plainString(dst, raw)
}

// constStrings are values most events of a log hold: levels, stages, verbs, the common
// resources, groups and annotations.
var constStrings = func() map[string]string {
	m := map[string]string{}
	for _, k := range strings.Fields(`None Metadata Request RequestResponse RequestReceived
		ResponseStarted ResponseComplete Panic get list watch create update patch delete
		deletecollection apply Event audit.k8s.io/v1 v1 apps batch policy
		coordination.k8s.io discovery.k8s.io events.k8s.io networking.k8s.io rbac.authorization.k8s.io
		storage.k8s.io admissionregistration.k8s.io apiextensions.k8s.io authentication.k8s.io
		authorization.k8s.io autoscaling flowcontrol.apiserver.k8s.io
		pods nodes leases events configmaps secrets services endpoints endpointslices namespaces
		serviceaccounts deployments replicasets statefulsets daemonsets jobs cronjobs
		persistentvolumeclaims persistentvolumes poddisruptionbudgets horizontalpodautoscalers
		status binding eviction scale log exec attach portforward proxy token ephemeralcontainers
		resize finalize allow forbid authorization.k8s.io/decision authorization.k8s.io/reason
		pod-security.kubernetes.io/enforce-policy privileged:latest system:authenticated
		system:masters system:nodes system:serviceaccounts system:serviceaccounts:kube-system
		system:kube-controller-manager system:kube-scheduler system:apiserver 127.0.0.1
		validation.policy.admission.k8s.io/validation_failure
		apiserver.latency.k8s.io/etcd apiserver.latency.k8s.io/total
		apiserver.latency.k8s.io/decode-response-object apiserver.latency.k8s.io/serialize-response-object
		apiserver.latency.k8s.io/response-write apiserver.latency.k8s.io/transform-response-object
		apiserver.latency.k8s.io/apf-queue-wait`) {
		m[k] = k
	}
	return m
}()

// setString sets a string field: a string without escapes in valid UTF-8 is its own value;
// null leaves the field as it is, as encoding/json does; anything else goes through
// encoding/json.
func setString(dst *string, raw []byte) bool {
	if len(raw) >= 2 && raw[0] == '"' {
		if v, ok := unquote(raw); ok {
			*dst = v
			return true
		}
	}
	return json.Unmarshal(raw, dst) == nil
}

// setRaw sets a json.RawMessage field to a copy of the value, as RawMessage.UnmarshalJSON
// does (for null too: the field holds "null").
func setRaw(dst *json.RawMessage, raw []byte) bool {
	*dst = append((*dst)[:0], raw...)
	return true
}
