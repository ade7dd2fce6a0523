package replay

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	vapccel "github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/replay/internal/auditlog"
	"github.com/vapc-dev/vapc/verify/replay/internal/state"
)

// kube-apiserver's built-in admission plugins (DefaultTolerationSeconds, ServiceAccount,
// LimitRanger, Priority, ...) change a request's object before validating admission and read
// cluster objects to do it. A replay runs them (verify/internal/apiserver.Plugins) over the
// request's View. What the View does not know, a plugin reads as a stand-in when the log shows
// the request got past the plugins, and the fields that plugin sets from it are then not known
// (pluginUnknowns): the decision stands only if no policy reads them. When the log does not
// show that, the read fails, and so does the request, before validating admission.

// pluginCluster is what the plugins read for one request.
type pluginCluster struct {
	v      *state.StateView
	mapper meta.RESTMapper
	// passed says the log shows the request got past the built-in plugins.
	passed bool
	misses []pluginMiss
	// read says a plugin read the cluster.
	read bool
	// at is when the server ran the plugins, as far as the log says: when the request was
	// received; else when it completed, which may be as much as kube-apiserver's
	// --request-timeout (a minute) later.
	at     time.Time
	atLate bool
}

// pluginMiss is an object a plugin read that the View does not know.
type pluginMiss struct {
	gr   schema.GroupResource
	what string
}

func (c *pluginCluster) miss(gvr schema.GroupVersionResource, key, why string) {
	c.misses = append(c.misses, pluginMiss{gr: gvr.GroupResource(), what: fmt.Sprintf("%s %s: %s", gvr.GroupResource(), key, state.ShortReason(why))})
}

func (c *pluginCluster) Get(gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	c.read = true
	if c.v == nil {
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	obj, absent, unknown, partial := c.v.Lookup(gvr, namespace, name)
	switch {
	case obj != nil && len(partial) > 0 && len(pluginUnknowns[gvr.GroupResource()]) > 0:
		// Known but for some fields: what the plugin sets from it is not known, when it reads
		// one of them.
		if read, u, ok := pluginInputReads(gvr.GroupResource()).DependsOn(partial); ok {
			c.miss(gvr, state.JoinKey(namespace, name), "its "+u.Path.String()+" is not known ("+read.Path.String()+" decides what the plugin sets): "+u.Why)
		}
		return obj, nil
	case obj != nil:
		return obj, nil
	case absent:
		return nil, apierrors.NewNotFound(gvr.GroupResource(), name)
	}
	c.miss(gvr, state.JoinKey(namespace, name), unknown)
	if !c.passed {
		return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("vapc: the replay does not know %s %s: %s", gvr.GroupResource(), state.JoinKey(namespace, name), unknown))
	}
	return c.standIn(gvr, namespace, name)
}

func (c *pluginCluster) List(gvr schema.GroupVersionResource, namespace string) ([]runtime.Object, error) {
	c.read = true
	if c.v == nil {
		return nil, nil
	}
	objs, unknown, partials := c.v.ListFor(gvr, namespace)
	if unknown == "" && len(objs) == 0 {
		unknown = c.liveLookupCached(gvr.GroupResource(), namespace)
	}
	if gr := gvr.GroupResource(); unknown == "" && len(pluginUnknowns[gr]) > 0 {
		// Objects known but for some fields (a PriorityClass written at level Request: its
		// resourceVersion): what the plugin sets from them is not known when it reads one, as
		// for Get.
		for _, pu := range partials {
			if read, u, ok := pluginInputReads(gr).DependsOn(pu.Unknowns); ok {
				unknown = fmt.Sprintf("%s: its %s is not known (%s decides what the plugin sets): %s", pu.Key(), u.Path, read.Path, u.Why)
				break
			}
		}
	}
	if unknown != "" {
		key := "(all)"
		if namespace != "" {
			key = namespace + "/(all)"
		}
		c.miss(gvr, key, unknown)
		if !c.passed {
			return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("vapc: the replay does not know every %s: %s", gvr.GroupResource(), unknown))
		}
	}
	return objs, nil
}

// setAt sets when the server ran the plugins for the request ev, as far as its event says.
func (c *pluginCluster) setAt(ev *Event) {
	if c.at = ev.Received(); c.at.IsZero() {
		c.at, c.atLate = auditlog.ParseTime(ev.StageTimestamp), true
	}
}

// liveLookupCached says why a plugin that finds none of a namespace's objects of gr in its
// informer may read others, or "": LimitRanger then reads what a live lookup found within the
// last 30 seconds (liveLookupCache, liveTTL), which a lookup while its informer did not yet
// hold a LimitRange just created keeps after the LimitRange is deleted (a helper's server
// applied a LimitRange deleted 0.7 and 4.4 s before to pods, which a policy denied). Where the
// log shows a write to one of them within that time, the replay does not know what the
// plugin's cache held.
func (c *pluginCluster) liveLookupCached(gr schema.GroupResource, namespace string) string {
	done := c.v.LiveLookupDone(gr, namespace)
	if !state.LiveLookupCached[gr] || done.IsZero() || c.at.IsZero() {
		return ""
	}
	window := state.LiveLookupTTL
	if c.atLate {
		window += time.Minute // received up to --request-timeout before it completed
	}
	if c.at.Sub(done) >= window {
		return ""
	}
	return fmt.Sprintf("none now, but LimitRanger reads what it looked up live in the last %s where its informer holds none, and one was written at %s, within that time of the request", state.LiveLookupTTL, done.UTC().Format(time.RFC3339Nano))
}

// standIn is an object of the resource that holds its name only: it exists, as far as a plugin
// that the request got past can tell.
func (c *pluginCluster) standIn(gvr schema.GroupVersionResource, namespace, name string) (runtime.Object, error) {
	gvk, err := c.mapper.KindFor(gvr)
	if err != nil {
		return nil, err
	}
	obj, err := clientgoscheme.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	a, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	a.SetName(name)
	a.SetNamespace(namespace)
	if ns, ok := obj.(*corev1.Namespace); ok {
		ns.Status.Phase = corev1.NamespaceActive
	}
	obj.GetObjectKind().SetGroupVersionKind(gvk)
	return obj, nil
}

// unknowns are the fields of the request's objects (of the resource gr) that the plugins set
// from what they read without knowing it. LimitRanger reads LimitRanges for a claim too, and
// sets nothing of it (it only checks its storage: DefaultLimitRangerActions.MutateLimit).
func (c *pluginCluster) unknowns(gr schema.GroupResource) []vapccel.Unknown {
	var out []vapccel.Unknown
	seen := map[string]bool{}
	for _, m := range c.misses {
		if m.gr == limitRangesGR && gr != podsGR {
			continue
		}
		for _, u := range pluginUnknowns[m.gr] {
			u.Why = "an admission plugin read " + m.what
			if k := u.Path.String() + u.Why; !seen[k] {
				seen[k] = true
				out = append(out, u)
			}
		}
	}
	return out
}

// missed describes the objects the plugins read without knowing them.
func (c *pluginCluster) missed() string {
	var ws []string
	for _, m := range c.misses {
		ws = append(ws, m.what)
	}
	sort.Strings(ws)
	return strings.Join(state.Dedupe(ws), "; ")
}

func objectPath(steps ...string) vapccel.FieldPath {
	return vapccel.FieldPath{Root: "object", Steps: steps}
}

// pluginUnknowns are the fields the default plugins set from the objects of each resource
// they read (plugin/pkg/admission/...): a namespace decides nothing the plugins set (it can
// only refuse), a pod's ServiceAccount its name, token volume and mounts and image pull
// secrets, LimitRanges its resources and an annotation, a PriorityClass its priority, a
// RuntimeClass its overhead, node selector and tolerations, a Node the topology labels of a
// binding, the default StorageClass and IngressClass a claim's and an ingress's class.
var pluginUnknowns = map[schema.GroupResource][]vapccel.Unknown{
	{Resource: "serviceaccounts"}: {
		{Path: objectPath("spec", "serviceAccountName")}, {Path: objectPath("spec", "serviceAccount")},
		{Path: objectPath("spec", "volumes")}, {Path: objectPath("spec", "imagePullSecrets")},
		{Path: objectPath("spec", "containers", vapccel.AnyStep, "volumeMounts")},
		{Path: objectPath("spec", "initContainers", vapccel.AnyStep, "volumeMounts")},
		{Path: objectPath("spec", "ephemeralContainers", vapccel.AnyStep, "volumeMounts")},
	},
	{Resource: "limitranges"}: {
		{Path: objectPath("spec", "containers", vapccel.AnyStep, "resources")},
		{Path: objectPath("spec", "initContainers", vapccel.AnyStep, "resources")},
		{Path: objectPath("metadata", "annotations", "kubernetes.io/limit-ranger")},
	},
	{Group: "scheduling.k8s.io", Resource: "priorityclasses"}: {
		{Path: objectPath("spec", "priority")}, {Path: objectPath("spec", "priorityClassName")},
		{Path: objectPath("spec", "preemptionPolicy")},
	},
	{Group: "node.k8s.io", Resource: "runtimeclasses"}: {
		{Path: objectPath("spec", "overhead")}, {Path: objectPath("spec", "nodeSelector")},
		{Path: objectPath("spec", "tolerations")},
	},
	{Resource: "nodes"}: {
		// PodTopologyLabels copies these two of the node's labels (its default config).
		{Path: objectPath("metadata", "labels", "topology.kubernetes.io/zone")},
		{Path: objectPath("metadata", "labels", "topology.kubernetes.io/region")},
	},
	{Group: "storage.k8s.io", Resource: "storageclasses"}: {
		{Path: objectPath("spec", "storageClassName")},
	},
	{Group: "networking.k8s.io", Resource: "ingressclasses"}: {
		{Path: objectPath("spec", "ingressClassName")},
	},
}

var limitRangesGR = schema.GroupResource{Resource: "limitranges"}

// pluginInputFields are the fields of the objects of each resource the default plugins set
// something from (plugin/pkg/admission/...): the ServiceAccount plugin mounts the account's
// token and copies its image pull secrets, unless it opts out of automounting, and enforces
// its mountable secrets by annotation (not its uid or resourceVersion: the projected token
// volume names neither); LimitRanger applies the limits; Priority the class's value and
// policy, and a global default; RuntimeClass its overhead and scheduling; PodTopologyLabels
// the node's labels; the default StorageClass and IngressClass admission their default
// annotation. A resource not listed here: any field.
var pluginInputFields = map[schema.GroupResource][][]string{
	{Resource: "serviceaccounts"}:                             {{"metadata", "name"}, {"metadata", "annotations"}, {"automountServiceAccountToken"}, {"imagePullSecrets"}, {"secrets"}},
	{Resource: "limitranges"}:                                 {{"spec"}},
	{Group: "scheduling.k8s.io", Resource: "priorityclasses"}: {{"metadata", "name"}, {"value"}, {"preemptionPolicy"}, {"globalDefault"}},
	{Group: "node.k8s.io", Resource: "runtimeclasses"}:        {{"metadata", "name"}, {"overhead"}, {"scheduling"}, {"handler"}},
	{Resource: "nodes"}:                                       {{"metadata", "labels"}},
	{Group: "storage.k8s.io", Resource: "storageclasses"}:     {{"metadata", "name"}, {"metadata", "annotations"}},
	{Group: "networking.k8s.io", Resource: "ingressclasses"}:  {{"metadata", "name"}, {"metadata", "annotations"}},
}

// pluginInputReads are the reads of pluginInputFields of the resource, as fields of the object the
// State holds.
func pluginInputReads(gr schema.GroupResource) vapccel.Reads {
	fields, ok := pluginInputFields[gr]
	if !ok {
		return vapccel.Reads{All: "the plugin's inputs of " + gr.String()}
	}
	var out vapccel.Reads
	for _, f := range fields {
		out.Reads = append(out.Reads, vapccel.Read{Path: objectPath(f...)})
	}
	return out
}

// unknownsOfTime are a server's clock readings the log does not hold to the second.
func timeUnknown(path vapccel.FieldPath) vapccel.Unknown {
	return vapccel.Unknown{Path: path, ValueOnly: true, Why: "the server's clock during the request, which the log does not hold to the second"}
}

// serverSecond is the second the server's clock read while it handled the request, when the
// log holds it: the request was received and completed within the same second.
func serverSecond(ev *Event) (metav1.Time, bool) {
	from, to := auditlog.ParseTime(ev.RequestReceivedTimestamp), auditlog.ParseTime(ev.StageTimestamp)
	if from.IsZero() || to.IsZero() || from.Unix() != to.Unix() {
		return metav1.Time{}, false
	}
	return metav1.Unix(from.Unix(), 0), true
}
