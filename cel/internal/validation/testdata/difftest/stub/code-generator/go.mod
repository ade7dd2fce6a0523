module k8s.io/code-generator
