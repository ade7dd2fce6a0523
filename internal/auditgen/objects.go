package auditgen

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// podForm says which version of a pod to render.
type podForm int

const (
	podStored        podForm = iota // as stored: defaults, admission changes, status
	podCreateRequest                // as the replicaset controller sends it: no server fields
)

var (
	podTypeMeta  = metav1.TypeMeta{Kind: "Pod", APIVersion: "v1"}
	nodeTypeMeta = metav1.TypeMeta{Kind: "Node", APIVersion: "v1"}
	int64p       = func(v int64) *int64 { return &v }
	int32p       = func(v int32) *int32 { return &v }
	boolp        = func(v bool) *bool { return &v }
)

// podObject renders a pod.
func (g *generator) podObject(p *pod, form podForm) *corev1.Pod {
	a := p.app
	labels := map[string]string{"app": a.name, "app.kubernetes.io/name": a.name, "app.kubernetes.io/part-of": a.ns.name}
	owner := metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: a.name + "-" + a.hash, UID: types.UID(a.rsUID), Controller: boolp(true), BlockOwnerDeletion: boolp(true)}
	generateName := a.name + "-" + a.hash + "-"
	if a.statefulSet {
		owner.Kind, owner.Name = "StatefulSet", a.name
		generateName = ""
		labels["statefulset.kubernetes.io/pod-name"] = p.name
		labels["controller-revision-hash"] = a.name + "-" + a.hash
	} else {
		labels["pod-template-hash"] = a.hash
	}
	o := &corev1.Pod{
		TypeMeta: podTypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: p.name, GenerateName: generateName, Namespace: a.ns.name, Labels: labels,
			Annotations:     map[string]string{"kubectl.kubernetes.io/restartedAt": "2026-10-02T09:14:55Z", "prometheus.io/scrape": "true", "prometheus.io/port": fmt.Sprint(a.port)},
			OwnerReferences: []metav1.OwnerReference{owner},
		},
	}
	mounts := []corev1.VolumeMount{}
	var volumes []corev1.Volume
	if a.configMap {
		volumes = append(volumes, corev1.Volume{Name: "config", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: a.name + "-config"}, DefaultMode: int32p(420)}}})
		mounts = append(mounts, corev1.VolumeMount{Name: "config", ReadOnly: true, MountPath: "/etc/" + a.name})
	}
	if form == podStored {
		volumes = append(volumes, corev1.Volume{Name: p.tokenVolume, VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			Sources: []corev1.VolumeProjection{
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{ExpirationSeconds: int64p(3607), Path: "token"}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}, Items: []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}}}},
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
			},
			DefaultMode: int32p(420),
		}}})
		mounts = append(mounts, corev1.VolumeMount{Name: p.tokenVolume, ReadOnly: true, MountPath: "/var/run/secrets/kubernetes.io/serviceaccount"})
	}
	probe := func(path string, delay int32) *corev1.Probe {
		return &corev1.Probe{
			ProbeHandler:        corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: path, Port: intstr.FromString("http"), Scheme: corev1.URISchemeHTTP}},
			InitialDelaySeconds: delay, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
		}
	}
	containers := []corev1.Container{{
		Name:  a.name,
		Image: a.image,
		Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: a.port, Protocol: corev1.ProtocolTCP}},
		Env: []corev1.EnvVar{
			{Name: "APP_ENV", Value: "production"},
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
			{Name: "POD_IP", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "status.podIP"}}},
		},
		Resources: corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse(a.memLim)},
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(a.cpu), corev1.ResourceMemory: resource.MustParse(a.memory)},
		},
		VolumeMounts:             mounts,
		LivenessProbe:            probe("/healthz", 10),
		ReadinessProbe:           probe("/readyz", 5),
		TerminationMessagePath:   "/dev/termination-log",
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
		ImagePullPolicy:          corev1.PullIfNotPresent,
		SecurityContext: &corev1.SecurityContext{
			Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}}, RunAsNonRoot: boolp(true), ReadOnlyRootFilesystem: boolp(true), AllowPrivilegeEscalation: boolp(false),
		},
	}}
	if a.sidecarImage != "" {
		var sidecarMounts []corev1.VolumeMount
		if len(mounts) > 0 {
			sidecarMounts = mounts[len(mounts)-1:]
		}
		containers = append(containers, corev1.Container{
			Name: "log-shipper", Image: a.sidecarImage,
			Resources:                corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("32Mi")}},
			VolumeMounts:             sidecarMounts,
			TerminationMessagePath:   "/dev/termination-log",
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			ImagePullPolicy:          corev1.PullIfNotPresent,
		})
	}
	var tolerations []corev1.Toleration
	if p.node.kosmos {
		tolerations = append(tolerations, corev1.Toleration{Key: "kosmos.io/node", Operator: corev1.TolerationOpEqual, Value: "true", Effect: corev1.TaintEffectNoSchedule})
	}
	if a.shortToleration > 0 {
		tolerations = append(tolerations,
			corev1.Toleration{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: int64p(a.shortToleration)},
			corev1.Toleration{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: int64p(a.shortToleration)})
	} else if form == podStored {
		// The DefaultTolerationSeconds admission plugin.
		tolerations = append(tolerations,
			corev1.Toleration{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: int64p(300)},
			corev1.Toleration{Key: "node.kubernetes.io/unreachable", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: int64p(300)})
	}
	o.Spec = corev1.PodSpec{
		Volumes:                       volumes,
		Containers:                    containers,
		RestartPolicy:                 corev1.RestartPolicyAlways,
		TerminationGracePeriodSeconds: int64p(30),
		DNSPolicy:                     corev1.DNSClusterFirst,
		ServiceAccountName:            "default",
		DeprecatedServiceAccount:      "default",
		SecurityContext:               &corev1.PodSecurityContext{RunAsUser: int64p(10001), FSGroup: int64p(10001), SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault}},
		SchedulerName:                 corev1.DefaultSchedulerName,
		Tolerations:                   tolerations,
		EnableServiceLinks:            boolp(true),
		TopologySpreadConstraints: []corev1.TopologySpreadConstraint{{
			MaxSkew: 1, TopologyKey: "topology.kubernetes.io/zone", WhenUnsatisfiable: corev1.ScheduleAnyway,
			LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": a.name}},
		}},
	}
	if a.statefulSet {
		o.Spec.Hostname, o.Spec.Subdomain = p.name, a.name
	}
	if form == podCreateRequest {
		return o
	}
	o.UID = types.UID(p.uid)
	o.ResourceVersion = p.rv
	o.Generation = 1
	o.CreationTimestamp = metav1.NewTime(p.created)
	if p.terminating {
		t := metav1.NewTime(p.deletionTimestamp)
		o.DeletionTimestamp, o.DeletionGracePeriodSeconds = &t, int64p(p.deletionGrace)
		o.Generation = 2
	}
	o.Spec.Priority = int32p(0)
	o.Spec.PreemptionPolicy = ptrPreempt(corev1.PreemptLowerPriority)
	o.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: corev1.PodQOSBurstable}
	if p.started.IsZero() && !p.running {
		if p.bound() {
			o.Spec.NodeName = p.node.name
			o.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(p.created)}}
		}
		o.Status.Conditions = append(o.Status.Conditions, p.disruptionCondition()...)
		return o
	}
	o.Spec.NodeName = p.node.name
	st := metav1.NewTime(p.started)
	ready := corev1.ConditionFalse
	if p.ready {
		ready = corev1.ConditionTrue
	}
	o.Status.Phase = corev1.PodRunning
	o.Status.Conditions = []corev1.PodCondition{
		{Type: "PodReadyToStartContainers", Status: corev1.ConditionTrue, LastTransitionTime: st},
		{Type: corev1.PodInitialized, Status: corev1.ConditionTrue, LastTransitionTime: st},
		{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.NewTime(p.readyTransition)},
		{Type: corev1.ContainersReady, Status: ready, LastTransitionTime: metav1.NewTime(p.readyTransition)},
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(p.created)},
	}
	o.Status.Conditions = append(o.Status.Conditions, p.disruptionCondition()...)
	o.Status.HostIP, o.Status.HostIPs = p.node.ip, []corev1.HostIP{{IP: p.node.ip}}
	o.Status.PodIP, o.Status.PodIPs = p.ip, []corev1.PodIP{{IP: p.ip}}
	o.Status.StartTime = &st
	for i, c := range containers {
		cs := corev1.ContainerStatus{
			Name: c.Name, Ready: p.ready, Image: c.Image, ImageID: c.Image + "@sha256:" + p.containerIDs[i][13:77],
			ContainerID: p.containerIDs[i], Started: boolp(true),
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: st}},
		}
		if i == 0 {
			cs.RestartCount = p.restarts
		}
		o.Status.ContainerStatuses = append(o.Status.ContainerStatuses, cs)
	}
	return o
}

// disruptionCondition is the pod's DisruptionTarget condition, if it has one.
func (p *pod) disruptionCondition() []corev1.PodCondition {
	if p.disruption == "" {
		return nil
	}
	return []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		LastTransitionTime: metav1.NewTime(p.disruptionAt), Reason: p.disruption, Message: p.disruptionMessage}}
}

func ptrPreempt(p corev1.PreemptionPolicy) *corev1.PreemptionPolicy { return &p }

// bound says whether the scheduler has bound the pod.
func (p *pod) bound() bool { return p.isBound }

var nodeImages = []corev1.ContainerImage{
	{Names: []string{"registry.k8s.io/kube-proxy@sha256:6b3e59c2b1a1bb7a4b1ef0d5d2f57fd3c9e3d1e3a5c1c5d2b7a1f0a6e2c9d4b1", "registry.k8s.io/kube-proxy:v1.37.0"}, SizeBytes: 30712412},
	{Names: []string{"docker.io/fluent/fluent-bit@sha256:0ef4d3c2a9a5b7b1d6e0c7b3f2a1d9e8c7b6a5f4e3d2c1b0a9f8e7d6c5b4a3f2", "docker.io/fluent/fluent-bit:3.2.4"}, SizeBytes: 34518273},
	{Names: []string{"registry.k8s.io/node-problem-detector/node-problem-detector@sha256:9a4f1d2b3c5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b1c2d3e4f5a6b7c8d9e0f1a", "registry.k8s.io/node-problem-detector/node-problem-detector:v0.8.21"}, SizeBytes: 64512734},
	{Names: []string{"quay.io/cilium/cilium@sha256:1d2c3b4a5f6e7d8c9b0a1f2e3d4c5b6a7f8e9d0c1b2a3f4e5d6c7b8a9f0e1d2c", "quay.io/cilium/cilium:v1.17.2"}, SizeBytes: 215472811},
	{Names: []string{"registry.k8s.io/pause@sha256:7031c1b283388d2c2e09b57badb803c05ebed362dc88d84b480cc47f72a21097", "registry.k8s.io/pause:3.10"}, SizeBytes: 320368},
}

// nodeObject renders a node.
func (g *generator) nodeObject(n *node) *corev1.Node {
	labels := map[string]string{
		"beta.kubernetes.io/arch": "amd64", "beta.kubernetes.io/os": "linux",
		"kubernetes.io/arch": "amd64", "kubernetes.io/hostname": n.name, "kubernetes.io/os": "linux",
		"topology.kubernetes.io/zone": n.zone, "topology.kubernetes.io/region": "eu-west-1",
	}
	annotations := map[string]string{"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true"}
	var taints []corev1.Taint
	if n.kosmos {
		labels["kosmos.io/node"] = "true"
		labels["kubernetes.io/role"] = "agent"
		annotations["kosmos-io/owned-by-cluster"] = fmt.Sprintf("member%d", n.idx+1)
		annotations["leafNodeMode"] = "one2cluster"
		taints = append(taints, corev1.Taint{Key: "kosmos.io/node", Value: "true", Effect: corev1.TaintEffectNoSchedule})
	} else {
		labels["node.kubernetes.io/instance-type"] = n.instanceType
		labels["draino-enabled"] = "true"
		annotations["kubeadm.alpha.kubernetes.io/cri-socket"] = "unix:///run/containerd/containerd.sock"
	}
	if n.unschedulable {
		annotations["draino.planet.com/conditions"] = "KernelDeadlock=True,0s"
	}
	if n.unreachable {
		t := metav1.NewTime(n.unreachableSince)
		taints = append(taints, corev1.Taint{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoSchedule, TimeAdded: &t})
		if n.noExecute {
			taints = append(taints, corev1.Taint{Key: "node.kubernetes.io/unreachable", Effect: corev1.TaintEffectNoExecute, TimeAdded: &t})
		}
	}
	if n.unschedulableTaint {
		t := metav1.NewTime(n.unschedulableSince)
		taints = append(taints, corev1.Taint{Key: "node.kubernetes.io/unschedulable", Effect: corev1.TaintEffectNoSchedule, TimeAdded: &t})
	}
	o := &corev1.Node{
		TypeMeta: nodeTypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name: n.name, UID: types.UID(n.uid), ResourceVersion: n.rv, CreationTimestamp: metav1.NewTime(n.created),
			Labels: labels, Annotations: annotations,
		},
		Spec: corev1.NodeSpec{PodCIDR: n.podCIDR(), PodCIDRs: []string{n.podCIDR()}, Taints: taints, Unschedulable: n.unschedulable},
	}
	if !n.kosmos {
		o.Spec.ProviderID = fmt.Sprintf("aws:///%s/i-0%016x", n.zone, n.idx*7919+1000003)
	}
	capacity := corev1.ResourceList{
		corev1.ResourceCPU: resource.MustParse(n.cpu), corev1.ResourceMemory: resource.MustParse(n.memory),
		corev1.ResourcePods: resource.MustParse(n.pods_), corev1.ResourceEphemeralStorage: resource.MustParse(n.storage),
	}
	o.Status.Capacity, o.Status.Allocatable = capacity, capacity
	hb := metav1.NewTime(n.heartbeat)
	since := metav1.NewTime(n.created.Add(90 * time.Second))
	cond := func(t corev1.NodeConditionType, okReason, okMessage string) corev1.NodeCondition {
		c := corev1.NodeCondition{Type: t, Status: corev1.ConditionFalse, LastHeartbeatTime: hb, LastTransitionTime: since, Reason: okReason, Message: okMessage}
		if n.ready != "True" {
			c.Status, c.Reason, c.Message, c.LastTransitionTime = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status.", metav1.NewTime(n.readyTransition)
		}
		return c
	}
	var conds []corev1.NodeCondition
	if !n.kosmos {
		conds = append(conds, n.problemConditions()...)
	}
	conds = append(conds,
		cond(corev1.NodeMemoryPressure, "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
		cond(corev1.NodeDiskPressure, "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
		cond(corev1.NodePIDPressure, "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
	)
	ready := corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: hb, LastTransitionTime: metav1.NewTime(n.readyTransition),
		Reason: "KubeletReady", Message: "kubelet is posting ready status"}
	if n.ready != "True" {
		ready.Status, ready.Reason, ready.Message = corev1.ConditionUnknown, "NodeStatusUnknown", "Kubelet stopped posting node status."
	}
	conds = append(conds, ready)
	if n.drain != "" {
		conds = append(conds, corev1.NodeCondition{Type: "DrainScheduled", Status: corev1.ConditionStatus(n.drain), LastHeartbeatTime: metav1.NewTime(n.drainTransition),
			LastTransitionTime: metav1.NewTime(n.drainTransition), Reason: "Draino", Message: n.drainMsg})
	}
	o.Status.Conditions = conds
	o.Status.Addresses = []corev1.NodeAddress{{Type: corev1.NodeInternalIP, Address: n.ip}, {Type: corev1.NodeHostName, Address: n.name}}
	o.Status.DaemonEndpoints = corev1.NodeDaemonEndpoints{KubeletEndpoint: corev1.DaemonEndpoint{Port: 10250}}
	o.Status.NodeInfo = corev1.NodeSystemInfo{
		MachineID: n.machineID, SystemUUID: n.systemUUID, BootID: n.bootID, KernelVersion: "6.8.0-1021-aws", OSImage: "Ubuntu 24.04.2 LTS",
		ContainerRuntimeVersion: "containerd://2.0.4", KubeletVersion: kubeVersion, OperatingSystem: "linux", Architecture: "amd64",
	}
	if n.kosmos {
		o.Status.NodeInfo.KernelVersion, o.Status.NodeInfo.OSImage, o.Status.NodeInfo.ContainerRuntimeVersion = "", "", ""
	} else {
		o.Status.Images = nodeImages
	}
	return o
}

// problemConditions are node-problem-detector's conditions.
func (n *node) problemConditions() []corev1.NodeCondition {
	hb := metav1.NewTime(n.heartbeat)
	since := metav1.NewTime(n.created.Add(2 * time.Minute))
	kd := corev1.NodeCondition{Type: "KernelDeadlock", Status: corev1.ConditionFalse, LastHeartbeatTime: hb, LastTransitionTime: metav1.NewTime(n.kdTransition),
		Reason: "KernelHasNoDeadlock", Message: "kernel has no deadlock"}
	if n.kernelDeadlock {
		kd.Status, kd.Reason, kd.Message = corev1.ConditionTrue, "DockerHung", "task containerd:2398 blocked for more than 120 seconds."
	}
	return []corev1.NodeCondition{
		kd,
		{Type: "ReadonlyFilesystem", Status: corev1.ConditionFalse, LastHeartbeatTime: hb, LastTransitionTime: since, Reason: "FilesystemIsNotReadOnly", Message: "Filesystem is not read-only"},
		{Type: "CorruptDockerOverlay2", Status: corev1.ConditionFalse, LastHeartbeatTime: hb, LastTransitionTime: since, Reason: "NoCorruptDockerOverlay2", Message: "docker overlay2 is functioning properly"},
	}
}
