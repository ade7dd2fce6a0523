package auditlog

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// DecodeObject decodes an object as (*unstructured.Unstructured).UnmarshalJSON does, with
// the same result and the same refusal of objects without a kind, but faster: it builds the map
// directly instead of through reflection. Anything but the common shape (a string with escapes,
// a number that is not a plain int64 or float64) is decoded by encoding/json, value by value;
// invalid JSON by UnmarshalJSON itself. FuzzDecodeObject holds the two to the same
// results.
func DecodeObject(raw []byte) (*unstructured.Unstructured, error) {
	d := objectDecoder{s: scanner{b: raw}}
	d.s.space()
	if m, ok := d.object(1); ok {
		d.s.space()
		if d.s.i == len(raw) {
			u := &unstructured.Unstructured{Object: m}
			if u.GroupVersionKind().Kind != "" { // as UnmarshalJSON checks it
				return u, nil
			}
		}
	}
	u := &unstructured.Unstructured{}
	if err := u.UnmarshalJSON(raw); err != nil {
		return nil, err
	}
	return u, nil
}

// DecodeHeader decodes what a replay's State reads of a written object (apiVersion, kind,
// metadata but its managedFields, status.phase) to the values DecodeObject would give
// them, and validates the rest without decoding it. Its error is DecodeObject's.
func DecodeHeader(raw []byte) (*unstructured.Unstructured, error) {
	return decodeParts(raw, func(k string) bool { return k != "managedFields" }, func(k string) bool { return k == "phase" })
}

// DecodeMetadata decodes a written object's apiVersion, kind, metadata and the named members of
// its status to the values DecodeObject would give them, and validates the rest without
// decoding it. Its error is DecodeObject's.
func DecodeMetadata(raw []byte, status ...string) (*unstructured.Unstructured, error) {
	return decodeParts(raw, func(string) bool { return true }, func(k string) bool { return slices.Contains(status, k) })
}

// DecodeKind decodes a written object's apiVersion and kind (metadata and status come out
// empty) to the values DecodeObject would give them, and validates the rest without decoding
// it. Its error is DecodeObject's.
func DecodeKind(raw []byte) (*unstructured.Unstructured, error) {
	none := func(string) bool { return false }
	return decodeParts(raw, none, none)
}

// decodeParts decodes apiVersion, kind, and the members of metadata and status that keep
// says, or the whole object when raw is not an object with a kind.
func decodeParts(raw []byte, keepMetadata, keepStatus func(string) bool) (*unstructured.Unstructured, error) {
	d := objectDecoder{s: scanner{b: raw, floats: true}}
	s := &d.s
	s.space()
	m := map[string]any{}
	ok := d.members(func(k string) bool {
		var v any
		var ok bool
		switch k {
		case "apiVersion", "kind":
			v, ok = d.value(1)
		case "metadata":
			v, ok = d.valueOf(1, keepMetadata)
		case "status":
			v, ok = d.valueOf(1, keepStatus)
		default:
			return s.value()
		}
		m[k] = v
		return ok
	})
	if s.space(); ok && s.i == len(raw) {
		u := &unstructured.Unstructured{Object: m}
		if u.GroupVersionKind().Kind != "" {
			return u, nil
		}
	}
	return DecodeObject(raw)
}

// objectDecoder decodes JSON into maps, slices and scalars as k8s.io/apimachinery's
// util/json.Unmarshal does into an interface{}: integers that fit as int64, other numbers as
// float64.
type objectDecoder struct {
	s scanner
}

func (d *objectDecoder) value(depth int) (any, bool) {
	s := &d.s
	if s.i >= len(s.b) || depth > maxScanDepth {
		return nil, false
	}
	switch c := s.b[s.i]; {
	case c == '{':
		return d.object(depth + 1)
	case c == '[':
		return d.array(depth + 1)
	case c == '"':
		return d.str()
	case c == 't':
		return true, s.literal("true")
	case c == 'f':
		return false, s.literal("false")
	case c == 'n':
		return nil, s.literal("null")
	default:
		start := s.i
		if !s.number() {
			return nil, false
		}
		return number(s.b[start:s.i])
	}
}

func (d *objectDecoder) object(depth int) (map[string]any, bool) {
	m := map[string]any{}
	ok := d.members(func(k string) bool {
		v, ok := d.value(depth)
		m[k] = v // the last of duplicate keys wins, as in encoding/json
		return ok
	})
	return m, ok
}

// valueOf decodes a value; of an object, only the members keep accepts (the others are
// validated and left out).
func (d *objectDecoder) valueOf(depth int, keep func(key string) bool) (any, bool) {
	if d.s.i >= len(d.s.b) || d.s.b[d.s.i] != '{' {
		return d.value(depth)
	}
	m := map[string]any{}
	ok := d.members(func(k string) bool {
		if !keep(k) {
			return d.s.value()
		}
		v, ok := d.value(depth + 1)
		m[k] = v
		return ok
	})
	return m, ok
}

// members reads an object and calls member with each key, for it to read the value.
func (d *objectDecoder) members(member func(key string) bool) bool {
	var key string
	return d.s.members(func() bool {
		k, ok := d.key()
		key = k
		return ok
	}, func() bool { return member(key) })
}

// key reads a member's key: one of commonKeys is not allocated again.
func (d *objectDecoder) key() (string, bool) {
	s := &d.s
	start := s.i
	if _, ok := s.str(); !ok {
		return "", false
	}
	if k, found := commonKeys[string(s.b[start+1:s.i-1])]; found { // a key with escapes is not among them
		return k, true
	}
	return d.scanned(start)
}

// commonKeys are keys that most objects of a log hold (metadata's, managedFields', the common
// parts of spec and status).
var commonKeys = func() map[string]string {
	m := map[string]string{}
	for _, k := range strings.Fields(`apiVersion kind metadata spec status data items
		name namespace generateName uid resourceVersion generation creationTimestamp
		deletionTimestamp deletionGracePeriodSeconds labels annotations ownerReferences
		finalizers managedFields manager operation subresource time fieldsType fieldsV1
		controller blockOwnerDeletion f:metadata f:spec f:status f:labels f:annotations
		f:ownerReferences f:finalizers f:conditions f:containers f:type f:lastTransitionTime
		f:message f:reason f:lastHeartbeatTime f:lastProbeTime f:name f:image f:resources
		f:ports f:env f:value . phase conditions type reason message
		lastTransitionTime lastHeartbeatTime lastProbeTime lastUpdateTime observedGeneration
		replicas readyReplicas availableReplicas updatedReplicas selector matchLabels
		matchExpressions key operator values template containers initContainers image
		imagePullPolicy resources limits requests cpu memory ports containerPort protocol
		env value valueFrom volumeMounts mountPath readOnly volumes nodeName nodeSelector
		tolerations effect tolerationSeconds restartPolicy dnsPolicy schedulerName
		serviceAccountName serviceAccount securityContext terminationGracePeriodSeconds
		priority enableServiceLinks preemptionPolicy hostIP hostIPs podIP podIPs ip qosClass
		startTime containerStatuses ready restartCount started state running startedAt
		imageID containerID terminated exitCode finishedAt waiting allocatable capacity
		addresses address nodeInfo images names sizeBytes daemonEndpoints kubeletEndpoint Port
		taints unschedulable podCIDR podCIDRs providerID`) {
		m[k] = k
	}
	return m
}()

func (d *objectDecoder) array(depth int) ([]any, bool) {
	s := &d.s
	if !s.byte('[') {
		return nil, false
	}
	a := []any{}
	s.space()
	if s.byte(']') {
		return a, true
	}
	for {
		s.space()
		v, ok := d.value(depth)
		if !ok {
			return nil, false
		}
		a = append(a, v)
		s.space()
		if s.byte(']') {
			return a, true
		}
		if !s.byte(',') {
			return nil, false
		}
	}
}

func (d *objectDecoder) str() (string, bool) {
	s := &d.s
	start := s.i
	if _, ok := s.str(); !ok {
		return "", false
	}
	return d.scanned(start)
}

// scanned is the value of the string the scanner read from start.
func (d *objectDecoder) scanned(start int) (string, bool) {
	s := &d.s
	if v, ok := unquote(s.b[start:s.i]); ok {
		return v, true
	}
	var v string
	return v, json.Unmarshal(s.b[start:s.i], &v) == nil
}

// number converts a number as sigs.k8s.io/json's convertNumber does with PreserveInts.
func number(lit []byte) (any, bool) {
	str := string(lit)
	isInt := true
	for _, c := range lit {
		if c == '.' {
			isInt = false
			break
		}
	}
	if isInt {
		if i, err := strconv.ParseInt(str, 10, 64); err == nil {
			return i, true
		}
	}
	f, err := strconv.ParseFloat(str, 64)
	return f, err == nil
}

// DecodeAnyObject decodes a raw object of an event, one without a kind too; nil when there is
// none or it does not decode.
func DecodeAnyObject(raw []byte) *unstructured.Unstructured {
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	u, err := DecodeObject(raw)
	if err != nil {
		// UnmarshalJSON refuses objects without kind: decode the map directly.
		var m map[string]any
		if json.Unmarshal(raw, &m) != nil {
			return nil
		}
		u = &unstructured.Unstructured{Object: m}
	}
	return u
}

// SameMembersBut says whether the JSON objects a and b have the same members, each value the
// same bytes, but the member named but: they decode alike there. False when they differ, or when
// either is not an object of plain keys, each once: the caller then compares them decoded.
func SameMembersBut(a, b []byte, but string) bool {
	type member struct{ key, val []byte }
	var as []member
	ok := eachMember(a, func(key, val []byte) bool {
		for _, m := range as {
			if string(m.key) == string(key) {
				return false
			}
		}
		as = append(as, member{key, val})
		return true
	})
	if !ok {
		return false
	}
	seen := 0
	ok = eachMember(b, func(key, val []byte) bool {
		for i := range as {
			if string(as[i].key) != string(key) {
				continue
			}
			if as[i].val == nil {
				return false // twice in b
			}
			if string(key) != but && string(as[i].val) != string(val) {
				return false
			}
			as[i].val, seen = nil, seen+1
			return true
		}
		return false // not in a
	})
	return ok && seen == len(as)
}

// Member is the JSON of the member key of the object raw (validated already, keys plain: the
// log's objects, the State's), and whether raw is such an object that holds it.
func Member(raw []byte, key string) (val []byte, ok bool) {
	eachMember(raw, func(k, v []byte) bool {
		if string(k) == key {
			val, ok = v, true
			return false // found: no need to read on
		}
		return true
	})
	return val, ok
}

// MemberString is the string at member.key of the object raw (a request's body:
// metadata.resourceVersion), read only as far as that member, the first of its name: an
// object's metadata comes before its spec. "" when raw is not an object that holds it as a
// string.
func MemberString(raw []byte, member, key string) string {
	d := objectDecoder{s: scanner{b: raw}}
	d.s.space()
	var out string
	read := false
	d.members(func(k string) bool {
		if k != member {
			return d.s.value()
		}
		read = true
		d.members(func(k string) bool {
			if k != key || d.s.i >= len(d.s.b) || d.s.b[d.s.i] != '"' {
				return d.s.value()
			}
			v, ok := d.str()
			out = v
			return ok
		})
		return false // stops the reading: the member is read
	})
	if !read {
		return ""
	}
	return out
}
