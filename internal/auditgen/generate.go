package auditgen

import (
	"bufio"
	"bytes"
	"container/heap"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"time"

	authnv1 "k8s.io/api/authentication/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// Activity names what produced a request: a kind of background traffic or a scenario.
type Activity string

// The activities of a generated log.
const (
	ActivityRead            Activity = "read"             // get, list and watch by kubelets, controllers and people
	ActivityLease           Activity = "lease"            // kubelet node leases and leader-election leases
	ActivityNodeStatus      Activity = "node-status"      // kubelet (or Kosmos clustertree) node status heartbeats
	ActivityPodStatus       Activity = "pod-status"       // kubelet pod status patches
	ActivityControllerWrite Activity = "controller-write" // events, endpointslices, replicasets, deployments
	ActivityPodChurn        Activity = "pod-churn"        // pod create, bind and start, or delete and final delete
	ActivityAuthFailure     Activity = "auth-failure"     // 401 and 403 responses
	ActivityNodeFlap        Activity = "node-flap"        // a node (mostly Kosmos) goes Unknown, is tainted, evicted, recovers
	ActivityDrain           Activity = "drain"            // KernelDeadlock, Draino cordon, evictions, uncordon
)

// Activities lists every activity in a fixed order.
var Activities = []Activity{
	ActivityRead, ActivityLease, ActivityNodeStatus, ActivityPodStatus, ActivityControllerWrite,
	ActivityPodChurn, ActivityAuthFailure, ActivityNodeFlap, ActivityDrain,
}

// Mix weighs the activities: each time the background traffic starts a request (or a scenario),
// it picks an activity with probability proportional to its weight. Scenario weights are small:
// one node flap emits tens of requests over minutes of log time.
type Mix map[Activity]float64

// DefaultMix is modelled on a large cluster's audit log: mostly reads and lease updates at
// Metadata level; about one line in five writes a pod or a node and carries its objects.
func DefaultMix() Mix {
	return Mix{
		ActivityRead:            0.42,
		ActivityLease:           0.22,
		ActivityNodeStatus:      0.04,
		ActivityPodStatus:       0.10,
		ActivityControllerWrite: 0.17,
		ActivityPodChurn:        0.035,
		ActivityAuthFailure:     0.01,
		ActivityNodeFlap:        0.00006,
		ActivityDrain:           0.00003,
	}
}

// DefaultOmitStages is what most audit policies omit: the RequestReceived stage.
var DefaultOmitStages = []auditv1.Stage{auditv1.StageRequestReceived}

// Config says what log to generate.
type Config struct {
	// Seed makes the log: the same Config gives the same bytes.
	Seed int64
	// Events stops the log after that many lines (events); Bytes after that many bytes. At least
	// one must be set; when both are, the first reached ends the log. Events average about 2 KB.
	Events int64
	Bytes  int64

	// Nodes, KosmosNodes (of Nodes, labelled kosmos.io/node), Namespaces and PodsPerNode size the
	// cluster; zero means 400, Nodes/20, 60 and 12.
	Nodes, KosmosNodes, Namespaces, PodsPerNode int
	// Start is the first request's time (default 2026-11-21T00:00:00Z); Duration is the span of
	// log time the requests are spread over (default 24h).
	Start    time.Time
	Duration time.Duration
	// OmitStages are the stages not written, as the audit policy's omitStages; nil means
	// DefaultOmitStages. Watches write ResponseStarted when they start and ResponseComplete when
	// they time out; every other request writes ResponseComplete (and RequestReceived unless
	// omitted).
	OmitStages []auditv1.Stage
	// Mix weighs the traffic; nil means DefaultMix.
	Mix Mix
	// SnapshotWriter, if set, receives the initial cluster (namespaces, nodes, pods and the
	// eviction-toleration-floor ConfigMap) as a `kubectl get -o yaml` List before the log starts.
	SnapshotWriter io.Writer
}

// Stats describes a generated log.
type Stats struct {
	Events   int64 // lines written
	Bytes    int64 // bytes written
	Requests int64 // requests started (a watch's two stages are one request)
	// ByStage, ByLevel, ByVerb and ByActivity count lines.
	ByStage    map[auditv1.Stage]int64
	ByLevel    map[auditv1.Level]int64
	ByVerb     map[string]int64
	ByActivity map[Activity]int64
	// Picks counts how often each activity was picked by the background traffic.
	Picks map[Activity]int64
	// PodsCreated and PodsDeleted count successful pod creates and final (non-graceful) deletes.
	PodsCreated, PodsDeleted int64
	// SnapshotObjects is the number of objects written to the snapshot.
	SnapshotObjects int
	// First and Last are the first and last requestReceivedTimestamp.
	First, Last time.Time
}

// averageEventBytes is what the default mix averages per line; it spreads Bytes-sized logs
// over Duration.
const averageEventBytes = 2048

// Generate writes a log as JSON lines to w, streaming: memory is bounded by the cluster's size,
// not the log's. It never panics; it stops at the first write error.
func Generate(w io.Writer, cfg Config) (stats Stats, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("auditgen: internal error: %v", r)
		}
	}()
	g, err := newGenerator(w, cfg)
	if err != nil {
		return Stats{}, err
	}
	if cfg.SnapshotWriter != nil {
		n, err := g.writeSnapshot(cfg.SnapshotWriter)
		g.stats.SnapshotObjects = n
		if err != nil {
			return g.stats, fmt.Errorf("writing the snapshot: %w", err)
		}
	}
	g.run()
	if err := g.bw.Flush(); err != nil && g.err == nil {
		g.err = err
	}
	if g.err != nil {
		return g.stats, fmt.Errorf("writing the audit log: %w", g.err)
	}
	return g.stats, nil
}

// generator is one Generate call's state.
type generator struct {
	// lastDone is when the last request's response completed (see do).
	lastDone time.Time
	cfg      Config
	rng      *rand.Rand
	bw       *bufio.Writer
	enc      *json.Encoder
	// envBuf holds the encoded envelope, objBuf the objects, lineBuf both: reused per line.
	envBuf          bytes.Buffer
	objBuf, lineBuf []byte
	err             error
	stats           Stats

	now          time.Time
	mean         time.Duration // mean time between background requests
	steps        stepHeap
	seq          uint64
	rv           int64
	omit         map[auditv1.Stage]bool
	mixActs      []Activity
	mixCum       []float64
	cluster      *cluster
	idents       identities
	ev           auditv1.Event // reused for every line
	leaderLeases map[string]string
}

func newGenerator(w io.Writer, cfg Config) (*generator, error) {
	if cfg.Events < 0 || cfg.Bytes < 0 {
		return nil, errors.New("auditgen: Events and Bytes must not be negative")
	}
	if cfg.Events == 0 && cfg.Bytes == 0 {
		return nil, errors.New("auditgen: set Events or Bytes")
	}
	if cfg.Nodes < 0 || cfg.KosmosNodes < 0 || cfg.Namespaces < 0 || cfg.PodsPerNode < 0 || cfg.Duration < 0 {
		return nil, errors.New("auditgen: cluster sizes and Duration must not be negative")
	}
	if cfg.Nodes == 0 {
		cfg.Nodes = 400
	}
	if cfg.KosmosNodes == 0 {
		cfg.KosmosNodes = max(1, cfg.Nodes/20)
	}
	if cfg.KosmosNodes >= cfg.Nodes {
		return nil, fmt.Errorf("auditgen: KosmosNodes (%d) must be fewer than Nodes (%d)", cfg.KosmosNodes, cfg.Nodes)
	}
	if cfg.Namespaces == 0 {
		cfg.Namespaces = 60
	}
	if cfg.PodsPerNode == 0 {
		cfg.PodsPerNode = 12
	}
	if cfg.Start.IsZero() {
		cfg.Start = time.Date(2026, 11, 21, 0, 0, 0, 0, time.UTC)
	}
	if cfg.Duration == 0 {
		cfg.Duration = 24 * time.Hour
	}
	if cfg.OmitStages == nil {
		cfg.OmitStages = DefaultOmitStages
	}
	if cfg.Mix == nil {
		cfg.Mix = DefaultMix()
	}
	g := &generator{
		cfg:  cfg,
		rng:  rand.New(rand.NewPCG(uint64(cfg.Seed), 0x5eed_a0d1_7a11_0001)),
		now:  cfg.Start.UTC(),
		rv:   48_000_000,
		omit: map[auditv1.Stage]bool{},
		stats: Stats{
			ByStage: map[auditv1.Stage]int64{}, ByLevel: map[auditv1.Level]int64{},
			ByVerb: map[string]int64{}, ByActivity: map[Activity]int64{}, Picks: map[Activity]int64{},
		},
	}
	for _, s := range cfg.OmitStages {
		switch s {
		case auditv1.StageRequestReceived, auditv1.StageResponseStarted, auditv1.StageResponseComplete, auditv1.StagePanic:
			g.omit[s] = true
		default:
			return nil, fmt.Errorf("auditgen: unknown stage %q in OmitStages", s)
		}
	}
	total := 0.0
	for _, a := range Activities {
		wt := cfg.Mix[a]
		if wt < 0 {
			return nil, fmt.Errorf("auditgen: negative weight %v for %s", wt, a)
		}
		if wt == 0 {
			continue
		}
		total += wt
		g.mixActs = append(g.mixActs, a)
		g.mixCum = append(g.mixCum, total)
	}
	for a := range cfg.Mix {
		if !knownActivity(a) {
			return nil, fmt.Errorf("auditgen: unknown activity %q in Mix", a)
		}
	}
	if total == 0 {
		return nil, errors.New("auditgen: every Mix weight is zero")
	}
	expected := cfg.Events
	if expected == 0 || (cfg.Bytes > 0 && cfg.Bytes/averageEventBytes < expected) {
		expected = max(1, cfg.Bytes/averageEventBytes)
	}
	g.mean = cfg.Duration / time.Duration(expected)
	g.bw = bufio.NewWriterSize(w, 1<<20)
	g.enc = json.NewEncoder(&g.envBuf)
	g.idents = newIdentities(g)
	g.cluster = newCluster(g)
	return g, nil
}

func knownActivity(a Activity) bool {
	for _, b := range Activities {
		if a == b {
			return true
		}
	}
	return false
}

// run writes requests until the budget is spent: background requests at exponentially
// distributed intervals, and the scheduled steps of earlier requests (bindings, final deletes,
// watch ends, scenario steps) when their time comes.
func (g *generator) run() {
	for !g.done() {
		next := g.now.Add(time.Duration(g.rng.ExpFloat64() * float64(g.mean)))
		for len(g.steps) > 0 && !g.steps[0].at.After(next) && !g.done() {
			s := heap.Pop(&g.steps).(step)
			g.now = later(g.now, s.at)
			s.fn()
		}
		if g.done() {
			return
		}
		g.now = later(g.now, next)
		a := g.pickActivity()
		g.stats.Picks[a]++
		g.startActivity(a)
	}
}

// done says whether the log is complete (or cannot be written).
func (g *generator) done() bool {
	return g.err != nil ||
		(g.cfg.Events > 0 && g.stats.Events >= g.cfg.Events) ||
		(g.cfg.Bytes > 0 && g.stats.Bytes >= g.cfg.Bytes)
}

func (g *generator) pickActivity() Activity {
	x := g.rng.Float64() * g.mixCum[len(g.mixCum)-1]
	for i, c := range g.mixCum {
		if x < c {
			return g.mixActs[i]
		}
	}
	return g.mixActs[len(g.mixActs)-1]
}

// after schedules fn to run d after now (d is at least a microsecond, so steps keep log order).
func (g *generator) after(d time.Duration, fn func()) {
	if d < time.Microsecond {
		d = time.Microsecond
	}
	g.seq++
	heap.Push(&g.steps, step{at: g.now.Add(d), seq: g.seq, fn: fn})
}

// step is a scheduled request.
type step struct {
	at  time.Time
	seq uint64
	fn  func()
}

type stepHeap []step

func (h stepHeap) Len() int { return len(h) }
func (h stepHeap) Less(i, j int) bool {
	if !h[i].at.Equal(h[j].at) {
		return h[i].at.Before(h[j].at)
	}
	return h[i].seq < h[j].seq
}
func (h stepHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *stepHeap) Push(x any)   { *h = append(*h, x.(step)) }
func (h *stepHeap) Pop() any {
	old := *h
	s := old[len(old)-1]
	old[len(old)-1] = step{}
	*h = old[:len(old)-1]
	return s
}

// Random helpers.

func (g *generator) chance(p float64) bool { return g.rng.Float64() < p }

// between returns a duration uniformly in [lo, hi).
func (g *generator) between(lo, hi time.Duration) time.Duration {
	if hi <= lo {
		return lo
	}
	return lo + time.Duration(g.rng.Int64N(int64(hi-lo)))
}

func (g *generator) uuid() string {
	var b [16]byte
	u1, u2 := g.rng.Uint64(), g.rng.Uint64()
	for i := 0; i < 8; i++ {
		b[i], b[8+i] = byte(u1>>(8*i)), byte(u2>>(8*i))
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:])
}

// suffix returns n characters of the alphabet Kubernetes uses for generated names.
func (g *generator) suffix(n int) string {
	const alphabet = "bcdfghjklmnpqrstvwxz2456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[g.rng.IntN(len(alphabet))]
	}
	return string(b)
}

// nextRV returns the next etcd revision as a resourceVersion.
func (g *generator) nextRV() string {
	g.rv += 1 + g.rng.Int64N(6)
	return strconv.FormatInt(g.rv, 10)
}

// request is one audited request.
type request struct {
	act          Activity
	verb         string
	uri          string
	id           *identity
	impersonated *authnv1.UserInfo
	ref          auditv1.ObjectReference
	code         int32
	status       *metav1.Status // the response status when it is not a plain success
	reqObj       any            // written at RequestResponse level only
	respObj      any
	annotations  map[string]string
	latency      time.Duration
	watchFor     time.Duration // a watch: ResponseStarted now, ResponseComplete after watchFor
	noAuthz      bool          // 401: no authorization annotations
}

// level is the audit policy of the samples: RequestResponse for pod and node writes,
// Metadata otherwise.
func level(r *request) auditv1.Level {
	switch r.verb {
	case "create", "update", "patch", "delete", "deletecollection":
	default:
		return auditv1.LevelMetadata
	}
	if r.ref.APIGroup != "" {
		return auditv1.LevelMetadata
	}
	switch r.ref.Resource {
	case "pods":
		switch r.ref.Subresource {
		case "", "status", "eviction", "binding":
			return auditv1.LevelRequestResponse
		}
	case "nodes":
		switch r.ref.Subresource {
		case "", "status":
			return auditv1.LevelRequestResponse
		}
	}
	return auditv1.LevelMetadata
}

// later is the later of two times.
func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// do writes a request's stages.
func (g *generator) do(r *request) {
	if g.done() {
		return
	}
	g.stats.Requests++
	// A log is written as responses complete, and a controller sends its next request once
	// the last one's response is in: a request is received once the one before it completed,
	// so that the log's order is that of completion and no two writes overlap.
	// The clock goes on from there: what the request writes, and what comes after it, is
	// no earlier.
	received := later(g.now, g.lastDone)
	g.now = received
	if g.stats.First.IsZero() {
		g.stats.First = received
	}
	g.stats.Last = received
	if r.latency == 0 {
		r.latency = g.between(800*time.Microsecond, 9*time.Millisecond)
	}
	ev := &g.ev
	*ev = auditv1.Event{
		TypeMeta:                 metav1.TypeMeta{Kind: "Event", APIVersion: "audit.k8s.io/v1"},
		Level:                    level(r),
		AuditID:                  types.UID(g.uuid()),
		RequestURI:               r.uri,
		Verb:                     r.verb,
		User:                     r.id.user,
		ImpersonatedUser:         r.impersonated,
		SourceIPs:                r.id.ips,
		UserAgent:                r.id.ua,
		ObjectRef:                &r.ref,
		RequestReceivedTimestamp: metav1.NewMicroTime(received),
	}
	if r.impersonated != nil {
		ev.AuthenticationMetadata = &auditv1.AuthenticationMetadata{ImpersonationConstraint: "impersonate:serviceaccount"}
	}
	ann := r.annotations
	if ann == nil {
		ann = map[string]string{}
	}
	if !r.noAuthz {
		if _, ok := ann["authorization.k8s.io/decision"]; !ok {
			ann["authorization.k8s.io/decision"] = "allow"
		}
		if _, ok := ann["authorization.k8s.io/reason"]; !ok {
			ann["authorization.k8s.io/reason"] = r.id.reason
		}
	}
	if len(ann) > 0 {
		ev.Annotations = ann
	}
	if !g.omit[auditv1.StageRequestReceived] {
		ev.Stage = auditv1.StageRequestReceived
		ev.StageTimestamp = ev.RequestReceivedTimestamp
		g.line(r.act)
	}
	status := r.status
	if status == nil {
		status = &metav1.Status{Code: r.code}
	}
	ev.ResponseStatus = status
	if r.watchFor > 0 {
		if !g.omit[auditv1.StageResponseStarted] {
			ev.Stage = auditv1.StageResponseStarted
			ev.StageTimestamp = metav1.NewMicroTime(received.Add(r.latency))
			g.line(r.act)
		}
		if !g.omit[auditv1.StageResponseComplete] {
			done := *ev
			done.ResponseStatus = status
			act := r.act
			g.after(r.watchFor, func() {
				g.ev = done
				g.ev.Stage = auditv1.StageResponseComplete
				g.ev.StageTimestamp = metav1.NewMicroTime(g.now)
				g.line(act)
			})
		}
		return
	}
	var objs []byte
	if ev.Level == auditv1.LevelRequestResponse {
		objs = g.objects(r.reqObj, r.respObj)
	}
	g.lastDone = received.Add(r.latency)
	if !g.omit[auditv1.StageResponseComplete] {
		ev.Stage = auditv1.StageResponseComplete
		ev.StageTimestamp = metav1.NewMicroTime(g.lastDone)
		g.lineWith(r.act, objs)
	}
}

// objects marshals the request and response objects as the members they are in an Event:
// `"requestObject":{...},"responseObject":{...},`.
func (g *generator) objects(req, resp any) []byte {
	b := g.objBuf[:0]
	for _, o := range []struct {
		key string
		obj any
	}{{`"requestObject":`, req}, {`"responseObject":`, resp}} {
		if o.obj == nil {
			continue
		}
		j, err := json.Marshal(o.obj)
		if err != nil {
			if g.err == nil {
				g.err = fmt.Errorf("marshalling %T: %w", o.obj, err)
			}
			return nil
		}
		b = append(b, o.key...)
		b = append(b, j...)
		b = append(b, ',')
	}
	g.objBuf = b
	return b
}

// line writes g.ev as one line.
func (g *generator) line(act Activity) { g.lineWith(act, nil) }

// lineWith writes g.ev as one line with the objects (see objects) spliced in before
// requestReceivedTimestamp, where the Event's field order puts them: encoding/json would
// otherwise re-validate and compact the objects' JSON.
func (g *generator) lineWith(act Activity, objs []byte) {
	if g.done() {
		return
	}
	g.envBuf.Reset()
	if err := g.enc.Encode(&g.ev); err != nil {
		g.err = err
		return
	}
	env := g.envBuf.Bytes()
	if len(objs) > 0 {
		i := bytes.Index(env, []byte(`"requestReceivedTimestamp":"`))
		if i < 0 {
			g.err = errors.New("auditgen: encoded event without requestReceivedTimestamp")
			return
		}
		g.lineBuf = append(append(append(g.lineBuf[:0], env[:i]...), objs...), env[i:]...)
		env = g.lineBuf
	}
	n, err := g.bw.Write(env)
	if err != nil {
		g.err = err
		return
	}
	g.stats.Events++
	g.stats.Bytes += int64(n)
	g.stats.ByStage[g.ev.Stage]++
	g.stats.ByLevel[g.ev.Level]++
	g.stats.ByVerb[g.ev.Verb]++
	g.stats.ByActivity[act]++
}

// Response statuses.

func success(code int32) *metav1.Status {
	return &metav1.Status{Status: metav1.StatusSuccess, Code: code}
}

// failure is a response status as the apiserver writes it into responseStatus and, as a Status
// object, into responseObject.
func failure(code int32, reason metav1.StatusReason, message string, details *metav1.StatusDetails) *metav1.Status {
	return &metav1.Status{Status: metav1.StatusFailure, Message: message, Reason: reason, Details: details, Code: code}
}

// statusObject is a Status as a response object.
func statusObject(s *metav1.Status) *metav1.Status {
	o := *s
	o.TypeMeta = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}
	return &o
}
