package vap_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/vapc-dev/vapc/cel/vap"
)

var _ = vap.Register(func() (*vap.Policy, []*vap.Binding, error) {
	p, err := vap.NewPolicy("registered-for-test",
		vap.Resources(vap.Create, "configmaps"),
		vap.Validation("object.metadata.name != 'forbidden'"))
	if err != nil {
		return nil, nil, err
	}
	b, err := vap.NewBinding(p)
	return p, []*vap.Binding{b}, err
})

// TestEmitRegistered: the program vapc emit --package builds emits every registered policy at
// the stage it is given, as JSON.
func TestEmitRegistered(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if code := vap.EmitRegistered([]string{"--stage", "Warn"}, &stdout, &stderr); code != 0 {
		t.Fatalf("EmitRegistered = %d\n%s", code, stderr.String())
	}
	var files []vap.EmittedFile
	if err := json.Unmarshal(stdout.Bytes(), &files); err != nil {
		t.Fatal(err)
	}
	if len(files) != 1 || files[0].Name != "registered-for-test.yaml" || !strings.Contains(string(files[0].Data), "validationActions: [Warn, Audit]") {
		t.Errorf("EmitRegistered wrote %+v", files)
	}
	if code := vap.EmitRegistered([]string{"--stage", "Loud"}, &stdout, &stderr); code != 2 {
		t.Errorf("EmitRegistered --stage Loud = %d, want 2", code)
	}
}
