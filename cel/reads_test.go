package cel

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestExpressionReads: the fields an expression reads, and which unknown fields change it.
func TestExpressionReads(t *testing.T) {
	uid := Unknown{Path: FieldPath{Root: "object", Steps: []string{"metadata", "uid"}}, ValueOnly: true}
	volumeNames := Unknown{Path: FieldPath{Root: "object", Steps: []string{"spec", "volumes", AnyStep, "name"}}, ValueOnly: true}
	volumes := Unknown{Path: FieldPath{Root: "object", Steps: []string{"spec", "volumes"}}}
	tolerations := Unknown{Path: FieldPath{Root: "object", Steps: []string{"spec", "tolerations"}}}
	name := Unknown{Path: FieldPath{Root: "request", Steps: []string{"name"}}, ValueOnly: true}
	objName := Unknown{Path: FieldPath{Root: "object", Steps: []string{"metadata", "name"}}, ValueOnly: true}
	labelKeys := Unknown{Path: FieldPath{Root: "object", Steps: []string{"metadata", "labels"}}}
	templateLabel := Unknown{Path: FieldPath{Root: "object", Steps: []string{"spec", "template", "metadata", "labels", "controller-uid"}}, ValueOnly: true}
	tokenNames := Unknown{Path: FieldPath{Root: "object", Steps: []string{"spec", "volumes", AnyStep, "name"}}, ValueOnly: true, Prefix: "kube-api-access-"}
	generated := Unknown{Path: FieldPath{Root: "request", Steps: []string{"name"}}, ValueOnly: true, Prefix: "web-"}
	oldUID := Unknown{Path: FieldPath{Root: "oldObject", Steps: []string{"metadata", "uid"}}, ValueOnly: true}
	// A namespace known by its name alone.
	namespaceName := Unknown{Path: FieldPath{Root: "namespaceObject"}, Known: [][]string{{"metadata", "name"}, {"metadata", "labels", "kubernetes.io/metadata.name"}}}
	tests := []struct {
		expr    string
		vars    []NamedExpression
		unknown Unknown
		want    bool
	}{
		{"object.spec.replicas > 3", nil, uid, false},
		{"object.metadata.uid != ''", nil, uid, true},
		{"has(object.metadata.uid)", nil, uid, false},
		{"object.metadata.name.startsWith('a')", nil, uid, false},
		{"object.metadata", nil, uid, true},
		{"object == oldObject", nil, uid, true},
		{"oldObject.metadata.uid == 'x'", nil, uid, false},
		{"object.spec.volumes.all(v, !has(v.hostPath))", nil, volumeNames, false},
		{"object.spec.volumes.all(v, v.name != 'x')", nil, volumeNames, true},
		{"object.spec.volumes.all(v, !has(v.hostPath))", nil, volumes, true},
		{"size(object.spec.volumes) < 3", nil, volumes, true},
		{"size(object.spec.volumes) < 3", nil, volumeNames, false},
		{"object.spec.volumes.exists(v, true)", nil, volumes, true},
		// A concatenation of lists is read element by element, as far as what reads them.
		{"variables.all.all(v, !has(v.hostPath))", []NamedExpression{{"all", "object.spec.volumes + object.spec.?ephemeral.orValue([])"}}, volumeNames, false},
		{"variables.all.all(v, v.name != 'x')", []NamedExpression{{"all", "object.spec.volumes + object.spec.?ephemeral.orValue([])"}}, volumeNames, true},
		{"size(object.spec.volumes + [])", nil, volumes, true},
		{"(object.spec.volumes + object.spec.more).map(v, v.image).join(',')", nil, volumeNames, true},
		{"object.spec.volumes.map(v, v.image) + object.spec.more", nil, volumeNames, false},
		{"(object.spec.volumes.map(v, v.image) + object.spec.more).join(',')", nil, volumeNames, false},
		{"object.metadata.name + '-x' == 'y'", nil, objName, true},
		{"object.spec.?tolerations.orValue([]).all(t, t.key != 'x')", nil, tolerations, true},
		{"object.spec.containers.all(c, c.image.startsWith('r/'))", nil, tolerations, false},
		{"variables.vols.all(v, has(v.emptyDir))", []NamedExpression{{"vols", "object.spec.volumes"}}, volumeNames, false},
		{"variables.vols.all(v, v.name == 'a')", []NamedExpression{{"vols", "object.spec.volumes"}}, volumeNames, true},
		{"variables.n > 1", []NamedExpression{{"n", "size(object.spec.volumes)"}}, volumes, true},
		{"object.metadata.name.size() > 3", nil, objName, true},
		{"size(object.metadata.labels) > 3", nil, objName, false},
		{"request.name.startsWith('gen-')", nil, name, true},
		{"request.userInfo.username == 'x'", nil, name, false},
		{"object.metadata.labels['app'] == 'x'", nil, objName, false},
		{"object.metadata[variables.k] == 'x'", []NamedExpression{{"k", "'name'"}}, objName, true},
		{"object.spec.volumes.map(v, v.name).exists(n, n == 'x')", nil, volumeNames, true},
		// filter: the elements that pass its condition, read as far as what reads them: the
		// count of volumes with a secret does not depend on their names, their names do.
		{"object.spec.volumes.filter(v, has(v.secret)).size() == 0", nil, volumeNames, false},
		{"object.spec.volumes.filter(v, has(v.secret)).size() == 0", nil, volumes, true},
		{"object.spec.volumes.filter(v, has(v.secret)).map(v, v.name).join(',')", nil, volumeNames, true},
		{"object.spec.volumes.filter(v, v.name != 'x').size() == 0", nil, volumeNames, true},
		{"object.spec.volumes.filter(v, has(v.secret)).map(v, v.secret.secretName).join(',')", nil, volumeNames, false},
		{"object.metadata.labels.filter(k, k.startsWith('a')).size() == 0", nil, labelKeys, true},
		{"object.spec.volumes.all(i, v, has(v.secret))", nil, volumeNames, false},
		{"params.spec.max > 1", nil, uid, false},
		{"object == null ? 'null' : object.metadata.name", nil, uid, false},
		{"oldObject != null && oldObject.metadata.uid == 'x'", nil, uid, false},
		// A variable that is one object or the other reads of each only what is read of it.
		{"variables.o.metadata.labels['a'] == 'x'", []NamedExpression{{"o", "request.operation == 'DELETE' ? oldObject : object"}}, uid, false},
		{"variables.o.metadata.uid == 'x'", []NamedExpression{{"o", "request.operation == 'DELETE' ? oldObject : object"}}, uid, true},
		{"variables.o.metadata.uid == 'x'", []NamedExpression{{"o", "request.operation == 'DELETE' ? oldObject : object"}}, oldUID, true},
		{"variables.o.metadata.uid == 'x'", []NamedExpression{{"o", "object.metadata.name == 'x' ? object.spec : oldObject"}}, objName, true},
		{"(has(object.spec) ? object.spec : {}).replicas > 1", nil, uid, false},
		{"variables.o == 'x'", []NamedExpression{{"o", "true ? object.metadata.name : 'y'"}}, objName, true},
		// Labels are a map: a macro's variable over them is a key, which reading the keys reads.
		{"object.spec.template.metadata.labels.exists(k, k == 'job-name')", nil, templateLabel, false},
		{"object.spec.template.metadata.labels.exists(k, object.spec.template.metadata.labels[k] == 'x')", nil, templateLabel, true},
		{"object.spec.template.metadata.labels.all(k, v, v != 'x')", nil, templateLabel, true},
		{"object.spec.template.spec.containers.exists(c, c == 'x')", nil, Unknown{Path: FieldPath{Root: "object", Steps: []string{"spec", "template", "spec", "containers", AnyStep, "image"}}, ValueOnly: true}, true},
		// A generated name's base is known, its random suffix not: what the base decides is
		// read of no unknown (startsWith a literal no longer than the base, equality with
		// a literal that does not begin with it, membership in a list of such).
		{"object.spec.volumes.exists(v, v.name.startsWith('kube-api-access-'))", nil, tokenNames, false},
		{"object.spec.volumes.exists(v, v.name.startsWith('kube-'))", nil, tokenNames, false},
		{"object.spec.volumes.exists(v, v.name.startsWith('docker-sock-volume'))", nil, tokenNames, false},
		{"object.spec.volumes.exists(v, v.name.startsWith('kube-api-access-x'))", nil, tokenNames, true},
		{"object.spec.volumes.exists(v, v.name.startsWith('kube-api-access-'))", nil, volumeNames, true},
		{"object.spec.volumes.all(v, v.name != 'docker-sock')", nil, tokenNames, false},
		{"object.spec.volumes.all(v, 'docker-sock' != v.name)", nil, tokenNames, false},
		{"object.spec.volumes.all(v, v.name != 'kube-api-access-abcde')", nil, tokenNames, true},
		{"object.spec.volumes.all(v, !(v.name in ['a', 'b']))", nil, tokenNames, false},
		{"object.spec.volumes.all(v, !(v.name in ['a', 'kube-api-access-zzzzz']))", nil, tokenNames, true},
		{"object.spec.volumes.all(v, !(v.name in variables.names))", []NamedExpression{{"names", "['a']"}}, tokenNames, true},
		{"object.spec.volumes.all(v, v.name.endsWith('x'))", nil, tokenNames, true},
		{"object.spec.volumes.all(v, v.name.startsWith('kube-api-access-') || v.name.contains('x'))", nil, tokenNames, true},
		{"object.spec.volumes.all(v, v.name.startsWith(v.name))", nil, tokenNames, true},
		{"size(object.spec.volumes[0].name) > 3", nil, tokenNames, true},
		{"object.spec.volumes.startsWith('a')", nil, tokenNames, true},
		{"request.name.startsWith('web-')", nil, generated, false},
		{"request.name == 'db'", nil, generated, false},
		{"request.name == 'web-abcde'", nil, generated, true},
		{"request.name.startsWith('web-a')", nil, generated, true},
		{"namespaceObject.metadata.name == 'a'", nil, namespaceName, false},
		{"namespaceObject.metadata.labels['kubernetes.io/metadata.name'] == 'a'", nil, namespaceName, false},
		{"namespaceObject.metadata.labels['team'] == 'a'", nil, namespaceName, true},
		{"namespaceObject.metadata.labels.exists(k, k == 'a')", nil, namespaceName, true},
		{"size(namespaceObject.metadata.labels) == 1", nil, namespaceName, true},
		{"namespaceObject.status.phase == 'Active'", nil, namespaceName, true},
		{"namespaceObject.metadata == null", nil, namespaceName, true},
		// Elsewhere a custom resource's "metadata.labels" may be a list: its elements are read.
		{"object.spec.x.metadata.labels.exists(k, k == 'a')", nil, Unknown{Path: FieldPath{Root: "object", Steps: []string{"spec", "x", "metadata", "labels", "b"}}, ValueOnly: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.expr, func(t *testing.T) {
			reads := ExpressionReads(tt.vars, tt.expr)
			if reads.All != "" {
				t.Fatalf("ExpressionReads(%q) could not analyze: %s", tt.expr, reads.All)
			}
			read, _, got := reads.DependsOn([]Unknown{tt.unknown})
			if got != tt.want {
				t.Errorf("ExpressionReads(%q).DependsOn(%s) = %v (%v), want %v; reads %v", tt.expr, tt.unknown.Path, got, read, tt.want, reads.Reads)
			}
		})
	}
	if diff := cmp.Diff(Reads{Reads: []Read{{Path: FieldPath{Root: "object", Steps: []string{"spec", "replicas"}}}}}, ExpressionReads(nil, "object.spec.replicas")); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}
