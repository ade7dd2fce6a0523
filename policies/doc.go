// Package policies holds vapc's in-tree guards against node-failure incidents, written with
// package cel/vap, and the settings that adapt them to a cluster.
//
// Each guard is a Go file whose doc comment tells the incident it prevents:
//
//   - kosmos-node-not-ready (kosmos.go): the node lifecycle controller may not delete the pods of
//     a Kosmos leaf node that is not Ready.
//   - drainer-cordon-guard (drainer.go): an automated drainer may cordon a node only while a
//     node-problem-detector condition is True on it.
//   - eviction-toleration-floor (toleration.go): pods may not tolerate unreachable or not-ready
//     nodes for less than a floor of seconds.
//
// What differs between clusters (the Kosmos node label, the users, the condition types, the
// floor, the rollout stage) comes from settings/settings.yaml, read by LoadSettings.
// `make policies` (vapc emit) builds the guards with Render and writes one YAML file per guard
// next to this file, ready for `kubectl apply -f policies/`.
package policies
