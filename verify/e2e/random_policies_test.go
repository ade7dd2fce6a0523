package e2e

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/cel/manifest"
)

// The generator of TestRandomParity's policies and bindings. Every expression comes from the
// pools below: atoms that read the request, the objects, the namespace, params and variables,
// chosen so that they compile whatever the object's kind (object is dyn for a policy on
// several kinds) and fail at run time on some requests (a missing key, a bad cast, a division
// by zero, a null object), so that failurePolicy matters. They avoid what a replay cannot know
// by design of the audit log: fields the server sets on the stored object (uid,
// creationTimestamp, resourceVersion and managedFields of the new object), and fields that
// conversion renames (events).

// pick returns one of xs.
func pick[T any](r *rand.Rand, xs ...T) T { return xs[r.IntN(len(xs))] }

// chance is true with probability p.
func chance(r *rand.Rand, p float64) bool { return r.Float64() < p }

// some returns between lo and hi distinct elements of xs, in their order.
func some[T any](r *rand.Rand, lo, hi int, xs ...T) []T {
	n := lo + r.IntN(hi-lo+1)
	idx := r.Perm(len(xs))[:min(n, len(xs))]
	slices.Sort(idx)
	out := make([]T, len(idx))
	for i, j := range idx {
		out[i] = xs[j]
	}
	return out
}

// exprScope is what the expressions of one policy may read.
type exprScope struct {
	paramKind string // "", "ConfigMap", "Node", "Namespace" or "ReplicaLimit"
	vars      []genVar
	// order, when set, is the stream that puts a condition following map order in an atom's
	// place (mapOrderBools): a stream of its own, so that the scenario's stream and what a
	// seed generates else stay as they were.
	order *rand.Rand
}

type genVar struct{ name, typ string } // typ: bool, string, int

// boolAtoms are boolean expressions, mostly true, false on the requests the scenario sends now
// and then, and failing at run time on others.
var boolAtoms = []string{
	`has(object.metadata.labels) && 'color' in object.metadata.labels`,
	`object.metadata.?labels[?'color'].orValue('') != 'red'`,
	`!object.metadata.name.startsWith('cm-a')`,
	`request.userInfo.username != 'rnd-bob'`,
	`!('rnd-ops' in request.userInfo.groups)`,
	`!('team' in request.userInfo.extra) || !('blue' in request.userInfo.extra['team'])`,
	`request.dryRun == false`,
	`oldObject == null || object == null || object.metadata.?labels[?'app'].orValue('') == oldObject.metadata.?labels[?'app'].orValue('')`,
	`namespaceObject == null || namespaceObject.metadata.?labels[?'tier'].orValue('') != 'silver'`,
	`namespaceObject.metadata.labels['env'] == 'prod'`,
	`size(object.data) < 3`,
	`int(object.data['n']) < 5`,
	`10 / (size(object.metadata.name) - 5) != 0`,
	`request.subResource != 'status' || request.userInfo.username == 'admin'`,
	`request.kind.kind != 'Eviction' || object.deleteOptions.gracePeriodSeconds > 0`,
	`object.?spec.?replicas.orValue(0) <= 3`,
	`request.name != 'cm-abc'`,
	`request.namespace != 'rnd-b'`,
	`request.requestKind.kind != 'Scale' || object.spec.replicas < 4`,
	`!has(request.options.gracePeriodSeconds) || request.options.gracePeriodSeconds != 0`,
	`!has(request.options.preconditions)`,
	`request.options.?dryRun.orValue([]).size() == 0`,
	`!has(object.metadata.annotations) || !('rnd.vapc.dev/block' in object.metadata.annotations)`,
	`request.userInfo.uid != 'uid-bob'`,
	// The log answers an authorizer check for members of system:masters only (the
	// administrator), whom kube-apiserver allows everything.
	`authorizer.group('').resource('secrets').namespace('rnd-a').check('get').allowed() || request.operation != 'DELETE'`,
	`request.options.?fieldManager.orValue('') != 'rnd-tool'`,
	`request.requestResource.group == request.resource.group`,
	`object.?status.?phase.orValue('') != 'Failed'`,
	`object.?spec.?containers.orValue([]).all(c, c.image != 'busybox')`,
	`!object.?spec.?unschedulable.orValue(false)`,
	`request.options.?propagationPolicy.orValue('') != 'Orphan'`,
	`request.options.?orphanDependents.orValue(false) == false`,
	`request.operation != 'DELETE' || oldObject.metadata.?labels[?'app'].orValue('') != 'db'`,
	`!request.userInfo.username.startsWith('system:serviceaccount:') || request.operation != 'UPDATE'`,
	`object.metadata.name.size() < 10`,
	`!has(object.data) || !('password' in object.data)`,
	`!('example.org/level' in request.userInfo.extra) || int(request.userInfo.extra['example.org/level'][0]) < 3`,
	`request.operation == 'CREATE' || oldObject.metadata.?labels[?'color'].orValue('') != 'green'`,
	`!has(object.metadata.generateName)`,
	`object.?spec.?size.orValue(0) < 5`,
	`object.?spec.?color.orValue('') != 'red' || request.operation != 'UPDATE'`,
	// Two checks RBAC answers apart (the node controller's role lets it delete pods, not get
	// secrets): alike when both are allowed and when neither is, refused as the server
	// answers them, which the log does not say.
	`!(authorizer.serviceAccount('kube-system', 'node-controller').group('').resource('pods').check('delete').allowed() && !authorizer.serviceAccount('kube-system', 'node-controller').group('').resource('secrets').check('get').allowed()) || request.operation != 'DELETE'`,
}

var configMapParamAtoms = []string{
	`params.data['mode'] != 'deny-all'`,
	`size(object.metadata.name) <= int(params.data['max'])`,
	`!object.metadata.name.startsWith(params.?data[?'prefix'].orValue('zzz'))`,
	`params.metadata.name != 'p-1'`,
	`params == null || params.?data[?'block-user'].orValue('') != request.userInfo.username`,
}

var replicaLimitParamAtoms = []string{
	`object.?spec.?replicas.orValue(0) <= params.spec.maxReplicas`,
	`params.spec.?mode.orValue('') != 'deny-all'`,
	`!object.metadata.name.startsWith(params.spec.?prefix.orValue('zzz'))`,
	`params.metadata.name != 'rl-1'`,
	`object.?spec.?size.orValue(0) < params.spec.maxReplicas`,
	`params.spec.?tier.orValue('none') != 'std'`, // a default the CRD gains (paramSchemaDefault)
}

// namespaceParamAtoms read a Namespace param: one being deleted (rnd-d, which the namespace
// controller removes with the PUT of its finalize subresource when the controllers run) is
// Terminating until it is gone.
var namespaceParamAtoms = []string{
	`params.status.phase == 'Active'`,
	`params.metadata.?labels[?'tier'].orValue('') != 'silver'`,
	`!has(params.metadata.deletionTimestamp)`,
}

var namespaceParamStrings = []string{
	`'pns ' + params.metadata.name + ' ' + params.status.phase`,
}

var nodeParamAtoms = []string{
	`params.metadata.?labels[?'mode'].orValue('') != 'deny-all'`,
	`!params.?spec.?unschedulable.orValue(false)`,
	`int(params.metadata.labels['limit']) >= size(object.metadata.name)`,
}

// stringAtoms are string expressions, for messageExpressions, audit annotations and variables.
var stringAtoms = []string{
	`'op ' + request.operation`,
	`'name ' + object.metadata.name`,
	`request.userInfo.username + ' in ' + request.userInfo.groups.join(',')`,
	`'dry ' + string(request.dryRun)`,
	`'ns ' + request.namespace`,
	`'sub ' + request.subResource + ' kind ' + request.kind.group + '/' + request.kind.kind + ' req ' + request.requestKind.group + '/' + request.requestKind.kind + ' res ' + request.requestResource.resource`,
	`'old ' + (oldObject == null ? 'none' : oldObject.metadata.name)`,
	`'nsobj ' + (namespaceObject == null ? 'none' : namespaceObject.metadata.name + ':' + namespaceObject.metadata.?labels[?'tier'].orValue('-'))`,
	`'line\nbreak'`,
	`'   '`,
	`'extra ' + ('team' in request.userInfo.extra ? request.userInfo.extra['team'].join('+') : 'none')`,
	`'opts ' + request.options.kind + ' ' + string(request.options.?gracePeriodSeconds.orValue(-1)) + ' ' + request.options.?propagationPolicy.orValue('-')`,
	`'replicas ' + string(object.spec.replicas)`,
	`'uid ' + request.userInfo.uid`,
	`'labels ' + string(object.metadata.?labels.orValue({}).size())`,
	`'name ' + request.name + ' in ' + request.namespace`,
	`object.data['big']`,
	`'gen ' + string(oldObject.?metadata.?generation.orValue(0))`,
	`'dopts ' + string(object.?deleteOptions.?gracePeriodSeconds.orValue(-1))`,
	`'scale ' + string(object.?spec.?replicas.orValue(-1)) + ' from ' + string(oldObject.?spec.?replicas.orValue(-1))`,
	`'widget ' + object.?spec.?color.orValue('-') + ' ' + string(object.?spec.?size.orValue(-1)) + ' ' + object.?spec.?shape.orValue('-')`,
	`'   padded   '`,
	`'dryRun opts ' + request.options.?dryRun.orValue([]).join(',')`,
	`'fm ' + request.options.?fieldManager.orValue('-') + ' fv ' + request.options.?fieldValidation.orValue('-')`,
	`'orphan ' + string(request.options.?orphanDependents.orValue(false))`,
	`'pre ' + request.options.?preconditions.?uid.orValue('-') + ' ' + request.options.?preconditions.?resourceVersion.orValue('-')`,
}

// mapOrderStrings list a map's keys in the order CEL iterates the map: kube-apiserver's is
// Go's map order, by chance; the replay evaluates again for the order the log shows.
var mapOrderStrings = []string{
	`'labels ' + object.metadata.?labels.orValue({}).map(k, k + '=' + object.metadata.labels[k]).join(',')`,
	`'keys ' + object.?data.orValue({}).filter(k, k != 'big').join(',')`,
}

// mapOrderBools are conditions whose outcome follows the order CEL iterates a map (whether a
// map's first key is one): the server's is by chance, and the replay evaluates again for the
// order the log shows (the response's denial, the validation_failure entries).
var mapOrderBools = []string{
	`!object.metadata.?labels.orValue({}).map(k, k).join(',').startsWith('app')`,
	`!object.?data.orValue({}).filter(k, k != 'big').join(',').startsWith('n')`,
}

var configMapParamStrings = []string{
	`'param ' + params.metadata.name`,
	`'max ' + params.data['max']`,
	`'mode ' + params.?data[?'mode'].orValue('-')`,
}

var replicaLimitParamStrings = []string{
	`'limit ' + params.metadata.name + ' max ' + string(params.spec.maxReplicas)`,
	`'mode ' + params.spec.?mode.orValue('-') + ' in ' + params.metadata.namespace`,
	`'tier ' + params.spec.?tier.orValue('none')`,
}

var nodeParamStrings = []string{
	`'pnode ' + params.metadata.name + ' ' + params.metadata.?labels[?'limit'].orValue('-')`,
}

var intAtoms = []string{
	`size(object.metadata.name)`,
	`object.?spec.?replicas.orValue(0) + 1`,
	`int(object.data['n'])`,
	`size(request.userInfo.groups)`,
}

func (s *exprScope) boolExpr(r *rand.Rand) string {
	base := func() string {
		switch {
		case s.paramKind == "ConfigMap" && chance(r, 0.3):
			return pick(r, configMapParamAtoms...)
		case s.paramKind == "Node" && chance(r, 0.3):
			return pick(r, nodeParamAtoms...)
		case s.paramKind == "Namespace" && chance(r, 0.3):
			return pick(r, namespaceParamAtoms...)
		case s.paramKind == "ReplicaLimit" && chance(r, 0.3):
			return pick(r, replicaLimitParamAtoms...)
		case len(s.vars) > 0 && chance(r, 0.25):
			v := pick(r, s.vars...)
			switch v.typ {
			case "bool":
				return "variables." + v.name
			case "int":
				return fmt.Sprintf("variables.%s < %d", v.name, 4+r.IntN(6))
			default:
				return fmt.Sprintf("!variables.%s.contains('%s')", v.name, pick(r, "bob", "DELETE", "rnd-b", "gold"))
			}
		}
		return pick(r, boolAtoms...)
	}
	atom := func() string {
		a := base()
		if s.order != nil && chance(s.order, 0.04) {
			return pick(s.order, mapOrderBools...)
		}
		return a
	}
	e := atom()
	if chance(r, 0.35) {
		e = "(" + e + ")" + pick(r, " && ", " || ") + "(" + atom() + ")"
	}
	if chance(r, 0.15) {
		e = "!(" + e + ")"
	}
	return e
}

func (s *exprScope) stringExpr(r *rand.Rand) string {
	atom := func() string {
		switch {
		case s.paramKind == "ConfigMap" && chance(r, 0.25):
			return pick(r, configMapParamStrings...)
		case s.paramKind == "Node" && chance(r, 0.25):
			return pick(r, nodeParamStrings...)
		case s.paramKind == "Namespace" && chance(r, 0.25):
			return pick(r, namespaceParamStrings...)
		case s.paramKind == "ReplicaLimit" && chance(r, 0.25):
			return pick(r, replicaLimitParamStrings...)
		case chance(r, 0.08):
			return pick(r, mapOrderStrings...)
		case len(s.vars) > 0 && chance(r, 0.25):
			v := pick(r, s.vars...)
			switch v.typ {
			case "string":
				return "variables." + v.name
			default:
				return fmt.Sprintf("'%s ' + string(variables.%s)", v.name, v.name)
			}
		}
		return pick(r, stringAtoms...)
	}
	e := atom()
	if chance(r, 0.3) {
		e += " + ' / ' + " + atom()
	}
	return e
}

func (s *exprScope) intExpr(r *rand.Rand) string {
	for _, v := range s.vars {
		if v.typ == "int" && chance(r, 0.3) {
			return fmt.Sprintf("variables.%s * 2", v.name)
		}
	}
	return pick(r, intAtoms...)
}

// auditValue is a valueExpression: a string, null, or a string that is sometimes empty (a
// string or null of another kind than the expression's is refused on create).
func (s *exprScope) auditValue(r *rand.Rand) string {
	switch r.IntN(6) {
	case 0:
		return "null"
	case 1:
		return "has(object.metadata.labels) ? " + s.stringExpr(r) + " : ''"
	case 2:
		return "request.dryRun ? '  ' : 'real ' + request.operation"
	default:
		return s.stringExpr(r)
	}
}

// Rule templates of matchConstraints.
type ruleTemplate struct {
	groups, versions, resources []string
}

var ruleTemplates = []ruleTemplate{
	{[]string{""}, []string{"v1"}, []string{"configmaps"}},
	{[]string{""}, []string{"*"}, []string{"configmaps", "secrets"}},
	{[]string{""}, []string{"v1"}, []string{"pods"}},
	{[]string{""}, []string{"v1"}, []string{"pods/status"}},
	{[]string{""}, []string{"v1"}, []string{"pods/eviction"}},
	{[]string{""}, []string{"v1"}, []string{"pods", "pods/*"}},
	// "RES/*" alone matches RES itself too (rules.Matcher: the subresource "*" matches none).
	{[]string{""}, []string{"v1"}, []string{"pods/*"}},
	{[]string{""}, []string{"v1"}, []string{"configmaps/*", "nodes/*"}},
	{[]string{"apps"}, []string{"v1"}, []string{"deployments/*"}},
	{[]string{""}, []string{"v1"}, []string{"nodes"}},
	{[]string{""}, []string{"v1"}, []string{"nodes/status"}},
	{[]string{""}, []string{"v1"}, []string{"nodes", "nodes/status"}},
	{[]string{"apps"}, []string{"v1"}, []string{"deployments"}},
	{[]string{"apps"}, []string{"v1"}, []string{"deployments/scale"}},
	{[]string{"apps"}, []string{"*"}, []string{"deployments", "deployments/scale"}},
	{[]string{"events.k8s.io"}, []string{"v1"}, []string{"events"}},
	{[]string{""}, []string{"v1"}, []string{"events"}},
	{[]string{""}, []string{"v1"}, []string{"namespaces"}},
	{[]string{""}, []string{"*"}, []string{"*"}},
	{[]string{"*"}, []string{"*"}, []string{"*/*"}},
	{[]string{"", "apps"}, []string{"v1"}, []string{"*"}},
	{[]string{""}, []string{"v1"}, []string{"*/status"}},
	{[]string{""}, []string{"v1"}, []string{"secrets"}},
	{[]string{"apps"}, []string{"v1"}, []string{"replicasets", "replicasets/scale", "statefulsets/scale"}},
	{[]string{""}, []string{"v1"}, []string{"replicationcontrollers", "replicationcontrollers/scale"}},
	{[]string{"apps"}, []string{"*"}, []string{"*/scale"}},
	{[]string{rndGroup}, []string{"v1"}, []string{"widgets"}},
	{[]string{rndGroup}, []string{"*"}, []string{"widgets", "widgets/status"}},
	{[]string{rndGroup}, []string{"v1"}, []string{"widgets/scale", "widgets"}},
	{[]string{rndGroup}, []string{"v1"}, []string{"replicalimits"}},
	{[]string{rndGroup, "apps"}, []string{"v1"}, []string{"widgets", "deployments"}},
}

// safetyExcludes keep every generated policy off the objects of the sync barrier (its
// ConfigMaps, Node and Namespace: a policy that refused them would stop the test) and off
// Leases, which the apiserver renews on its own schedule.
var safetyExcludes = []admissionregistrationv1.NamedRuleWithOperations{
	namedRule([]string{""}, []string{"*"}, []string{"configmaps"}, []string{"*"}, "vapc-barrier", "probe"),
	namedRule([]string{""}, []string{"*"}, []string{"nodes", "nodes/status", "namespaces", "namespaces/status"}, []string{"*"}, "vapc-barrier"),
	namedRule([]string{"coordination.k8s.io"}, []string{"*"}, []string{"leases"}, []string{"*"}),
	namedRule([]string{rndGroup}, []string{"*"}, []string{"replicalimits"}, []string{"*"}, "vapc-barrier"),
}

func namedRule(groups, versions, resources, ops []string, names ...string) admissionregistrationv1.NamedRuleWithOperations {
	var operations []admissionregistrationv1.OperationType
	for _, o := range ops {
		operations = append(operations, admissionregistrationv1.OperationType(o))
	}
	return admissionregistrationv1.NamedRuleWithOperations{
		ResourceNames: names,
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: operations,
			Rule:       admissionregistrationv1.Rule{APIGroups: groups, APIVersions: versions, Resources: resources},
		},
	}
}

func (g *randomWorld) rule(r *rand.Rand) admissionregistrationv1.NamedRuleWithOperations {
	t := pick(r, ruleTemplates...)
	ops := []string{"*"}
	if chance(r, 0.6) {
		ops = some(r, 1, 3, "CREATE", "UPDATE", "DELETE")
	}
	var names []string
	if chance(r, 0.12) {
		names = some(r, 1, 3, "cm-ab", "cm-abc", "pod-a", "w-1", "dep-a", "rnd-b", "c1")
	}
	nr := namedRule(t.groups, t.versions, t.resources, ops, names...)
	if chance(r, 0.25) {
		nr.Scope = ptr.To(pick(r, admissionregistrationv1.AllScopes, admissionregistrationv1.NamespacedScope, admissionregistrationv1.ClusterScope))
	}
	return nr
}

func namespaceSelector(r *rand.Rand) *metav1.LabelSelector {
	if chance(r, 0.4) {
		return &metav1.LabelSelector{MatchLabels: map[string]string{pick(r, "tier", "env", "team"): pick(r, "gold", "prod", "red", "silver")}}
	}
	var exprs []metav1.LabelSelectorRequirement
	for range 1 + r.IntN(2) {
		key := pick(r, "tier", "env", "team", "kubernetes.io/metadata.name")
		switch op := pick(r, metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn, metav1.LabelSelectorOpExists, metav1.LabelSelectorOpDoesNotExist); op {
		case metav1.LabelSelectorOpIn, metav1.LabelSelectorOpNotIn:
			values := some(r, 1, 2, "gold", "silver", "prod", "dev", "red", "blue", "rnd-a", "rnd-b", "rnd-params")
			exprs = append(exprs, metav1.LabelSelectorRequirement{Key: key, Operator: op, Values: values})
		default:
			exprs = append(exprs, metav1.LabelSelectorRequirement{Key: key, Operator: op})
		}
	}
	return &metav1.LabelSelector{MatchExpressions: exprs}
}

func objectSelector(r *rand.Rand) *metav1.LabelSelector {
	switch r.IntN(4) {
	case 0:
		return &metav1.LabelSelector{MatchLabels: map[string]string{"app": pick(r, "web", "db")}}
	case 1:
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "rnd.vapc.dev/skip", Operator: metav1.LabelSelectorOpDoesNotExist}}}
	case 2:
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "color", Operator: metav1.LabelSelectorOpIn, Values: some(r, 1, 2, "red", "green", "blue")}}}
	default:
		return &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "color", Operator: metav1.LabelSelectorOpExists}}}
	}
}

// genPolicy generates policy i and its bindings.
func (g *randomWorld) genPolicy(r *rand.Rand, i int) (*admissionregistrationv1.ValidatingAdmissionPolicy, []*admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	name := fmt.Sprintf("rnd-p%02d", i)
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: name},
	}
	spec := &p.Spec
	if chance(r, 0.8) {
		spec.FailurePolicy = ptr.To(pick(r, admissionregistrationv1.Fail, admissionregistrationv1.Ignore))
	}
	mc := &admissionregistrationv1.MatchResources{}
	for range 1 + r.IntN(2) {
		mc.ResourceRules = append(mc.ResourceRules, g.rule(r))
	}
	mc.ExcludeResourceRules = append(mc.ExcludeResourceRules, safetyExcludes...)
	if chance(r, 0.2) {
		ex := pick(r,
			namedRule([]string{""}, []string{"v1"}, []string{"secrets"}, []string{"*"}),
			namedRule([]string{""}, []string{"v1"}, []string{"pods/status"}, []string{"UPDATE"}),
			namedRule([]string{""}, []string{"*"}, []string{"configmaps"}, []string{"DELETE"}),
			namedRule([]string{""}, []string{"v1"}, []string{"namespaces"}, []string{"*"}),
			namedRule([]string{""}, []string{"v1"}, []string{"configmaps", "pods"}, []string{"*"}, "cm-zz", "pod-bb"),
		)
		mc.ExcludeResourceRules = append(mc.ExcludeResourceRules, ex)
	}
	if chance(r, 0.6) {
		mc.MatchPolicy = ptr.To(pick(r, admissionregistrationv1.Exact, admissionregistrationv1.Equivalent))
	}
	if chance(r, 0.35) {
		mc.NamespaceSelector = namespaceSelector(r)
	}
	if chance(r, 0.25) {
		mc.ObjectSelector = objectSelector(r)
	}
	spec.MatchConstraints = mc

	scope := &exprScope{order: g.order}
	switch r.IntN(5) {
	case 0:
		scope.paramKind = "ConfigMap"
		spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"}
	case 1:
		scope.paramKind = "Node"
		spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "Node"}
	case 2:
		scope.paramKind = "ReplicaLimit"
		spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: rndGroup + "/v1", Kind: "ReplicaLimit"}
	case 3:
		if chance(r, 0.3) {
			scope.paramKind = "Namespace"
			spec.ParamKind = &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "Namespace"}
		}
	}
	for j := range r.IntN(3) {
		spec.MatchConditions = append(spec.MatchConditions, admissionregistrationv1.MatchCondition{
			Name: fmt.Sprintf("mc-%d", j), Expression: pick(r,
				`request.userInfo.username != 'rnd-robot-ignored'`,
				`!('rnd-skip' in request.userInfo.groups)`,
				`has(object.metadata.labels) ? !('rnd.vapc.dev/skip' in object.metadata.labels) : true`,
				`object == null || object.metadata.?labels[?'rnd.vapc.dev/skip'].orValue('') != 'yes'`,
				`request.operation != 'DELETE' || oldObject.metadata.?labels[?'app'].orValue('') != 'web'`,
				`request.userInfo.username == 'admin' ? request.dryRun : true`,
				`params == null || params.?data[?'mode'].orValue('') != 'skip'`,
				`int(object.data['n']) != 7`,
				`namespaceObject == null || namespaceObject.metadata.?labels[?'team'].orValue('') != 'blue'`,
			),
		})
	}
	for j := range r.IntN(4) {
		v := genVar{name: fmt.Sprintf("v%d", j), typ: pick(r, "bool", "string", "int")}
		var e string
		switch v.typ {
		case "bool":
			e = scope.boolExpr(r)
		case "string":
			e = scope.stringExpr(r)
		default:
			e = scope.intExpr(r)
		}
		spec.Variables = append(spec.Variables, admissionregistrationv1.Variable{Name: v.name, Expression: e})
		scope.vars = append(scope.vars, v)
	}
	for j := range 1 + r.IntN(3) {
		v := admissionregistrationv1.Validation{Expression: scope.boolExpr(r)}
		if chance(r, 0.6) {
			v.Message = fmt.Sprintf("%s validation %d refuses", name, j)
		}
		if chance(r, 0.6) {
			v.MessageExpression = scope.stringExpr(r)
		}
		if chance(r, 0.6) {
			v.Reason = ptr.To(pick(r, metav1.StatusReasonForbidden, metav1.StatusReasonInvalid, metav1.StatusReasonUnauthorized, metav1.StatusReasonRequestEntityTooLarge))
		}
		spec.Validations = append(spec.Validations, v)
	}
	for j := range r.IntN(3) {
		spec.AuditAnnotations = append(spec.AuditAnnotations, admissionregistrationv1.AuditAnnotation{
			Key: fmt.Sprintf("k%d", j), ValueExpression: scope.auditValue(r),
		})
	}

	var bindings []*admissionregistrationv1.ValidatingAdmissionPolicyBinding
	for j := range 1 + r.IntN(3) {
		b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-b%d", name, j)},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName: name,
				ValidationActions: pick(r,
					[]admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
					[]admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
					[]admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn},
					[]admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit},
					[]admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny, admissionregistrationv1.Audit},
					[]admissionregistrationv1.ValidationAction{admissionregistrationv1.Warn, admissionregistrationv1.Audit},
				),
			},
		}
		if spec.ParamKind != nil && chance(r, 0.85) {
			b.Spec.ParamRef = paramRef(r, scope.paramKind)
		}
		if chance(r, 0.35) {
			mr := &admissionregistrationv1.MatchResources{}
			switch r.IntN(4) {
			case 0:
				mr.NamespaceSelector = namespaceSelector(r)
			case 1:
				mr.ObjectSelector = objectSelector(r)
			case 2:
				mr.ResourceRules = []admissionregistrationv1.NamedRuleWithOperations{g.rule(r)}
			default:
				mr.ExcludeResourceRules = []admissionregistrationv1.NamedRuleWithOperations{g.rule(r)}
			}
			b.Spec.MatchResources = mr
		}
		bindings = append(bindings, b)
	}
	return p, bindings
}

func paramRef(r *rand.Rand, kind string) *admissionregistrationv1.ParamRef {
	ref := &admissionregistrationv1.ParamRef{
		ParameterNotFoundAction: ptr.To(pick(r, admissionregistrationv1.AllowAction, admissionregistrationv1.DenyAction)),
	}
	if kind == "Node" {
		if chance(r, 0.6) {
			ref.Name = pick(r, "pn-0", "pn-1", "pn-2", "pn-9")
		} else {
			ref.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"set": pick(r, "x", "y", "z")}}
		}
		return ref
	}
	if kind == "Namespace" {
		if chance(r, 0.5) {
			ref.Name = pick(r, rndA, rndD, "rnd-missing")
		} else {
			ref.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"tier": pick(r, "gold", "silver")}}
		}
		return ref
	}
	if kind == "ReplicaLimit" {
		switch r.IntN(4) {
		case 0, 1:
			ref.Name, ref.Namespace = pick(r, "rl-0", "rl-1", "rl-2", "rl-9"), rndParams
		case 2:
			ref.Name = "rl-local" // in the request's namespace
		default:
			ref.Namespace = rndParams
			ref.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"set": pick(r, "x", "y", "z")}}
		}
		return ref
	}
	switch r.IntN(5) {
	case 0, 1:
		ref.Name, ref.Namespace = pick(r, "p-0", "p-1", "p-2", "p-9"), rndParams
	case 2:
		ref.Name = "p-local" // in the request's namespace
	case 3:
		ref.Namespace = rndParams
		ref.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"set": pick(r, "x", "y", "z")}}
	default:
		ref.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "set", Operator: metav1.LabelSelectorOpExists}}}
	}
	return ref
}

// genPolicies generates n policies with their bindings, keeping only those that `vapc check`
// says the apiserver accepts (the test holds it to that when it creates them).
func (g *randomWorld) genPolicies(t *testing.T, r *rand.Rand, n int) policySet {
	t.Helper()
	checker, err := cel.NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	var set policySet
	op, ob := observerPolicy()
	if errs := createErrors(append(checker.CheckPolicy(&cel.Policy{ValidatingAdmissionPolicy: op, Source: noLocation{}}), checker.CheckBinding(&cel.Binding{ValidatingAdmissionPolicyBinding: ob, Source: noLocation{}}, nil)...)); errs != "" {
		t.Fatalf("the observer policy does not pass vapc check:\n%s", errs)
	}
	set.policies, set.bindings = append(set.policies, op), append(set.bindings, ob)
	refused := 0
	for i := 0; len(set.policies) < n+1; i++ {
		if i > 20*n {
			t.Fatalf("only %d of %d generated policies pass vapc check", len(set.policies)-1, i)
		}
		p, bs := g.genPolicy(r, len(set.policies)-1)
		cp := &cel.Policy{ValidatingAdmissionPolicy: p, Source: noLocation{}}
		diags := checker.CheckPolicy(cp)
		for _, b := range bs {
			diags = append(diags, checker.CheckBinding(&cel.Binding{ValidatingAdmissionPolicyBinding: b, Source: noLocation{}}, map[string]*cel.Policy{p.Name: cp})...)
		}
		if errs := createErrors(diags); errs != "" {
			refused++
			t.Logf("generated policy %s refused by vapc check, regenerating:\n%s", p.Name, errs)
			if len(g.refused.policies) < 8 {
				p = p.DeepCopy()
				p.Name = fmt.Sprintf("rnd-refused-%d", refused)
				g.refused.policies = append(g.refused.policies, p)
				g.refusedWhy = append(g.refusedWhy, errs)
			}
			continue
		}
		set.policies = append(set.policies, p)
		set.bindings = append(set.bindings, bs...)
	}
	t.Logf("generated %d policies and %d bindings, the observer's included (%d refused by vapc check and regenerated)", len(set.policies), len(set.bindings), refused)
	return set
}

// observerName names the observer policy and its binding.
const observerName = "rnd-observer"

// observerPolicy records, in its audit annotations, what every request it matches looked like
// to the apiserver's admission: the request's attributes, user, options, objects and
// namespace. Bound [Audit] and failing open, it decides nothing, but the replay must predict
// each annotation exactly, admitted requests included, so that any difference in how it
// rebuilds a request shows. It reads nothing the log cannot tell by design (the uid and
// creationTimestamp the server gives a created object, managedFields, defaulted fields).
func observerPolicy() (*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	describe := func(o string) string {
		return o + ` == null ? 'null' : ` + o + `.metadata.name + ' ns=' + ` + o + `.metadata.?namespace.orValue('-') +
' labels=' + string(size(` + o + `.metadata.?labels.orValue({}))) + ' app=' + ` + o + `.metadata.?labels[?'app'].orValue('-') +
' color=' + ` + o + `.metadata.?labels[?'color'].orValue('-') + ' skip=' + ` + o + `.metadata.?labels[?'rnd.vapc.dev/skip'].orValue('-') +
' block=' + ` + o + `.metadata.?annotations[?'rnd.vapc.dev/block'].orValue('-') +
' data=' + string(size(` + o + `.?data.orValue({}))) + ' n=' + ` + o + `.?data[?'n'].orValue('-') +
' replicas=' + string(` + o + `.?spec.?replicas.orValue(-1)) + ' node=' + ` + o + `.?spec.?nodeName.orValue('-') +
' images=' + ` + o + `.?spec.?containers.orValue([]).map(c, c.image).join(',') +
' cpu=' + ` + o + `.?spec.?containers.orValue([]).map(c, c.?resources.?requests[?'cpu'].orValue('-') + '/' + c.?resources.?limits[?'cpu'].orValue('-')).join(',') +
' ephemeral=' + string(size(` + o + `.?spec.?ephemeralContainers.orValue([]))) +
(request.operation == 'CREATE' ? '' : ' phase=' + ` + o + `.?status.?phase.orValue('-') + ' message=' + ` + o + `.?status.?message.orValue('-') +
' conditions=' + ` + o + `.?status.?conditions.orValue([]).map(c, c.type + ':' + c.status).join(',')) +
' unschedulable=' + string(` + o + `.?spec.?unschedulable.orValue(false)) +
' eviction=' + string(` + o + `.?deleteOptions.?gracePeriodSeconds.orValue(-1)) +
' target=' + ` + o + `.?target.?name.orValue('-') + ' audiences=' + ` + o + `.?spec.?audiences.orValue([]).join(',') +
' tier=' + ` + o + `.metadata.?labels[?'tier'].orValue('-') +
' size=' + string(` + o + `.?spec.?size.orValue(-1)) + ' max=' + string(` + o + `.?spec.?maxReplicas.orValue(-1))`
	}
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicy"},
		ObjectMeta: metav1.ObjectMeta{Name: observerName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionregistrationv1.Ignore),
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules:        []admissionregistrationv1.NamedRuleWithOperations{namedRule([]string{"*"}, []string{"*"}, []string{"*/*"}, []string{"*"})},
				ExcludeResourceRules: safetyExcludes,
			},
			AuditAnnotations: []admissionregistrationv1.AuditAnnotation{
				{Key: "request", ValueExpression: `request.operation + ' ' + request.kind.group + '/' + request.kind.version + '/' + request.kind.kind +
' requestKind=' + request.requestKind.group + '/' + request.requestKind.version + '/' + request.requestKind.kind +
' resource=' + request.resource.group + '/' + request.resource.version + '/' + request.resource.resource + ' sub=' + request.subResource +
' requestResource=' + request.requestResource.group + '/' + request.requestResource.resource + ' requestSub=' + request.requestSubResource +
' name=' + request.namespace + '/' + request.name + ' dryRun=' + string(request.dryRun)`},
				{Key: "user", ValueExpression: `request.userInfo.username + ' uid=' + request.userInfo.uid + ' groups=' + request.userInfo.groups.join(',') +
' extra=' + string(size(request.userInfo.extra)) + ' team=' + ('team' in request.userInfo.extra ? request.userInfo.extra['team'].join('+') : '-') +
' level=' + ('example.org/level' in request.userInfo.extra ? request.userInfo.extra['example.org/level'].join('+') : '-')`},
				{Key: "options", ValueExpression: `request.options == null ? 'null' : request.options.apiVersion + '/' + request.options.kind +
' grace=' + string(request.options.?gracePeriodSeconds.orValue(-99)) + ' propagation=' + request.options.?propagationPolicy.orValue('-') +
' orphan=' + (has(request.options.orphanDependents) ? string(request.options.orphanDependents) : '-') +
' dryRun=' + request.options.?dryRun.orValue([]).join(',') + ' fieldManager=' + request.options.?fieldManager.orValue('-') +
' fieldValidation=' + request.options.?fieldValidation.orValue('-') +
' preconditions=' + request.options.?preconditions.?uid.orValue('-') + ',' + request.options.?preconditions.?resourceVersion.orValue('-')`},
				{Key: "object", ValueExpression: describe("object") + ` + (object == null || request.operation == 'CREATE' ? '' : ' rv=' + object.metadata.?resourceVersion.orValue('-'))`},
				{Key: "old", ValueExpression: describe("oldObject") + ` + (oldObject == null ? '' : ' rv=' + oldObject.metadata.?resourceVersion.orValue('-') +
' generation=' + string(oldObject.metadata.?generation.orValue(0)) + ' deleting=' + string(has(oldObject.metadata.deletionTimestamp)) +
' deletionGrace=' + string(oldObject.metadata.?deletionGracePeriodSeconds.orValue(-1)) + ' finalizers=' + oldObject.metadata.?finalizers.orValue([]).join(','))`},
				{Key: "namespace", ValueExpression: `namespaceObject == null ? 'null' : namespaceObject.metadata.name + ' tier=' + namespaceObject.metadata.?labels[?'tier'].orValue('-') +
' env=' + namespaceObject.metadata.?labels[?'env'].orValue('-') + ' team=' + namespaceObject.metadata.?labels[?'team'].orValue('-') +
' phase=' + namespaceObject.?status.?phase.orValue('-') + ' deleting=' + string(has(namespaceObject.metadata.deletionTimestamp))`},
			},
		},
	}
	b := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: observerName},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        observerName,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Audit},
		},
	}
	return p, b
}

// createErrors are the diagnostics of errors the apiserver returns on create.
func createErrors(diags cel.Diagnostics) string {
	var out []string
	for _, d := range diags {
		if d.Severity == cel.Error && (d.Category == cel.CategoryCreate || d.Category == cel.CategoryInput) {
			out = append(out, d.String())
		}
	}
	return strings.Join(out, "\n")
}

// noLocation places diagnostics of generated policies nowhere.
type noLocation struct{}

func (noLocation) FieldPos(string) manifest.Position          { return manifest.Position{} }
func (noLocation) ExprPos(string, int, int) manifest.Position { return manifest.Position{} }
