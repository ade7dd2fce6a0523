module k8s.io/cri-streaming
