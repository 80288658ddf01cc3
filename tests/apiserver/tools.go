//go:build tools

// The binaries built from the same k8s.io/kubernetes module beside the API
// server: kube-controller-manager, which `up` runs with it (its garbage
// collector and namespace controller), and kubectl (`./kubectl`, for the
// examples). These imports keep their dependencies in go.mod and go.sum.
package main

import (
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
