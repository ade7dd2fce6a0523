package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/initializer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	genericapiserver "k8s.io/apiserver/pkg/server"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	clientgofake "k8s.io/client-go/kubernetes/fake"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/compatibility"
	kubeoptions "k8s.io/kubernetes/pkg/kubeapiserver/options"
)

// The built-in admission plugins of kube-apiserver that run before ValidatingAdmissionPolicy
// and that a replay can run offline, by the names kube-apiserver's
// --enable-admission-plugins takes. The others need what a log does not hold: a webhook
// (ImagePolicyWebhook), the rate of requests (EventRateLimit), or run after
// ValidatingAdmissionPolicy (ValidatingAdmissionWebhook, ResourceQuota, AlwaysDeny);
// MutatingAdmissionPolicy and MutatingAdmissionWebhook are the cluster's own policies.
var offline = sets.New(
	"AlwaysAdmit", "NamespaceAutoProvision", "NamespaceLifecycle", "NamespaceExists",
	"LimitPodHardAntiAffinityTopology", "LimitRanger", "ServiceAccount", "NodeRestriction",
	"TaintNodesByCondition", "AlwaysPullImages", "PodSecurity", "PodNodeSelector", "Priority",
	"DefaultTolerationSeconds", "PodTolerationRestriction", "ExtendedResourceToleration",
	"DefaultStorageClass", "StorageObjectInUseProtection", "PodGroupProtection",
	"OwnerReferencesPermissionEnforcement", "PersistentVolumeClaimResize", "RuntimeClass",
	"CertificateApproval", "CertificateSigning", "ClusterTrustBundleAttest",
	"CertificateSubjectRestriction", "DefaultIngressClass", "DenyServiceExternalIPs",
	"PodTopologyLabels", "NodeDeclaredFeatureValidator", "PodResizeValidator",
)

// OfflinePlugins are the admission plugins a replay can run, in kube-apiserver's order.
func OfflinePlugins() []string {
	var out []string
	for _, name := range kubeoptions.AllOrderedPlugins {
		if offline.Has(name) {
			out = append(out, name)
		}
	}
	return out
}

// DefaultPlugins are the plugins kube-apiserver 1.37 enables by default
// (options.DefaultOffAdmissionPlugins) that a replay runs, in the server's order.
func DefaultPlugins() []string {
	off := kubeoptions.DefaultOffAdmissionPlugins()
	var out []string
	for _, name := range OfflinePlugins() {
		if !off.Has(name) {
			out = append(out, name)
		}
	}
	return out
}

// SelectPlugins applies --enable-admission-plugins and --disable-admission-plugins to the
// default plugins, as kube-apiserver does: the result in the server's order. A plugin a replay
// cannot run is an error.
func SelectPlugins(enable, disable []string) ([]string, error) {
	on := sets.New(DefaultPlugins()...)
	for _, name := range enable {
		if !slices.Contains(kubeoptions.AllOrderedPlugins, name) {
			return nil, fmt.Errorf("unknown admission plugin %q", name)
		}
		if !offline.Has(name) {
			return nil, fmt.Errorf("admission plugin %q cannot be replayed: the plugins a replay runs are %v", name, OfflinePlugins())
		}
		on.Insert(name)
	}
	for _, name := range disable {
		if !slices.Contains(kubeoptions.AllOrderedPlugins, name) {
			return nil, fmt.Errorf("unknown admission plugin %q", name)
		}
		on.Delete(name)
	}
	var out []string
	for _, name := range OfflinePlugins() {
		if on.Has(name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// Plugins are built-in admission plugins, built by kube-apiserver's own plugin registry
// (options.RegisterAllAdmissionPlugins) with its initializer, in its order, and with the
// default configuration. Their informers and client read a Cluster the caller sets before
// each request. A Plugins runs one request at a time.
type Plugins struct {
	names []string
	chain admission.Interface
	ref   *clusterRef
}

// NewPlugins builds the named plugins.
func NewPlugins(names []string) (*Plugins, error) {
	// As kube-apiserver's NewAdmissionOptions registers them: the generic server's plugins
	// (NamespaceLifecycle among them), then the Kubernetes ones.
	registry := admission.NewPlugins()
	genericapiserver.RegisterAllAdmissionPlugins(registry)
	kubeoptions.RegisterAllAdmissionPlugins(registry)
	ref := &clusterRef{}
	client := clientgofake.NewSimpleClientset() // its tracker is never read: no schema to parse
	// Reactors run newest first: the catch-all goes in first.
	client.PrependReactor("*", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		// A plugin that writes (NamespaceAutoProvision creates a namespace): the log holds the
		// write if the server made it.
		if c, ok := action.(clienttesting.CreateAction); ok {
			return true, c.GetObject(), nil
		}
		return true, nil, apierrors.NewServiceUnavailable("vapc: the admission plugins' client only reads")
	})
	client.PrependReactor("list", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		list := action.(clienttesting.ListAction)
		objs, err := ref.get().List(list.GetResource(), list.GetNamespace())
		if err != nil {
			return true, nil, err
		}
		out, err := newList(list.GetResource(), objs)
		return true, out, err
	})
	client.PrependReactor("get", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		get := action.(clienttesting.GetAction)
		obj, err := ref.get().Get(get.GetResource(), get.GetNamespace(), get.GetName())
		if apierrors.IsNotFound(err) && get.GetResource().Resource == "serviceaccounts" {
			// The ServiceAccount plugin asks again for a missing default account, ten
			// times 100 to 200 ms apart (the controller may be creating it), and then
			// answers that it is not found (getServiceAccount). The replay's cluster does
			// not change while it asks: the same answer at once, an error it returns as it
			// is because it is no NotFound, which the plugin would wait on.
			return true, nil, errors.New(apierrors.NewNotFound(schema.GroupResource{Resource: "serviceaccount"}, get.GetName()).Error())
		}
		return true, obj, err
	})
	factory := clusterInformers{SharedInformerFactory: informers.NewSharedInformerFactory(client, 0), ref: ref}
	// The binary version the server is built with: kube-apiserver v1.37.0.
	version := compatibility.NewEffectiveVersionFromString("1.37.0", "", "")
	init := initializer.New(client, nil, factory, authorizerfactory.NewAlwaysAllowAuthorizer(), utilfeature.DefaultFeatureGate, version, nil, nil)
	config, err := admission.ReadAdmissionConfiguration(names, "", runtime.NewScheme())
	if err != nil {
		return nil, err
	}
	chain, err := registry.NewFromPlugins(names, config, init, nil)
	if err != nil {
		return nil, err
	}
	return &Plugins{names: append([]string(nil), names...), chain: chain, ref: ref}, nil
}

// Names are the plugins, in the order they run.
func (p *Plugins) Names() []string { return append([]string(nil), p.names...) }

// SetCluster sets what the plugins read from now on.
func (p *Plugins) SetCluster(c Cluster) { p.ref.set(c) }

// Handles implements admission.Interface.
func (p *Plugins) Handles(op admission.Operation) bool { return p.chain.Handles(op) }

// Admit runs the mutating plugins.
func (p *Plugins) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if m, ok := p.chain.(admission.MutationInterface); ok {
		return m.Admit(ctx, a, o)
	}
	return nil
}

// Validate runs the validating plugins.
func (p *Plugins) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if v, ok := p.chain.(admission.ValidationInterface); ok {
		return v.Validate(ctx, a, o)
	}
	return nil
}

// newList is the typed list of a resource's objects, as a client returns it.
func newList(gvr schema.GroupVersionResource, objs []runtime.Object) (runtime.Object, error) {
	kind, ok := listKinds[gvr]
	if !ok {
		return nil, apierrors.NewServiceUnavailable("vapc: the admission plugins' client does not list " + gvr.String())
	}
	list, err := clientgoscheme.Scheme.New(gvr.GroupVersion().WithKind(kind))
	if err != nil {
		return nil, err
	}
	if err := meta.SetList(list, objs); err != nil {
		return nil, err
	}
	return list, nil
}

// listKinds are the list kinds of the resources the plugins list through their client.
var listKinds = map[schema.GroupVersionResource]string{
	limitRangesGVR:     "LimitRangeList",
	namespacesGVR:      "NamespaceList",
	serviceAccountsGVR: "ServiceAccountList",
	priorityClassesGVR: "PriorityClassList",
	runtimeClassesGVR:  "RuntimeClassList",
	storageClassesGVR:  "StorageClassList",
	ingressClassesGVR:  "IngressClassList",
	nodesGVR:           "NodeList",
	podsGVR:            "PodList",
}
