package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
	"strings"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify"
)

// version is vapc's version: make dist sets it with -ldflags "-X main.version=...", go install
// module@version from the module's; otherwise it is (devel).
var version = ""

func init() {
	register("version", verb{summary: "print the versions of vapc, of Kubernetes and of the libraries it is built with", run: runVersion,
		flags: func() *flagSet { return new(versionFlags).flagSet(io.Discard, io.Discard) }})
}

type versionFlags struct{ output string }

// flagSet defines the flags of vapc version into f.
func (f *versionFlags) flagSet(stdout, stderr io.Writer) *flagSet {
	fs := newFlagSet("version", stdout, stderr, help{
		usage: "vapc version [--output text|json]",
		about: `Prints what a bug report needs: vapc's version and commit, the Kubernetes versions it checks
and decides as, and the versions of the Kubernetes and CEL libraries it is built with.`,
		outcomes: []outcome{{exitOK, "the versions were printed"}},
		examples: []example{
			{"for a bug report", "vapc version"},
			{"for a script", "vapc version --output json"},
		},
	})
	outputFlag(fs, &f.output, versionOutputs)
	fs.args = ""
	return fs
}

// Versions is what vapc version prints.
type Versions struct {
	Vapc   string `json:"vapc"`
	Commit string `json:"commit,omitempty"`
	Go     string `json:"go"`
	// Platform is GOOS/GOARCH.
	Platform string `json:"platform"`
	// Kubernetes is the minor vapc checks against by default, decides and replays as;
	// KubernetesCheck are the minors vapc check accepts.
	Kubernetes      string   `json:"kubernetes"`
	KubernetesCheck []string `json:"kubernetesCheck"`
	// Libraries are the versions of the modules whose code decides: the Kubernetes libraries
	// and cel-go.
	Libraries map[string]string `json:"libraries"`
}

// libraries are the modules vapc version names.
var libraries = []string{
	"k8s.io/apiserver", "k8s.io/api", "k8s.io/apimachinery", "k8s.io/apiextensions-apiserver",
	"k8s.io/client-go", "k8s.io/component-base", "github.com/google/cel-go",
}

func buildVersions() Versions {
	v := Versions{
		Vapc: version, Go: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH,
		Kubernetes: verify.KubernetesVersion, KubernetesCheck: cel.SupportedVersions(),
		Libraries: map[string]string{},
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v.Vapc == "" && bi.Main.Version != "" {
			v.Vapc = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				v.Commit = s.Value
			case "vcs.modified":
				if s.Value == "true" && v.Commit != "" {
					v.Commit += " (modified)"
				}
			}
		}
		for _, d := range bi.Deps {
			if d.Replace != nil {
				d = d.Replace
			}
			for _, l := range libraries {
				if d.Path == l {
					v.Libraries[l] = d.Version
				}
			}
		}
	}
	if v.Vapc == "" {
		v.Vapc = "(devel)"
	}
	return v
}

func runVersion(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var f versionFlags
	fs := f.flagSet(stdout, stderr)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return usagef("version: unexpected arguments %q", rest)
	}
	v := buildVersions()
	if err := versionOutputs.check(f.output); err != nil {
		return err
	}
	if f.output == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	commit := ""
	if v.Commit != "" {
		commit = ", commit " + v.Commit
	}
	fmt.Fprintf(stdout, "vapc %s (%s %s%s)\n", v.Vapc, v.Go, v.Platform, commit)
	fmt.Fprintf(stdout, "Kubernetes %s: decides and replays as kube-apiserver %s; checks %s\n", v.Kubernetes, v.Kubernetes, strings.Join(v.KubernetesCheck, ", "))
	for _, l := range libraries {
		if lv, ok := v.Libraries[l]; ok {
			fmt.Fprintf(stdout, "%s %s\n", l, lv)
		}
	}
	return nil
}
