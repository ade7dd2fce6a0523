package apiserver

import (
	"fmt"
	"net"
	"sync/atomic"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresourcedefinition"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	serverstorage "k8s.io/apiserver/pkg/server/storage"
	clientgofake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/kube-aggregator/pkg/apis/apiregistration"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	apiservicestorage "k8s.io/kube-aggregator/pkg/registry/apiservice/etcd"
	"k8s.io/kubernetes/pkg/api/legacyscheme"
	api "k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/kubernetes/pkg/controlplane"
	kubeletclient "k8s.io/kubernetes/pkg/kubelet/client"
	mutatingwebhookstorage "k8s.io/kubernetes/pkg/registry/admissionregistration/mutatingwebhookconfiguration/storage"
	validatingwebhookstorage "k8s.io/kubernetes/pkg/registry/admissionregistration/validatingwebhookconfiguration/storage"
	appsrest "k8s.io/kubernetes/pkg/registry/apps/rest"
	autoscalingrest "k8s.io/kubernetes/pkg/registry/autoscaling/rest"
	batchrest "k8s.io/kubernetes/pkg/registry/batch/rest"
	certificatesrest "k8s.io/kubernetes/pkg/registry/certificates/rest"
	coordinationrest "k8s.io/kubernetes/pkg/registry/coordination/rest"
	endpointsstore "k8s.io/kubernetes/pkg/registry/core/endpoint/storage"
	limitrangestore "k8s.io/kubernetes/pkg/registry/core/limitrange/storage"
	nodestore "k8s.io/kubernetes/pkg/registry/core/node/storage"
	pvstore "k8s.io/kubernetes/pkg/registry/core/persistentvolume/storage"
	pvcstore "k8s.io/kubernetes/pkg/registry/core/persistentvolumeclaim/storage"
	podstore "k8s.io/kubernetes/pkg/registry/core/pod/storage"
	podtemplatestore "k8s.io/kubernetes/pkg/registry/core/podtemplate/storage"
	controllerstore "k8s.io/kubernetes/pkg/registry/core/replicationcontroller/storage"
	corerest "k8s.io/kubernetes/pkg/registry/core/rest"
	"k8s.io/kubernetes/pkg/registry/core/service/ipallocator"
	servicestore "k8s.io/kubernetes/pkg/registry/core/service/storage"
	discoveryrest "k8s.io/kubernetes/pkg/registry/discovery/rest"
	eventsrest "k8s.io/kubernetes/pkg/registry/events/rest"
	flowcontrolrest "k8s.io/kubernetes/pkg/registry/flowcontrol/rest"
	networkingrest "k8s.io/kubernetes/pkg/registry/networking/rest"
	noderest "k8s.io/kubernetes/pkg/registry/node/rest"
	policyrest "k8s.io/kubernetes/pkg/registry/policy/rest"
	rbacrest "k8s.io/kubernetes/pkg/registry/rbac/rest"
	resourcerest "k8s.io/kubernetes/pkg/registry/resource/rest"
	schedulingrest "k8s.io/kubernetes/pkg/registry/scheduling/rest"
	storagerest "k8s.io/kubernetes/pkg/registry/storage/rest"
	svmrest "k8s.io/kubernetes/pkg/registry/storagemigration/rest"
)

// storageProvider is controlplane's RESTStorageProvider.
type storageProvider interface {
	GroupName() string
	NewRESTStorage(apiResourceConfigSource serverstorage.APIResourceConfigSource, restOptionsGetter generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error)
}

// groups builds the APIGroupInfo of every built-in API group kube-apiserver 1.37 serves by
// default, with its REST storage over memStorage, as controlplane's StorageProviders does
// (k8s.io/kubernetes/pkg/controlplane/instance.go), apiextensions.k8s.io, which
// kube-apiserver serves from the apiextensions apiserver it delegates to, and
// apiregistration.k8s.io, which its aggregator serves, and admissionregistration.k8s.io's
// webhook configurations. Left out: the resources no admission policy sees (authentication's
// and authorization's reviews, the admission policies and their bindings), and the alpha
// groups kube-apiserver does not serve by default. flowcontrol's provider needs its informer
// factory only for the post-start hook that writes the bootstrap configuration, which the
// replay does not run.
// The core group is built as the legacy provider builds it (pkg/registry/core/rest), with a
// service IP and node port allocator that accepts every address (see openAllocator): the log
// says which addresses the server took.
func groups() ([]genericapiserver.APIGroupInfo, error) {
	config := controlplane.DefaultAPIResourceConfigSource()
	opts := restOptions{}
	allow := authorizerfactory.NewAlwaysAllowAuthorizer()
	client := clientgofake.NewSimpleClientset() // its tracker is never read: no schema to parse

	core, err := coreAPIGroup(config, opts, allow, client)
	if err != nil {
		return nil, fmt.Errorf("API group core: %w", err)
	}
	out := []genericapiserver.APIGroupInfo{core}
	for _, p := range []storageProvider{
		autoscalingrest.RESTStorageProvider{},
		batchrest.RESTStorageProvider{},
		certificatesrest.RESTStorageProvider{Authorizer: allow},
		coordinationrest.RESTStorageProvider{},
		discoveryrest.StorageProvider{},
		networkingrest.RESTStorageProvider{},
		noderest.RESTStorageProvider{},
		policyrest.RESTStorageProvider{},
		rbacrest.RESTStorageProvider{Authorizer: allow},
		schedulingrest.RESTStorageProvider{},
		storagerest.RESTStorageProvider{},
		svmrest.RESTStorageProvider{},
		appsrest.StorageProvider{},
		eventsrest.RESTStorageProvider{TTL: 0},
		flowcontrolrest.RESTStorageProvider{},
		resourcerest.RESTStorageProvider{NamespaceClient: client.CoreV1().Namespaces(), Authorizer: allow},
	} {
		info, err := p.NewRESTStorage(config, opts)
		if err != nil {
			return nil, fmt.Errorf("API group %q: %w", p.GroupName(), err)
		}
		if len(info.VersionedResourcesStorageMap) == 0 {
			continue
		}
		out = append(out, info)
	}
	crds, err := apiextensionsGroup(opts)
	if err != nil {
		return nil, fmt.Errorf("API group %q: %w", apiextensions.GroupName, err)
	}
	webhooks, err := admissionregistrationGroup(opts)
	if err != nil {
		return nil, fmt.Errorf("API group %q: %w", admissionregistrationv1.GroupName, err)
	}
	return append(out, crds, apiregistrationGroup(opts), webhooks), nil
}

// admissionregistrationGroup is the group of the webhook configurations, as its provider
// builds them (k8s.io/kubernetes/pkg/registry/admissionregistration/rest, v1), without the
// admission policies and bindings, which no admission policy sees (the replay follows them in
// its catalog of the cluster's policies). Controllers write them all day: cert-manager's CA
// injector the caBundle of each webhook, policy engines their own rules.
func admissionregistrationGroup(opts generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error) {
	info := genericapiserver.NewDefaultAPIGroupInfo(admissionregistrationv1.GroupName, legacyscheme.Scheme, legacyscheme.ParameterCodec, legacyscheme.Codecs)
	validating, err := validatingwebhookstorage.NewREST(opts)
	if err != nil {
		return info, err
	}
	mutating, err := mutatingwebhookstorage.NewREST(opts)
	if err != nil {
		return info, err
	}
	info.VersionedResourcesStorageMap[admissionregistrationv1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		"validatingwebhookconfigurations": validating,
		"mutatingwebhookconfigurations":   mutating,
	}
	return info, nil
}

// apiregistrationGroup is the group the aggregator serves APIServices in, as its
// NewRESTStorage builds it (k8s.io/kube-aggregator/pkg/registry/apiservice/rest: v1 only),
// with the scheme the group is installed in here (package kubescheme). kube-apiserver's
// autoregister controller writes an APIService for every group version a CRD serves.
func apiregistrationGroup(opts generic.RESTOptionsGetter) genericapiserver.APIGroupInfo {
	info := genericapiserver.NewDefaultAPIGroupInfo(apiregistration.GroupName, legacyscheme.Scheme, metav1.ParameterCodec, legacyscheme.Codecs)
	services := apiservicestorage.NewREST(legacyscheme.Scheme, opts)
	info.VersionedResourcesStorageMap[apiregistrationv1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		"apiservices":        services,
		"apiservices/status": apiservicestorage.NewStatusREST(legacyscheme.Scheme, services),
	}
	return info
}

// apiextensionsGroup is the group the apiextensions apiserver serves CustomResourceDefinitions
// in, as its New builds it (k8s.io/apiextensions-apiserver/pkg/apiserver), with the scheme the
// group is installed in here (package kubescheme).
func apiextensionsGroup(opts generic.RESTOptionsGetter) (genericapiserver.APIGroupInfo, error) {
	info := genericapiserver.NewDefaultAPIGroupInfo(apiextensions.GroupName, legacyscheme.Scheme, metav1.ParameterCodec, legacyscheme.Codecs)
	crds, err := customresourcedefinition.NewREST(legacyscheme.Scheme, opts)
	if err != nil {
		return info, err
	}
	info.VersionedResourcesStorageMap[apiextensionsv1.SchemeGroupVersion.Version] = map[string]rest.Storage{
		"customresourcedefinitions":        crds,
		"customresourcedefinitions/status": customresourcedefinition.NewStatusREST(legacyscheme.Scheme, crds),
	}
	return info, nil
}

// coreAPIGroup mirrors legacyProvider.NewRESTStorage of k8s.io/kubernetes/pkg/registry/core/rest.
func coreAPIGroup(config serverstorage.APIResourceConfigSource, opts generic.RESTOptionsGetter, allow authorizer.Authorizer, client *clientgofake.Clientset) (genericapiserver.APIGroupInfo, error) {
	genericConfig := corerest.GenericConfig{}
	info, err := genericConfig.NewRESTStorage(config, opts)
	if err != nil {
		return info, err
	}
	podTemplateStorage, err := podtemplatestore.NewREST(opts)
	if err != nil {
		return info, err
	}
	limitRangeStorage, err := limitrangestore.NewREST(opts)
	if err != nil {
		return info, err
	}
	pvStorage, pvStatusStorage, err := pvstore.NewREST(opts)
	if err != nil {
		return info, err
	}
	pvcStorage, pvcStatusStorage, err := pvcstore.NewREST(opts)
	if err != nil {
		return info, err
	}
	endpointsStorage, err := endpointsstore.NewREST(opts)
	if err != nil {
		return info, err
	}
	nodeStorage, err := nodestore.NewStorage(opts, kubeletclient.KubeletClientConfig{Port: 10250}, nil)
	if err != nil {
		return info, err
	}
	unconditional, ok := allow.(authorizer.UnconditionalAuthorizer)
	if !ok {
		return info, fmt.Errorf("the always-allow authorizer is not unconditional")
	}
	podStorage, err := podstore.NewStorage(opts, nodeStorage.KubeletConnectionInfo, nil, client.PolicyV1(), unconditional)
	if err != nil {
		return info, err
	}
	_, cidr, _ := net.ParseCIDR("10.96.0.0/12")
	serviceStorage, serviceStatusStorage, serviceProxy, err := servicestore.NewREST(opts, api.IPv4Protocol,
		map[api.IPFamily]ipallocator.Interface{api.IPv4Protocol: openIPs{cidr: *cidr, family: api.IPv4Protocol}},
		openPorts{next: new(atomic.Uint32)}, nil, podStorage.Pod, nil)
	if err != nil {
		return info, err
	}
	storage := info.VersionedResourcesStorageMap["v1"]
	if storage == nil {
		storage = map[string]rest.Storage{}
	}
	enabled := func(resource string) bool {
		return config.ResourceEnabled(corev1.SchemeGroupVersion.WithResource(resource))
	}
	if enabled("pods") {
		storage["pods"] = podStorage.Pod
		storage["pods/attach"] = podStorage.Attach
		storage["pods/status"] = podStorage.Status
		storage["pods/log"] = podStorage.Log
		storage["pods/exec"] = podStorage.Exec
		storage["pods/portforward"] = podStorage.PortForward
		storage["pods/proxy"] = podStorage.Proxy
		storage["pods/binding"] = podStorage.Binding
		if podStorage.Eviction != nil {
			storage["pods/eviction"] = podStorage.Eviction
		}
		storage["pods/ephemeralcontainers"] = podStorage.EphemeralContainers
		if podStorage.Resize != nil {
			storage["pods/resize"] = podStorage.Resize
		}
	}
	if enabled("bindings") {
		storage["bindings"] = podStorage.LegacyBinding
	}
	if enabled("podtemplates") {
		storage["podtemplates"] = podTemplateStorage
	}
	if enabled("replicationcontrollers") {
		rc, err := controllerstore.NewStorage(opts)
		if err != nil {
			return info, err
		}
		storage["replicationcontrollers"] = rc.Controller
		storage["replicationcontrollers/status"] = rc.Status
		if legacyscheme.Scheme.IsVersionRegistered(schema.GroupVersion{Group: "autoscaling", Version: "v1"}) {
			storage["replicationcontrollers/scale"] = rc.Scale
		}
	}
	if enabled("services") {
		storage["services"] = serviceStorage
		storage["services/proxy"] = serviceProxy
		storage["services/status"] = serviceStatusStorage
	}
	if enabled("endpoints") {
		storage["endpoints"] = endpointsStorage
	}
	if enabled("nodes") {
		storage["nodes"] = nodeStorage.Node
		storage["nodes/proxy"] = nodeStorage.Proxy
		storage["nodes/status"] = nodeStorage.Status
	}
	if enabled("limitranges") {
		storage["limitranges"] = limitRangeStorage
	}
	if enabled("persistentvolumes") {
		storage["persistentvolumes"] = pvStorage
		storage["persistentvolumes/status"] = pvStatusStorage
	}
	if enabled("persistentvolumeclaims") {
		storage["persistentvolumeclaims"] = pvcStorage
		storage["persistentvolumeclaims/status"] = pvcStatusStorage
	}
	info.VersionedResourcesStorageMap["v1"] = storage
	return info, nil
}

// openIPs is a service IP allocator that accepts every address and hands out the first of its
// range: the log, not vapc, knows which addresses were free.
type openIPs struct {
	cidr   net.IPNet
	family api.IPFamily
}

func (a openIPs) Allocate(net.IP) error { return nil }
func (a openIPs) AllocateNext() (net.IP, error) {
	ip := make(net.IP, len(a.cidr.IP))
	copy(ip, a.cidr.IP)
	ip[len(ip)-1]++
	return ip, nil
}
func (a openIPs) Release(net.IP) error          { return nil }
func (a openIPs) ForEach(func(net.IP))          {}
func (a openIPs) CIDR() net.IPNet               { return a.cidr }
func (a openIPs) IPFamily() api.IPFamily        { return a.family }
func (a openIPs) Has(net.IP) bool               { return false }
func (a openIPs) Destroy()                      {}
func (a openIPs) EnableMetrics()                {}
func (a openIPs) DryRun() ipallocator.Interface { return a }
func (a openPorts) Allocate(int) error          { return nil }
func (a openPorts) AllocateNext() (int, error) {
	// Distinct ports, for a Service of several: validation refuses a port twice.
	return 30000 + int((1234+a.next.Add(1))%2768), nil
}
func (a openPorts) Release(int) error { return nil }
func (a openPorts) ForEach(func(int)) {}
func (a openPorts) Has(int) bool      { return false }
func (a openPorts) Destroy()          {}
func (a openPorts) EnableMetrics()    {}

// openPorts is the node port allocator of openIPs: it accepts every port and hands out the
// ports of the default range (30000-32767) in turn; which ones the server allocated is not known
// (settle).
type openPorts struct{ next *atomic.Uint32 }
