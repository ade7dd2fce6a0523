package replay

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

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

	// written is the response object of a write, decoded by a worker (see prepareWrite).
	written *written
	// observed is what the Observer's Prepare returned for the event.
	observed any
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
	// Details name the object of a refusal: the name the server generated for a refused
	// create with generateName.
	Details *StatusDetails `json:"details,omitempty"`
}

// StatusDetails is the part of a status's details a replay reads.
type StatusDetails struct {
	Name  string `json:"name,omitempty"`
	Group string `json:"group,omitempty"`
	Kind  string `json:"kind,omitempty"`
}

// received is when the apiserver received the request (the end of its last stage when the
// event does not say); the zero time when the event has neither.
func (e *Event) received() time.Time {
	if t := parseTime(e.RequestReceivedTimestamp); !t.IsZero() {
		return t
	}
	return parseTime(e.StageTimestamp)
}

// parseTime reads a timestamp of an event; the zero time when there is none.
func parseTime(s string) time.Time {
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

// Requester is the user admission sees: the impersonated user when there is one.
func (e *Event) Requester() verify.UserInfo {
	if e.ImpersonatedUser != nil {
		return *e.ImpersonatedUser
	}
	return e.User
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

// DecodeEvent decodes one log line. It never panics; an error describes why the line is not an
// audit event.
func DecodeEvent(line []byte) (*Event, error) {
	ev, ok := decodeEventFast(line)
	if !ok {
		ev = &Event{}
		if err := json.Unmarshal(line, ev); err != nil {
			var se *json.SyntaxError
			if errors.As(err, &se) && se.Offset >= int64(len(bytes.TrimRight(line, " \t\r\n"))) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, fmt.Errorf("truncated JSON (%d bytes)", len(line))
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
	return ev, nil
}

// DefaultMaxLineBytes is the longest log line a replay reads; longer lines are reported as
// malformed and skipped, and the rest of the file is replayed.
const DefaultMaxLineBytes = 16 << 20

// line is one line of a log, or why it could not be read.
type line struct {
	file string
	num  int
	data []byte
	size int   // the bytes the line had, read or not
	err  error // a line too long, or a read error after which the file ends
}

// lineReader reads the lines of one log with a bounded buffer, transparently decompressing
// gzip.
type lineReader struct {
	file string
	br   *bufio.Reader
	max  int
	num  int
	done bool
	buf  []byte
}

func newLineReader(file string, r io.Reader, max int) (*lineReader, io.Closer, error) {
	br := bufio.NewReaderSize(r, 256<<10)
	var closer io.Closer
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", file, err)
		}
		closer = zr
		br = bufio.NewReaderSize(zr, 256<<10)
	}
	return &lineReader{file: file, br: br, max: max}, closer, nil
}

// next returns the next line; ok is false at the end of the log. The data of a line is valid
// until the next call.
func (r *lineReader) next() (l line, ok bool) {
	if r.done {
		return line{}, false
	}
	r.buf = r.buf[:0]
	tooLong := 0
	for {
		frag, err := r.br.ReadSlice('\n')
		switch {
		case tooLong > 0:
			tooLong += len(frag)
		case len(r.buf)+len(frag) > r.max:
			tooLong = len(r.buf) + len(frag)
			r.buf = r.buf[:0]
		default:
			r.buf = append(r.buf, frag...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		r.num++
		l = line{file: r.file, num: r.num, size: len(r.buf)}
		if tooLong > 0 {
			l.size = tooLong
			l.err = fmt.Errorf("line longer than %d bytes (at least %d): skipped", r.max, tooLong)
		} else {
			l.data = r.buf
		}
		if err != nil {
			r.done = true
			if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
				return line{}, false // interrupted: the log ends where the reading stopped
			}
			if !errors.Is(err, io.EOF) {
				rerr := fmt.Errorf("reading stopped: %v", err)
				if errors.Is(err, io.ErrUnexpectedEOF) {
					rerr = fmt.Errorf("compressed stream truncated: reading stopped")
				}
				if len(bytes.TrimSpace(l.data)) == 0 && l.err == nil {
					l.data, l.err = nil, &readError{rerr}
				} else if l.err == nil {
					l.err = &readError{fmt.Errorf("%v (last line of %d bytes incomplete)", rerr, len(l.data))}
					l.data = nil
				} else {
					l.err = &readError{fmt.Errorf("%v; then %v", l.err, rerr)}
				}
			}
			if l.err == nil && len(bytes.TrimSpace(l.data)) == 0 {
				return line{}, false
			}
		}
		return l, true
	}
}
