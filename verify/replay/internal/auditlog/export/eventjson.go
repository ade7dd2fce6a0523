package export

import (
	"encoding/json"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// writeEvent writes the event a GKE entry maps to as JSON, in one buffer: the bytes
// encoding/json writes of gkeEvent (its fields in their order, the annotations' keys sorted,
// strings escaped as it escapes them), with the payload's objects as the entry holds them
// (a sink's as written; gcloud's without the white space of its indentation, which its
// scanner drops) but for their "@type". It sets ev.RequestObject and ev.ResponseObject to the objects it
// wrote. Reflection and a copy of each object cost a replay of a GKE export as much as the
// rest of its mapping: this writes each byte once.
func writeEvent(ev *gkeEvent) []byte {
	// The names, punctuation and numbers, and the strings as written.
	size := 320
	for _, s := range [...]string{ev.Kind, ev.APIVersion, ev.Level, ev.AuditID, ev.Stage, ev.RequestURI, ev.Verb, ev.User.Username, ev.UserAgent, ev.StageTimestamp} {
		size += jsonStringLen(s)
	}
	if u := ev.ImpersonatedUser; u != nil {
		size += 32 + jsonStringLen(u.Username)
	}
	for _, ip := range ev.SourceIPs {
		size += jsonStringLen(ip) + 1
	}
	if r := ev.ObjectRef; r != nil {
		for _, s := range [...]string{r.Resource, r.Namespace, r.Name, r.APIGroup, r.APIVersion, r.Subresource} {
			size += jsonStringLen(s)
		}
	}
	if s := ev.ResponseStatus; s != nil {
		size += jsonStringLen(s.Status) + jsonStringLen(s.Reason) + jsonStringLen(s.Message)
	}
	for k, v := range ev.Annotations {
		size += jsonStringLen(k) + jsonStringLen(v) + 2
	}
	if ev.request.raw != nil {
		size += ev.request.size()
	}
	if ev.response.raw != nil {
		size += ev.response.size()
	}
	b := getBuf(size)
	b = append(b, `{"kind":`...)
	b = appendJSONString(b, ev.Kind)
	b = append(b, `,"apiVersion":`...)
	b = appendJSONString(b, ev.APIVersion)
	b = append(b, `,"level":`...)
	b = appendJSONString(b, ev.Level)
	b = append(b, `,"auditID":`...)
	b = appendJSONString(b, ev.AuditID)
	b = append(b, `,"stage":`...)
	b = appendJSONString(b, ev.Stage)
	b = append(b, `,"requestURI":`...)
	b = appendJSONString(b, ev.RequestURI)
	b = append(b, `,"verb":`...)
	b = appendJSONString(b, ev.Verb)
	b = append(b, `,"user":{"username":`...)
	b = appendJSONString(b, ev.User.Username)
	b = append(b, '}')
	if u := ev.ImpersonatedUser; u != nil {
		b = append(b, `,"impersonatedUser":{"username":`...)
		b = appendJSONString(b, u.Username)
		b = append(b, '}')
	}
	if len(ev.SourceIPs) > 0 {
		b = append(b, `,"sourceIPs":[`...)
		for i, ip := range ev.SourceIPs {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, ip)
		}
		b = append(b, ']')
	}
	if ev.UserAgent != "" {
		b = append(b, `,"userAgent":`...)
		b = appendJSONString(b, ev.UserAgent)
	}
	if r := ev.ObjectRef; r != nil {
		b = append(b, `,"objectRef":{`...)
		n := len(b)
		for _, f := range [...]struct{ name, v string }{
			{`"resource":`, r.Resource}, {`"namespace":`, r.Namespace}, {`"name":`, r.Name},
			{`"apiGroup":`, r.APIGroup}, {`"apiVersion":`, r.APIVersion}, {`"subresource":`, r.Subresource},
		} {
			if f.v == "" {
				continue
			}
			if len(b) > n {
				b = append(b, ',')
			}
			b = appendJSONString(append(b, f.name...), f.v)
		}
		b = append(b, '}')
	}
	if s := ev.ResponseStatus; s != nil {
		b = append(b, `,"responseStatus":`...)
		b = appendStatus(b, s)
	}
	if ev.request.raw != nil {
		b = append(b, `,"requestObject":`...)
		n := len(b)
		b = ev.request.appendTo(b)
		ev.RequestObject = b[n:len(b):len(b)]
	}
	if ev.response.raw != nil {
		b = append(b, `,"responseObject":`...)
		n := len(b)
		b = ev.response.appendTo(b)
		ev.ResponseObject = b[n:len(b):len(b)]
	}
	b = append(b, `,"stageTimestamp":`...)
	b = appendJSONString(b, ev.StageTimestamp)
	if len(ev.Annotations) > 0 {
		b = append(b, `,"annotations":{`...)
		keys := make([]string, 0, len(ev.Annotations))
		for k := range ev.Annotations {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = appendJSONString(append(b, ':'), ev.Annotations[k])
		}
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendStatus appends a response status as encoding/json writes it.
func appendStatus(b []byte, s *auditlog.Status) []byte {
	if s.Details != nil {
		// A Status response's details: rare, left to encoding/json.
		j, err := json.Marshal(s)
		if err == nil {
			return append(b, j...)
		}
	}
	b = strconv.AppendInt(append(b, `{"code":`...), int64(s.Code), 10)
	for _, f := range [...]struct{ name, v string }{{`,"status":`, s.Status}, {`,"reason":`, s.Reason}, {`,"message":`, s.Message}} {
		if f.v != "" {
			b = appendJSONString(append(b, f.name...), f.v)
		}
	}
	return append(b, '}')
}

// jsonSafe are the bytes appendJSONString writes as they are.
var jsonSafe = func() (safe [256]bool) {
	for c := 0x20; c < utf8.RuneSelf; c++ {
		safe[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&'
	}
	return safe
}()

// jsonStringLen is at least the length appendJSONString writes of s.
func jsonStringLen(s string) int {
	n := len(s) + 2
	for i := 0; i < len(s); i++ {
		if !jsonSafe[s[i]] {
			n += 5 // \u00XX, or \ufffd for one byte of invalid UTF-8
		}
	}
	return n
}

// appendJSONString appends s as a JSON string, escaped as encoding/json escapes it (HTML's
// <, > and & too; invalid UTF-8 as U+FFFD; U+2028 and U+2029).
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if jsonSafe[c] {
			i++
			continue
		}
		if c < utf8.RuneSelf {
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(append(b, s[start:i]...), `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(append(b, s[start:i]...), '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	return append(append(b, s[start:]...), '"')
}
