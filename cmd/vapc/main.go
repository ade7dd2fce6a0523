// Command vapc type-checks ValidatingAdmissionPolicies, emits them from Go, evaluates them as
// kube-apiserver does, and replays audit logs through them. See README.md.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := Run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "vapc:", err)
	}
	os.Exit(ExitCode(err))
}
