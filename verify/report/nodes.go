package report

import (
	"bytes"
	"encoding/json"
	"math"
	"sort"
	"strings"

	"github.com/vapc-dev/vapc/verify/replay"
)

// The node timeline is built from what the replay observes: the Nodes and Pods of the
// snapshot, and, in log order, every write of a node (its Ready condition, NoExecute taints,
// spec.unschedulable and other conditions, from the stored object the event holds), every
// binding and write of a pod (the node it runs on) and every deletion and eviction of a pod.

// beforeLog is the time of what the snapshot says: the lane starts with it.
const beforeLog = math.MinInt64 / 4

// Requester groups, in the order the page draws them.
const (
	GroupNodeController = "node-controller"
	GroupTaintEviction  = "taint-eviction"
	GroupDrainer        = "drainer"
	GroupKubelet        = "kubelet"
	GroupControllers    = "controllers"
	GroupUsers          = "users"
)

var groupOrder = []string{GroupNodeController, GroupTaintEviction, GroupDrainer, GroupKubelet, GroupControllers, GroupUsers}

// drainers are words in the names of the service accounts that drain nodes.
var drainers = []string{"draino", "drainer", "drain", "cluster-autoscaler", "descheduler", "karpenter"}

// requesterGroup sorts the user of a request into the groups of the markers: the node
// lifecycle controller, the taint eviction controller, drainers (and every use of the
// eviction API by a controller), kubelets, other controllers and system users, and people.
func requesterGroup(user, subresource string) string {
	switch {
	case strings.HasSuffix(user, ":node-controller"):
		return GroupNodeController
	case strings.HasSuffix(user, ":taint-eviction-controller"):
		return GroupTaintEviction
	case strings.HasPrefix(user, "system:node:"):
		return GroupKubelet
	}
	if strings.HasPrefix(user, "system:serviceaccount:") {
		name := user[strings.LastIndexByte(user, ':')+1:]
		for _, d := range drainers {
			if strings.Contains(name, d) {
				return GroupDrainer
			}
		}
	}
	switch {
	case subresource == "eviction":
		return GroupDrainer // kubectl drain, or another user of the eviction API
	case strings.HasPrefix(user, "system:"):
		return GroupControllers
	}
	return GroupUsers
}

// nodeInfo is what a lane shows of a Node object.
type nodeInfo struct {
	Kind     string `json:"kind"`
	Metadata struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"metadata"`
	Spec struct {
		Unschedulable bool `json:"unschedulable"`
		Taints        []struct {
			Key    string `json:"key"`
			Effect string `json:"effect"`
		} `json:"taints"`
	} `json:"spec"`
	Status struct {
		Conditions []struct {
			Type   string `json:"type"`
			Status string `json:"status"`
		} `json:"conditions"`
	} `json:"status"`
}

// decodeNode decodes the part of a Node a lane shows; nil when raw is not a whole Node.
func decodeNode(raw []byte) *nodeInfo {
	if len(raw) == 0 || raw[0] != '{' {
		return nil
	}
	var n nodeInfo
	if err := json.Unmarshal(raw, &n); err != nil || n.Kind != "Node" && n.Kind != "" || n.Metadata.Name == "" {
		return nil
	}
	return &n
}

// podNodeName finds spec.nodeName in a Pod's JSON without decoding it: the key nodeName
// occurs in a Pod only there (nominatedNodeName and managedFields' f:nodeName differ).
func podNodeName(raw []byte) (string, bool) {
	i := bytes.Index(raw, []byte(`"nodeName"`))
	if i < 0 {
		return "", false
	}
	rest := bytes.TrimLeft(raw[i+len(`"nodeName"`):], " \t\r\n")
	if len(rest) == 0 || rest[0] != ':' {
		return "", false
	}
	rest = bytes.TrimLeft(rest[1:], " \t\r\n")
	if len(rest) == 0 || rest[0] != '"' {
		return "", false
	}
	end := bytes.IndexByte(rest[1:], '"')
	if end < 0 || bytes.IndexByte(rest[1:1+end], '\\') >= 0 {
		return "", false
	}
	return string(rest[1 : 1+end]), true
}

// bindingTarget is the node a pods/binding request binds to.
func bindingTarget(raw []byte) string {
	var b struct {
		Target struct {
			Kind string `json:"kind"`
			Name string `json:"name"`
		} `json:"target"`
	}
	if json.Unmarshal(raw, &b) != nil {
		return ""
	}
	return b.Target.Name
}

// prepared is what the decoding workers find in an event for the timeline.
type prepared struct {
	node    *nodeInfo
	podNode string
	hasNode bool // podNode was found
}

// prepare runs on the replay's decoding workers: it decodes what the ordered stage will need
// of a node or pod write, so that the ordered stage does not.
func prepare(ev *replay.Event) any {
	ref := ev.ObjectRef
	if ref == nil || ref.APIGroup != "" {
		return nil
	}
	code := ev.Code()
	ok := code >= 200 && code < 300
	switch ref.Resource {
	case "nodes":
		if !ok || (ref.Subresource != "" && ref.Subresource != "status") {
			return nil
		}
		switch ev.Verb {
		case "create", "update", "patch", "apply":
		default:
			return nil
		}
		n := decodeNode(ev.ResponseObject)
		if n == nil && (ev.Verb == "update" || ev.Verb == "create") {
			n = decodeNode(ev.RequestObject)
		}
		if n == nil {
			return nil
		}
		return &prepared{node: n}
	case "pods":
		switch {
		case ref.Subresource == "binding" && ok && ev.Verb == "create":
			if t := bindingTarget(ev.RequestObject); t != "" {
				return &prepared{podNode: t, hasNode: true}
			}
		case ref.Subresource == "" && (ok || ev.Verb == "delete"):
			switch ev.Verb {
			case "create", "update", "patch", "apply", "delete":
			default:
				return nil
			}
			if n, found := podNodeName(ev.ResponseObject); found && n != "" {
				return &prepared{podNode: n, hasNode: true}
			}
			if ev.Verb != "delete" {
				if n, found := podNodeName(ev.RequestObject); found && n != "" {
					return &prepared{podNode: n, hasNode: true}
				}
			}
		}
	}
	return nil
}

// lane is one node's timeline while the replay runs. Times are Unix milliseconds.
type lane struct {
	name    string
	labels  map[string]string
	known   int64 // when the state is first known, if isKnown
	isKnown bool
	deleted int64 // -1 while it exists
	inLog   bool  // the log wrote it

	ready     string
	readyFrom int64
	taints    map[string]int64 // key -> since
	cordon    bool
	cordonAt  int64
	conds     map[string]int64 // type -> since
	last      int64

	out       Lane
	changes   int
	decisions int
	markers   map[markerKey]map[string]int
}

type markerKey struct {
	sec  int64 // Unix seconds
	g, k string
}

func newLane(name string) *lane {
	return &lane{name: name, deleted: -1, last: math.MinInt64, taints: map[string]int64{}, conds: map[string]int64{}, markers: map[markerKey]map[string]int{}}
}

// set moves the lane to the state of a Node object at t.
func (l *lane) set(n *nodeInfo, t int64) {
	if t < l.last {
		t = l.last // the log's order, not the clock's, says what came first
	}
	l.last = t
	first := !l.isKnown
	if first {
		l.known, l.isKnown = t, true
	}
	if l.deleted >= 0 {
		l.deleted = -1
	}
	if len(n.Metadata.Labels) > 0 || l.labels == nil {
		l.labels = n.Metadata.Labels
	}
	change := func() {
		if !first {
			l.changes++
		}
	}
	ready := ""
	conds := map[string]bool{}
	for _, c := range n.Status.Conditions {
		if c.Type == "Ready" {
			ready = c.Status
		} else if c.Status == "True" {
			conds[c.Type] = true
		}
	}
	if ready != l.ready {
		l.closeReady(t)
		l.ready, l.readyFrom = ready, t
		change()
	}
	taints := map[string]bool{}
	for _, tn := range n.Spec.Taints {
		if tn.Effect == "NoExecute" {
			taints[tn.Key] = true
		}
	}
	closeSet(l.taints, taints, t, &l.out.Taints, change)
	closeSet(l.conds, conds, t, &l.out.Conditions, change)
	if n.Spec.Unschedulable != l.cordon {
		if l.cordon {
			l.out.Cordons = append(l.out.Cordons, Interval{From: l.cordonAt, To: t, V: "cordoned"})
		}
		l.cordon, l.cordonAt = n.Spec.Unschedulable, t
		change()
	}
}

func (l *lane) closeReady(t int64) {
	if l.ready != "" {
		l.out.Ready = append(l.out.Ready, Interval{From: l.readyFrom, To: t, V: l.ready})
	}
}

// closeSet ends the spans of open that are not in now and opens those of now that are not
// open.
func closeSet(open map[string]int64, now map[string]bool, t int64, out *[]Interval, change func()) {
	for _, k := range sortedKeys(open) {
		if !now[k] {
			*out = append(*out, Interval{From: open[k], To: t, V: k})
			delete(open, k)
			change()
		}
	}
	for k := range now {
		if _, ok := open[k]; !ok {
			open[k] = t
			change()
		}
	}
}

// remove ends every span of the lane at t: the node was deleted.
func (l *lane) remove(t int64) {
	if t < l.last {
		t = l.last
	}
	l.last = t
	l.closeReady(t)
	l.ready = ""
	closeSet(l.taints, nil, t, &l.out.Taints, func() {})
	closeSet(l.conds, nil, t, &l.out.Conditions, func() {})
	if l.cordon {
		l.out.Cordons = append(l.out.Cordons, Interval{From: l.cordonAt, To: t, V: "cordoned"})
		l.cordon = false
	}
	l.deleted = t
	l.changes++
}

func (l *lane) mark(t int64, group, kind, outcome string) {
	k := markerKey{sec: floorDiv(t, 1000), g: group, k: kind}
	m := l.markers[k]
	if m == nil {
		m = map[string]int{}
		l.markers[k] = m
	}
	m[outcome]++
}

// finish closes the lane at end and returns it with times from start and markers in buckets
// of bucket ms.
func (l *lane) finish(start, end, bucket int64) Lane {
	l.closeReady(end)
	closeSet(l.taints, nil, end, &l.out.Taints, func() {})
	closeSet(l.conds, nil, end, &l.out.Conditions, func() {})
	if l.cordon {
		l.out.Cordons = append(l.out.Cordons, Interval{From: l.cordonAt, To: end, V: "cordoned"})
	}
	rel := func(t int64) int64 {
		if t <= start {
			return 0
		}
		return t - start
	}
	out := l.out
	out.Node, out.Labels = l.name, l.labels
	out.Known, out.Deleted = -1, -1
	if l.isKnown {
		out.Known = rel(l.known)
	}
	if l.deleted >= 0 {
		out.Deleted = rel(l.deleted)
	}
	for _, s := range [][]Interval{out.Ready, out.Taints, out.Cordons, out.Conditions} {
		for i := range s {
			s[i].From, s[i].To = rel(s[i].From), rel(s[i].To)
		}
	}
	out.Ready = dropEmpty(out.Ready)
	out.Taints = sortIntervals(dropEmpty(out.Taints))
	out.Cordons = dropEmpty(out.Cordons)
	out.Conditions = sortIntervals(dropEmpty(out.Conditions))

	merged := map[markerKey]map[string]int{}
	for k, n := range l.markers {
		b := floorDiv(rel(k.sec*1000), bucket) * bucket
		mk := markerKey{sec: b, g: k.g, k: k.k}
		m := merged[mk]
		if m == nil {
			m = map[string]int{}
			merged[mk] = m
		}
		for o, c := range n {
			m[o] += c
		}
	}
	out.Markers = []Marker{}
	pods := 0
	for k, n := range merged {
		out.Markers = append(out.Markers, Marker{T: k.sec, G: k.g, K: k.k, N: n})
		for _, c := range n {
			pods += c
		}
	}
	sort.Slice(out.Markers, func(i, j int) bool {
		a, b := out.Markers[i], out.Markers[j]
		if a.T != b.T {
			return a.T < b.T
		}
		if a.G != b.G {
			return groupRank(a.G) < groupRank(b.G)
		}
		return a.K < b.K
	})
	abnormal := 0
	for _, s := range out.Ready {
		if s.V != "True" {
			abnormal++
		}
	}
	abnormal += len(out.Taints) + len(out.Cordons) + len(out.Conditions)
	out.Activity = 10*l.changes + 5*abnormal + pods + 10*l.decisions
	if out.Ready == nil {
		out.Ready = []Interval{}
	}
	if out.Taints == nil {
		out.Taints = []Interval{}
	}
	if out.Cordons == nil {
		out.Cordons = []Interval{}
	}
	if out.Conditions == nil {
		out.Conditions = []Interval{}
	}
	return out
}

func dropEmpty(s []Interval) []Interval {
	out := s[:0]
	for _, i := range s {
		if i.To > i.From {
			out = append(out, i)
		}
	}
	return out
}

func sortIntervals(s []Interval) []Interval {
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].V != s[j].V {
			return s[i].V < s[j].V
		}
		return s[i].From < s[j].From
	})
	return s
}

func groupRank(g string) int {
	for i, o := range groupOrder {
		if o == g {
			return i
		}
	}
	return len(groupOrder)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
