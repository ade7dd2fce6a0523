package auditgen

import (
	"bufio"
	"compress/gzip"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// FloorEvent is an audit.k8s.io/v1 Event with the request and response objects kept as raw
// JSON: what the decode floor decodes each line into.
type FloorEvent struct {
	Kind                     string                          `json:"kind"`
	APIVersion               string                          `json:"apiVersion"`
	Level                    auditv1.Level                   `json:"level"`
	AuditID                  string                          `json:"auditID"`
	Stage                    auditv1.Stage                   `json:"stage"`
	RequestURI               string                          `json:"requestURI"`
	Verb                     string                          `json:"verb"`
	User                     authnv1.UserInfo                `json:"user"`
	ImpersonatedUser         *authnv1.UserInfo               `json:"impersonatedUser,omitempty"`
	AuthenticationMetadata   *auditv1.AuthenticationMetadata `json:"authenticationMetadata,omitempty"`
	SourceIPs                []string                        `json:"sourceIPs,omitempty"`
	UserAgent                string                          `json:"userAgent,omitempty"`
	ObjectRef                *auditv1.ObjectReference        `json:"objectRef,omitempty"`
	ResponseStatus           *metav1.Status                  `json:"responseStatus,omitempty"`
	RequestObject            json.RawMessage                 `json:"requestObject,omitempty"`
	ResponseObject           json.RawMessage                 `json:"responseObject,omitempty"`
	RequestReceivedTimestamp metav1.MicroTime                `json:"requestReceivedTimestamp"`
	StageTimestamp           metav1.MicroTime                `json:"stageTimestamp"`
	Annotations              map[string]string               `json:"annotations,omitempty"`
}

// FloorStats counts what DecodeFloor read.
type FloorStats struct {
	Lines     int64 // lines decoded
	Bytes     int64 // bytes read (uncompressed)
	Malformed int64 // lines that are not an Event
}

// DecodeFloor reads an audit log (plain or gzip-compressed) with a bufio.Reader and decodes each
// line with encoding/json into a FloorEvent, on one goroutine: the floor a replay's throughput is
// measured against. Lines that do not decode are counted, not fatal.
func DecodeFloor(r io.Reader) (FloorStats, error) {
	var st FloorStats
	br := bufio.NewReaderSize(r, 1<<20)
	if magic, err := br.Peek(2); err == nil && magic[0] == 0x1f && magic[1] == 0x8b {
		zr, err := gzip.NewReader(br)
		if err != nil {
			return st, fmt.Errorf("decode floor: %w", err)
		}
		defer zr.Close()
		br = bufio.NewReaderSize(zr, 1<<20)
	}
	var long []byte
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				long = append(long, line...)
			}
			line = long
		}
		if len(line) > 0 {
			st.Bytes += int64(len(line))
			if len(line) > 1 || line[0] != '\n' {
				var ev FloorEvent
				if json.Unmarshal(line, &ev) != nil {
					st.Malformed++
				} else {
					st.Lines++
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return st, nil
		}
		if err != nil {
			return st, fmt.Errorf("decode floor: %w", err)
		}
	}
}
