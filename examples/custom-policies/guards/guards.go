// Package guards is an example of a platform team's own policies, written in Go with vapc's
// cel/vap and registered with vap.Register, so that `vapc emit --package ./guards --out deploy`
// builds them and writes their YAML without a main package. See policies/README.md.
package guards

import (
	"github.com/vapc-dev/vapc/cel/vap"
)

// The registration convention: one vap.Register per policy, from a package-level variable.
// vapc emit --package imports the package, which runs them.
var (
	_ = vap.Register(noHostNetwork)
	_ = vap.Register(noLatestTag)
)

// noHostNetwork keeps the CI deployer from creating pods on the host network.
func noHostNetwork() (*vap.Policy, []*vap.Binding, error) {
	p, err := vap.NewPolicy("no-host-network",
		vap.Resources(vap.Create|vap.Update, "pods"),
		vap.UserIn("system:serviceaccount:ci:deployer"),
		vap.Validation("!has(object.spec.hostNetwork) || !object.spec.hostNetwork",
			vap.MessageExpression("'pod ' + object.metadata.name + ' may not use the host network'")),
	)
	if err != nil {
		return nil, nil, err
	}
	b, err := vap.NewBinding(p)
	return p, []*vap.Binding{b}, err
}

// noLatestTag refuses Deployments whose containers run an image without a tag or with the tag
// latest: a rollback cannot tell which image ran.
func noLatestTag() (*vap.Policy, []*vap.Binding, error) {
	p, err := vap.NewPolicy("no-latest-tag",
		vap.ResourcesIn("apps", "v1", vap.Create|vap.Update, "deployments"),
		vap.Validation(`object.spec.template.spec.containers.all(c,
  c.image.contains(':') && !c.image.endsWith(':latest'))`,
			vap.MessageExpression(`'deployment ' + object.metadata.name + ' runs an image without a tag or with :latest'`)),
	)
	if err != nil {
		return nil, nil, err
	}
	b, err := vap.NewBinding(p)
	return p, []*vap.Binding{b}, err
}
