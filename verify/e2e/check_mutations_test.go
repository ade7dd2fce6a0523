package e2e

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/cel/manifest"
	"github.com/vapc-dev/vapc/verify/e2e/harness"
)

var (
	mutationSeed  = flag.Uint64("mutation-seed", 0, "seed of TestCheckParityMutations (default $VAPC_MUTATION_SEED, else 1)")
	mutationCount = flag.Int("mutations", 0, "mutants TestCheckParityMutations sends (default $VAPC_MUTATIONS, else 400)")
)

// mutationSeeds are the globs of the valid policies and bindings TestCheckParityMutations
// mutates.
var mutationSeeds = []string{"../../testdata/check/valid-*.yaml", "../../policies/*.yaml"}

func mutationSettings() (seed uint64, n int) {
	seed, n = 1, 400
	if v, err := strconv.ParseUint(os.Getenv("VAPC_MUTATION_SEED"), 10, 64); err == nil {
		seed = v
	}
	if v, err := strconv.Atoi(os.Getenv("VAPC_MUTATIONS")); err == nil {
		n = v
	}
	if *mutationSeed != 0 {
		seed = *mutationSeed
	}
	if *mutationCount != 0 {
		n = *mutationCount
	}
	return seed, n
}

// TestCheckParityMutations takes the valid policies and bindings of the check corpus and of
// policies/, applies to each copy one to three random mutations from a seed (-mutation-seed
// or $VAPC_MUTATION_SEED; -mutations sets how many mutants): invalid and borderline names,
// keys, enum values, label selectors, resource rules, paramKinds and paramRefs, CEL
// expressions that do not compile, have the wrong type or exceed the size limits,
// duplicates, missing fields, too many items, metadata the server processes before
// validating (owner references, managedFields, generateName, namespace, status), values of
// the wrong type, misspelt keys and YAML scalars that are not the strings they look like. Every mutant is created on a real
// kube-apiserver with a server-side dry run and checked with vapc check, and, as in
// TestCheckParity, both must accept or refuse it alike and, when they refuse it, name the
// same fields with the same messages.
func TestCheckParityMutations(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd; skipped with -short")
	}
	seed, n := mutationSettings()
	t.Logf("seed %d, %d mutants (reproduce with VAPC_MUTATION_SEED=%d VAPC_MUTATIONS=%d)", seed, n, seed, n)
	seeds := loadMutationSeeds(t)
	r := rand.New(rand.NewPCG(seed, 0x6d75746174696f6e))

	checker, err := cel.NewChecker()
	if err != nil {
		t.Fatal(err)
	}
	s := harness.Start(t)
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()

	start := time.Now()
	var accepted, refused, differ int
	for i := range n {
		m := newMutant(r, seeds)
		data, err := yaml.Marshal(m.obj)
		if err != nil {
			t.Fatalf("mutant %d (%s): %v", i, m, err)
		}
		data = withRawYAML(data)
		name := fmt.Sprintf("%03d-%s", i, subtestName(m.String()))
		ok := t.Run(name, func(t *testing.T) {
			docs, err := manifest.Parse(name+".yaml", data)
			if err != nil || len(docs) != 1 {
				// vapc cannot read the mutant: the server must refuse it.
				if serr := createDryRun(ctx, s, pluralGVR(m.obj), data); serr != nil {
					refused++
					return
				}
				accepted++
				t.Errorf("mutant %s: the server accepts it, but vapc cannot read it: %d documents, %v\nmutant:\n%s", m, len(docs), err, truncate(string(data), 4000))
				return
			}
			d := docs[0]
			want := vapcVerdict(checker, d)
			got := serverVerdict(ctx, t, s, d, data)
			if got.Rejected {
				refused++
			} else {
				accepted++
			}
			if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(verdict{})); diff != "" {
				t.Errorf("mutant %s: vapc check and kube-apiserver disagree on create (-vapc +server):\n%s\nvapc:\n%s\nserver: %v\nmutant:\n%s",
					m, diff, want.diagnostics, got.err, truncate(string(data), 4000))
			}
		})
		if !ok {
			differ++
		}
	}
	t.Logf("%d mutants in %s: %d accepted and %d refused by the server, %d differences",
		n, time.Since(start).Round(time.Millisecond), accepted, refused, differ)
	if accepted == 0 || refused == 0 {
		t.Errorf("the mutants are all accepted or all refused: %d accepted, %d refused", accepted, refused)
	}
}

// pluralGVR is the collection a mutant is created in.
func pluralGVR(obj map[string]any) schema.GroupVersionResource {
	kind, _ := obj["kind"].(string)
	switch kind {
	case bindingKind, mutatingKind, mutatingBindingKind:
	default:
		kind = policyKind
	}
	return admissionregistrationv1.SchemeGroupVersion.WithResource(pluralOf(kind))
}

// mutationSeedDoc is one valid policy or binding, as the JSON object it decodes to.
type mutationSeedDoc struct {
	from string // FILE:NAME
	obj  map[string]any
}

// loadMutationSeeds reads the policies and bindings of mutationSeeds.
func loadMutationSeeds(t *testing.T) (seeds []mutationSeedDoc) {
	t.Helper()
	for _, g := range mutationSeeds {
		files, err := filepath.Glob(g)
		if err != nil {
			t.Fatal(err)
		}
		for _, file := range files {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, raw := range rawDocuments(t, data) {
				js, err := yaml.YAMLToJSON(raw)
				if err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				var obj map[string]any
				if err := json.Unmarshal(js, &obj); err != nil {
					t.Fatalf("%s: %v", file, err)
				}
				if k := obj["kind"]; !isPolicy(k) && !isBinding(k) {
					continue
				}
				name, _ := obj["metadata"].(map[string]any)["name"].(string)
				seeds = append(seeds, mutationSeedDoc{from: filepath.Base(file) + ":" + name, obj: obj})
			}
		}
	}
	var policies, bindings int
	for _, s := range seeds {
		if isPolicy(s.obj["kind"]) {
			policies++
		} else {
			bindings++
		}
	}
	if policies == 0 || bindings == 0 {
		t.Fatalf("%v: %d policies and %d bindings, want some of each", mutationSeeds, policies, bindings)
	}
	return seeds
}

// mutant is a seed with the mutations applied to it.
type mutant struct {
	from    string
	applied []string
	obj     map[string]any
}

func (m *mutant) String() string {
	return m.from + " " + strings.Join(m.applied, " + ")
}

// newMutant picks a mutation, a seed it applies to, and with some chance one or two more
// mutations of the same kind of object.
func newMutant(r *rand.Rand, seeds []mutationSeedDoc) *mutant {
	for {
		first := mutations[r.IntN(len(mutations))]
		var fit []mutationSeedDoc
		for _, s := range seeds {
			if fits(first.kind, s.obj["kind"]) {
				fit = append(fit, s)
			}
		}
		s := fit[r.IntN(len(fit))]
		m := &mutant{from: s.from, obj: deepCopyJSON(s.obj).(map[string]any)}
		if label, ok := first.apply(r, m.obj); ok {
			m.applied = append(m.applied, first.name+label)
		} else {
			continue
		}
		for extra := 0; extra < 2 && r.IntN(4) == 0; extra++ {
			mu := mutations[r.IntN(len(mutations))]
			if !fits(mu.kind, m.obj["kind"]) {
				continue
			}
			if label, ok := mu.apply(r, m.obj); ok {
				m.applied = append(m.applied, mu.name+label)
			}
		}
		return m
	}
}

var nonWord = regexp.MustCompile(`[^A-Za-z0-9_.=-]+`)

// subtestName makes a short subtest name of a mutant's description.
func subtestName(s string) string {
	s = nonWord.ReplaceAllString(s, "_")
	if len(s) > 80 {
		s = s[:80]
	}
	return s
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("... (%d more bytes)", len(s)-n)
}

// deepCopyJSON copies a value decoded from JSON.
func deepCopyJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[k] = deepCopyJSON(e)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = deepCopyJSON(e)
		}
		return out
	default:
		return v
	}
}
