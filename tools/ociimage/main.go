// Command ociimage writes with-lock's container image as an OCI archive
// (an OCI image layout in one tar file, what `podman load -i` and
// `skopeo copy oci-archive:` read), without a daemon or a registry.
//
// Each platform's image is one layer holding the static binary at
// /usr/bin/with-lock and nothing else, with with-lock as its entrypoint;
// an image index names the platforms, so a runtime pulls the one it runs
// on. File times and the image's creation time are fixed (-epoch), so the
// same binaries make the same archive.
//
//	go run ./ociimage -o with-lock.oci.tar -name with-lock:v1.2.3 -version v1.2.3 \
//	    -binary linux/amd64=with-lock-linux-amd64 -binary linux/arm64=with-lock-linux-arm64
package main

import (
	"archive/tar"
	"bytes"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// binaryPath is where the image holds with-lock: where the .deb puts it,
// so unit files, docs and `COPY --from` name one path.
const binaryPath = "usr/bin/with-lock"

// binaries is -binary, repeated: os/arch=path.
type binaries []platformBinary

type platformBinary struct {
	os, arch, path string
}

func (b *binaries) String() string { return fmt.Sprint(*b) }

func (b *binaries) Set(v string) error {
	platform, path, ok := strings.Cut(v, "=")
	osName, arch, ok2 := strings.Cut(platform, "/")
	if !ok || !ok2 || path == "" {
		return fmt.Errorf("%q: want os/arch=path, as linux/amd64=bin/with-lock", v)
	}
	*b = append(*b, platformBinary{os: osName, arch: arch, path: path})
	return nil
}

func main() {
	var bins binaries
	out := flag.String("o", "", "the OCI archive to write")
	name := flag.String("name", "with-lock:latest", "the name the archive gives the image (org.opencontainers.image.ref.name)")
	version := flag.String("version", "", "with-lock's version, the image's org.opencontainers.image.version label")
	epoch := flag.Int64("epoch", 0, "file and creation times, in Unix seconds (SOURCE_DATE_EPOCH)")
	flag.Var(&bins, "binary", "os/arch=path of a static with-lock binary; repeat for each platform")
	flag.Parse()
	if *out == "" || len(bins) == 0 || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: ociimage -o ARCHIVE [-name NAME:TAG] [-version V] [-epoch SECONDS] -binary os/arch=PATH...")
		os.Exit(64)
	}
	if err := write(*out, *name, *version, time.Unix(*epoch, 0).UTC(), bins); err != nil {
		fmt.Fprintf(os.Stderr, "ociimage: %v\n", err)
		os.Exit(1)
	}
}

// write builds one image per binary, an index of them, and the archive.
func write(out, name, version string, at time.Time, bins binaries) error {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	for _, b := range bins {
		img, err := image(b, version, at)
		if err != nil {
			return err
		}
		cf, err := img.ConfigFile()
		if err != nil {
			return err
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{
			Platform: cf.Platform(),
		}})
	}
	dir, err := os.MkdirTemp("", "ociimage-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	p, err := layout.Write(dir, empty.Index)
	if err != nil {
		return fmt.Errorf("write the image layout: %w", err)
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": name,
	})); err != nil {
		return fmt.Errorf("write the image layout: %w", err)
	}
	return tarDir(dir, out, at)
}

// image is one platform's image: the binary in one layer, run as the
// entrypoint.
func image(b platformBinary, version string, at time.Time) (v1.Image, error) {
	bin, err := os.ReadFile(b.path)
	if err != nil {
		return nil, fmt.Errorf("read the %s/%s binary: %w", b.os, b.arch, err)
	}
	layerTar, err := layerWith(bin, at)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("the %s/%s layer: %w", b.os, b.arch, err)
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, layer); err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = b.os, b.arch
	cf.Created = v1.Time{Time: at}
	cf.Config.Entrypoint = []string{"/" + binaryPath}
	cf.Config.Env = []string{"PATH=/usr/bin:/bin"}
	cf.Config.Labels = map[string]string{
		"org.opencontainers.image.title":   "with-lock",
		"org.opencontainers.image.version": version,
		"org.opencontainers.image.source":  "https://github.com/with-lock/with-lock",
	}
	return mutate.ConfigFile(img, cf)
}

// layerWith is the uncompressed tar of the one layer: /usr, /usr/bin and
// the binary, owned by root.
func layerWith(bin []byte, at time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Typeflag: tar.TypeDir, Name: "usr/", Mode: 0o755, ModTime: at},
		{Typeflag: tar.TypeDir, Name: "usr/bin/", Mode: 0o755, ModTime: at},
		{Typeflag: tar.TypeReg, Name: binaryPath, Mode: 0o755, ModTime: at, Size: int64(len(bin))},
	} {
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	if _, err := tw.Write(bin); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarDir writes the layout in dir as the tar file out, in a fixed order
// with fixed times, replacing out only once it is whole.
func tarDir(dir, out string, at time.Time) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(out), ".ociimage-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	tw := tar.NewWriter(tmp)
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == dir {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		h := &tar.Header{Name: filepath.ToSlash(rel), ModTime: at, Format: tar.FormatPAX}
		if d.IsDir() {
			h.Typeflag, h.Name, h.Mode = tar.TypeDir, h.Name+"/", 0o755
			return tw.WriteHeader(h)
		}
		if !d.Type().IsRegular() {
			return errors.New("the layout holds something other than files: " + rel)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		h.Typeflag, h.Mode, h.Size = tar.TypeReg, 0o644, int64(len(b))
		if err := tw.WriteHeader(h); err != nil {
			return err
		}
		_, err = tw.Write(b)
		return err
	})
	if err != nil {
		return fmt.Errorf("write %s: %w", out, err)
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := tmp.Chmod(0o644); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), out)
}
