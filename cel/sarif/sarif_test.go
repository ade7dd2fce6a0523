package sarif

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/cel/manifest"
)

// schemaFile is the published SARIF 2.1.0 schema (rtm.5, as SchemaStore serves it for
// https://json.schemastore.org/sarif-2.1.0.json), as the npm package @microsoft/jest-sarif
// 1.0.0-beta.0 (MIT) ships it: hack/sarif-schema.sh fetches it again.
const schemaFile = "testdata/sarif-2.1.0-rtm.5.json"

func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	f, err := os.Open(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	doc, err := jsonschema.UnmarshalJSON(f)
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(Schema, doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile(Schema)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func validate(t *testing.T, s *jsonschema.Schema, data []byte) error {
	t.Helper()
	inst, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	return s.Validate(inst)
}

// TestSchema: the SARIF log of vapc check's whole corpus (every category and severity, files
// with and without positions, stdin) is valid under the published SARIF 2.1.0 schema; each
// result points at its rule, and at the file, line and column of its diagnostic.
func TestSchema(t *testing.T) {
	s := compileSchema(t)
	files, err := filepath.Glob("../../testdata/check/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no corpus: %v", err)
	}
	checker, err := cel.NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	set, diags := cel.ReadPaths(strings.NewReader("kind: X\n"), append(files, "-")...)
	diags = append(diags, checker.Check(set)...)
	diags = append(diags, cel.Diagnostic{Pos: manifest.Position{File: "dir with space/x.yaml"}, Severity: cel.Error, Category: cel.CategoryInput, Message: "no line"})
	diags.Sort()
	var out bytes.Buffer
	if err := Write(&out, Tool{Name: "vapc", Version: "v0.0.0-test", InformationURI: "https://github.com/vapc-dev/vapc"}, diags); err != nil {
		t.Fatal(err)
	}
	if err := validate(t, s, out.Bytes()); err != nil {
		t.Fatalf("the SARIF log is not valid under the SARIF 2.1.0 schema: %v", err)
	}

	var log Log
	if err := json.Unmarshal(out.Bytes(), &log); err != nil {
		t.Fatal(err)
	}
	run := log.Runs[0]
	if len(run.Results) != len(diags) {
		t.Fatalf("%d results for %d diagnostics", len(run.Results), len(diags))
	}
	cats := map[cel.Category]bool{}
	for i, d := range diags {
		cats[d.Category] = true
		r := run.Results[i]
		rule := run.Tool.Driver.Rules[r.RuleIndex]
		if rule.ID != r.RuleID || rule.Help.Text == "" || !strings.Contains(strings.Join(rule.Properties.Tags, " "), string(d.Category)) {
			t.Errorf("result %d: rule %+v for category %s", i, rule, d.Category)
		}
		if r.Level != level(d.Severity) || !strings.Contains(r.Message.Text, d.Message) {
			t.Errorf("result %d = %+v, want level %s and the message %q", i, r, d.Severity, d.Message)
		}
		loc := r.Locations[0].PhysicalLocation
		if d.Pos.Line > 0 && (loc.Region == nil || loc.Region.StartLine != d.Pos.Line || loc.Region.StartColumn != d.Pos.Col) {
			t.Errorf("result %d: region %+v, want %s", i, loc.Region, d.Pos)
		}
	}
	for _, c := range []cel.Category{cel.CategoryInput, cel.CategoryCreate, cel.CategoryType, cel.CategoryCoverage, cel.CategoryLint} {
		if !cats[c] {
			t.Errorf("the corpus has no diagnostic of category %s: the test does not cover its rule", c)
		}
	}
	if got := uri("dir with space/x.yaml"); got != "dir%20with%20space/x.yaml" {
		t.Errorf("uri = %q", got)
	}
}

// TestSchemaRefuses: the schema check is not vacuous: a region at line 0 and an unknown
// level are refused.
func TestSchemaRefuses(t *testing.T) {
	s := compileSchema(t)
	for _, bad := range []string{
		`{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"vapc"}},"results":[{"message":{"text":"m"},"locations":[{"physicalLocation":{"artifactLocation":{"uri":"a.yaml"},"region":{"startLine":0}}}]}]}]}`,
		`{"version":"2.1.0","runs":[{"tool":{"driver":{"name":"vapc"}},"results":[{"message":{"text":"m"},"level":"fatal"}]}]}`,
		`{"version":"2.0.0","runs":[]}`,
	} {
		if err := validate(t, s, []byte(bad)); err == nil {
			t.Errorf("the schema accepts %s", bad)
		}
	}
}
