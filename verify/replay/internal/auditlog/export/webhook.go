package export

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// kube-apiserver's webhook backend POSTs batches of events as an audit.k8s.io/v1 EventList
// (k8s.io/apiserver/plugin/pkg/audit/webhook: the batching backend sends up to
// --audit-webhook-batch-max-size events a request); a receiver that keeps each body writes one
// EventList a line: {"kind":"EventList","apiVersion":"audit.k8s.io/v1","metadata":{},
// "items":[EVENT, ...]}. See
// https://kubernetes.io/docs/tasks/debug/debug-cluster/audit/#webhook-backend. Batches are
// sent as they fill, by several goroutines: they may be kept out of order.

func readWebhook(in input, yield func(record) bool) {
	s := in.scanner()
	s.lineDocuments(yield, nil, func(doc int) error { return readEventList(s, in, doc, yield) })
}

// readEventList reads the document doc of a webhook receiver's file, an EventList.
func readEventList(s *scanner, in input, doc int, yield func(record) bool) error {
	start := s.line
	where := fmt.Sprintf("EventList %d (line %d)", doc, start)
	kind, apiVersion := "", ""
	err := s.object(func(name string) error {
		switch name {
		case "kind", "apiVersion":
			raw, err := s.value(256, nil)
			if err != nil {
				return err
			}
			v := string(bytes.Trim(raw, `"`))
			if name == "kind" {
				kind = v
			} else {
				apiVersion = v
			}
			return nil
		case "items":
			return s.array(func(i int) error {
				field := fmt.Sprintf("items[%d]", i)
				rec, err := s.element(in.maxLine, where, field, func(raw []byte, line int) record {
					if raw[0] != '{' {
						return record{line: line, err: recordError(where, field, errors.New("not an object"))}
					}
					return inField(eventRecord(raw, line, auditlog.Loss{}), field)
				})
				if err != nil {
					return err
				}
				return send(yield, rec)
			})
		}
		return s.skip()
	})
	if err == nil && (kind != "" && kind != "EventList" || apiVersion != "" && apiVersion != "audit.k8s.io/v1") {
		err = send(yield, record{line: start, err: recordError(where, "kind", fmt.Errorf("not an audit.k8s.io/v1 EventList: apiVersion %q, kind %q", apiVersion, kind))})
	}
	return err
}

// errStop ends a format's reading: the reader does not want more records.
var errStop = errors.New("stop")

// eventRecord is the record of an event's JSON, which it keeps.
func eventRecord(data []byte, line int, loss auditlog.Loss) record {
	return record{data: data, line: line, loss: loss, at: stageOf(data)}
}

// inField is rec, its event held in the envelope's record's field.
func inField(rec record, field string) record {
	rec.field = field
	return rec
}

// stageOf reads the stageTimestamp of an event without decoding it: the last member of that
// name (the event's own follows its objects, and only its annotations follow it); the zero
// time when there is none.
func stageOf(data []byte) time.Time {
	const key = `"stageTimestamp"`
	i := bytes.LastIndex(data, []byte(key))
	if i < 0 {
		return time.Time{}
	}
	v := bytes.TrimLeft(data[i+len(key):], " \t\r\n")
	if len(v) == 0 || v[0] != ':' {
		return time.Time{}
	}
	v = bytes.TrimLeft(v[1:], " \t\r\n")
	if len(v) == 0 || v[0] != '"' {
		return time.Time{}
	}
	j := bytes.IndexByte(v[1:], '"')
	if j < 0 {
		return time.Time{}
	}
	return auditlog.ParseTime(string(v[1 : 1+j]))
}
