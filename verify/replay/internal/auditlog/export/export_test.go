package export

import (
	"bytes"
	"encoding/json"
	"errors"
)

// Every test's reorder checks the hashes of the events it hands over, and holds the events
// it holds in files past their first KiB (heldFiles), written 512 bytes at a time, each file
// written over past 4 KiB.
func init() {
	checkSums = true
	heldInMemory, heldWriteBuffer, heldFileBytes = 1<<10, 512, 4<<10
}

// What the tests of package export_test use of the package's internals.
var Detect = detect

// InsightsResults is the format of a CloudWatch Logs Insights query's results.
const InsightsResults = insightsResults

// CloudWatchText is the format of the AWS CLI's text output of log events.
const CloudWatchText = cloudWatchText

// InsightsCSV is the format of a Logs Insights table downloaded as CSV.
const InsightsCSV = insightsCSV

// AzureDocuments is the format of AKS's records pretty-printed or in an array.
const AzureDocuments = azureDocuments

// AWSWriteTest is the format of the object an export task to S3 writes to check the bucket.
const AWSWriteTest = awsWriteTest

// PrettyEvents is the format of events pretty-printed one after the other (jq without -c).
const PrettyEvents = prettyEvents

// EventArray is the format of events in an array (jq -s).
const EventArray = eventArray

// ConcatenatedEvents is the format of events one after the other without delimiters.
const ConcatenatedEvents = concatenatedEvents

// SetReverseChunk sets the bytes of records a reverser holds in memory, and returns a func
// that restores it.
func SetReverseChunk(n int) (restore func()) {
	old := reverseChunk
	reverseChunk = n
	return func() { reverseChunk = old }
}

// KnownArrays is how many arrays a reader sharing arrays has kept.
func KnownArrays(arrays *Arrays) int { return len(arrays.known) }

var DropMember = dropMember

var Unquote = unquote

// WriteEventBothWays maps a GKE entry to its event and writes it as the reader does
// (writeEvent) and as encoding/json writes it (marshalEventJSON): the writer must write the
// same bytes.
func WriteEventBothWays(entry []byte) (fast, slow []byte, err error) {
	ev, _, _, _, err := mapGKE(entry)
	if err != nil {
		return nil, nil, err
	}
	ev2 := *ev
	fast = writeEvent(ev)
	ev2.RequestObject, ev2.ResponseObject = withoutType(ev2.request.raw), withoutType(ev2.response.raw)
	slow, err = marshalEventJSON(&ev2)
	return fast, slow, err
}

// withoutType is an object of a payload without the "@type" member Cloud Logging adds.
func withoutType(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if !hasObject(raw) {
		return nil
	}
	if raw[0] != '{' {
		return raw
	}
	return dropMember(raw, "@type")
}

// marshalEventJSON writes an event as JSON with encoding/json, its objects as the entry holds
// them.
func marshalEventJSON(ev *gkeEvent) ([]byte, error) {
	objects := *ev
	objects.RequestObject, objects.ResponseObject = nil, nil
	head, err := json.Marshal(&objects)
	if err != nil {
		return nil, err
	}
	if !hasObject(ev.RequestObject) && !hasObject(ev.ResponseObject) {
		return head, nil
	}
	at := bytes.Index(head, []byte(`,"stageTimestamp":`))
	if at < 0 {
		return nil, errors.New("no stageTimestamp")
	}
	out := make([]byte, 0, len(head)+len(ev.RequestObject)+len(ev.ResponseObject)+40)
	out = append(out, head[:at]...)
	for _, o := range []struct {
		name string
		raw  json.RawMessage
	}{{`,"requestObject":`, ev.RequestObject}, {`,"responseObject":`, ev.ResponseObject}} {
		if !hasObject(o.raw) {
			continue
		}
		out = append(append(out, o.name...), o.raw...)
	}
	return append(out, head[at:]...), nil
}

// AppendJSONString is appendJSONString.
var AppendJSONString = appendJSONString

var CutTimestamp = cutTimestamp

// ContainerLog is the format of a container's log file (the kubelet's CRI logging format).
const ContainerLog = containerLog

// HeldPassedOver are the bytes of the records passed over (Filtered) the Reader's reorder
// holds.
func HeldPassedOver(r *Reader) int {
	n := 0
	if r.order != nil {
		for _, rec := range r.order.held {
			if rec.skip == Filtered {
				n += len(rec.data)
			}
		}
	}
	return n
}
