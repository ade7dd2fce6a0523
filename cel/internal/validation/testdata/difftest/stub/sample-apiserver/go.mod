module k8s.io/sample-apiserver
