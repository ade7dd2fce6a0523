package export

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"time"

	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
)

// ExportAKS names AKS's diagnostic settings in what a replay says of what they lost.
const ExportAKS = "AKS diagnostic setting"

// aksEvent is the record of an event AKS sent whole (an archive's or Event Hubs' record, or
// an AzureDiagnostics row): AKS writes an object too big for it as the string
// "skipped-too-big-size-object" in the event's line, in place of the request's or the
// response's object (the schema of AKS's kube-audit records, and the AKSAudit table's
// reference). Such an event is replayed as kube-apiserver's truncating backend leaves one:
// both objects dropped, at level Metadata, the level lost (auditlog.LostLevel); an event
// without the marker is as AKS sent it. rec is the event's record, its data the event's JSON;
// a hash of its bytes a worker took is dropped where they are rewritten.
func aksEvent(rec record) record {
	data := rec.data
	// The marker's end first: a search for bytes beginning with a letter as rare as its "z"
	// skips through an event ten times faster than one for bytes beginning with a quote, which
	// JSON is full of (every AKS event is searched).
	if !bytes.Contains(data, []byte(`ze-object"`)) || !bytes.Contains(data, []byte(`"`+skippedObject+`"`)) {
		return rec
	}
	var ev map[string]json.RawMessage
	if json.Unmarshal(data, &ev) != nil {
		return rec // the replay's decoder says what is wrong with it
	}
	marker := `"` + skippedObject + `"`
	if string(bytes.TrimSpace(ev["requestObject"])) != marker && string(bytes.TrimSpace(ev["responseObject"])) != marker {
		return rec
	}
	delete(ev, "requestObject")
	delete(ev, "responseObject")
	ev["level"] = json.RawMessage(`"Metadata"`)
	out, err := json.Marshal(ev)
	if err != nil {
		return rec
	}
	rec.data, rec.loss = out, auditlog.Loss{Export: ExportAKS, Lost: auditlog.LostLevel}
	rec.sum, rec.summed = 0, false
	return rec
}

// otherCategory is the record of a resource log record of another category than kube-audit
// and kube-audit-admin: the diagnostic setting sends the control plane's other logs
// (kube-apiserver, kube-controller-manager, guard, cluster-autoscaler, ...) to the same
// destination, and Falco's k8saudit-aks plugin skips them too
// (https://github.com/falcosecurity/plugins/issues/1145). It is counted, not replayed.
func otherCategory(line int, category string) record {
	return record{line: line, skip: "an AKS record of the category " + category + ", not kube-audit or kube-audit-admin"}
}

// aksCopy is why an AKS event read already is skipped.
const aksCopy = "an AKS event read already (a diagnostic setting with kube-audit and kube-audit-admin sends each write in both, and a query of both Log Analytics tables holds it twice; Event Hubs may deliver a message again)"

// copies finds the events an AKS export holds twice: a diagnostic setting with both
// kube-audit and kube-audit-admin sends each event but gets and lists in each category, with
// the same audit ID, stage and bytes (Azure/PSRule.Rules.Azure#2449 recommends one of
// them). It remembers the events handed over in the last window of their completion times,
// in the server's order (after reorder), by audit ID and stage and a hash of their bytes: an
// event seen again within it, byte for byte, is the other category's copy. An event with the
// same audit ID and stage but other bytes is not a copy, and the replay says what is wrong
// with it; but for a Log Analytics row of the other of AKS's tables than the first's (a query
// of both, union AKSAudit, AKSAuditAdmin): Kusto keeps no order of a dynamic column's members
// (https://learn.microsoft.com/kusto/query/scalar-data-types/dynamic), and each table's may
// be written in another, the same event in other bytes.
type copies struct {
	window time.Duration
	seen   map[uint64]seenSum // by a hash of the audit ID and stage
	order  []seenEvent
}

// seenSum is a hash of an event's bytes and the table of its row (record.table).
type seenSum struct {
	sum   uint64
	table uint8
}

type seenEvent struct {
	key uint64
	at  time.Time
}

func newCopies(window time.Duration) *copies {
	return &copies{window: window, seen: map[uint64]seenSum{}}
}

// again says whether the event of rec was handed over already; it remembers it otherwise.
// The audit ID and stage are read as the event writes them (a copy is the same bytes), and
// kept as hashes: nothing is allocated for an event.
func (c *copies) again(rec *record) bool {
	if rec.at.IsZero() {
		return false
	}
	id, ok1 := member(rec.data, "auditID")
	stage, ok2 := member(rec.data, "stage")
	if !ok1 || !ok2 || id[0] != '"' || stage[0] != '"' {
		return false // not strings: the replay says what is wrong with the event
	}
	var h maphash.Hash
	h.SetSeed(eventSeed)
	h.Write(id)
	h.WriteByte('/')
	h.Write(stage)
	key := h.Sum64()
	sum := rec.eventSum()
	if prev, ok := c.seen[key]; ok && (prev.sum == sum || prev.table != 0 && rec.table != 0 && prev.table != rec.table) {
		return true
	}
	// Forget what completed more than a window before this event.
	n := 0
	for n < len(c.order) && rec.at.Sub(c.order[n].at) > c.window {
		delete(c.seen, c.order[n].key)
		n++
	}
	c.order = c.order[n:]
	c.seen[key] = seenSum{sum, rec.table}
	c.order = append(c.order, seenEvent{key: key, at: rec.at})
	return false
}
