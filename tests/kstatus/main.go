// Command kstatus prints what sigs.k8s.io/cli-utils' kstatus
// (pkg/kstatus/status.Compute), the library kubectl-style tooling such as
// kpt, Config Sync and Flux's health checks use, computes for one object:
// the object's JSON on stdin, `<status>\t<message>` on stdout (status one
// of InProgress, Failed, Current, Terminating, NotFound, Unknown).
package main

import (
	"fmt"
	"io"
	"os"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

func main() {
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("reading stdin: %v", err)
	}
	var object unstructured.Unstructured
	if err := object.UnmarshalJSON(raw); err != nil {
		fail("stdin is not an object: %v", err)
	}
	result, err := status.Compute(&object)
	if err != nil {
		fail("computing the status: %v", err)
	}
	fmt.Printf("%s\t%s\n", result.Status, result.Message)
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "kstatus: "+format+"\n", args...)
	os.Exit(2)
}
