//go:build tools

// The kube-controller-manager the tests run beside the API server (its
// garbage collector and namespace controller), built by `up` from the same
// k8s.io/kubernetes module: this import keeps its dependencies in go.sum.
package main

import _ "k8s.io/kubernetes/cmd/kube-controller-manager"
