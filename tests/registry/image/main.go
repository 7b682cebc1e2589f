// image: builds the host's container image without a container engine, and moves it to and from a
// registry, on go-containerregistry (the library of the test registry beside it). An image is a
// manifest, a config and layers: this writes them directly.
//
//	image build -binary PATH -ca-certificates PATH -tag NAME:TAG -out IMAGE.tar
//	image push -tar IMAGE.tar -ref HOST:PORT/REPO:TAG [-insecure]
//	image export -ref HOST:PORT/REPO:TAG -dir ROOT -config CONFIG.json [-insecure]
//
// `build` makes one layer on an empty base (scratch): the static host at /reconcile-host, an
// /etc/passwd and /etc/group naming the non-root user 65532, an /etc/nsswitch.conf (names from
// /etc/hosts, then DNS), the CA certificates the TLS stack reads (/etc/ssl/certs/ca-certificates.crt), an empty /tmp; every file dated at the epoch, so the
// same inputs make the same digest. It writes a tarball `docker load` and `crane push` take, and
// prints the image's digest and sizes. `export` pulls an image and writes its flattened filesystem
// and its config, as a runtime would unpack it.
package main

import (
	"archive/tar"
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The image's user: not root, and the uid the Deployments' securityContext names.
const (
	uid  = 65532
	user = "reconcile-host"
)

func main() {
	log.SetFlags(0)
	if len(os.Args) < 2 {
		log.Fatal("usage: image build|push|export [flags]")
	}
	var err error
	switch os.Args[1] {
	case "build":
		err = build(os.Args[2:])
	case "push":
		err = push(os.Args[2:])
	case "export":
		err = export(os.Args[2:])
	default:
		err = fmt.Errorf("unknown command %q: build, push or export", os.Args[1])
	}
	if err != nil {
		log.Fatalf("image %s: %v", os.Args[1], err)
	}
}

// entry is one file of the layer.
type entry struct {
	path string
	mode int64
	body []byte
	dir  bool
}

func build(args []string) error {
	flags := flag.NewFlagSet("build", flag.ExitOnError)
	binary := flags.String("binary", "", "the static host binary")
	caCerts := flags.String("ca-certificates", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle to ship")
	tag := flags.String("tag", "reconcile-host:latest", "the image's name and tag")
	out := flags.String("out", "", "the image tarball to write")
	flags.Parse(args)
	host, err := os.ReadFile(*binary)
	if err != nil {
		return err
	}
	cas, err := os.ReadFile(*caCerts)
	if err != nil {
		return fmt.Errorf("the CA certificates (Debian's ca-certificates package): %w", err)
	}
	entries := []entry{
		{path: "etc/", dir: true, mode: 0o755},
		{path: "etc/passwd", mode: 0o644, body: []byte(fmt.Sprintf(
			"root:x:0:0:root:/root:/sbin/nologin\n%s:x:%d:%d:%s:/nonexistent:/sbin/nologin\n", user, uid, uid, user))},
		{path: "etc/group", mode: 0o644, body: []byte(fmt.Sprintf("root:x:0:\n%s:x:%d:\n", user, uid))},
		// glibc's default without this file asks DNS before /etc/hosts and stops at its "no such
		// name", so a Pod's hostAliases would never be read; static glibc has files and dns built in.
		{path: "etc/nsswitch.conf", mode: 0o644, body: []byte("hosts: files dns\n")},
		{path: "etc/ssl/", dir: true, mode: 0o755},
		{path: "etc/ssl/certs/", dir: true, mode: 0o755},
		{path: "etc/ssl/certs/ca-certificates.crt", mode: 0o644, body: cas},
		{path: "tmp/", dir: true, mode: 0o1777},
		{path: "reconcile-host", mode: 0o755, body: host},
	}
	var layer bytes.Buffer
	w := tar.NewWriter(&layer)
	for _, e := range entries {
		header := &tar.Header{Name: e.path, Mode: e.mode, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}
		if e.dir {
			header.Typeflag = tar.TypeDir
		} else {
			header.Typeflag = tar.TypeReg
			header.Size = int64(len(e.body))
		}
		if err := w.WriteHeader(header); err != nil {
			return err
		}
		if _, err := w.Write(e.body); err != nil {
			return err
		}
	}
	if err := w.Close(); err != nil {
		return err
	}
	contents := layer.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(contents)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return err
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	img, err := mutate.AppendLayers(base, l)
	if err != nil {
		return err
	}
	config, err := img.ConfigFile()
	if err != nil {
		return err
	}
	config = config.DeepCopy()
	config.Architecture, config.OS = "amd64", "linux"
	config.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	config.Config.User = fmt.Sprintf("%d:%d", uid, uid)
	config.Config.Entrypoint = []string{"/reconcile-host"}
	config.Config.WorkingDir = "/"
	config.Config.Labels = map[string]string{
		"org.opencontainers.image.title":       "reconcile-host",
		"org.opencontainers.image.description": "a Kubernetes controller host whose reconcile logic is a WebAssembly component",
	}
	img, err = mutate.ConfigFile(img, config)
	if err != nil {
		return err
	}
	ref, err := name.NewTag(*tag)
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(*out, ref, img); err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	compressed, err := l.Size()
	if err != nil {
		return err
	}
	fmt.Printf("image %s %s: %d bytes compressed, %d bytes unpacked, user %d, entrypoint /reconcile-host, written to %s\n",
		*tag, digest, compressed, len(contents), uid, *out)
	return nil
}

func reference(s string, insecure bool) (name.Reference, error) {
	if insecure {
		return name.ParseReference(s, name.Insecure)
	}
	return name.ParseReference(s)
}

func push(args []string) error {
	flags := flag.NewFlagSet("push", flag.ExitOnError)
	path := flags.String("tar", "", "the image tarball")
	to := flags.String("ref", "", "where to push it")
	insecure := flags.Bool("insecure", false, "plain HTTP")
	flags.Parse(args)
	img, err := tarball.ImageFromPath(*path, nil)
	if err != nil {
		return err
	}
	ref, err := reference(*to, *insecure)
	if err != nil {
		return err
	}
	return remote.Write(ref, img)
}

func export(args []string) error {
	flags := flag.NewFlagSet("export", flag.ExitOnError)
	from := flags.String("ref", "", "the image to pull")
	dir := flags.String("dir", "", "where to unpack its filesystem")
	configOut := flags.String("config", "", "where to write its config (JSON)")
	insecure := flags.Bool("insecure", false, "plain HTTP")
	flags.Parse(args)
	ref, err := reference(*from, *insecure)
	if err != nil {
		return err
	}
	img, err := remote.Image(ref)
	if err != nil {
		return err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	if err := os.WriteFile(*configOut, config, 0o644); err != nil {
		return err
	}
	fs := mutate.Extract(img)
	defer fs.Close()
	return unpack(tar.NewReader(fs), *dir)
}

// unpack writes the directories and regular files of r under dir (the only kinds `build` makes);
// anything else, or a path leaving dir, is an error.
func unpack(r *tar.Reader, dir string) error {
	for {
		header, err := r.Next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
		target := filepath.Join(dir, header.Name)
		if !strings.HasPrefix(target, filepath.Clean(dir)+string(os.PathSeparator)) {
			return fmt.Errorf("%q leaves the root", header.Name)
		}
		mode := os.FileMode(header.Mode & 0o777)
		if header.Mode&0o1000 != 0 {
			mode |= os.ModeSticky
		}
		switch header.Typeflag {
		case tar.TypeDir:
			if err := os.MkdirAll(target, 0o755); err != nil {
				return err
			}
			if err := os.Chmod(target, mode|os.ModeDir); err != nil {
				return err
			}
		case tar.TypeReg:
			if err := os.MkdirAll(filepath.Dir(target), 0o755); err != nil {
				return err
			}
			f, err := os.OpenFile(target, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, mode)
			if err != nil {
				return err
			}
			if _, err := io.Copy(f, r); err != nil {
				f.Close()
				return err
			}
			if err := f.Close(); err != nil {
				return err
			}
		default:
			return fmt.Errorf("%q: a tar entry of type %c, which build never makes", header.Name, header.Typeflag)
		}
	}
}
