module k8s.io/sample-cli-plugin
