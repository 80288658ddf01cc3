// A registry on loopback for the host's tests: go-containerregistry's
// in-memory OCI distribution server (pkg/registry), the one its own crane
// and ko are tested against. It listens on 127.0.0.1 at a free port,
// prints "127.0.0.1:<port>" as its first line on stdout, and exits when its
// stdin closes (the test that started it is gone, however it ended).
// With -basic-auth user:password, every request must carry those
// credentials (HTTP Basic; 401 with a Basic challenge otherwise), as a
// private registry asks. With -access-log FILE, each request is appended
// to FILE as it arrives ("METHOD PATH"), before it is served: a client
// that has had any answer finds its request there.
//
// One deviation of pkg/registry from the distribution spec is filled in:
// a finished blob upload answers 201 Created without the Location of the
// blob, which the spec requires and the ORAS client the host uses
// (oci-client) insists on; the distribution registry, Harbor, ghcr.io and
// Zot all send it. The header added is the blob's URL, by the digest the
// registry answered.
package main

import (
	"crypto/subtle"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/registry"
)

// withBlobLocation adds Location to a finished blob upload's 201.
type withBlobLocation struct {
	http.ResponseWriter
	request *http.Request
}

func (w withBlobLocation) WriteHeader(code int) {
	path := w.request.URL.Path
	if code == http.StatusCreated && strings.Contains(path, "/blobs/uploads/") &&
		w.Header().Get("Location") == "" {
		digest := w.Header().Get("Docker-Content-Digest")
		name := path[len("/v2/"):strings.Index(path, "/blobs/uploads/")]
		w.Header().Set("Location", "/v2/"+name+"/blobs/"+digest)
	}
	w.ResponseWriter.WriteHeader(code)
}

func main() {
	basicAuth := flag.String("basic-auth", "", "user:password every request must carry")
	accessLog := flag.String("access-log", "", "a file each request is appended to as it arrives")
	flag.Parse()
	var logged sync.Mutex
	var access *os.File
	if *accessLog != "" {
		var err error
		access, err = os.OpenFile(*accessLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			log.Fatalf("access log: %v", err)
		}
	}
	listener, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatalf("listen: %v", err)
	}
	fmt.Println(listener.Addr().String())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		os.Exit(0)
	}()
	served := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if access != nil {
			logged.Lock()
			_, err := fmt.Fprintf(access, "%s %s\n", r.Method, r.URL.Path)
			logged.Unlock()
			if err != nil {
				log.Fatalf("access log: %v", err)
			}
		}
		if *basicAuth != "" {
			user, password, ok := r.BasicAuth()
			if !ok || subtle.ConstantTimeCompare([]byte(user+":"+password), []byte(*basicAuth)) != 1 {
				w.Header().Set("WWW-Authenticate", `Basic realm="registry"`)
				http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
				return
			}
		}
		served.ServeHTTP(withBlobLocation{w, r}, r)
	})
	log.Fatal(http.Serve(listener, handler))
}
