package policies_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/vapc-dev/vapc/cel/vap"
	"github.com/vapc-dev/vapc/policies"
)

// The documented settings file shows the defaults: emitting with it or without it is the same.
func TestSettingsFileHoldsTheDefaults(t *testing.T) {
	t.Parallel()
	got, err := policies.LoadSettings(filepath.Join("settings", "settings.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(policies.DefaultSettings(), got); diff != "" {
		t.Errorf("settings.yaml differs from DefaultSettings (-default +file):\n%s", diff)
	}
}

func TestParseSettings(t *testing.T) {
	t.Parallel()
	const head = "apiVersion: vapc.dev/v1alpha1\nkind: Settings\n"
	tests := []struct {
		name   string
		yaml   string
		modify func(*policies.Settings) // applied to the defaults to get the expected settings
	}{
		{"empty", head, func(*policies.Settings) {}},
		{"stage", head + "stage: Deny\n", func(s *policies.Settings) { s.Stage = vap.StageDeny }},
		{"a guard's stage", head + "drainerCordonGuard:\n  stage: Warn\n", func(s *policies.Settings) { s.DrainerCordonGuard.Stage = vap.StageWarn }},
		{"a list replaces the default", head + "kosmosNodeNotReady:\n  evictingUsers: [system:serviceaccount:kube-system:node-controller]\n", func(s *policies.Settings) {
			s.KosmosNodeNotReady.EvictingUsers = []string{"system:serviceaccount:kube-system:node-controller"}
		}},
		{"other fields of a section keep their defaults", head + "evictionTolerationFloor:\n  defaultMinTolerationSeconds: 120\n", func(s *policies.Settings) {
			s.EvictionTolerationFloor.DefaultMinTolerationSeconds = 120
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := policies.ParseSettings("settings.yaml", []byte(tc.yaml))
			if err != nil {
				t.Fatalf("ParseSettings() error: %v", err)
			}
			want := policies.DefaultSettings()
			tc.modify(want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("ParseSettings() mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestParseSettingsErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		yaml string
		want []string // lines of the error
	}{
		{
			name: "unknown field",
			yaml: "apiVersion: vapc.dev/v1alpha1\nkind: Settings\nkosmosNodeNotReady:\n  nodeLable: x\n",
			want: []string{`settings.yaml:4:3: unknown field "kosmosNodeNotReady.nodeLable"`},
		},
		{
			name: "wrong kind",
			yaml: "apiVersion: vapc.dev/v1alpha1\nkind: TestSuite\n",
			want: []string{"settings.yaml:2:7: kind: want apiVersion vapc.dev/v1alpha1, kind Settings, not vapc.dev/v1alpha1 TestSuite"},
		},
		{
			name: "every invalid value, each at its line",
			yaml: `apiVersion: vapc.dev/v1alpha1
kind: Settings
stage: Enforce
kosmosNodeNotReady:
  nodeLabel: "kosmos.io/node!"
  evictingUsers: []
drainerCordonGuard:
  stage: deny
  problemConditions: [KernelDeadlock, ""]
evictionTolerationFloor:
  configMapNamespace: Kube_System
  defaultMinTolerationSeconds: -1
`,
			want: []string{
				`settings.yaml:3:8: stage: unknown stage "Enforce": want Audit, Warn or Deny`,
				`settings.yaml:5:14: kosmosNodeNotReady.nodeLabel: invalid label key "kosmos.io/node!": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`,
				`settings.yaml:6:18: kosmosNodeNotReady.evictingUsers: no user: the guard would never apply`,
				`settings.yaml:8:10: drainerCordonGuard.stage: unknown stage "deny": want Audit, Warn or Deny`,
				`settings.yaml:9:39: drainerCordonGuard.problemConditions[1]: empty condition type`,
				`settings.yaml:11:23: evictionTolerationFloor.configMapNamespace: invalid namespace "Kube_System": a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')`,
				`settings.yaml:12:32: evictionTolerationFloor.defaultMinTolerationSeconds: -1 is out of range: want 0 to 999999999 seconds`,
			},
		},
		{
			name: "two documents",
			yaml: "apiVersion: vapc.dev/v1alpha1\nkind: Settings\n---\napiVersion: vapc.dev/v1alpha1\nkind: Settings\n",
			want: []string{"settings.yaml:4:1: a settings file holds one document"},
		},
		{
			name: "not YAML",
			yaml: "apiVersion: vapc.dev/v1alpha1\nkind: Settings\nstage: [\n",
			want: []string{"settings.yaml:3:1: invalid YAML: did not find expected node content: a value is missing or a bracket is not closed: complete it"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := policies.ParseSettings("settings.yaml", []byte(tc.yaml))
			if err == nil {
				t.Fatal("ParseSettings() = nil error, want errors")
			}
			if diff := cmp.Diff(tc.want, strings.Split(err.Error(), "\n")); diff != "" {
				t.Errorf("ParseSettings() error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

// FuzzParseSettings: any input is either settings or errors, never a panic, and parsed settings
// are valid.
func FuzzParseSettings(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join("settings", "settings.yaml")); err == nil {
		f.Add(data)
	}
	f.Add([]byte("apiVersion: vapc.dev/v1alpha1\nkind: Settings\nstage: Deny\n"))
	f.Add([]byte("apiVersion: vapc.dev/v1alpha1\nkind: Settings\nkosmosNodeNotReady: {evictingUsers: [\"\"]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := policies.ParseSettings("fuzz.yaml", data)
		if err != nil {
			return
		}
		if err := s.Validate(); err != nil {
			t.Errorf("ParseSettings accepted settings that do not validate: %v", err)
		}
	})
}
