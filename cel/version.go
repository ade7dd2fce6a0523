package cel

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"
)

// DefaultKubernetesVersion is the Kubernetes minor vapc checks against unless told otherwise: the
// minor of the k8s.io libraries it is built with.
const DefaultKubernetesVersion = "1.37"

// Oldest and newest minors the pinned libraries can express. ValidatingAdmissionPolicy v1 is
// served from 1.30; the CEL environment of the pinned apiserver library knows no minor after
// 1.37.
var (
	minVersion = version.MajorMinor(1, 30)
	maxVersion = version.MajorMinor(1, 37)
)

// SupportedVersions are the Kubernetes minors ParseVersion accepts, oldest first.
func SupportedVersions() []string {
	var out []string
	for m := minVersion.Minor(); m <= maxVersion.Minor(); m++ {
		out = append(out, fmt.Sprintf("%d.%d", minVersion.Major(), m))
	}
	return out
}

// Version is a Kubernetes minor as the apiserver uses it for CEL.
type Version struct {
	// Binary is the kube-apiserver minor, e.g. 1.37.
	Binary *version.Version
	// Compatibility is the version whose CEL environment the server uses to validate
	// expressions when a policy is created or changed: one minor behind the binary, so that a
	// policy written for the new server still works after a rollback.
	Compatibility *version.Version
}

// String returns the binary minor, e.g. "1.37".
func (v Version) String() string {
	return fmt.Sprintf("%d.%d", v.Binary.Major(), v.Binary.Minor())
}

// ParseVersion parses a Kubernetes minor such as "1.37", "v1.37" or "1.37.2" and refuses the
// versions the pinned libraries cannot express.
func ParseVersion(s string) (Version, error) {
	v, err := version.ParseGeneric(strings.TrimPrefix(strings.TrimSpace(s), "v"))
	if err != nil {
		v, err = version.ParseMajorMinor(strings.TrimPrefix(strings.TrimSpace(s), "v"))
	}
	if err != nil {
		return Version{}, fmt.Errorf("invalid Kubernetes version %q: want MAJOR.MINOR such as %s", s, DefaultKubernetesVersion)
	}
	mm := version.MajorMinor(v.Major(), v.Minor())
	if mm.LessThan(minVersion) || mm.GreaterThan(maxVersion) {
		return Version{}, fmt.Errorf("unsupported Kubernetes version %s: vapc is built with the k8s.io %s libraries and can check %s through %s (ValidatingAdmissionPolicy v1 is GA since 1.30)",
			s, maxVersion, minVersion, maxVersion)
	}
	return Version{
		Binary:        mm,
		Compatibility: version.MajorMinor(mm.Major(), mm.Minor()-1),
	}, nil
}

// MustParseVersion is ParseVersion for constants known to be valid.
func MustParseVersion(s string) Version {
	v, err := ParseVersion(s)
	if err != nil {
		panic(err)
	}
	return v
}
