// Command image assembles the host's container image without a container
// daemon, with go-containerregistry: the static reconciler-host binary and
// CA certificates on an empty base, a non-root numeric user, no shell, the
// OCI annotations; written as an OCI image layout tarball. It also pushes
// such a tarball to a registry, and takes its entrypoint back out of it.
//
//	image build --binary PATH --ca-certificates PATH --version V --revision R --out IMAGE.tar
//	image push --layout IMAGE.tar --ref REGISTRY/REPOSITORY:TAG [--insecure]
//	image extract --layout IMAGE.tar --out PATH
//
// build prints the image's digest; push prints the reference pinned to it;
// extract writes the file the image's entrypoint names, as the image holds
// it, and fails unless it is a static executable.
package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The user the host runs as: distroless's nonroot, as the chart's
// securityContext runs it (runAsUser and fsGroup 65532).
const uid = 65532

// The writable paths, owned by that user: the guests directory and the
// module cache (the chart mounts volumes there; the root filesystem is
// read-only).
var writable = []string{"guests", "cache"}

func main() {
	if len(os.Args) < 2 {
		fail("usage: image build|push|extract [flags]")
	}
	switch os.Args[1] {
	case "build":
		build(os.Args[2:])
	case "push":
		push(os.Args[2:])
	case "extract":
		extract(os.Args[2:])
	default:
		fail("image: unknown command %q (build, push or extract)", os.Args[1])
	}
}

func fail(format string, args ...any) {
	fmt.Fprintf(os.Stderr, format+"\n", args...)
	os.Exit(1)
}

func build(args []string) {
	fs := flag.NewFlagSet("build", flag.ExitOnError)
	binary := fs.String("binary", "", "the static reconciler-host binary")
	certs := fs.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "the CA certificates bundle")
	version := fs.String("version", "", "the image's version (org.opencontainers.image.version)")
	revision := fs.String("revision", "", "the source revision (org.opencontainers.image.revision)")
	created := fs.String("created", "", "the creation time, RFC 3339 (default: the binary's modification time)")
	out := fs.String("out", "", "the OCI image layout tarball to write")
	_ = fs.Parse(args)
	if *binary == "" || *out == "" || *version == "" {
		fail("image build: --binary, --version and --out are required")
	}
	bin, err := os.ReadFile(*binary)
	if err != nil {
		fail("image build: reading the binary: %v", err)
	}
	if !isStatic(bin) {
		fail("image build: %s is not a static ELF binary (no interpreter may be named): build it for the musl target", *binary)
	}
	ca, err := os.ReadFile(*certs)
	if err != nil {
		fail("image build: reading the CA certificates: %v", err)
	}
	when := time.Now().UTC()
	if *created != "" {
		if when, err = time.Parse(time.RFC3339, *created); err != nil {
			fail("image build: --created: %v", err)
		}
	} else if info, err := os.Stat(*binary); err == nil {
		when = info.ModTime().UTC().Truncate(time.Second)
	}
	layerTar, err := rootfs(bin, ca, when)
	if err != nil {
		fail("image build: the layer: %v", err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		fail("image build: the layer: %v", err)
	}
	labels := map[string]string{
		"org.opencontainers.image.title":       "reconciler-host",
		"org.opencontainers.image.description": "A WebAssembly-pluggable reconciler host for Kubernetes",
		"org.opencontainers.image.source":      "https://github.com/fyannk/reconciler-host",
		"org.opencontainers.image.url":         "https://github.com/fyannk/reconciler-host",
		"org.opencontainers.image.licenses":    "Apache-2.0",
		"org.opencontainers.image.version":     *version,
		"org.opencontainers.image.created":     when.Format(time.RFC3339),
	}
	if *revision != "" {
		labels["org.opencontainers.image.revision"] = *revision
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.Append(base, mutate.Addendum{
		Layer:     layer,
		MediaType: types.OCILayer,
		History:   v1.History{CreatedBy: "reconciler-host image build", Created: v1.Time{Time: when}},
	})
	if err != nil {
		fail("image build: %v", err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		fail("image build: %v", err)
	}
	cfg = cfg.DeepCopy()
	cfg.Architecture = "amd64"
	cfg.OS = "linux"
	cfg.Created = v1.Time{Time: when}
	cfg.Config.Entrypoint = []string{"/reconciler-host"}
	cfg.Config.Cmd = []string{"run", "--guests=/guests", "--cache-dir=/cache"}
	cfg.Config.User = fmt.Sprintf("%d:%d", uid, uid)
	cfg.Config.WorkingDir = "/"
	cfg.Config.Env = []string{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"}
	cfg.Config.Labels = labels
	if img, err = mutate.ConfigFile(img, cfg); err != nil {
		fail("image build: %v", err)
	}
	img = mutate.Annotations(img, labels).(v1.Image)
	digest, err := img.Digest()
	if err != nil {
		fail("image build: %v", err)
	}
	dir, err := os.MkdirTemp(filepath.Dir(*out), ".layout-")
	if err != nil {
		fail("image build: %v", err)
	}
	defer os.RemoveAll(dir)
	lp, err := layout.Write(dir, empty.Index)
	if err != nil {
		fail("image build: %v", err)
	}
	if err := lp.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": *version,
	})); err != nil {
		fail("image build: %v", err)
	}
	if err := tarDir(dir, *out); err != nil {
		fail("image build: writing %s: %v", *out, err)
	}
	compressed, err := layer.Size()
	if err != nil {
		fail("image build: %v", err)
	}
	fmt.Fprintf(os.Stderr, "image: %s, %.1f MB compressed (its one layer), the binary %.1f MB\n",
		*out, float64(compressed)/1e6, float64(len(bin))/1e6)
	fmt.Println(digest.String())
}

// isStatic says whether an ELF executable needs no program interpreter
// (a dynamically linked one has a PT_INTERP header naming ld.so).
func isStatic(data []byte) bool {
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return false
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return false
		}
	}
	return true
}

// rootfs is the image's only layer: the binary, the CA certificates, and
// the writable directories owned by the host's user; every entry dated
// `when`, so the same inputs make the same digest.
func rootfs(bin, ca []byte, when time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	dir := func(name string, owner int, mode int64) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: mode, Uid: owner, Gid: owner, ModTime: when, Format: tar.FormatPAX})
	}
	file := func(name string, data []byte, mode int64) error {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data)), ModTime: when, Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	for _, d := range []string{"etc", "etc/ssl", "etc/ssl/certs"} {
		if err := dir(d, 0, 0o755); err != nil {
			return nil, err
		}
	}
	if err := file("etc/ssl/certs/ca-certificates.crt", ca, 0o644); err != nil {
		return nil, err
	}
	// Who the numeric user is, for tools that look it up; no shell.
	if err := file("etc/passwd", []byte(fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", uid, uid)), 0o644); err != nil {
		return nil, err
	}
	if err := file("etc/group", []byte(fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", uid)), 0o644); err != nil {
		return nil, err
	}
	for _, d := range append([]string{"tmp"}, writable...) {
		mode := int64(0o755)
		owner := uid
		if d == "tmp" {
			mode, owner = 0o1777, 0
		}
		if err := dir(d, owner, mode); err != nil {
			return nil, err
		}
	}
	if err := file("reconciler-host", bin, 0o755); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarDir writes the directory `dir` as the tarball `out` (an OCI image
// layout tarball: oci-layout, index.json and blobs/ at its root).
func tarDir(dir, out string) error {
	tmp := out + ".tmp"
	f, err := os.Create(tmp)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(f)
	err = filepath.Walk(dir, func(path string, info os.FileInfo, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		hdr, err := tar.FileInfoHeader(info, "")
		if err != nil {
			return err
		}
		hdr.Name = filepath.ToSlash(rel)
		if info.IsDir() {
			hdr.Name += "/"
		}
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if info.IsDir() {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		_, err = tw.Write(data)
		return err
	})
	if err == nil {
		err = tw.Close()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, out)
}

func push(args []string) {
	fs := flag.NewFlagSet("push", flag.ExitOnError)
	tarPath := fs.String("layout", "", "the OCI image layout tarball `image build` wrote")
	ref := fs.String("ref", "", "where to push it: REGISTRY/REPOSITORY:TAG")
	insecure := fs.Bool("insecure", false, "plain HTTP (a registry on loopback)")
	_ = fs.Parse(args)
	if *tarPath == "" || *ref == "" {
		fail("image push: --layout and --ref are required")
	}
	img, cleanup, err := readLayout(*tarPath)
	if err != nil {
		fail("image push: %v", err)
	}
	defer cleanup()
	var opts []name.Option
	if *insecure {
		opts = append(opts, name.Insecure)
	}
	tag, err := name.NewTag(*ref, opts...)
	if err != nil {
		fail("image push: --ref %q: %v", *ref, err)
	}
	if err := remote.Write(tag, img, remote.WithAuthFromKeychain(authn.DefaultKeychain)); err != nil {
		fail("image push: %v", err)
	}
	digest, _ := img.Digest()
	fmt.Printf("%s@%s\n", tag.Context().String(), digest)
}

func extract(args []string) {
	fs := flag.NewFlagSet("extract", flag.ExitOnError)
	tarPath := fs.String("layout", "", "the OCI image layout tarball `image build` wrote")
	out := fs.String("out", "", "where to write the entrypoint's file")
	_ = fs.Parse(args)
	if *tarPath == "" || *out == "" {
		fail("image extract: --layout and --out are required")
	}
	if err := extractEntrypoint(*tarPath, *out); err != nil {
		fail("image extract: %v", err)
	}
}

// extractEntrypoint writes to out the file the entrypoint of the image in
// tarPath names, unless it is not a static executable.
func extractEntrypoint(tarPath, out string) error {
	img, cleanup, err := readLayout(tarPath)
	if err != nil {
		return err
	}
	defer cleanup()
	config, err := img.ConfigFile()
	if err != nil || len(config.Config.Entrypoint) == 0 {
		return fmt.Errorf("%s has no entrypoint", tarPath)
	}
	entrypoint := strings.TrimPrefix(config.Config.Entrypoint[0], "/")
	files := mutate.Extract(img)
	defer files.Close()
	tr := tar.NewReader(files)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return fmt.Errorf("the entrypoint /%s is not in the image", entrypoint)
		}
		if err != nil {
			return fmt.Errorf("reading the image's files: %w", err)
		}
		if strings.TrimPrefix(hdr.Name, "/") != entrypoint {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		if !isStatic(data) {
			return fmt.Errorf("the entrypoint /%s is not a static executable", entrypoint)
		}
		if err := os.WriteFile(out, data, 0o755); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "image: /%s, a static executable of %.1f MB, written to %s\n", entrypoint, float64(len(data))/1e6, out)
		return nil
	}
}

// readLayout opens the one image of an OCI image layout tarball; cleanup
// removes the directory it was unpacked into.
func readLayout(tarPath string) (v1.Image, func(), error) {
	dir, err := os.MkdirTemp("", "image-layout-")
	if err != nil {
		return nil, nil, err
	}
	cleanup := func() { os.RemoveAll(dir) }
	img, err := func() (v1.Image, error) {
		if err := untar(tarPath, dir); err != nil {
			return nil, fmt.Errorf("reading %s: %w", tarPath, err)
		}
		lp, err := layout.FromPath(dir)
		if err != nil {
			return nil, fmt.Errorf("%s is not an OCI image layout: %w", tarPath, err)
		}
		index, err := lp.ImageIndex()
		if err != nil {
			return nil, err
		}
		manifest, err := index.IndexManifest()
		if err != nil || len(manifest.Manifests) != 1 {
			return nil, fmt.Errorf("%s must hold exactly one image", tarPath)
		}
		return index.Image(manifest.Manifests[0].Digest)
	}()
	if err != nil {
		cleanup()
		return nil, nil, err
	}
	return img, cleanup, nil
}

func untar(path, dir string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if !strings.HasPrefix(target, filepath.Clean(dir)+string(os.PathSeparator)) {
			return fmt.Errorf("%s leaves the layout", hdr.Name)
		}
		if hdr.Typeflag == tar.TypeDir {
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
			return err
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			return err
		}
	}
}
