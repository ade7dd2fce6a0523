package vap_test

import (
	"errors"
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/cel/vap"
)

// line returns the line of its caller, to expect positions in this file.
func line() int {
	_, _, l, _ := runtime.Caller(1)
	return l
}

func TestTypoPointsAtGoLine(t *testing.T) {
	t.Parallel()
	want := line() + 5
	_, err := vap.NewPolicy("kosmos-node-not-ready",
		vap.Resources(vap.Delete, "pods"),
		vap.NodeParams(vap.HasLabel("kosmos.io/node"), admissionregistrationv1.AllowAction),
		vap.UserIn("system:serviceaccount:kube-system:node-controller"),
		vap.Validation(`params.metadata.name != oldObject.spec.nodeNmae`),
	)
	var verr *vap.Error
	if !errors.As(err, &verr) {
		t.Fatalf("NewPolicy with a typo = %v, want a *vap.Error", err)
	}
	// CEL places an undefined field at the dot before it; the column is that of the dot inside
	// the raw string literal above, which starts after two tabs and "vap.Validation(`".
	wantHead := fmt.Sprintf("cel/vap/vap_test.go:%d:%d: spec.validations[0].expression: undefined field 'nodeNmae'",
		want, 2+len("vap.Validation(`")+len("params.metadata.name != oldObject.spec")+1)
	wantCaret := "\n | params.metadata.name != oldObject.spec.nodeNmae\n" +
		" | ......................................^"
	got := err.Error()
	if !strings.HasPrefix(got, wantHead) || !strings.HasSuffix(got, wantCaret) {
		t.Errorf("NewPolicy error =\n%s\nwant\n%s (checked as v1/Pod)%s", got, wantHead, wantCaret)
	}
}

func TestErrorsPointAtTheirOption(t *testing.T) {
	t.Parallel()
	var lines [3]int
	_, err := vap.NewPolicy("many-mistakes",
		vap.Resources(vap.Update, "nodes"),
		vap.Variable("cordoning", "object.spec.unschedulabel == true"), func() vap.PolicyOption { lines[0] = line(); return nil }(),
		vap.Validation("variables.cordoning",
			vap.MessageExpression("'cordon of ' + object.metadata.nmae")), func() vap.PolicyOption { lines[1] = line(); return nil }(),
		vap.UserIn(), func() vap.PolicyOption { lines[2] = line(); return nil }(),
	)
	var verr *vap.Error
	if !errors.As(err, &verr) {
		t.Fatalf("NewPolicy = %v, want a *vap.Error", err)
	}
	got := map[string]int{}
	for _, d := range verr.Diagnostics {
		if d.Severity == cel.Error {
			got[d.Field] = d.Pos.Line
		}
	}
	want := map[string]int{
		"spec.variables[0].expression":          lines[0],
		"spec.validations[0].messageExpression": lines[1],
		"spec.matchConditions[0]":               lines[2],
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("error lines by field mismatch (-want +got):\n%s\nerrors:\n%v", diff, err)
	}
}

func TestExpressionColumns(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		build func() (int, error) // returns the line of the vap.Validation call
		want  string              // LINE:COL, the line relative to the Validation call
	}{
		{
			name: "interpreted string with escapes",
			build: func() (int, error) {
				l := line() + 2
				_, err := vap.NewPolicy("quoted", vap.Resources(vap.Create, "pods"),
					vap.Validation("object.metadata.name != \"x\" && object.spec.nodeNmae == ''"))
				return l, err
			},
			want: fmt.Sprintf("0:%d", 5+len(`vap.Validation("object.metadata.name != \"x\" && object.spec`)+1),
		},
		{
			name: "second line of a raw string",
			build: func() (int, error) {
				l := line() + 2
				_, err := vap.NewPolicy("multiline", vap.Resources(vap.Create, "pods"),
					vap.Validation(`object.metadata.name != 'x' &&
  object.spec.nodeNmae == ''`))
				return l, err
			},
			want: fmt.Sprintf("1:%d", len("  object.spec")+1),
		},
		{
			name: "built expression: line only",
			build: func() (int, error) {
				l := line() + 2
				_, err := vap.NewPolicy("built", vap.Resources(vap.Create, "pods"),
					vap.Validation("object.spec.nodeNmae in "+vap.StringList("a", "b")))
				return l, err
			},
			want: "0",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			at, err := tc.build()
			var verr *vap.Error
			if !errors.As(err, &verr) || len(verr.Diagnostics) == 0 {
				t.Fatalf("NewPolicy = %v, want a *vap.Error", err)
			}
			d := verr.Diagnostics[0]
			if d.Pos.File != "cel/vap/vap_test.go" {
				t.Errorf("error in %s, want cel/vap/vap_test.go", d.Pos.File)
			}
			got := fmt.Sprint(d.Pos.Line - at)
			if d.Pos.Col > 0 {
				got += fmt.Sprintf(":%d", d.Pos.Col)
			}
			if got != tc.want {
				t.Errorf("position of\n%s\n= %s, want %s", d.String(), got, tc.want)
			}
		})
	}
}

func TestStages(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []admissionregistrationv1.ValidationAction
		err  bool
	}{
		{"Audit", []admissionregistrationv1.ValidationAction{"Audit"}, false},
		{"Warn", []admissionregistrationv1.ValidationAction{"Warn", "Audit"}, false},
		{"Deny", []admissionregistrationv1.ValidationAction{"Deny", "Audit"}, false},
		{"deny", nil, true},
		{"", nil, true},
	}
	for _, tc := range tests {
		s, err := vap.ParseStage(tc.in)
		if (err != nil) != tc.err {
			t.Errorf("ParseStage(%q) error = %v, want error %v", tc.in, err, tc.err)
			continue
		}
		if diff := cmp.Diff(tc.want, s.ValidationActions()); diff != "" {
			t.Errorf("ParseStage(%q).ValidationActions() mismatch (-want +got):\n%s", tc.in, diff)
		}
	}
}

func TestQuote(t *testing.T) {
	t.Parallel()
	tests := []struct{ in, want string }{
		{"system:serviceaccount:kube-system:draino", `'system:serviceaccount:kube-system:draino'`},
		{`it's`, `'it\'s'`},
		{`a\b`, `'a\\b'`},
		{"a\nb\x01", `'a\nb\x01'`},
	}
	for _, tc := range tests {
		if got := vap.Quote(tc.in); got != tc.want {
			t.Errorf("Quote(%q) = %s, want %s", tc.in, got, tc.want)
		}
	}
	if got, want := vap.StringList("a", "b'c"), `['a', 'b\'c']`; got != want {
		t.Errorf("StringList = %s, want %s", got, want)
	}
}

func TestBindingParamRefAndName(t *testing.T) {
	t.Parallel()
	p, err := vap.NewPolicy("floor",
		vap.Resources(vap.Create, "pods"),
		vap.ConfigMapParam("kube-system", "floor", admissionregistrationv1.AllowAction),
		vap.Validation("has(params.data)"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := vap.NewBinding(p, vap.BindingName("floor-team-a"),
		vap.BindingMatch(&admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}}))
	if err != nil {
		t.Fatal(err)
	}
	got := b.Object(vap.StageWarn)
	deny := admissionregistrationv1.AllowAction
	want := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: "admissionregistration.k8s.io/v1", Kind: "ValidatingAdmissionPolicyBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: "floor-team-a"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        "floor",
			ParamRef:          &admissionregistrationv1.ParamRef{Name: "floor", Namespace: "kube-system", ParameterNotFoundAction: &deny},
			MatchResources:    &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}},
			ValidationActions: []admissionregistrationv1.ValidationAction{"Warn", "Audit"},
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Object(StageWarn) mismatch (-want +got):\n%s", diff)
	}
}
