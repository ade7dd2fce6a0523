package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/vapc-dev/vapc/cel"
	"github.com/vapc-dev/vapc/verify/snapshot"
)

func init() {
	register("snapshot", verb{summary: "write what a replay starts from, from a live cluster: CRDs and the objects the policies read", run: runSnapshot,
		flags: func() *flagSet { return new(snapshotFlags).flagSet(io.Discard, io.Discard) }})
}

type snapshotFlags struct {
	policies   stringList
	kubeconfig string
	context    string
	out        string
}

// kubeconfigSearch says where vapc snapshot looked for a cluster, as client-go's loading rules
// (kubectl's) look, when it found none: --kubeconfig, the files of $KUBECONFIG or else
// ~/.kube/config, then the in-cluster configuration of a pod.
func kubeconfigSearch(rules *clientcmd.ClientConfigLoadingRules) string {
	var b strings.Builder
	b.WriteString("vapc snapshot: found no kubeconfig that names a cluster, and no in-cluster configuration; it looked, as kubectl does, at:\n")
	row := func(where, what string) { fmt.Fprintf(&b, "  %-25s %s\n", where, what) }
	file := func(path string) string {
		info, err := os.Stat(path)
		switch {
		case err != nil:
			return pathError(path, err)
		case info.IsDir():
			return path + ": a folder, not a file"
		}
		return path + ": names no cluster or current context"
	}
	if rules.ExplicitPath != "" {
		row("--kubeconfig", file(rules.ExplicitPath))
	} else {
		row("--kubeconfig FILE", "not given")
	}
	if env := os.Getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		for _, p := range rules.Precedence {
			row("$"+clientcmd.RecommendedConfigPathEnvVar, file(p))
		}
		row("~/.kube/config", "not read: $KUBECONFIG is set")
	} else {
		row("$"+clientcmd.RecommendedConfigPathEnvVar, "not set")
		for _, p := range rules.Precedence {
			row("~/.kube/config", file(p))
		}
	}
	const token = "/var/run/secrets/kubernetes.io/serviceaccount/token"
	switch _, err := os.Stat(token); {
	case os.Getenv("KUBERNETES_SERVICE_HOST") == "" || os.Getenv("KUBERNETES_SERVICE_PORT") == "":
		row("in-cluster configuration", "not in a pod: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set")
	case err != nil:
		row("in-cluster configuration", "no service account token: "+pathError(token, err))
	}
	return b.String()
}

// flagSet defines the flags of vapc snapshot into f.
func (f *snapshotFlags) flagSet(stdout, stderr io.Writer) *flagSet {
	fs := newFlagSet("snapshot", stdout, stderr, help{
		usage: "vapc snapshot --policies FILE|DIR [--kubeconfig FILE] [--context NAME] [-o FILE]",
		about: `Lists, with client-go, what vapc replay --snapshot needs of the cluster the audit log is from:
the CustomResourceDefinitions, the namespaces, the objects of the policies' paramKinds and
those the policies see as oldObject on UPDATE or DELETE, what kube-apiserver's admission
plugins read for the requests the policies see (a pod's ServiceAccount and LimitRanges, ...),
and the cluster's MutatingAdmissionPolicies and their bindings, and writes them without
managedFields as YAML documents (JSON documents for -o FILE.json, which a replay loads about
twice as fast: use it for a large cluster), one List a resource as the API lists it (a
PodList), marked vapc.dev/complete: the replay then knows every object of the resource, none
when the List is empty. Take it when the log begins: the replay starts from it. The user needs
list on those resources.

The cluster is the one of --kubeconfig, else of the files of $KUBECONFIG, else of
~/.kube/config, else the in-cluster configuration of a pod (its service account), as kubectl
finds it; --context picks a context of the kubeconfig.`,
		outcomes: []outcome{
			{exitOK, "the snapshot was written"},
			{exitFindings, "the policies cannot be read or hold no ValidatingAdmissionPolicy, or the cluster cannot be reached or refuses a list"},
			{exitInterrupted, "interrupted (Ctrl-C, SIGTERM): nothing was written"},
		},
		examples: []example{
			{"the cluster of the current context of ~/.kube/config", "vapc snapshot --policies policies/ -o cluster.yaml"},
			{"another kubeconfig and context, a large cluster: as JSON", "vapc snapshot --policies policies/ --kubeconfig ~/.kube/prod.yaml --context prod-eu -o cluster.json"},
			{"then replay the log written from then on", "vapc replay --policies policies/ --snapshot cluster.yaml audit.log"},
		},
	})
	fs.Var(&f.policies, "policies", "file or folder of the ValidatingAdmissionPolicies to replay (repeatable)")
	fs.StringVar(&f.kubeconfig, "kubeconfig", "", "kubeconfig file (default: $KUBECONFIG, then ~/.kube/config)")
	fs.StringVar(&f.context, "context", "", "kubeconfig context (default: its current context)")
	fs.StringVar(&f.out, "o", "-", "file to write (- for stdout): YAML, or JSON when its name ends in .json")
	fs.meta("policies", "FILE|DIR")
	fs.meta("kubeconfig", "FILE")
	fs.meta("context", "NAME")
	fs.meta("o", "FILE")
	return fs
}

func runSnapshot(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	var f snapshotFlags
	fs := f.flagSet(stdout, stderr)
	rest, err := parseFlags(fs, args)
	if err != nil {
		return err
	}
	switch {
	case len(rest) > 0:
		return usagef("snapshot: unexpected arguments %q (the policies go in --policies)", rest)
	case len(f.policies) == 0:
		fs.Usage()
		return usagef("snapshot: --policies is required: the snapshot holds what they read")
	}
	if err := statInputs("snapshot: --policies", f.policies...); err != nil {
		return err
	}
	if f.kubeconfig != "" {
		if err := statInputs("snapshot: --kubeconfig", f.kubeconfig); err != nil {
			return err
		}
	}
	set, diags := cel.ReadPaths(stdin, f.policies...)
	if errs := diags.Without(cel.Warning).Without(cel.Info); len(errs) > 0 {
		for _, d := range errs {
			fmt.Fprintln(stderr, d.String())
		}
		return &findingsError{fmt.Sprintf("snapshot: %d %s in the policies", len(errs), plural(len(errs), "error", "errors"))}
	}
	if len(set.Policies) == 0 {
		return &findingsError{fmt.Sprintf("snapshot: no ValidatingAdmissionPolicy in %s: nothing to take a snapshot for", strings.Join(f.policies, ", "))}
	}
	var policies []*admissionregistrationv1.ValidatingAdmissionPolicy
	for _, p := range set.Policies {
		policies = append(policies, p.ValidatingAdmissionPolicy)
	}

	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = f.kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: f.context}).ClientConfig()
	if clientcmd.IsEmptyConfig(err) {
		fmt.Fprint(stderr, kubeconfigSearch(rules))
		return usagef("snapshot: no cluster to read: give --kubeconfig FILE (and --context NAME), or set KUBECONFIG, to the kubeconfig of the cluster the audit log is from")
	}
	if err != nil {
		return usagef("snapshot: no cluster to read: %v", err)
	}
	client, err := snapshot.NewClient(cfg)
	if err != nil {
		return &findingsError{fmt.Sprintf("snapshot: %v", err)}
	}
	resources, warnings := snapshot.Resources(policies, client.Mapper, client.Subresources)
	for _, w := range warnings {
		fmt.Fprintln(stderr, "vapc snapshot: warning:", w)
	}
	snap, err := client.Take(ctx, resources)
	if err != nil {
		if ctx.Err() != nil {
			return &interruptedError{"snapshot: interrupted: nothing written"}
		}
		return &findingsError{fmt.Sprintf("snapshot: %v", err)}
	}
	var buf bytes.Buffer
	write := snap.Write
	if strings.HasSuffix(f.out, ".json") {
		write = snap.WriteJSON
	}
	if err := write(&buf); err != nil {
		return &internalError{err}
	}
	where := f.out
	if f.out == "-" {
		where = "stdout"
		if _, err := stdout.Write(buf.Bytes()); err != nil {
			return err
		}
	} else if err := os.WriteFile(f.out, buf.Bytes(), 0o644); err != nil {
		return &findingsError{fmt.Sprintf("snapshot: %v", err)}
	}
	var counts []string
	for _, c := range snap.Counts {
		counts = append(counts, fmt.Sprintf("%s %d", c.GroupResource(), c.Objects))
	}
	fmt.Fprintf(stderr, "vapc snapshot: wrote %d objects to %s: %s\n", len(snap.Items), where, strings.Join(counts, ", "))
	return nil
}
