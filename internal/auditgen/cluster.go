package auditgen

import (
	"fmt"
	"strconv"
	"time"
)

// cluster is what the generator knows of the cluster: enough to write consistent requests.
type cluster struct {
	nodes      []*node
	kosmos     []*node
	regular    []*node
	namespaces []*namespace
	apps       []*app
	live       []*pod // pods neither terminating nor deleted
	target     int    // the pod count churn keeps the cluster at
	podSeq     int
	// The eviction-toleration-floor ConfigMap of the snapshot.
	floorConfigUID, floorConfigRV string
}

// node is a node and its kubelet's view of it.
type node struct {
	idx                           int
	name, uid, ip                 string
	kosmos                        bool
	zone, instanceType            string
	machineID, systemUUID, bootID string
	created                       time.Time
	rv                            string
	leaseUID                      string
	heartbeat, readyTransition    time.Time
	ready                         string // "True" or "Unknown"
	kernelDeadlock                bool
	kdTransition                  time.Time
	drain                         string // DrainScheduled: "", "True" or "False"
	drainMsg                      string
	drainTransition               time.Time
	unschedulable                 bool
	unreachable, noExecute        bool // node-controller's unreachable NoSchedule and NoExecute taints
	unreachableSince              time.Time
	unschedulableTaint            bool
	unschedulableSince            time.Time
	busy                          bool // in a scenario
	pods                          []*pod
	terminating                   []*pod // pods waiting for the kubelet's final delete
	nextIP                        int
	kubeletID                     *identity
	cpu, memory, pods_, storage   string
}

// namespace is a namespace and its workloads.
type namespace struct {
	name, uid, rv string
	created       time.Time
	apps          []*app
	system        bool
}

// app is a Deployment and its current ReplicaSet.
type app struct {
	ns                  *namespace
	name, hash, rsUID   string
	image, sidecarImage string
	port                int32
	cpu, memory, memLim string
	configMap           bool
	shortToleration     int64 // > 0: the pods tolerate unreachable/not-ready only this long
	kosmosTolerant      bool  // may run on Kosmos nodes
	pdb                 string
	statefulSet         bool
}

// pod is a pod as the API server stores it.
type pod struct {
	app               *app
	name, uid         string
	node              *node
	ip                string
	created, started  time.Time
	rv                string
	running           bool
	ready             bool
	readyTransition   time.Time
	restarts          int32
	tokenVolume       string
	terminating       bool
	gone              bool
	deletionTimestamp time.Time
	deletionGrace     int64
	disruption        string // DisruptionTarget reason, "" when none
	disruptionMessage string
	disruptionAt      time.Time
	liveIdx, nodeIdx  int
	containerIDs      [2]string
	isBound           bool
}

var (
	teamNames = []string{"shop", "payments", "search", "identity", "ledger", "media", "ml-batch", "checkout",
		"catalog", "recommend", "notify", "billing", "fraud", "maps", "chat", "reports", "ads", "inventory",
		"shipping", "support"}
	appNames = []string{"web", "api", "cart", "worker", "gateway", "auth", "search", "report", "cache",
		"scheduler", "indexer", "frontend", "backend", "consumer", "producer", "sync"}
	zones         = []string{"eu-west-1a", "eu-west-1b", "eu-west-1c"}
	instanceTypes = []string{"m6i.2xlarge", "m6i.4xlarge", "c6i.4xlarge", "r6i.2xlarge"}
)

func newCluster(g *generator) *cluster {
	c := &cluster{}
	start := g.now
	// Namespaces: the system ones, then teams.
	for _, s := range []string{"default", "kube-system", "kube-public", "kube-node-lease", "kosmos-system"} {
		c.namespaces = append(c.namespaces, &namespace{name: s, uid: g.uuid(), rv: g.nextRV(), created: start.Add(-400 * 24 * time.Hour), system: true})
	}
	c.floorConfigUID, c.floorConfigRV = g.uuid(), g.nextRV()
	for i := 0; i < g.cfg.Namespaces; i++ {
		name := teamNames[i%len(teamNames)]
		if i >= len(teamNames) {
			name = fmt.Sprintf("%s-%d", name, i/len(teamNames)+1)
		}
		ns := &namespace{name: name, uid: g.uuid(), rv: g.nextRV(), created: start.Add(-time.Duration(30+g.rng.IntN(300)) * 24 * time.Hour)}
		c.namespaces = append(c.namespaces, ns)
		napps := 2 + g.rng.IntN(5)
		for j := 0; j < napps; j++ {
			a := &app{
				ns: ns, name: appNames[(i+j*7)%len(appNames)], hash: g.suffix(9 + g.rng.IntN(2)), rsUID: g.uuid(),
				port: []int32{8080, 8443, 9090, 3000, 80}[g.rng.IntN(5)],
				cpu:  []string{"50m", "100m", "250m", "500m", "1"}[g.rng.IntN(5)],
			}
			a.name = uniqueAppName(ns, a.name)
			a.image = fmt.Sprintf("registry.example.com/%s/%s:%d.%d.%d", ns.name, a.name, 1+g.rng.IntN(4), g.rng.IntN(20), g.rng.IntN(10))
			mem := []int{128, 256, 512, 1024}[g.rng.IntN(4)]
			a.memory, a.memLim = fmt.Sprintf("%dMi", mem), fmt.Sprintf("%dMi", mem*2)
			a.configMap = g.chance(0.5)
			if g.chance(0.35) {
				a.sidecarImage = "fluent/fluent-bit:3.2.4"
			}
			if g.chance(0.04) {
				a.shortToleration = []int64{10, 20, 30, 45}[g.rng.IntN(4)]
			}
			a.kosmosTolerant = g.chance(0.6)
			if g.chance(0.4) {
				a.pdb = a.name + "-pdb"
			}
			a.statefulSet = g.chance(0.08)
			ns.apps = append(ns.apps, a)
			c.apps = append(c.apps, a)
		}
	}
	// Nodes: Kosmos leaf nodes first (one per member cluster), then workers.
	for i := 0; i < g.cfg.Nodes; i++ {
		n := &node{idx: i, uid: g.uuid(), kosmos: i < g.cfg.KosmosNodes}
		if n.kosmos {
			n.name = fmt.Sprintf("kosmos-member%d", i+1)
			n.cpu, n.memory, n.pods_, n.storage = "62700m", "241532Mi", "330", "1543Gi"
		} else {
			n.name = fmt.Sprintf("worker-%04d", i-g.cfg.KosmosNodes+1)
			n.instanceType = instanceTypes[g.rng.IntN(len(instanceTypes))]
			n.cpu, n.memory, n.pods_, n.storage = "16", "65288352Ki", "110", "203056560Ki"
		}
		n.zone = zones[i%len(zones)]
		n.ip = fmt.Sprintf("10.20.%d.%d", 1+i/250, 10+i%250)
		n.machineID = fmt.Sprintf("%016x%016x", g.rng.Uint64(), g.rng.Uint64())
		n.systemUUID, n.bootID, n.leaseUID = g.uuid(), g.uuid(), g.uuid()
		n.created = start.Add(-time.Duration(1+g.rng.IntN(90)) * 24 * time.Hour)
		n.ready, n.heartbeat, n.readyTransition = "True", start.Add(-time.Duration(g.rng.IntN(300))*time.Second), n.created.Add(90*time.Second)
		n.kdTransition = n.created.Add(2 * time.Minute)
		n.rv = g.nextRV()
		n.nextIP = 3
		c.nodes = append(c.nodes, n)
		if n.kosmos {
			c.kosmos = append(c.kosmos, n)
		} else {
			c.regular = append(c.regular, n)
		}
	}
	// Pods: PodsPerNode on average, spread over the team apps.
	c.target = g.cfg.Nodes * g.cfg.PodsPerNode
	if len(c.apps) > 0 {
		for i := 0; i < c.target; i++ {
			a := c.apps[g.rng.IntN(len(c.apps))]
			n := c.placement(g, a)
			if n == nil {
				break
			}
			created := start.Add(-time.Duration(60+g.rng.IntN(20*24*3600)) * time.Second)
			p := c.newPod(g, a, n, created)
			p.running, p.ready, p.isBound = true, true, true
			p.started = created.Add(time.Duration(1+g.rng.IntN(3)) * time.Second)
			p.readyTransition = p.started.Add(time.Duration(2+g.rng.IntN(20)) * time.Second)
			p.restarts = int32(g.rng.IntN(3) * g.rng.IntN(2))
			p.rv = g.nextRV()
			c.addLive(p)
		}
	}
	return c
}

func uniqueAppName(ns *namespace, name string) string {
	base, k := name, 2
	for again := true; again; {
		again = false
		for _, o := range ns.apps {
			if o.name == name {
				name = base + "-" + strconv.Itoa(k)
				k++
				again = true
				break
			}
		}
	}
	return name
}

// placement picks a Ready, schedulable node for a pod of the app, as the scheduler would; nil
// when there is none.
func (c *cluster) placement(g *generator, a *app) *node {
	for try := 0; try < 8; try++ {
		var n *node
		if a.kosmosTolerant && len(c.kosmos) > 0 && g.chance(0.2) {
			n = c.kosmos[g.rng.IntN(len(c.kosmos))]
		} else if len(c.regular) > 0 {
			n = c.regular[g.rng.IntN(len(c.regular))]
		}
		if n != nil && n.ready == "True" && !n.unschedulable && !n.unreachable {
			return n
		}
	}
	return nil
}

// newPod makes a pod of the app bound to the node (not yet in the live set).
func (c *cluster) newPod(g *generator, a *app, n *node, created time.Time) *pod {
	c.podSeq++
	p := &pod{app: a, uid: g.uuid(), node: n, created: created, tokenVolume: "kube-api-access-" + g.suffix(5)}
	if a.statefulSet {
		p.name = fmt.Sprintf("%s-%d", a.name, c.podSeq)
	} else {
		p.name = a.name + "-" + a.hash + "-" + g.suffix(5)
	}
	p.ip = n.podIP(n.nextIP)
	n.nextIP = n.nextIP%250 + 3
	p.containerIDs[0] = fmt.Sprintf("containerd://%016x%016x%016x%016x", g.rng.Uint64(), g.rng.Uint64(), g.rng.Uint64(), g.rng.Uint64())
	p.containerIDs[1] = fmt.Sprintf("containerd://%016x%016x%016x%016x", g.rng.Uint64(), g.rng.Uint64(), g.rng.Uint64(), g.rng.Uint64())
	return p
}

// podIP is an address of the node's pod CIDR.
func (n *node) podIP(host int) string {
	return fmt.Sprintf("10.%d.%d.%d", 64+n.idx/256, n.idx%256, host)
}

func (n *node) podCIDR() string { return fmt.Sprintf("10.%d.%d.0/24", 64+n.idx/256, n.idx%256) }

// addLive adds a pod to the live set and its node.
func (c *cluster) addLive(p *pod) {
	p.liveIdx = len(c.live)
	c.live = append(c.live, p)
	p.nodeIdx = len(p.node.pods)
	p.node.pods = append(p.node.pods, p)
}

// removeLive takes a pod out of the live set (it is terminating or gone).
func (c *cluster) removeLive(p *pod) {
	if p.liveIdx < 0 {
		return
	}
	last := c.live[len(c.live)-1]
	c.live[p.liveIdx], last.liveIdx = last, p.liveIdx
	c.live = c.live[:len(c.live)-1]
	n := p.node
	lastN := n.pods[len(n.pods)-1]
	n.pods[p.nodeIdx], lastN.nodeIdx = lastN, p.nodeIdx
	n.pods = n.pods[:len(n.pods)-1]
	p.liveIdx, p.nodeIdx = -1, -1
}

// randomLive returns a live pod on a Ready node that no scenario holds, or nil.
func (c *cluster) randomLive(g *generator) *pod {
	for try := 0; try < 8 && len(c.live) > 0; try++ {
		p := c.live[g.rng.IntN(len(c.live))]
		if !p.node.busy && p.node.ready == "True" {
			return p
		}
	}
	return nil
}

// randomNode returns a node that no scenario holds, or nil.
func (c *cluster) randomNode(g *generator, from []*node) *node {
	for try := 0; try < 8 && len(from) > 0; try++ {
		n := from[g.rng.IntN(len(from))]
		if !n.busy && n.ready == "True" {
			return n
		}
	}
	return nil
}
