package e2e

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
)

// mutations are every mutation TestCheckParityMutations draws from.
var mutations = []mutation{
	// mutating policy spec
	set("reinvocationPolicy", mutatingKind, []string{"spec.reinvocationPolicy"}, remove, "", "Never", "IfNeeded", "Always", "never", nil, 1),
	set("mutations", mutatingKind, []string{"spec.mutations"}, remove, []any{}, nil, "x",
		[]any{map[string]any{"patchType": "JSONPatch"}},
		[]any{map[string]any{"patchType": "ApplyConfiguration", "jsonPatch": map[string]any{"expression": "[]"}}},
		[]any{map[string]any{"patchType": "JSONPatch", "jsonPatch": map[string]any{"expression": "[]"}, "applyConfiguration": map[string]any{"expression": "Object{}"}}}),
	set("patchType", mutatingKind, []string{"spec.mutations[].patchType"}, remove, "", "JSONPatch", "ApplyConfiguration", "Merge", "jsonpatch", nil),
	set("mutation-expression", mutatingKind, []string{"spec.mutations[].jsonPatch.expression", "spec.mutations[].applyConfiguration.expression"},
		"[]", "Object{}", "Object{metadata: Object.metadata{labels: {'a': 'b'}}}", "[JSONPatch{op: 'add', path: '/metadata/labels', value: {'a': 'b'}}]",
		"[JSONPatch{op: 'bogus', path: '/x'}]", "Object{spec: 1}", "true", "'x'", "object.", "[JSONPatch{op: 'add', path: '/x', value: params.y}]", ""),

	// metadata
	set("name", "", []string{"metadata.name"}, objectNames...),
	set("generateName", "", []string{"metadata.generateName"}, "gen-", "Gen-", "gen", "a/b-", ".", "", repeat("300", "g", 300), repeat("253", "g", 253), "x.static.k8s.io"),
	custom("generateName-only", "", "metadata", func(r *rand.Rand, m map[string]any, key string) (string, bool) {
		md, _ := m[key].(map[string]any)
		delete(md, "name")
		md["generateName"] = pick(r, "gen-", "Bad_", strings.Repeat("g", 70)+"-", "a.static.k8s.io")
		return "(" + md["generateName"].(string) + ")", true
	}),
	set("namespace", "", []string{"metadata.namespace"}, "default", "Bad_NS", "kube-system", ""),
	set("labels", "", []string{"metadata.labels"}, map[string]any{"a": "b"}, map[string]any{"bad key": "x"}, map[string]any{"a": "bad value"}, map[string]any{"a": strings.Repeat("v", 64)}, map[string]any{"example.com/a": ""}),
	set("annotations", "", []string{"metadata.annotations"}, map[string]any{"a": "any value\nwith lines"}, map[string]any{"bad key": "x"}, map[string]any{"UPPER/x": "x"}),
	set("finalizers", "", []string{"metadata.finalizers"}, strs("example.com/f"), strs("f"), strs("Bad Finalizer"), strs("kubernetes"), strs("example.com/f", "example.com/f")),
	set("ownerReferences", "", []string{"metadata.ownerReferences"}, ownerReferences...),
	set("managedFields", "", []string{"metadata.managedFields"}, managedFields...),
	set("system-field", "", []string{"metadata.resourceVersion", "metadata.uid", "metadata.generation", "metadata.selfLink", "metadata.deletionGracePeriodSeconds"}, "1", "x", 3, -1),
	set("status", policyKind, []string{"status"}, map[string]any{"observedGeneration": 5}, map[string]any{"conditions": []any{map[string]any{"type": "bad type"}}}),
	set("unknown-field", "", []string{"spec.foo", "spec.matchConstraints.foo", "metadata.foo", "foo"}, "x"),
	set("wrong-type", "", []string{"spec", "metadata.name", "metadata.labels"}, 1, strs("a"), true),

	// policy spec
	set("failurePolicy", policyKind, []string{"spec.failurePolicy"}, remove, "", "fail", "Ignore", "Deny", nil, 1),
	set("paramKind", policyKind, []string{"spec.paramKind"}, remove, nil, map[string]any{},
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}, map[string]any{"apiVersion": "apps/v1", "kind": "Deployment"},
		map[string]any{"apiVersion": "example.com/v1", "kind": "Widget"}, map[string]any{"kind": "ConfigMap"},
		map[string]any{"apiVersion": "v1"}, map[string]any{"apiVersion": "a/b/c", "kind": "X"}, map[string]any{"apiVersion": "/v1", "kind": "X"},
		map[string]any{"apiVersion": "apps/", "kind": "X"}, map[string]any{"apiVersion": "Apps/v1", "kind": "X"},
		map[string]any{"apiVersion": "v1Beta1", "kind": "X"}, map[string]any{"apiVersion": "1v", "kind": "X"},
		map[string]any{"apiVersion": "v1", "kind": "configmap"}, map[string]any{"apiVersion": "v1", "kind": "Config-Map"},
		map[string]any{"apiVersion": "v1", "kind": "Config_Map"}, map[string]any{"apiVersion": "v1", "kind": strings.Repeat("K", 64)},
		map[string]any{"apiVersion": "/", "kind": "X"}, map[string]any{"apiVersion": "a_b/v1", "kind": "X"},
		map[string]any{"apiVersion": "apps//v1", "kind": "X"}, map[string]any{"apiVersion": " v1", "kind": "X"},
		map[string]any{"apiVersion": "*/v1", "kind": "X"}, map[string]any{"apiVersion": "v1", "kind": "*"},
		map[string]any{"apiVersion": "v1", "kind": "ConfigMap ", "extra": "x"}, map[string]any{"apiVersion": "v1", "kind": "Ünïcode"},
		map[string]any{"apiVersion": strings.Repeat("g", 254) + "/v1", "kind": "X"}),
	set("matchConstraints", policyKind, []string{"spec.matchConstraints"}, remove, map[string]any{}, nil),
	set("resourceRules", policyKind, []string{"spec.matchConstraints.resourceRules", "spec.matchConstraints.excludeResourceRules"}, ruleLists...),
	set("matchPolicy", "", []string{"spec.matchConstraints.matchPolicy", "spec.matchResources.matchPolicy"}, remove, "", "exact", "Exact", "Fuzzy"),
	set("selector", "", []string{"spec.matchConstraints.namespaceSelector", "spec.matchConstraints.objectSelector", "spec.matchResources.namespaceSelector", "spec.matchResources.objectSelector"}, labelSelectors...),
	set("operations", "", []string{"spec.matchConstraints.resourceRules[].operations", "spec.matchResources.resourceRules[].operations", "spec.matchConstraints.excludeResourceRules[].operations"},
		strs(), remove, strs("*", "CREATE"), strs("create"), strs("PATCH"), strs("CONNECT"), strs("CREATE", "CREATE"), strs(""), strs("*"), strs("DELETE", "UPDATE")),
	set("apiGroups", "", []string{"spec.matchConstraints.resourceRules[].apiGroups", "spec.matchResources.resourceRules[].apiGroups"},
		strs(), remove, strs("*", "apps"), strs("Apps"), strs(""), strs("", ""), strs("a/b"), strs("*")),
	set("apiVersions", "", []string{"spec.matchConstraints.resourceRules[].apiVersions", "spec.matchConstraints.excludeResourceRules[].apiVersions"},
		strs(), remove, strs(""), strs("*", "v1"), strs("V1"), strs("v1", "v1"), strs("v1", "")),
	set("resources", "", []string{"spec.matchConstraints.resourceRules[].resources", "spec.matchResources.resourceRules[].resources", "spec.matchConstraints.excludeResourceRules[].resources"},
		strs(), remove, strs(""), strs("*", "pods"), strs("*/*", "pods"), strs("pods/*", "pods/status"), strs("*/status", "pods/status"),
		strs("*", "*/scale"), strs("pods/"), strs("/status"), strs("pods/status/x"), strs("Pods"), strs("pods", "*"), strs("*/*"),
		strs("pods/status", "pods/*"), strs("*/*", "*"), strs("deployments/scale", "*/scale"), strs("pods", "pods"), strs("*", "pods/status"), strs("a b")),
	set("scope", "", []string{"spec.matchConstraints.resourceRules[].scope", "spec.matchResources.resourceRules[].scope"}, "cluster", "Namespaced", "All", "", "*", nil),
	set("resourceNames", "", []string{"spec.matchConstraints.resourceRules[].resourceNames", "spec.matchResources.excludeResourceRules[].resourceNames"},
		strs("a", "a"), strs(""), strs("a/b"), strs(".."), strs("UP"), strs("%"), strs("a b")),
	set("matchCondition.name", policyKind, []string{"spec.matchConditions[].name"}, qualifiedNames...),
	set("matchCondition.expression", policyKind, []string{"spec.matchConditions[].expression"}, boolExprs...),
	custom("matchConditions.add", policyKind, "spec", func(r *rand.Rand, spec map[string]any, _ string) (string, bool) {
		name := pick(r, "added", "requesting-user", "Added_1")
		expr := pick(r, boolExprs...)
		if g, ok := expr.(gen); ok {
			expr = g.fn(r)
		}
		mc := map[string]any{"name": name, "expression": expr}
		if _, ok := expr.(removeField); ok {
			delete(mc, "expression")
		}
		list, _ := spec["matchConditions"].([]any)
		spec["matchConditions"] = append(list, mc)
		return "(" + name + ": " + describeValue(expr) + ")", true
	}),
	custom("matchConditions.many", policyKind, "spec", func(r *rand.Rand, spec map[string]any, _ string) (string, bool) {
		n := pick(r, 64, 65, 70)
		var list []any
		for i := range n {
			list = append(list, map[string]any{"name": fmt.Sprintf("c%d", i), "expression": "true"})
		}
		spec["matchConditions"] = list
		return fmt.Sprintf("(%d)", n), true
	}),
	set("variable.name", policyKind, []string{"spec.variables[].name"}, "", "  ", "in", "true", "null", "1abc", "a-b", "_ok", "ok2", "limit", "x", "namespace", "object", "variables", "ÿ", remove),
	set("variable.expression", policyKind, []string{"spec.variables[].expression"}, boolExprs...),
	custom("variables.add", policyKind, "spec", func(r *rand.Rand, spec map[string]any, _ string) (string, bool) {
		name := pick(r, "added", "limit", "cordoning", "in", "x y")
		expr := pick(r, append(boolExprs, stringExprs...)...)
		if g, ok := expr.(gen); ok {
			expr = g.fn(r)
		}
		v := map[string]any{"name": name, "expression": expr}
		if _, ok := expr.(removeField); ok {
			delete(v, "expression")
		}
		list, _ := spec["variables"].([]any)
		if r.IntN(2) == 0 {
			list = append([]any{v}, list...)
		} else {
			list = append(list, v)
		}
		spec["variables"] = list
		return "(" + name + ": " + describeValue(expr) + ")", true
	}),
	custom("variables.many", policyKind, "spec", func(r *rand.Rand, spec map[string]any, _ string) (string, bool) {
		n := pick(r, 50, 200)
		list, _ := spec["variables"].([]any)
		for i := range n {
			list = append(list, map[string]any{"name": fmt.Sprintf("v%d", i), "expression": fmt.Sprintf("%d", i)})
		}
		spec["variables"] = list
		return fmt.Sprintf("(%d)", n), true
	}),
	set("validation.expression", policyKind, []string{"spec.validations[].expression"}, boolExprs...),
	set("validation.messageExpression", policyKind, []string{"spec.validations[].messageExpression"}, stringExprs...),
	set("validation.message", policyKind, []string{"spec.validations[].message"}, remove, "", "  ", " padded ", "a\nb", "a\r", "trailing\n", "\nleading",
		repeat("10000 chars", "m", 10000), "ünïcode ✓"),
	set("validation.reason", policyKind, []string{"spec.validations[].reason"}, remove, "", "Invalid", "Forbidden", "RequestEntityTooLarge", "Unauthorized", "forbidden", "BadRequest", nil),
	set("validations", policyKind, []string{"spec.validations"}, remove, []any{}, nil, []any{map[string]any{}}, []any{map[string]any{"message": "m"}}),
	custom("validations.many", policyKind, "spec", func(r *rand.Rand, spec map[string]any, _ string) (string, bool) {
		n := pick(r, 65, 300)
		var list []any
		for i := range n {
			list = append(list, map[string]any{"expression": fmt.Sprintf("%d > 0", i)})
		}
		spec["validations"] = list
		return fmt.Sprintf("(%d)", n), true
	}),
	set("auditAnnotation.key", policyKind, []string{"spec.auditAnnotations[].key"}, qualifiedNames...),
	set("auditAnnotation.valueExpression", policyKind, []string{"spec.auditAnnotations[].valueExpression"}, stringExprs...),
	set("auditAnnotations", policyKind, []string{"spec.auditAnnotations"}, remove, []any{}, nil, []any{map[string]any{}},
		[]any{map[string]any{"key": "a", "valueExpression": "'x'"}, map[string]any{"key": "a", "valueExpression": "'y'"}}),
	custom("auditAnnotations.many", policyKind, "spec", func(r *rand.Rand, spec map[string]any, _ string) (string, bool) {
		n := pick(r, 20, 21, 25)
		var list []any
		for i := range n {
			list = append(list, map[string]any{"key": fmt.Sprintf("k%d", i), "valueExpression": "'v'"})
		}
		spec["auditAnnotations"] = list
		return fmt.Sprintf("(%d)", n), true
	}),
	custom("duplicate", policyKind, "spec", func(r *rand.Rand, spec map[string]any, _ string) (string, bool) {
		field := pick(r, "matchConditions", "variables", "validations", "auditAnnotations")
		list, _ := spec[field].([]any)
		if len(list) == 0 {
			return "", false
		}
		spec[field] = append(list, deepCopyJSON(list[r.IntN(len(list))]))
		return "(" + field + ")", true
	}),

	// binding spec
	set("policyName", bindingKind, []string{"spec.policyName"}, objectNames...),
	set("validationActions", bindingKind, []string{"spec.validationActions"}, remove, strs(), nil, strs("deny"), strs("Deny", "Warn"),
		strs("Audit", "Audit"), strs("Block"), strs(""), strs("Warn", "Audit"), strs("Deny", "Audit", "Warn", "Deny"), strs("Warn")),
	set("paramRef", bindingKind, []string{"spec.paramRef"}, remove, nil, map[string]any{},
		map[string]any{"name": "p", "parameterNotFoundAction": "Deny"},
		map[string]any{"name": "p", "selector": map[string]any{}, "parameterNotFoundAction": "Allow"},
		map[string]any{"selector": map[string]any{}, "parameterNotFoundAction": "Allow"},
		map[string]any{"parameterNotFoundAction": "Allow"},
		map[string]any{"name": "p"},
		map[string]any{"name": "p", "namespace": "Bad_NS", "parameterNotFoundAction": "Deny"},
		map[string]any{"name": "p", "namespace": "", "parameterNotFoundAction": "Deny"},
		map[string]any{"name": "Bad_Name", "parameterNotFoundAction": "Deny"}),
	set("paramRef.name", bindingKind, []string{"spec.paramRef.name"}, objectNames...),
	set("paramRef.selector", bindingKind, []string{"spec.paramRef.selector"}, labelSelectors...),
	set("paramRef.namespace", bindingKind, []string{"spec.paramRef.namespace"}, remove, "", "Bad_NS", "default", repeat("64", "n", 64)),
	set("parameterNotFoundAction", bindingKind, []string{"spec.paramRef.parameterNotFoundAction"}, remove, "", "allow", "Ignore", "Deny", "Allow", nil),
	set("matchResources", bindingKind, []string{"spec.matchResources"}, remove, map[string]any{}, nil,
		map[string]any{"resourceRules": ruleLists[3]}, map[string]any{"excludeResourceRules": ruleLists[2]},
		map[string]any{"resourceRules": ruleLists[6]}, map[string]any{"namespaceSelector": labelSelectors[4]}),
	set("binding.resourceRules", bindingKind, []string{"spec.matchResources.resourceRules", "spec.matchResources.excludeResourceRules"}, ruleLists...),

	// anywhere in the object
	anyLeaf("rename-key", func(l leaf) bool { return l.m != nil && l.key != "" }, func(r *rand.Rand, l leaf) string {
		variants := []string{strings.ToLower(l.key), strings.ToUpper(l.key[:1]) + l.key[1:], strings.ToUpper(l.key), l.key + "s", " " + l.key}
		k := pick(r, variants...)
		v := l.m[l.key]
		delete(l.m, l.key)
		l.m[k] = v
		return strconv.Quote(k)
	}),
	anyLeaf("null", func(l leaf) bool { return true }, func(r *rand.Rand, l leaf) string {
		l.set(nil)
		return "null"
	}),
	anyLeaf("list-item", func(l leaf) bool {
		_, ok := l.get().([]any)
		return ok && l.m != nil
	}, func(r *rand.Rand, l leaf) string {
		list := l.get().([]any)
		v := pick[any](r, nil, "", 1, true, map[string]any{}, []any{}, "x")
		if len(list) > 0 && r.IntN(2) == 0 {
			list[r.IntN(len(list))] = v
		} else {
			l.set(append(list, v))
		}
		return describeValue(v)
	}),
	anyLeaf("scalar-type", func(l leaf) bool {
		switch l.get().(type) {
		case string, bool, float64, int64, int:
			return true
		}
		return false
	}, func(r *rand.Rand, l leaf) string {
		v := pick[any](r, 0, -1, 1.5, 1e30, true, false, "", "1", map[string]any{}, []any{"x"}, 9223372036854775807)
		l.set(v)
		return describeValue(v)
	}),
	anyLeaf("raw-yaml", func(l leaf) bool {
		switch l.get().(type) {
		case string, bool, float64, nil:
			return true
		}
		return false
	}, func(r *rand.Rand, l leaf) string {
		n := r.IntN(len(rawScalars))
		l.set(rawPlaceholder + strconv.Itoa(n))
		return rawScalars[n]
	}),
	set("apiVersion", "", []string{"apiVersion"}, "admissionregistration.k8s.io/v1beta1", "admissionregistration.k8s.io/v1alpha1", "admissionregistration.k8s.io/v2", "admissionregistration.k8s.io/V1"),
	set("cel-expression", policyKind, []string{"spec.validations[].expression", "spec.matchConditions[].expression", "spec.variables[].expression"}, celExprs...),
	set("cel-string", policyKind, []string{"spec.validations[].messageExpression", "spec.auditAnnotations[].valueExpression"}, celExprs...),
}

// Values the mutations draw from.
var (
	// objectNames are metadata.name, policyName and paramRef.name candidates.
	objectNames = []any{
		remove, "", "a", "UPPER", "has_underscore", "dots.are.ok", "a..b", "-lead", "trail-", "x.static.k8s.io",
		"a/b", "a%b", "..", ".", "with space", "ümlaut", "1-numeric", "a.b-c.d",
		repeat("253 chars", "a", 253), repeat("254 chars", "a", 254), repeat("64 chars", "a", 64),
		gen{label: "63-char labels", fn: func(*rand.Rand) any { return strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) }},
	}
	// qualifiedNames are matchCondition names and audit annotation keys.
	qualifiedNames = []any{
		remove, "", "ok", "Mixed-Case_1", "-bad", "bad-", "with space", "example.com/ok", "Example.com/x", "a/b/c",
		"/x", "x/", "a.b", "_x", repeat("63 chars", "k", 63), repeat("64 chars", "k", 64),
		gen{label: "prefix 254", fn: func(*rand.Rand) any { return strings.Repeat("p", 254) + "/x" }},
	}
	// boolExprs are candidates for validations and matchConditions.
	boolExprs = []any{
		remove, "", "   ", "true", "1 == 1 &&", "object.spec", "'a'", "1", "null", "dyn(true)", "object.metadata.name",
		"params.x == 1", "params != null", "variables.nope", "variables.limit > 0", "namespaceObject.metadata.name == 'x'",
		"authorizer.group('').resource('pods').check('get').allowed()", "oldObject == null", "x", "size(object.metadata.name) > 1)",
		"has(object.metadata.labels)", "object.metadata.name.matches('[')", "object.metadata.name.matches('^a$')",
		"isURL('x')", "quantity('1').isGreaterThan(quantity('0'))", "ip('1.2.3.4').family() == 4",
		"cidr('10.0.0.0/8').containsIP('10.1.1.1')", "format.named('dns1123Label').value().validate('a').hasValue()",
		"object.?metadata.name.orValue('') != ''", "[1,2].all(x, x > 0)", "sets.contains([1], [1])",
		"'%d'.format([1]) == '1'", "math.abs(-1) == 1", "strings.quote('a') != ''", "lists.range(3).size() == 3",
		"'abc'.reverse() == 'cba'", "base64.encode(b'a') != ''", "request.userInfo.username == 'x'",
		"object.metadata.?labels['x'].orValue('') == ''", "\ttrue\n", "true // comment", "true\n&& false",
		"type(object) == int", "object.spec.containers.all(c, object.spec.containers.all(d, c.name == d.name || c.image != d.image))",
		"duration('1h') > duration('1m')", "timestamp('2020-01-01T00:00:00Z') < now()", "'\\z' == ''",
		"int('1') == 1", "[1, 'a'].size() == 2", "{'a': 1, 'a': 2}.size() == 1", "object.metadata.name in ['a', 1]",
		gen{label: "nested 120", fn: func(*rand.Rand) any { return strings.Repeat("(", 120) + "true" + strings.Repeat(")", 120) }},
		gen{label: "nested 300", fn: func(*rand.Rand) any { return strings.Repeat("!", 300) + "true" }},
		gen{label: "&& x 2000", fn: func(*rand.Rand) any { return strings.Repeat("true && ", 2000) + "true" }},
		gen{label: "string 6000", fn: func(*rand.Rand) any { return "'" + strings.Repeat("s", 6000) + "' != ''" }},
		gen{label: "string 100000", fn: func(*rand.Rand) any { return "'" + strings.Repeat("s", 99992) + "' != ''" }},
		gen{label: "string 100001", fn: func(*rand.Rand) any { return "'" + strings.Repeat("s", 99993) + "' != ''" }},
		gen{label: "list 1100", fn: func(*rand.Rand) any { return "[" + strings.Repeat("1,", 1100) + "1].size() > 0" }},
	}
	// stringExprs are candidates for messageExpression and audit annotation valueExpression.
	stringExprs = []any{
		remove, "", "   ", "'ok'", "1", "null", "object.metadata.name", "params.data.x", "string(params)",
		"authorizer.requestResource.check('get').allowed() ? 'a' : 'b'", "variables.limit + ''", "string(variables.limit)",
		"string(dyn(1))", "dyn('a')", "'a' +", "object.metadata.name + 1", "request.userInfo.username",
		"has(object.metadata.labels) ? 'a' : null", "true ? 'a' : null", "namespaceObject.metadata.name",
		"'multi\\nline'", "'a'\n+ 'b'", "optional.of('a').value()", "object.metadata.?name.orValue('x')",
		gen{label: "5121 chars", fn: func(*rand.Rand) any { return "'" + strings.Repeat("v", 5119) + "'" }},
		gen{label: "5120 chars", fn: func(*rand.Rand) any { return "'" + strings.Repeat("v", 5118) + "'" }},
		gen{label: "100001 chars", fn: func(*rand.Rand) any { return "'" + strings.Repeat("v", 99999) + "'" }},
		gen{label: "padded 5121", fn: func(*rand.Rand) any { return "  '" + strings.Repeat("v", 5000) + "'  " }},
	}
	// labelSelectors are namespaceSelector, objectSelector and paramRef.selector candidates.
	labelSelectors = []any{
		remove, map[string]any{}, nil,
		map[string]any{"matchLabels": map[string]any{"a": "b"}},
		map[string]any{"matchLabels": map[string]any{"bad key": "b"}},
		map[string]any{"matchLabels": map[string]any{"a": "bad value"}},
		map[string]any{"matchLabels": map[string]any{"a": ""}},
		map[string]any{"matchLabels": map[string]any{"example.com/a": strings.Repeat("v", 64)}},
		map[string]any{"matchExpressions": []any{map[string]any{"key": "a", "operator": "In", "values": strs()}}},
		map[string]any{"matchExpressions": []any{map[string]any{"key": "a", "operator": "In"}}},
		map[string]any{"matchExpressions": []any{map[string]any{"key": "a", "operator": "In", "values": strs("x", "x")}}},
		map[string]any{"matchExpressions": []any{map[string]any{"key": "a", "operator": "NotIn", "values": strs("bad value")}}},
		map[string]any{"matchExpressions": []any{map[string]any{"key": "a", "operator": "Exists", "values": strs("x")}}},
		map[string]any{"matchExpressions": []any{map[string]any{"key": "a", "operator": "DoesNotExist"}}},
		map[string]any{"matchExpressions": []any{map[string]any{"key": "a", "operator": "Equals", "values": strs("x")}}},
		map[string]any{"matchExpressions": []any{map[string]any{"key": "a", "operator": "exists"}}},
		map[string]any{"matchExpressions": []any{map[string]any{"key": "", "operator": "Exists"}}},
		map[string]any{"matchExpressions": []any{map[string]any{"operator": "Exists"}}},
		map[string]any{"matchExpressions": []any{map[string]any{"key": "a"}}},
		map[string]any{"matchExpressions": []any{map[string]any{"key": "a", "operator": "Gt", "values": strs("1")}}},
		map[string]any{"matchExpressions": []any{map[string]any{"key": "-a", "operator": "Exists"}}},
		map[string]any{"matchExpressions": []any{}},
		map[string]any{"matchExpressions": []any{map[string]any{"key": "a", "operator": "Exists"}}, "matchLabels": map[string]any{"b": "c"}},
	}
	// rules are whole resource rules.
	ruleLists = []any{
		[]any{}, remove,
		[]any{map[string]any{}},
		[]any{map[string]any{"apiGroups": strs(""), "apiVersions": strs("v1"), "operations": strs("CREATE"), "resources": strs("pods")}},
		[]any{map[string]any{"apiGroups": strs("*"), "apiVersions": strs("*"), "operations": strs("*"), "resources": strs("*")}},
		[]any{map[string]any{"apiGroups": strs("*"), "apiVersions": strs("*"), "operations": strs("*"), "resources": strs("*/*")}},
		[]any{map[string]any{"apiGroups": strs(""), "apiVersions": strs("v1"), "operations": strs("CREATE"), "resources": strs("pods"), "resourceNames": strs("a", "a")}},
		[]any{map[string]any{"apiGroups": strs(""), "apiVersions": strs("v1"), "operations": strs("CREATE"), "resources": strs("pods"), "resourceNames": strs("", "a/b", "..", "Ok_Name")}},
		[]any{map[string]any{"apiGroups": strs(""), "apiVersions": strs("v1"), "operations": strs("CREATE"), "resources": strs("pods"), "scope": "Cluster"}},
	}
)

// ownerReferences are metadata.ownerReferences candidates: the create handler drops
// repeated ones before validation.
var ownerReferences = func() []any {
	ref := func(name, uid string, controller any) map[string]any {
		r := map[string]any{"apiVersion": "v1", "kind": "Node", "name": name, "uid": uid}
		if controller != nil {
			r["controller"] = controller
		}
		return r
	}
	l := func(label string, refs ...any) gen {
		return gen{label: label, fn: func(*rand.Rand) any { return deepCopyJSON(refs) }}
	}
	return []any{
		l("repeated controller", ref("n", "1", true), ref("n", "1", true)),
		l("two controllers, one UID", ref("n", "1", true), ref("m", "1", true)),
		l("two controllers", ref("n", "1", true), ref("n", "2", true)),
		l("one UID, controller false", ref("n", "1", nil), ref("n", "1", false)),
		l("repeated without name", ref("", "1", nil), ref("", "1", nil), ref("", "", nil)),
		l("repeated without apiVersion", ref("n", "1", nil), map[string]any{"kind": "Node", "name": "n", "uid": "1"}, map[string]any{"kind": "Node", "name": "n", "uid": "1"}),
		l("repeated bad name", ref("Bad_Name", "1", nil), ref("n", "1", nil), ref("Bad_Name", "1", nil)),
		l("empty", map[string]any{}),
	}
}()

// managedFields are metadata.managedFields candidates: the field manager keeps those of the
// request when they decode, and the server then validates them.
var managedFields = func() []any {
	entry := func(manager, op, apiVersion string, extra ...any) map[string]any {
		e := map[string]any{"manager": manager, "operation": op, "apiVersion": apiVersion, "fieldsType": "FieldsV1",
			"fieldsV1": map[string]any{"f:metadata": map[string]any{"f:labels": map[string]any{"f:x": map[string]any{}}}}}
		for i := 0; i+1 < len(extra); i += 2 {
			if extra[i+1] == nil {
				delete(e, extra[i].(string))
			} else {
				e[extra[i].(string)] = extra[i+1]
			}
		}
		return e
	}
	long := strings.Repeat("m", 129)
	v1 := "admissionregistration.k8s.io/v1"
	many := func(n int, manager string) []any {
		var out []any
		for i := range n {
			out = append(out, entry(fmt.Sprintf("%s-%02d", manager, i), "Update", v1, "time", fmt.Sprintf("2020-01-01T00:00:%02dZ", i)))
		}
		return out
	}
	l := func(label string, entries ...any) gen {
		return gen{label: label, fn: func(*rand.Rand) any { return deepCopyJSON(entries) }}
	}
	return []any{
		l("reset []"), l("reset [{}]", map[string]any{}), l("one", entry("m", "Update", v1)),
		l("long manager", entry(long, "Update", v1)), l("long Apply manager", entry(long, "Apply", v1)),
		l("unprintable manager", entry("a\u0007b", "Update", v1)),
		l("long subresource", entry("m", "Update", v1, "subresource", strings.Repeat("s", 257))),
		l("bad operation", entry(long, "Explode", v1)), l("no apiVersion", entry(long, "Update", "")),
		l("no fieldsType", entry(long, "Update", v1, "fieldsType", nil)), l("FieldsV2", entry(long, "Update", v1, "fieldsType", "FieldsV2")),
		l("no fieldsV1", entry(long, "Update", v1, "fieldsV1", nil)), l("empty fieldsV1", entry(long, "Update", v1, "fieldsV1", map[string]any{})),
		l("bad fieldsV1", entry(long, "Update", v1, "fieldsV1", map[string]any{"x": 1})),
		l("owns failurePolicy", entry(long, "Update", v1, "fieldsV1", map[string]any{"f:spec": map[string]any{"f:failurePolicy": map[string]any{}}})),
		l("owns spec", entry(long, "Update", v1, "fieldsV1", map[string]any{"f:spec": map[string]any{}})),
		l("owns status", entry(long, "Update", v1, "fieldsV1", map[string]any{"f:status": map[string]any{"f:observedGeneration": map[string]any{}}})),
		l("owns name", entry(long, "Update", v1, "fieldsV1", map[string]any{"f:metadata": map[string]any{"f:name": map[string]any{}}})),
		l("owns a validation", entry(long, "Update", v1, "fieldsV1", map[string]any{"f:spec": map[string]any{"f:validations": map[string]any{}}})),
		l("owns a match condition", entry(long, "Update", v1, "fieldsV1", map[string]any{"f:spec": map[string]any{"f:matchConditions": map[string]any{"k:{\"name\":\"nope\"}": map[string]any{".": map[string]any{}}}}})),
		l("v1beta1", entry(long, "Update", "admissionregistration.k8s.io/v1beta1")), l("v1alpha1", entry(long, "Update", "admissionregistration.k8s.io/v1alpha1")),
		l("v9", entry(long, "Update", "admissionregistration.k8s.io/v9")), l("core v1", entry(long, "Update", "v1")), l("a/b/c", entry(long, "Update", "a/b/c")),
		l("long + a/b/c", entry(long, "Update", v1), entry("ok", "Update", "a/b/c")), l("long + bad operation", entry(long, "Update", v1), entry("ok", "Bad", v1)),
		l("future", entry(long, "Update", v1, "time", "2999-01-01T00:00:00Z")), l("same manager twice", entry(long, "Update", v1), entry(long, "Update", v1)),
		l("mixed", entry(long, "Update", v1), entry(long+"x", "Apply", v1), entry("a\tb", "Update", v1, "subresource", "status")),
		l("10 long", many(10, long)...), l("12 long", many(12, long)...), l("11 + long", append(many(11, "u"), entry(long, "Update", v1, "time", "2020-01-01T00:00:30Z"))...),
	}
}()

// rawScalars are YAML texts that YAML 1.1 and 1.2 readers may take for other types than a
// string, or that exercise tags, quoting and escapes.
var rawScalars = []string{
	`yes`, `on`, `y`, `n`, `Off`, `~`, `null`, `Null`, `TRUE`, `0x1F`, `017`, `0o17`, `0b11`, `1_000`, `1:20`, `.inf`,
	`-.Inf`, `.nan`, `2020-01-01`, `2001-12-14t21:59:43.10-05:00`, `!!str 123`, `!!int "12"`, `!!binary aGVsbG8=`,
	`!!float 1`, `!!bool "true"`, `!!null ""`, `"\u2028"`, `"a\u0085b"`, `'it''s'`, `=`, `+1`, `1e3`, `12e`, `0.`,
	`!custom x`, `! x`, `&anchor x`, `"\0"`, `"\t"`, `"\x7f"`, `"\ud800"`, `"\U0001F600"`, `"a\/b"`, `[]`, `{}`,
	`[null]`, `[~, ""]`, `{a: }`, `"\e"`, `"\N"`, `"\_"`, `"\L"`, `"\P"`,
}

// celExprs are CEL expressions of every library and macro the server's environment has, some
// with compile errors.
var celExprs = []any{
	"has(object.a.b[0])", "[].exists(1, true)", "[1].all(x, x)", "[1].exists_one(x, x > 0)", "[1].map(x, x > 0, x)",
	"[1].map(x, y, z)", "{'a': 1}.all(k, v, v > 0)", "{'a': 1}.transformList(k, v, v).size() > 0",
	"[1].transformMap(i, v, v * 2).size() == 1", "cel.bind(x, 1, x > 0)", "optional.none().hasValue()",
	"[?optional.of(1)].size() == 1", "{?'a': optional.of(1)}.size() == 1", "'a'.lowerAscii() == 'a'",
	"'abc'.indexOf('b') == 1", "'a,b'.split(',').size() == 2", "['a'].join() == 'a'",
	"url('https://x').getHost() == 'x'", "isSemver('1.0.0')", "semver('1.0.0').major() == 1", "semver('x') == semver('y')",
	"'%s'.format([1]) == '1'", "'%z'.format([1]) == ''", "'%d'.format(['a']) == ''", "timestamp('bad') < now()",
	"duration('1x') > duration('1s')", "ip('bad').family() == 4", "cidr('bad').prefixLength() > 0",
	"quantity('bad').isInteger()", "url('bad').getScheme() == ''", "isIP('1.2.3.4')", "isCIDR('a')", "isQuantity('1')",
	"'\\q' == ''", "b'\\xff' == b'\\xff'", "9223372036854775808 > 0", "-9223372036854775808 < 0", "1u + 1 > 0u",
	"1.0 == 1", "1 == 1.0", "int(1.5) == 1", "// only a comment", "объект == 1", "object.metadata.name.size() + 1 > 0",
	"[1, 2].sort() == [1, 2]", "lists.range(2) == [0, 1]", "[1, 2].slice(0, 1) == [1]", "[[1], [2]].flatten().size() == 2",
	"[1, 1].distinct().size() == 1", "['b', 'a'].sortBy(x, x)[0] == 'a'", "math.greatest(1, 2) == 2", "math.sqrt(4.0) == 2.0",
	"math.isNaN(0.0 / 0.0)", "sets.intersects([1], [2])", "sets.equivalent([1], [1])", "base64.decode('aGk=') == b'hi'",
	"strings.quote('a') == '\"a\"'", "'abc'.charAt(0) == 'a'", "'a'.upperAscii() == 'A'", "'ab'.replace('a', 'b', 1) == 'bb'",
	"'ab'.substring(1) == 'b'", "'  a '.trim() == 'a'", "'a'.lastIndexOf('a') == 0", "[1].indexOf(1) == 0",
	"authorizer.serviceAccount('ns', 'sa').group('').resource('pods').check('get').allowed()",
	"authorizer.path('/healthz').check('get').allowed()", "authorizer.requestResource.check('get').reason() == ''",
	"authorizer.group('').resource('pods').fieldSelector('a=b').labelSelector('x in (y)').check('list').allowed()",
	"authorizer.group('').resource('pods').fieldSelector('a=').check('list').errored()",
	"request.resource.group == '' && request.subResource == '' && request.dryRun", "request.options.kind == 'CreateOptions'",
	"request.userInfo.extra['x'].size() > 0", "request.userInfo.groups.exists(g, g == 'a')", "request.requestKind.kind == 'Pod'",
	"namespaceObject.metadata.labels['a'] == 'b'", "namespaceObject.spec.finalizers.size() > 0", "namespaceObject.status.phase == 'Active'",
	"object.metadata.name.matches('^[a-z]+$')", "object.metadata.name.find('[a-z]+') == ''", "object.metadata.name.findAll('a', 2).size() > 0",
	"object.metadata.name.find('(') == ''", "type(1) == int", "type(object) == type(oldObject)", "dyn(1) == 1", "null == null",
	"{1: 'a', 'b': 2}.size() == 2", "[1, 2.0].size() == 2", "[object, oldObject].size() == 2", "1 in [1, 'a']",
	"variables.limit == variables.limit", "variables['limit'] == 1", "params.data['x'] == 'y'", "params.spec.x == 1",
	"has(params.data)", "params == null", "'x' + params", "object.spec.replicas * 2 > 1", "object.nope.nope == 1",
	"int(object.metadata.name) > 0", "string(b'\\xff') == ''", "bytes('a') == b'a'", "double('1.5') > 1.0", "uint(-1) == 0u",
	"timestamp(1) > timestamp(0)", "duration('1h').getHours() == 1", "now().getFullYear() > 2000",
	"'a' < 'b' && b'a' < b'b' && 1 < 2u && 1.0 < 2", "true ? 1 : 'a'", "object.metadata.?labels.?app.orValue('') == ''",
	"[1,2,3].exists(x, x == 2) ? 'yes' : 'no'", "string(object.metadata.creationTimestamp)", "'ok'",
}
