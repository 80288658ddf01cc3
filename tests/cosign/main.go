// The real cosign (its Go module, the cobra command its binary runs), for
// tests that sign guest modules pushed to a registry on loopback.
package main

import (
	"os"

	"github.com/sigstore/cosign/v2/cmd/cosign/cli"
)

func main() {
	if err := cli.New().Execute(); err != nil {
		os.Exit(1)
	}
}
