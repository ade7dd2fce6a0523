package apiserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"

	restful "github.com/emicklei/go-restful/v3"
	jsoniter "github.com/json-iterator/go"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	genericapi "k8s.io/apiserver/pkg/endpoints"
	genericfilters "k8s.io/apiserver/pkg/endpoints/filters"
	"k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/kubernetes/pkg/kubeapiserver"
	"k8s.io/kubernetes/pkg/registry/core/namespace"
	"k8s.io/kubernetes/pkg/registry/rbac/clusterrole"
	"k8s.io/kubernetes/pkg/registry/rbac/clusterrolebinding"
	"k8s.io/kubernetes/pkg/registry/rbac/role"
	"k8s.io/kubernetes/pkg/registry/rbac/rolebinding"
	sigsjson "sigs.k8s.io/json"

	vapcschema "github.com/vapc-dev/vapc/cel/schema"
	"github.com/vapc-dev/vapc/verify/internal/kubescheme"
)

// Server is kube-apiserver's request handling for the built-in APIs, in process: the REST
// handlers of k8s.io/apiserver's endpoints package installed as genericapiserver installs
// them, over the registry of k8s.io/kubernetes (strategies, subresources) with an in-memory
// storage that reads each request's Objects, and the admission of each request's Exchange.
// It is safe for concurrent use: everything a request reads and writes is in its Exchange.
type Server struct {
	handler     http.Handler
	equivalents runtime.EquivalentResourceRegistry
	served      map[servedKey]bool
	// deleters are the delete strategies of the resources' stores.
	deleters map[schema.GroupResource]rest.RESTDeleteStrategy
	// createsOnUpdate says, of each resource whose store has an update strategy, whether an
	// update (PUT) of an object not there creates it (AllowCreateOnUpdate).
	createsOnUpdate map[schema.GroupResource]bool
	// stored is what the stores decoded of the objects they read, shared by the requests.
	stored *storedCache
}

type servedKey struct {
	gvr schema.GroupVersionResource
	sub string
}

var (
	serverOnce sync.Once
	server     *Server
	serverErr  error
)

// KubernetesVersion is the minor of the k8s.io/kubernetes the server is built with (the same
// as verify.KubernetesVersion).
const KubernetesVersion = "1.37"

// TypeConverterFunc returns the field manager's type converter of the group-versions a
// server serves: kube-apiserver builds it from the OpenAPI definitions of the resources it
// installs (GenericAPIServer.getOpenAPIModels).
type TypeConverterFunc func(gvs []schema.GroupVersion) (managedfields.TypeConverter, error)

// Shared returns the process's Server, built on first use, with the type converter of the
// built-in OpenAPI definitions of KubernetesVersion.
func Shared() (*Server, error) {
	serverOnce.Do(func() {
		defer func() {
			// A panic of the build (a bug) is every caller's error, not a nil Server for the
			// callers after the first: sync.Once does not run it again.
			if p := recover(); p != nil {
				server, serverErr = nil, fmt.Errorf("building kube-apiserver's request pipeline failed (a bug: please report it): %v", p)
			}
		}()
		server, serverErr = newServer(func(gvs []schema.GroupVersion) (managedfields.TypeConverter, error) {
			cat, err := vapcschema.Builtin(KubernetesVersion)
			if err != nil {
				return nil, err
			}
			return cat.TypeConverter(gvs...)
		})
	})
	return server, serverErr
}

func newServer(tcFunc TypeConverterFunc) (*Server, error) {
	infos, err := groups()
	if err != nil {
		return nil, err
	}
	var gvs []schema.GroupVersion
	for _, info := range infos {
		for _, gv := range info.PrioritizedVersions {
			if len(info.VersionedResourcesStorageMap[gv.Version]) > 0 {
				gvs = append(gvs, gv)
			}
		}
	}
	typeConverter, err := tcFunc(gvs)
	if err != nil {
		return nil, err
	}
	container := restful.NewContainer()
	container.Router(restful.CurlyRouter{})
	// kube-apiserver keys its registry by each resource's etcd prefix (genericapiserver's
	// Config.Complete with the storage factory's ResourcePrefix): the resource's name, or its
	// special prefix, whatever its group, so that core and events.k8s.io Events are
	// equivalent, as are the resources that cohabit.
	equivalents := runtime.NewEquivalentResourceRegistryWithIdentity(func(gr schema.GroupResource) string {
		if p, ok := kubeapiserver.SpecialDefaultResourcePrefixes[gr]; ok {
			return p
		}
		return gr.Resource
	})
	allow := authorizerfactory.NewAlwaysAllowAuthorizer()
	served := map[servedKey]bool{}
	deleters := map[schema.GroupResource]rest.RESTDeleteStrategy{}
	createsOnUpdate := map[schema.GroupResource]bool{}
	for i := range infos {
		info := &infos[i]
		root := genericapiserver.APIGroupPrefix
		if len(info.PrioritizedVersions) > 0 && info.PrioritizedVersions[0].Group == "" {
			root = genericapiserver.DefaultLegacyAPIPrefix
		}
		for _, gv := range info.PrioritizedVersions {
			storage := info.VersionedResourcesStorageMap[gv.Version]
			if len(storage) == 0 {
				continue
			}
			v := newAPIGroupVersion(info, gv)
			v.Root = root
			v.Storage = storage
			if info.OptionsExternalVersion != nil {
				v.OptionsExternalVersion = info.OptionsExternalVersion
			}
			v.TypeConverter = typeConverter
			v.EquivalentResourceRegistry = equivalents
			v.Authorizer = allow
			v.Admit = exchangeAdmission{}
			v.MaxRequestBodyBytes = 3 * 1024 * 1024 // kube-apiserver's default --max-request-bytes
			if _, _, err := v.InstallREST(container); err != nil {
				return nil, fmt.Errorf("installing %s: %w", gv, err)
			}
			for path, st := range storage {
				res, sub, _ := strings.Cut(path, "/")
				served[servedKey{gv.WithResource(res), sub}] = true
				if store, ok := st.(interface {
					GetDeleteStrategy() rest.RESTDeleteStrategy
				}); ok && sub == "" {
					deleters[gv.WithResource(res).GroupResource()] = store.GetDeleteStrategy()
				}
				if store, ok := st.(interface {
					GetUpdateStrategy() rest.RESTUpdateStrategy
				}); ok && sub == "" && store.GetUpdateStrategy() != nil {
					createsOnUpdate[gv.WithResource(res).GroupResource()] = store.GetUpdateStrategy().AllowCreateOnUpdate(context.Background())
				}
			}
		}
	}
	// The stores a REST of their own wraps without showing their strategy (RBAC's escalation
	// check, policybased.Storage; the namespace REST, which holds its store) update with
	// their registries' strategies.
	for gr, st := range map[schema.GroupResource]rest.RESTUpdateStrategy{
		{Resource: "namespaces"}:                                              namespace.Strategy,
		{Group: "rbac.authorization.k8s.io", Resource: "roles"}:               role.Strategy,
		{Group: "rbac.authorization.k8s.io", Resource: "clusterroles"}:        clusterrole.Strategy,
		{Group: "rbac.authorization.k8s.io", Resource: "rolebindings"}:        rolebinding.Strategy,
		{Group: "rbac.authorization.k8s.io", Resource: "clusterrolebindings"}: clusterrolebinding.Strategy,
	} {
		if _, ok := createsOnUpdate[gr]; !ok {
			createsOnUpdate[gr] = st.AllowCreateOnUpdate(context.Background())
		}
	}
	resolver := &request.RequestInfoFactory{
		APIPrefixes:          sets.NewString("api", "apis"),
		GrouplessAPIPrefixes: sets.NewString("api"),
	}
	return &Server{
		handler:         genericfilters.WithRequestInfo(container, resolver),
		equivalents:     equivalents,
		served:          served,
		deleters:        deleters,
		createsOnUpdate: createsOnUpdate,
		stored:          newStoredCache(),
	}, nil
}

// newAPIGroupVersion mirrors GenericAPIServer.newAPIGroupVersion
// (k8s.io/apiserver/pkg/server/genericapiserver.go).
func newAPIGroupVersion(info *genericapiserver.APIGroupInfo, gv schema.GroupVersion) *genericapi.APIGroupVersion {
	allServedVersionsByResource := map[string][]string{}
	for version, resources := range info.VersionedResourcesStorageMap {
		for resource := range resources {
			if len(gv.Group) == 0 {
				allServedVersionsByResource[resource] = append(allServedVersionsByResource[resource], version)
			} else {
				allServedVersionsByResource[resource] = append(allServedVersionsByResource[resource], fmt.Sprintf("%s/%s", gv.Group, version))
			}
		}
	}
	return &genericapi.APIGroupVersion{
		GroupVersion:                gv,
		AllServedVersionsByResource: allServedVersionsByResource,
		MetaGroupVersion:            info.MetaGroupVersion,

		ParameterCodec:        info.ParameterCodec,
		Serializer:            info.NegotiatedSerializer,
		Creater:               info.Scheme,
		Convertor:             info.Scheme,
		ConvertabilityChecker: info.Scheme,
		UnsafeConvertor:       runtime.UnsafeObjectConvertor(info.Scheme),
		Defaulter:             info.Scheme,
		Typer:                 info.Scheme,
		Namer:                 runtime.Namer(meta.NewAccessor()),
	}
}

// Serves says whether the Server has handlers for the resource or subresource.
func (s *Server) Serves(gvr schema.GroupVersionResource, subresource string) bool {
	return s.served[servedKey{gvr, subresource}]
}

// CreatesOnUpdate says whether an update (PUT) of an object of the resource that is not there
// creates it (its update strategy's AllowCreateOnUpdate: Store.Update answers NotFound
// otherwise), and known whether the Server has the resource's store to tell. A patch creates
// only as a server-side apply, whatever the resource (the patcher's forceAllowCreate), and a
// subresource's update never does.
func (s *Server) CreatesOnUpdate(gr schema.GroupResource) (creates, known bool) {
	creates, known = s.createsOnUpdate[gr]
	return creates, known
}

// Deletion is what deleting a stored object leaves of it.
type Deletion struct {
	// Remains says the object stays in storage: a graceful deletion (a scheduled pod's), or
	// finalizers.
	Remains bool
	// Marked says the deletion set its deletionTimestamp (to the server's clock), and
	// GracePeriodSeconds is its deletionGracePeriodSeconds after it.
	Marked             bool
	GracePeriodSeconds int64
	// Generation is the object's metadata.generation once marked: the store bumps a
	// generation it has set when it first marks the object deleted (rest.BeforeDelete for a
	// graceful deletion, markAsDeleting for finalizers).
	Generation int64
	// Shortened says it shortened the grace period of a deletion pending already: its
	// deletionTimestamp moved back, or to the server's clock (rest.BeforeDelete), and
	// GracePeriodSeconds is the new period, or one second when the clock was past it.
	Shortened bool
}

// Stored is the stored object (JSON) as the registry reads it from storage: decoded into the
// internal version and defaulted.
func (s *Server) Stored(gr schema.GroupResource, raw []byte) (runtime.Object, error) {
	return decodeStored(gr, raw)
}

// DeleteLeaves says what deleting the stored object (JSON) with the options leaves, as the
// resource's store decides it: rest.BeforeDelete with its delete strategy, then the
// finalizers (Store.Delete, updateForGracefulDeletionAndFinalizers). A deletecollection's
// response lists the objects as they were before it: this is how it treated each. The
// finalizers the garbage collector's propagation policies add are not followed: options that
// ask for them are an error.
func (s *Server) DeleteLeaves(gr schema.GroupResource, raw []byte, options *metav1.DeleteOptions) (Deletion, error) {
	if options == nil {
		options = &metav1.DeleteOptions{}
	}
	if p := options.PropagationPolicy; p != nil && *p != metav1.DeletePropagationBackground {
		return Deletion{}, fmt.Errorf("the finalizers of propagation policy %s are not followed", *p)
	}
	if o := options.OrphanDependents; o != nil {
		return Deletion{}, fmt.Errorf("the finalizers of orphanDependents %t are not followed", *o)
	}
	shared, err := s.stored.decode(gr, raw)
	if err != nil {
		return Deletion{}, err
	}
	obj := shared.DeepCopyObject() // BeforeDelete marks it
	a, err := meta.Accessor(obj)
	if err != nil {
		return Deletion{}, err
	}
	was := a.GetDeletionTimestamp() != nil
	graceful, pending := false, false
	if strategy, ok := s.deleters[gr]; ok {
		ctx := request.WithNamespace(context.Background(), a.GetNamespace())
		if graceful, pending, err = rest.BeforeDelete(strategy, ctx, obj, options.DeepCopy()); err != nil {
			return Deletion{}, err
		}
	}
	var grace int64
	if g := a.GetDeletionGracePeriodSeconds(); g != nil {
		grace = *g
	}
	switch {
	case was && (pending || (graceful && grace > 0) || len(a.GetFinalizers()) > 0):
		// Already being deleted: it stays until its grace period or finalizers end (a
		// shortened grace period moves its deletion).
		return Deletion{Remains: true, GracePeriodSeconds: grace, Shortened: graceful}, nil
	case was:
		// A pending deletion of no grace period (BeforeDelete: delete now), or one shortened
		// to none (Store.Delete deletes it at once).
		return Deletion{}, nil
	case graceful && grace > 0:
		// BeforeDelete marked it, and bumped its generation.
		return Deletion{Remains: true, Marked: true, GracePeriodSeconds: grace, Generation: a.GetGeneration()}, nil
	case len(a.GetFinalizers()) > 0:
		// Store.Delete marks it (markAsDeleting), which bumps a generation it has set unless
		// BeforeDelete marked it already (and bumped it).
		gen := a.GetGeneration()
		if gen > 0 && a.GetDeletionTimestamp() == nil {
			gen++
		}
		return Deletion{Remains: true, Marked: true, Generation: gen}, nil
	}
	// A graceful deletion with a grace period of 0 (an unscheduled pod's) deletes at once.
	return Deletion{}, nil
}

// EquivalentResources is the server's EquivalentResourceRegistry: the resources matchPolicy
// Equivalent treats as the same.
func (s *Server) EquivalentResources() runtime.EquivalentResourceMapper { return s.equivalents }

// Request is one HTTP request to the server, as an audit event records it.
type Request struct {
	// Method is the HTTP method: POST, PUT, PATCH, DELETE or GET.
	Method string
	// URI is the request URI: path and query.
	URI string
	// Body is the request body, sent as ContentType (default application/json).
	Body        []byte
	ContentType string
	// UserAgent is the client's User-Agent: the field manager's default manager name.
	UserAgent string
	// User is the authenticated user, after impersonation.
	User user.Info
}

// Exchange is what one request reads and does: the stored objects it starts from, the
// built-in admission plugins that run before ValidatingAdmissionPolicy (nil for none), the
// mutating admission that runs after them, and validating admission.
type Exchange struct {
	Objects Objects
	Plugins *Plugins
	// MutatingPolicies, when set, is the MutatingAdmissionPolicy plugin, after the built-in
	// plugins and before Mutate: it may change the attributes' object in place, and its error
	// refuses the request.
	MutatingPolicies func(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error
	// Mutate, when set, is mutating admission after the built-in plugins' (where
	// kube-apiserver runs MutatingAdmissionPolicy and MutatingAdmissionWebhook): it may change
	// the attributes' object in place, and its error refuses the request.
	Mutate func(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error
	// Validate is validating admission: it is called with the attributes of each admission
	// (one per object of a deletecollection) and its error refuses the request.
	Validate func(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error
}

// Response is what the server answered, and what happened on the way.
type Response struct {
	// Code is the HTTP status code; Status the status of a failure.
	Code   int
	Status *metav1.Status
	// Writes are the objects the request's storage wrote, in order.
	Writes []Write
	// Unknown is set when the request needed an object its Objects did not know; the
	// response is then not the server's.
	Unknown *UnknownError
}

type exchangeKey struct{}

// Do sends the request through the server's handlers.
func (s *Server) Do(ctx context.Context, req Request, ex *Exchange) (*Response, error) {
	w := &world{objects: ex.Objects, decode: s.stored.decode, overlay: map[string]runtime.Object{}, nextRV: 1 << 40}
	ctx = withWorld(ctx, w)
	ctx = audit.WithAuditContext(ctx)
	ctx = context.WithValue(ctx, exchangeKey{}, ex)
	if req.User != nil {
		ctx = request.WithUser(ctx, req.User)
	}
	var body *bytes.Reader
	if req.Body != nil {
		body = bytes.NewReader(req.Body)
	} else {
		body = bytes.NewReader(nil)
	}
	httpReq, err := http.NewRequestWithContext(ctx, req.Method, req.URI, body)
	if err != nil {
		return nil, err
	}
	ct := req.ContentType
	if ct == "" {
		ct = "application/json"
	}
	httpReq.Header.Set("Content-Type", ct)
	// The response is read only for a failure's status: protobuf is the cheapest to write.
	httpReq.Header.Set("Accept", "application/vnd.kubernetes.protobuf, application/json")
	if req.UserAgent != "" {
		httpReq.Header.Set("User-Agent", req.UserAgent)
	}
	rec := httptest.NewRecorder()
	s.handler.ServeHTTP(rec, httpReq)
	resp := &Response{Code: rec.Code, Writes: w.writes, Unknown: w.unknown}
	if rec.Code >= 300 {
		resp.Status = &metav1.Status{Code: int32(rec.Code), Message: strings.TrimSpace(rec.Body.String())}
		if obj, _, err := kubescheme.Codecs.UniversalDeserializer().Decode(rec.Body.Bytes(), nil, nil); err == nil {
			if st, ok := obj.(*metav1.Status); ok {
				resp.Status = st
			}
		}
	}
	return resp, nil
}

// decodeStored decodes an object read from storage as the apiserver's storage codec does:
// into the internal version, defaulted. A stored object always has a resourceVersion and a
// uid; one written by hand (a snapshot, a test) may not, and the registry takes an object
// without them for absent: it gets storedVersion and storedUID.
func decodeStored(gr schema.GroupResource, raw []byte) (runtime.Object, error) {
	obj, err := decodeKnown(raw)
	if err != nil {
		obj, _, err = kubescheme.Codecs.UniversalDecoder().Decode(raw, nil, nil)
	}
	if err != nil {
		return nil, err
	}
	if a, err := meta.Accessor(obj); err == nil {
		if a.GetResourceVersion() == "" {
			a.SetResourceVersion(storedVersion)
		}
		if a.GetUID() == "" {
			a.SetUID(storedUID)
		}
	}
	return obj, nil
}

// typedJSON decodes a built-in kind's JSON into its Go type twice as fast as encoding/json
// (a pod of a cluster's traffic: 36 against 78 us), as kube-apiserver's JSON serializer did
// before it moved to sigs.k8s.io/json, with that serializer's configuration (case-sensitive
// keys). A built-in kind has no interface{} field for sigs.k8s.io/json's kept integers to
// differ in; TestDecodeKnown holds it to the serializer's decoding over the objects of every
// recorded log.
var typedJSON = jsoniter.Config{EscapeHTML: true, SortMapKeys: true, ValidateJsonRawMessage: true, CaseSensitive: true}.Froze()

// decodeKnown is the universal decoder's work on the common object, a built-in kind whose
// apiVersion and kind come first: decode the external version (as the JSON serializer does,
// case-sensitively, unknown fields dropped), default it, convert it to the internal version.
// It spares the serializer's first pass over the whole object to find its kind.
func decodeKnown(raw []byte) (runtime.Object, error) {
	gvk, ok := leadingKind(raw)
	if !ok || !kubescheme.Knows(gvk) {
		return nil, errors.New("not a leading built-in kind")
	}
	ext, err := kubescheme.Scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	if err := typedJSON.Unmarshal(raw, ext); err != nil {
		// What json-iterator refuses, the serializer's own decoder says.
		if ext, err = kubescheme.Scheme.New(gvk); err != nil {
			return nil, err
		}
		if err := sigsjson.UnmarshalCaseSensitivePreserveInts(raw, ext); err != nil {
			return nil, err
		}
	}
	kubescheme.Scheme.Default(ext)
	return kubescheme.Scheme.UnsafeConvertToVersion(ext, gvk.GroupKind().WithVersion(runtime.APIVersionInternal).GroupVersion())
}

// leadingKind reads apiVersion and kind when they are the first members of a JSON object.
func leadingKind(raw []byte) (schema.GroupVersionKind, bool) {
	if gvk, ok := leadingKindPlain(raw); ok {
		return gvk, true
	}
	return leadingKindDecoded(raw)
}

// leadingKindDecoded is leadingKind through encoding/json's decoder, for any JSON.
func leadingKindDecoded(raw []byte) (schema.GroupVersionKind, bool) {
	d := json.NewDecoder(bytes.NewReader(raw))
	if t, err := d.Token(); err != nil || t != json.Delim('{') {
		return schema.GroupVersionKind{}, false
	}
	var apiVersion, kind string
	for apiVersion == "" || kind == "" {
		k, err := d.Token()
		if err != nil {
			return schema.GroupVersionKind{}, false
		}
		var v string
		if key, ok := k.(string); !ok || (key != "apiVersion" && key != "kind") || d.Decode(&v) != nil {
			return schema.GroupVersionKind{}, false
		} else if key == "kind" {
			kind = v
		} else {
			apiVersion = v
		}
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil {
		return schema.GroupVersionKind{}, false
	}
	return gv.WithKind(kind), true
}

// leadingKindPlain is leadingKind's common case, read without a decoder: the two members are
// plain strings (no escape) and the JSON has no white space but between tokens. Anything else
// is left to leadingKind's decoder (false).
func leadingKindPlain(raw []byte) (schema.GroupVersionKind, bool) {
	i := skipJSONSpace(raw, 0)
	if i >= len(raw) || raw[i] != '{' {
		return schema.GroupVersionKind{}, false
	}
	var apiVersion, kind string
	var haveVersion, haveKind bool
	for n := 0; n < 2; n++ {
		if n > 0 {
			if i = skipJSONSpace(raw, i); i >= len(raw) || raw[i] != ',' {
				return schema.GroupVersionKind{}, false
			}
		}
		key, next, ok := plainJSONString(raw, skipJSONSpace(raw, i+1))
		if !ok {
			return schema.GroupVersionKind{}, false
		}
		if i = skipJSONSpace(raw, next); i >= len(raw) || raw[i] != ':' {
			return schema.GroupVersionKind{}, false
		}
		val, next, ok := plainJSONString(raw, skipJSONSpace(raw, i+1))
		if !ok {
			return schema.GroupVersionKind{}, false
		}
		switch {
		case key == "apiVersion" && !haveVersion:
			apiVersion, haveVersion = val, true
		case key == "kind" && !haveKind:
			kind, haveKind = val, true
		default:
			return schema.GroupVersionKind{}, false
		}
		i = next
	}
	gv, err := schema.ParseGroupVersion(apiVersion)
	if err != nil || kind == "" || apiVersion == "" {
		return schema.GroupVersionKind{}, false
	}
	return gv.WithKind(kind), true
}

// skipJSONSpace is the index of the first byte of raw from i that is not JSON's white space.
func skipJSONSpace(raw []byte, i int) int {
	for i < len(raw) && (raw[i] == ' ' || raw[i] == '\t' || raw[i] == '\n' || raw[i] == '\r') {
		i++
	}
	return i
}

// plainJSONString reads the JSON string at raw[i] when it has no escape and only printable
// ASCII, and the index after it; false otherwise.
func plainJSONString(raw []byte, i int) (string, int, bool) {
	if i >= len(raw) || raw[i] != '"' {
		return "", 0, false
	}
	for j := i + 1; j < len(raw); j++ {
		switch c := raw[j]; {
		case c == '"':
			return string(raw[i+1 : j]), j + 1, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return "", 0, false
		}
	}
	return "", 0, false
}

// The resourceVersion and uid of a stored object that has none.
const (
	storedVersion = "1"
	storedUID     = "00000000-0000-0000-0000-000000000000"
)

// exchangeAdmission is the admission of every installed handler: the mutating and validating
// admission of the request's Exchange.
type exchangeAdmission struct{}

var (
	_ admission.MutationInterface   = exchangeAdmission{}
	_ admission.ValidationInterface = exchangeAdmission{}
)

func (exchangeAdmission) Handles(admission.Operation) bool { return true }

// Admit runs the mutating admission chain as kube-apiserver's does (admission.reinvoker over
// the chain of plugins): once, and once more when a mutation asked for reinvocation (a
// MutatingAdmissionPolicy or webhook with reinvocationPolicy IfNeeded that ran before another
// changed the object). Unlike the server's, the built-in plugins are a chain of their own
// (admission.Plugins.NewFromPlugins), itself wrapped in a reinvoker: in the second pass it
// runs them twice. In-tree plugins must be idempotent to be reinvoked, so the object is the
// same; only the work is done twice.
func (exchangeAdmission) Admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	ex, ok := ctx.Value(exchangeKey{}).(*Exchange)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("vapc: admission outside of a replayed request"))
	}
	if err := ex.admit(ctx, a, o); err != nil {
		return err
	}
	if rc := a.GetReinvocationContext(); rc.ShouldReinvoke() {
		rc.SetIsReinvoke()
		return ex.admit(ctx, a, o)
	}
	return nil
}

// admit is one pass of the mutating chain.
func (ex *Exchange) admit(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	if ex.Plugins != nil && ex.Plugins.Handles(a.GetOperation()) {
		if err := ex.Plugins.Admit(ctx, a, o); err != nil {
			return err
		}
	}
	if ex.MutatingPolicies != nil {
		if err := ex.MutatingPolicies(ctx, a, o); err != nil {
			return err
		}
	}
	if ex.Mutate == nil {
		return nil
	}
	return ex.Mutate(ctx, a, o)
}

func (exchangeAdmission) Validate(ctx context.Context, a admission.Attributes, o admission.ObjectInterfaces) error {
	ex, ok := ctx.Value(exchangeKey{}).(*Exchange)
	if !ok {
		return apierrors.NewInternalError(fmt.Errorf("vapc: admission outside of a replayed request"))
	}
	if ex.Plugins != nil && ex.Plugins.Handles(a.GetOperation()) {
		if err := ex.Plugins.Validate(ctx, a, o); err != nil {
			return err
		}
	}
	if ex.Validate == nil {
		return nil
	}
	return ex.Validate(ctx, a, o)
}
