package auditgen

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
	sigsjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"
)

func generate(t *testing.T, cfg Config) ([]byte, Stats) {
	t.Helper()
	var buf bytes.Buffer
	st, err := Generate(&buf, cfg)
	if err != nil {
		t.Fatalf("Generate(%+v) error: %v", cfg, err)
	}
	return buf.Bytes(), st
}

func TestDeterministic(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"default", Config{Seed: 1, Events: 3000, Nodes: 40}},
		{"every stage", Config{Seed: 7, Events: 3000, Nodes: 40, OmitStages: []auditv1.Stage{}}},
		{"small cluster", Config{Seed: 3, Events: 2000, Nodes: 5, KosmosNodes: 2, Namespaces: 2, PodsPerNode: 3, Mix: Mix{ActivityNodeFlap: 0.05, ActivityDrain: 0.05, ActivityPodChurn: 0.5, ActivityRead: 0.4}}},
		{"by bytes", Config{Seed: 1, Bytes: 2 << 20, Nodes: 40}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, sa := generate(t, tc.cfg)
			var snap bytes.Buffer
			cfg := tc.cfg
			cfg.SnapshotWriter = &snap
			b, sb := generate(t, cfg)
			if !bytes.Equal(a, b) {
				t.Errorf("two logs of the same Config (the second with a snapshot) differ")
			}
			sb.SnapshotObjects = 0
			if diff := cmp.Diff(sa, sb); diff != "" {
				t.Errorf("Stats mismatch (-want +got):\n%s", diff)
			}
			cfg.Seed++
			cfg.SnapshotWriter = nil
			if c, _ := generate(t, cfg); bytes.Equal(a, c) {
				t.Errorf("seeds %d and %d give the same log", tc.cfg.Seed, cfg.Seed)
			}
		})
	}
}

func TestBudget(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"events", Config{Seed: 1, Events: 1234}},
		{"events with every stage", Config{Seed: 1, Events: 1001, OmitStages: []auditv1.Stage{}}},
		{"bytes", Config{Seed: 1, Bytes: 1 << 20}},
		{"both, events first", Config{Seed: 1, Events: 10, Bytes: 1 << 30}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			log, st := generate(t, tc.cfg)
			lines := int64(bytes.Count(log, []byte("\n")))
			if lines != st.Events || int64(len(log)) != st.Bytes {
				t.Errorf("Stats say %d events, %d bytes; the log has %d lines, %d bytes", st.Events, st.Bytes, lines, len(log))
			}
			if tc.cfg.Events > 0 && tc.cfg.Bytes == 0 && st.Events != tc.cfg.Events {
				t.Errorf("Events = %d, want %d", st.Events, tc.cfg.Events)
			}
			if tc.cfg.Events == 0 && (st.Bytes < tc.cfg.Bytes || st.Bytes > tc.cfg.Bytes+64<<10) {
				t.Errorf("Bytes = %d, want just over %d", st.Bytes, tc.cfg.Bytes)
			}
			if tc.cfg.Events > 0 && tc.cfg.Bytes > 0 && st.Events != tc.cfg.Events {
				t.Errorf("Events = %d, want %d", st.Events, tc.cfg.Events)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no size", Config{Seed: 1}, "set Events or Bytes"},
		{"negative events", Config{Events: -1}, "must not be negative"},
		{"all kosmos", Config{Events: 1, Nodes: 3, KosmosNodes: 3}, "must be fewer than Nodes"},
		{"bad stage", Config{Events: 1, OmitStages: []auditv1.Stage{"Sometimes"}}, "unknown stage"},
		{"bad activity", Config{Events: 1, Mix: Mix{"dance": 1}}, "unknown activity"},
		{"zero mix", Config{Events: 1, Mix: Mix{ActivityRead: 0}}, "every Mix weight is zero"},
		{"negative weight", Config{Events: 1, Mix: Mix{ActivityRead: -1}}, "negative weight"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Generate(io.Discard, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Generate(%+v) = %v, want an error containing %q", tc.cfg, err, tc.want)
			}
		})
	}
}

// failingWriter fails after n bytes.
type failingWriter struct{ n int }

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.n {
		return 0, fmt.Errorf("disk full")
	}
	w.n -= len(p)
	return len(p), nil
}

func TestWriteError(t *testing.T) {
	t.Parallel()
	_, err := Generate(&failingWriter{n: 1 << 20}, Config{Seed: 1, Events: 100000})
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Generate to a failing writer = %v, want the write error", err)
	}
}

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestEventsDecodeStrictly decodes every line into the apiserver's audit/v1 Event, refusing
// unknown and duplicate fields.
func TestEventsDecodeStrictly(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  Config
	}{
		{"a day", Config{Seed: 5, Events: 10000, OmitStages: []auditv1.Stage{}, Mix: withScenarios(DefaultMix())}},
		// More requests than the span holds one after another: the clock follows them.
		{"dense", Config{Seed: 5, Events: 200000, Duration: 10 * time.Minute, OmitStages: DefaultOmitStages}},
	} {
		t.Run(tc.name, func(t *testing.T) { checkEventsStrictly(t, tc.cfg) })
	}
}

func checkEventsStrictly(t *testing.T, cfg Config) {
	log, _ := generate(t, cfg)
	stagesOf := map[string][]auditv1.Stage{}
	var lastDone time.Time
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var ev auditv1.Event
		strict, err := sigsjson.UnmarshalStrict(sc.Bytes(), &ev)
		if err != nil || len(strict) > 0 {
			t.Fatalf("line %d: UnmarshalStrict = %v, %v\n%s", n, err, strict, sc.Bytes())
		}
		if ev.Kind != "Event" || ev.APIVersion != "audit.k8s.io/v1" || ev.ObjectRef == nil || ev.Verb == "" || ev.RequestURI == "" {
			t.Fatalf("line %d: incomplete event %+v", n, ev)
		}
		if !uuidRE.MatchString(string(ev.AuditID)) {
			t.Fatalf("line %d: auditID %q is not a UUID", n, ev.AuditID)
		}
		if ev.StageTimestamp.Before(&ev.RequestReceivedTimestamp) {
			t.Fatalf("line %d: stageTimestamp before requestReceivedTimestamp", n)
		}
		hasObjects := ev.RequestObject != nil || ev.ResponseObject != nil
		switch {
		case ev.Stage != auditv1.StageResponseComplete && (hasObjects || (ev.Stage == auditv1.StageRequestReceived) != (ev.ResponseStatus == nil)):
			t.Fatalf("line %d: stage %s with objects or a wrong response status", n, ev.Stage)
		case ev.Level == auditv1.LevelMetadata && hasObjects:
			t.Fatalf("line %d: Metadata-level event with objects", n)
		case ev.Level == auditv1.LevelRequestResponse && ev.Stage == auditv1.StageResponseComplete && ev.ResponseObject == nil:
			t.Fatalf("line %d: RequestResponse-level event without a response object", n)
		}
		if ev.Stage == auditv1.StageResponseComplete && ev.Verb != "watch" {
			// Written as responses complete, each received once the one before completed:
			// no two overlap, as the replay reads a log (a write and a request concurrent
			// with it leave the version the request read open).
			if ev.RequestReceivedTimestamp.Time.Before(lastDone) {
				t.Fatalf("line %d: received at %s, before the request logged before it completed (%s)", n, ev.RequestReceivedTimestamp.Time, lastDone)
			}
			lastDone = ev.StageTimestamp.Time
		}
		id := string(ev.AuditID)
		stagesOf[id] = append(stagesOf[id], ev.Stage)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for id, stages := range stagesOf {
		want := []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseComplete}
		if slices.Contains(stages, auditv1.StageResponseStarted) {
			want = []auditv1.Stage{auditv1.StageRequestReceived, auditv1.StageResponseStarted, auditv1.StageResponseComplete}
		}
		want = slices.DeleteFunc(want, func(s auditv1.Stage) bool { return slices.Contains(cfg.OmitStages, s) })
		if len(stages) < len(want) { // cut off by the end of the log
			want = want[:len(stages)]
		}
		if diff := cmp.Diff(want, stages); diff != "" {
			t.Fatalf("auditID %s: stages mismatch (-want +got):\n%s", id, diff)
		}
	}
}

// withScenarios makes the rare scenarios common enough for a short log.
func withScenarios(m Mix) Mix {
	m[ActivityNodeFlap] = 0.004
	m[ActivityDrain] = 0.004
	return m
}

// testEvent is the part of an event the consistency test reads.
type testEvent struct {
	Verb      string `json:"verb"`
	ObjectRef struct {
		Resource, Namespace, Name, Subresource string
	} `json:"objectRef"`
	User             struct{ Username string }  `json:"user"`
	ImpersonatedUser *struct{ Username string } `json:"impersonatedUser"`
	ResponseStatus   struct{ Code int }         `json:"responseStatus"`
	RequestObject    json.RawMessage            `json:"requestObject"`
	ResponseObject   json.RawMessage            `json:"responseObject"`
}

// TestConsistency replays the writes of a log with scenarios against its snapshot: every pod
// request names a pod that exists (in the snapshot or created earlier and not deleted for good),
// every node request a node of the snapshot; every taint-eviction DELETE follows its pod's
// DisruptionTarget patch; every Draino cordon follows a KernelDeadlock report.
func TestConsistency(t *testing.T) {
	t.Parallel()
	var snap bytes.Buffer
	log, st := generate(t, Config{Seed: 11, Events: 30000, Nodes: 60, KosmosNodes: 6, Namespaces: 10, SnapshotWriter: &snap, Mix: withScenarios(DefaultMix())})
	var list struct {
		Kind  string `json:"kind"`
		Items []struct {
			Kind     string `json:"kind"`
			Metadata struct{ Name, Namespace string }
		} `json:"items"`
	}
	if err := yaml.Unmarshal(snap.Bytes(), &list); err != nil {
		t.Fatalf("the snapshot is not YAML: %v", err)
	}
	if list.Kind != "List" || len(list.Items) != st.SnapshotObjects {
		t.Fatalf("snapshot: kind %q with %d items, want List with %d", list.Kind, len(list.Items), st.SnapshotObjects)
	}
	pods, nodes := map[string]bool{}, map[string]bool{}
	for _, it := range list.Items {
		switch it.Kind {
		case "Pod":
			pods[it.Metadata.Namespace+"/"+it.Metadata.Name] = true
		case "Node":
			nodes[it.Metadata.Name] = true
		}
	}
	disrupted := map[string]bool{}
	deadlocked := map[string]bool{}
	counts := map[string]int{}
	sc := bufio.NewScanner(bytes.NewReader(log))
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var ev testEvent
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("line %d: %v", n, err)
		}
		ref := ev.ObjectRef
		key := ref.Namespace + "/" + ref.Name
		write := ev.Verb != "get" && ev.Verb != "list" && ev.Verb != "watch"
		switch {
		case ref.Resource == "pods" && write && ev.Verb == "create" && ref.Subresource == "":
			if pods[key] {
				t.Fatalf("line %d: create of pod %s, which exists", n, key)
			}
			pods[key] = true
			counts["create"]++
		case ref.Resource == "pods" && write:
			if !pods[key] {
				t.Fatalf("line %d: %s pods/%s of %s, which is neither in the snapshot nor created earlier (or was deleted)", n, ev.Verb, ref.Subresource, key)
			}
			if ref.Subresource == "status" && bytes.Contains(ev.RequestObject, []byte("DeletionByTaintManager")) {
				disrupted[key] = true
			}
			if ev.Verb == "delete" && ev.User.Username == "system:serviceaccount:kube-system:node-controller" && ev.ImpersonatedUser == nil {
				if !disrupted[key] {
					t.Fatalf("line %d: node-controller deletes %s without the DisruptionTarget patch first", n, key)
				}
				counts["taint-eviction delete"]++
			}
			if ev.Verb == "delete" && bytes.Contains(ev.RequestObject, []byte(`"gracePeriodSeconds":0`)) {
				delete(pods, key)
				counts["final delete"]++
			}
			if ref.Subresource == "eviction" {
				counts[fmt.Sprintf("eviction %d", ev.ResponseStatus.Code)]++
			}
		case ref.Resource == "nodes" && write:
			if !nodes[ref.Name] {
				t.Fatalf("line %d: %s of node %s, which is not in the snapshot", n, ev.Verb, ref.Name)
			}
			switch {
			case strings.HasSuffix(ev.User.Username, ":node-problem-detector"):
				deadlocked[ref.Name] = bytes.Contains(ev.ResponseObject, []byte(`"type":"KernelDeadlock","status":"True"`))
			case strings.HasSuffix(ev.User.Username, ":draino") && ref.Subresource == "" && ev.Verb == "update":
				counts["cordon"]++
				if deadlocked[ref.Name] {
					counts["cordon with KernelDeadlock"]++
				}
			case strings.HasSuffix(ev.User.Username, ":node-controller") && ref.Subresource == "status" &&
				bytes.Contains(ev.ResponseObject, []byte(`"type":"Ready","status":"Unknown"`)):
				counts["node unknown"]++
			}
		}
	}
	for _, what := range []string{"create", "final delete", "taint-eviction delete", "eviction 201", "eviction 429", "cordon", "cordon with KernelDeadlock", "node unknown"} {
		if counts[what] == 0 {
			t.Errorf("no %s in the log; counts: %v", what, counts)
		}
	}
}

// TestMix checks the traffic against the Mix: the picks follow the weights, most lines are
// Metadata-level reads and lease updates, and events average about 2 KB.
func TestMix(t *testing.T) {
	t.Parallel()
	mix := DefaultMix()
	_, st := generate(t, Config{Seed: 2, Events: 50000, Mix: mix})
	total := 0.0
	var picks int64
	for _, a := range Activities {
		total += mix[a]
		picks += st.Picks[a]
	}
	for _, a := range Activities {
		want := mix[a] / total
		got := float64(st.Picks[a]) / float64(picks)
		if want >= 0.01 && (got < want*0.85 || got > want*1.15) {
			t.Errorf("%s: %.4f of the picks, want about %.4f", a, got, want)
		}
	}
	frac := func(n int64) float64 { return float64(n) / float64(st.Events) }
	if f := frac(st.ByLevel[auditv1.LevelMetadata]); f < 0.7 {
		t.Errorf("Metadata-level lines: %.2f, want most (>= 0.7)", f)
	}
	if f := frac(st.ByVerb["get"] + st.ByVerb["list"] + st.ByVerb["watch"]); f < 0.35 {
		t.Errorf("reads: %.2f of the lines, want >= 0.35", f)
	}
	if f := frac(st.ByLevel[auditv1.LevelRequestResponse]); f < 0.1 || f > 0.3 {
		t.Errorf("RequestResponse-level lines: %.2f, want 0.1 to 0.3", f)
	}
	if avg := st.Bytes / st.Events; avg < 1700 || avg > 2400 {
		t.Errorf("average event: %d bytes, want about 2 KB", avg)
	}
	if st.ByStage[auditv1.StageRequestReceived] != 0 || st.ByStage[auditv1.StageResponseStarted] == 0 {
		t.Errorf("stages %v: want no RequestReceived (omitted by default) and ResponseStarted for watches", st.ByStage)
	}
}
