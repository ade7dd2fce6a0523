package policies

import (
	"errors"
	"fmt"
	"os"
	"reflect"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/vapc-dev/vapc/cel/manifest"
	"github.com/vapc-dev/vapc/cel/vap"
)

// The apiVersion and kind of a settings file.
const (
	SettingsAPIVersion = "vapc.dev/v1alpha1"
	SettingsKind       = "Settings"
)

// DefaultSettingsFile is where `vapc emit` reads the settings by default. It is in a folder of
// its own so that `kubectl apply -f policies/`, which does not descend into folders, applies the
// emitted policies and not the settings, a kind the apiserver does not serve.
const DefaultSettingsFile = "policies/settings/settings.yaml"

// Settings adapts the in-tree guards to a cluster. Fields a settings file leaves out keep their
// defaults (DefaultSettings); a list given in the file replaces the default list.
type Settings struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Stage is the rollout stage of every guard's bindings (Audit, Warn or Deny), unless the
	// guard's own stage says otherwise. Default Audit.
	Stage vap.Stage `json:"stage,omitempty"`
	// KosmosNodeNotReady configures kosmos-node-not-ready.
	KosmosNodeNotReady KosmosSettings `json:"kosmosNodeNotReady"`
	// DrainerCordonGuard configures drainer-cordon-guard.
	DrainerCordonGuard DrainerSettings `json:"drainerCordonGuard"`
	// EvictionTolerationFloor configures eviction-toleration-floor.
	EvictionTolerationFloor TolerationSettings `json:"evictionTolerationFloor"`
}

// KosmosSettings configures the kosmos-node-not-ready guard.
type KosmosSettings struct {
	// Stage overrides Settings.Stage for this guard.
	Stage vap.Stage `json:"stage,omitempty"`
	// NodeLabel is the label key of Kosmos leaf nodes (any value). Default kosmos.io/node.
	NodeLabel string `json:"nodeLabel"`
	// EvictingUsers are the users whose pod deletions are guarded: the node lifecycle and taint
	// eviction controllers' identity. Default system:serviceaccount:kube-system:node-controller
	// and system:kube-controller-manager (controllers sharing one credential).
	EvictingUsers []string `json:"evictingUsers"`
}

// DrainerSettings configures the drainer-cordon-guard guard.
type DrainerSettings struct {
	// Stage overrides Settings.Stage for this guard.
	Stage vap.Stage `json:"stage,omitempty"`
	// DrainerUsers are the automated drainers. Default
	// system:serviceaccount:kube-system:draino.
	DrainerUsers []string `json:"drainerUsers"`
	// ProblemConditions are the node condition types that justify a cordon when True. Default
	// the node-problem-detector's KernelDeadlock, ReadonlyFilesystem and CorruptDockerOverlay2.
	ProblemConditions []string `json:"problemConditions"`
}

// TolerationSettings configures the eviction-toleration-floor guard.
type TolerationSettings struct {
	// Stage overrides Settings.Stage for this guard.
	Stage vap.Stage `json:"stage,omitempty"`
	// ConfigMapNamespace and ConfigMapName name the ConfigMap whose data.minTolerationSeconds
	// sets the floor in the cluster. Default kube-system/eviction-toleration-floor.
	ConfigMapNamespace string `json:"configMapNamespace"`
	ConfigMapName      string `json:"configMapName"`
	// DefaultMinTolerationSeconds is the floor when the ConfigMap has no valid
	// minTolerationSeconds. Default 60.
	DefaultMinTolerationSeconds int64 `json:"defaultMinTolerationSeconds"`
	// Mode is what the guard does with a pod below the floor: validate (the default) refuses
	// it with a ValidatingAdmissionPolicy; mutate raises its tolerationSeconds to the floor
	// with a MutatingAdmissionPolicy (which has no rollout stage: it changes pods as soon as
	// it is applied).
	Mode TolerationMode `json:"mode,omitempty"`
}

// TolerationMode is how the eviction-toleration-floor guard enforces the floor.
type TolerationMode string

// The modes of the eviction-toleration-floor guard.
const (
	TolerationValidate TolerationMode = "validate"
	TolerationMutate   TolerationMode = "mutate"
)

// DefaultSettings returns the settings the guards have when a settings file says nothing.
func DefaultSettings() *Settings {
	return &Settings{
		APIVersion: SettingsAPIVersion,
		Kind:       SettingsKind,
		Stage:      vap.StageAudit,
		KosmosNodeNotReady: KosmosSettings{
			NodeLabel: "kosmos.io/node",
			EvictingUsers: []string{
				"system:serviceaccount:kube-system:node-controller",
				"system:kube-controller-manager",
			},
		},
		DrainerCordonGuard: DrainerSettings{
			DrainerUsers:      []string{"system:serviceaccount:kube-system:draino"},
			ProblemConditions: []string{"KernelDeadlock", "ReadonlyFilesystem", "CorruptDockerOverlay2"},
		},
		EvictionTolerationFloor: TolerationSettings{
			ConfigMapNamespace:          "kube-system",
			ConfigMapName:               "eviction-toleration-floor",
			DefaultMinTolerationSeconds: 60,
			Mode:                        TolerationValidate,
		},
	}
}

// LoadSettings reads a settings file. Errors point at the file and line.
func LoadSettings(path string) (*Settings, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading settings: %w", err)
	}
	return ParseSettings(path, data)
}

// ParseSettings parses the settings file named file with content data, strictly: unknown fields,
// a wrong apiVersion or kind and invalid values are errors, every one reported at its line.
func ParseSettings(file string, data []byte) (*Settings, error) {
	docs, err := manifest.Parse(file, data)
	if err != nil {
		return nil, err
	}
	if len(docs) != 1 {
		return nil, &manifest.Error{Pos: docs[1].Pos(), Msg: "a settings file holds one document"}
	}
	d := docs[0]
	if gvk := d.GroupVersionKind(); gvk.GroupVersion().String() != SettingsAPIVersion || gvk.Kind != SettingsKind {
		return nil, d.Errorf("kind", "want apiVersion %s, kind %s, not %s %s", SettingsAPIVersion, SettingsKind, gvk.GroupVersion(), gvk.Kind)
	}
	s := DefaultSettings()
	if err := d.Decode(s); err != nil {
		return nil, err
	}
	if err := s.validate(d); err != nil {
		return nil, err
	}
	return s, nil
}

// Validate checks settings built in Go, without positions.
func (s *Settings) Validate() error { return s.validate(nil) }

// validate checks every value; with a document, errors point at its fields.
func (s *Settings) validate(d *manifest.Document) error {
	var errs []error
	errorf := func(path, format string, args ...any) {
		if d != nil {
			errs = append(errs, d.Errorf(path, format, args...))
		} else {
			errs = append(errs, fmt.Errorf("%s: %s", path, fmt.Sprintf(format, args...)))
		}
	}
	stage := func(path string, st vap.Stage, optional bool) {
		if st == "" && optional {
			return
		}
		if _, err := vap.ParseStage(string(st)); err != nil {
			errorf(path, "%v", err)
		}
	}
	names := func(path string, values []string, what string) {
		if len(values) == 0 {
			errorf(path, "no %s: the guard would never apply", what)
		}
		for i, v := range values {
			if strings.TrimSpace(v) == "" {
				errorf(fmt.Sprintf("%s[%d]", path, i), "empty %s", what)
			}
		}
	}
	stage("stage", s.Stage, false)

	k := s.KosmosNodeNotReady
	stage("kosmosNodeNotReady.stage", k.Stage, true)
	for _, msg := range validation.IsQualifiedName(k.NodeLabel) {
		errorf("kosmosNodeNotReady.nodeLabel", "invalid label key %q: %s", k.NodeLabel, msg)
	}
	names("kosmosNodeNotReady.evictingUsers", k.EvictingUsers, "user")

	dr := s.DrainerCordonGuard
	stage("drainerCordonGuard.stage", dr.Stage, true)
	names("drainerCordonGuard.drainerUsers", dr.DrainerUsers, "user")
	names("drainerCordonGuard.problemConditions", dr.ProblemConditions, "condition type")

	t := s.EvictionTolerationFloor
	stage("evictionTolerationFloor.stage", t.Stage, true)
	for _, msg := range validation.IsDNS1123Label(t.ConfigMapNamespace) {
		errorf("evictionTolerationFloor.configMapNamespace", "invalid namespace %q: %s", t.ConfigMapNamespace, msg)
	}
	for _, msg := range validation.IsDNS1123Subdomain(t.ConfigMapName) {
		errorf("evictionTolerationFloor.configMapName", "invalid ConfigMap name %q: %s", t.ConfigMapName, msg)
	}
	switch t.Mode {
	case "", TolerationValidate, TolerationMutate:
	default:
		errorf("evictionTolerationFloor.mode", "mode must be %s or %s, not %q", TolerationValidate, TolerationMutate, t.Mode)
	}
	if t.DefaultMinTolerationSeconds < 0 || t.DefaultMinTolerationSeconds > maxFloor {
		errorf("evictionTolerationFloor.defaultMinTolerationSeconds", "%d is out of range: want 0 to %d seconds", t.DefaultMinTolerationSeconds, maxFloor)
	}
	return errors.Join(errs...)
}

// maxFloor bounds the toleration floor: the ConfigMap value is read with at most 9 digits.
const maxFloor = 999999999

// stageOf returns the guard's stage, or the settings' when the guard has none.
func (s *Settings) stageOf(guard vap.Stage) vap.Stage {
	if guard != "" {
		return guard
	}
	return s.Stage
}

// SetStage puts every guard at the stage: it sets Settings.Stage and clears the stage of each
// guard's own settings. It finds those by the settings type (every struct field of Settings
// with a Stage), so that a new guard's settings need nothing here.
func (s *Settings) SetStage(stage vap.Stage) {
	s.Stage = stage
	v := reflect.ValueOf(s).Elem()
	for i := range v.NumField() {
		if f := v.Field(i); f.Kind() == reflect.Struct {
			if st := f.FieldByName("Stage"); st.IsValid() && st.Type() == reflect.TypeFor[vap.Stage]() && st.CanSet() {
				st.SetString("")
			}
		}
	}
}
