// registry: the OCI registry the tests push modules to and the host pulls them from. It is
// go-containerregistry's registry (the one `crane registry serve` runs) with two additions the tests
// need, and one fix: blobs stored as plain files that are served as they are on disk, never re-hashed on read (as
// most registries' storage drivers do), so that a test can corrupt a layer and see the host catch it;
// optional HTTP basic auth, for the "credentials required" case; optional HTTPS with a CA of its own
// making (written as PEM for the client to trust), for the private-CA case; and the `Location` header the OCI
// distribution spec requires on a completed blob upload and a pushed manifest, which this registry
// leaves out and spec-following clients (the host's) expect.
//
//	registry -addr 127.0.0.1:0 -dir BLOBS [-auth USER:PASSWORD] [-tls-ca CA.pem]
//
// prints `listening on HOST:PORT` once it accepts connections.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/subtle"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// files keeps each blob in DIR/ALGORITHM/HEX and serves it unchecked.
type files struct{ dir string }

func (f files) path(h v1.Hash) string { return filepath.Join(f.dir, h.Algorithm, h.Hex) }

func (f files) Stat(_ context.Context, _ string, h v1.Hash) (int64, error) {
	info, err := os.Stat(f.path(h))
	if errors.Is(err, os.ErrNotExist) {
		return 0, registry.ErrNotFound
	} else if err != nil {
		return 0, err
	}
	return info.Size(), nil
}

func (f files) Get(_ context.Context, _ string, h v1.Hash) (io.ReadCloser, error) {
	file, err := os.Open(f.path(h))
	if errors.Is(err, os.ErrNotExist) {
		return nil, registry.ErrNotFound
	}
	return file, err
}

// Put is called with a reader that the registry verifies against the digest as it is read.
func (f files) Put(_ context.Context, _ string, h v1.Hash, rc io.ReadCloser) error {
	defer rc.Close()
	if err := os.MkdirAll(filepath.Join(f.dir, h.Algorithm), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(f.dir, "upload-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := io.Copy(tmp, rc); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), f.path(h))
}

// basicAuth asks for USER:PASSWORD on every request, as a registry with pull credentials does.
func basicAuth(next http.Handler, userPassword string) http.Handler {
	user, password, _ := strings.Cut(userPassword, ":")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !ok || subtle.ConstantTimeCompare([]byte(u), []byte(user)) != 1 ||
			subtle.ConstantTimeCompare([]byte(p), []byte(password)) != 1 {
			w.Header().Set("WWW-Authenticate", `Basic realm="reconcile-host test registry"`)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprint(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// uploadLocation adds `Location` to a 201 answer to a PUT: `/v2/NAME/blobs/DIGEST` for a completed
// blob upload, the manifest's own path for a manifest.
type uploadLocation struct {
	http.ResponseWriter
	request *http.Request
}

func (w uploadLocation) WriteHeader(status int) {
	if w.request.Method == http.MethodPut && status == http.StatusCreated && w.Header().Get("Location") == "" {
		location := w.request.URL.Path
		if name, _, isUpload := strings.Cut(strings.TrimPrefix(location, "/v2/"), "/blobs/uploads/"); isUpload {
			location = "/v2/" + name + "/blobs/" + w.request.URL.Query().Get("digest")
		}
		w.Header().Set("Location", location)
	}
	w.ResponseWriter.WriteHeader(status)
}

func withUploadLocation(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(uploadLocation{ResponseWriter: w, request: r}, r)
	})
}

// selfSigned makes a CA and, signed by it, a serving certificate for 127.0.0.1; writes the CA, as
// PEM, to caFile.
func selfSigned(caFile string) (tls.Certificate, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	ca := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "reconcile-host test registry CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	if err != nil {
		return tls.Certificate{}, err
	}
	caPEM := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	if err := os.WriteFile(caFile, caPEM, 0o644); err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{leafDER, caDER}, PrivateKey: key}, nil
}

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address")
	dir := flag.String("dir", "", "blob directory (required)")
	auth := flag.String("auth", "", "USER:PASSWORD required on every request (default: none)")
	tlsCA := flag.String("tls-ca", "", "serve HTTPS with a certificate from a CA of its own, written here as PEM")
	flag.Parse()
	if *dir == "" {
		log.Fatal("registry: -dir is required")
	}
	var handler http.Handler = registry.New(
		registry.WithBlobHandler(files{dir: *dir}),
		registry.Logger(log.New(os.Stderr, "registry: ", log.LstdFlags)),
	)
	handler = withUploadLocation(handler)
	if *auth != "" {
		handler = basicAuth(handler, *auth)
	}
	listener, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("registry: %v", err)
	}
	if *tlsCA != "" {
		cert, err := selfSigned(*tlsCA)
		if err != nil {
			log.Fatalf("registry: %v", err)
		}
		listener = tls.NewListener(listener, &tls.Config{Certificates: []tls.Certificate{cert}})
	}
	fmt.Printf("listening on %s\n", listener.Addr())
	log.Fatal(http.Serve(listener, handler))
}
