// Package defaults applies the defaults kube-apiserver v1.37 sets on
// admissionregistration.k8s.io/v1 ValidatingAdmissionPolicy and
// ValidatingAdmissionPolicyBinding objects when it decodes them, before validation.
//
// It mirrors SetObjectDefaults_ValidatingAdmissionPolicy and
// SetObjectDefaults_ValidatingAdmissionPolicyBinding in k8s.io/kubernetes
// pkg/apis/admissionregistration/v1 (zz_generated.defaults.go and defaults.go), and sets
// nothing those functions do not set: paramRef, variables, validations and auditAnnotations
// have no defaults.
package defaults

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SetPolicyDefaults sets the defaults kube-apiserver sets on a ValidatingAdmissionPolicy:
// spec.failurePolicy Fail and, when spec.matchConstraints is set, the MatchResources defaults
// (matchPolicy Equivalent, empty namespaceSelector and objectSelector) and scope "*" on every
// resourceRules and excludeResourceRules entry. Fields already set are kept. A nil policy is
// left alone.
//
// It mirrors SetObjectDefaults_ValidatingAdmissionPolicy in k8s.io/kubernetes
// pkg/apis/admissionregistration/v1.
func SetPolicyDefaults(p *admissionregistrationv1.ValidatingAdmissionPolicy) {
	if p == nil {
		return
	}
	setPolicySpecDefaults(&p.Spec)
	if p.Spec.MatchConstraints != nil {
		setMatchResourcesDefaults(p.Spec.MatchConstraints)
	}
}

// SetBindingDefaults sets the defaults kube-apiserver sets on a
// ValidatingAdmissionPolicyBinding: when spec.matchResources is set, the MatchResources
// defaults (matchPolicy Equivalent, empty namespaceSelector and objectSelector) and scope "*"
// on every resourceRules and excludeResourceRules entry. Fields already set are kept. A nil
// binding is left alone.
//
// It mirrors SetObjectDefaults_ValidatingAdmissionPolicyBinding in k8s.io/kubernetes
// pkg/apis/admissionregistration/v1.
func SetBindingDefaults(b *admissionregistrationv1.ValidatingAdmissionPolicyBinding) {
	if b == nil {
		return
	}
	if b.Spec.MatchResources != nil {
		setMatchResourcesDefaults(b.Spec.MatchResources)
	}
}

// setPolicySpecDefaults mirrors SetDefaults_ValidatingAdmissionPolicySpec in k8s.io/kubernetes
// pkg/apis/admissionregistration/v1.
func setPolicySpecDefaults(spec *admissionregistrationv1.ValidatingAdmissionPolicySpec) {
	if spec.FailurePolicy == nil {
		policy := admissionregistrationv1.Fail
		spec.FailurePolicy = &policy
	}
}

// setMatchResourcesDefaults mirrors SetDefaults_MatchResources in k8s.io/kubernetes
// pkg/apis/admissionregistration/v1, followed by SetDefaults_Rule on every resource rule as
// the generated SetObjectDefaults_* functions do.
func setMatchResourcesDefaults(mr *admissionregistrationv1.MatchResources) {
	if mr.MatchPolicy == nil {
		policy := admissionregistrationv1.Equivalent
		mr.MatchPolicy = &policy
	}
	if mr.NamespaceSelector == nil {
		mr.NamespaceSelector = &metav1.LabelSelector{}
	}
	if mr.ObjectSelector == nil {
		mr.ObjectSelector = &metav1.LabelSelector{}
	}
	for i := range mr.ResourceRules {
		setRuleDefaults(&mr.ResourceRules[i].RuleWithOperations.Rule)
	}
	for i := range mr.ExcludeResourceRules {
		setRuleDefaults(&mr.ExcludeResourceRules[i].RuleWithOperations.Rule)
	}
}

// setRuleDefaults mirrors SetDefaults_Rule in k8s.io/kubernetes
// pkg/apis/admissionregistration/v1.
func setRuleDefaults(r *admissionregistrationv1.Rule) {
	if r.Scope == nil {
		scope := admissionregistrationv1.AllScopes
		r.Scope = &scope
	}
}
