package auditlog

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"

	"k8s.io/apimachinery/pkg/util/sets"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
)

// Salvaged is what a line that is not an audit event the replay can decode (cut short while
// the log was written, damaged in a copy) still tells of the request it was: its stage and verb,
// and what its requestURI names.
type Salvaged struct {
	Stage, Verb string
	// Resource is the request's resource as its URI names it (RequestInfo: APIGroup, Resource,
	// Subresource, Namespace, Name); nil when the line holds no URI of a resource.
	Resource *apirequest.RequestInfo
}

// Harmless says whether the line cannot have been a write the server made: a read, or a stage
// before the request completed.
func (s Salvaged) Harmless() bool {
	switch s.Stage {
	case "RequestReceived", "ResponseStarted":
		return true
	}
	switch s.Verb {
	case "get", "list", "watch":
		return true
	}
	return false
}

// requestInfos parses request URIs as kube-apiserver's handler chain does.
var requestInfos = &apirequest.RequestInfoFactory{APIPrefixes: sets.NewString("api", "apis"), GrouplessAPIPrefixes: sets.NewString("api")}

// Salvage reads from the bytes of a line that does not decode what they still tell: the first
// "stage", "verb" and "requestURI" members whose string values are whole in it (an audit
// event writes them before its objects).
func Salvage(data []byte) Salvaged {
	var s Salvaged
	s.Stage = salvagedString(data, `"stage":"`)
	s.Verb = salvagedString(data, `"verb":"`)
	if uri := salvagedString(data, `"requestURI":"`); uri != "" {
		if u, err := url.ParseRequestURI(uri); err == nil {
			if info, err := requestInfos.NewRequestInfo(&http.Request{Method: http.MethodGet, URL: u}); err == nil && info.IsResourceRequest && info.Resource != "" {
				s.Resource = info
			}
		}
	}
	return s
}

// salvagedString is the JSON string value that follows key in data, "" when it is not whole.
func salvagedString(data []byte, key string) string {
	i := bytes.Index(data, []byte(key))
	if i < 0 {
		return ""
	}
	rest := data[i+len(key)-1:] // from the value's opening quote
	for j := 1; j < len(rest); j++ {
		switch rest[j] {
		case '\\':
			j++
		case '"':
			var v string
			if json.Unmarshal(rest[:j+1], &v) != nil {
				return ""
			}
			return v
		}
	}
	return ""
}
