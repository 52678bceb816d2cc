package container_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"debug/elf"
	"encoding/json"
	"io"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/with-lock/with-lock/beds/testbed"
)

// ociArchive is an OCI image layout read from its tar file.
type ociArchive map[string][]byte // path in the layout → content

type ociDescriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Platform  *struct {
		OS           string `json:"os"`
		Architecture string `json:"architecture"`
	} `json:"platform"`
}

func (a ociArchive) blob(t *testing.T, d ociDescriptor, v any) []byte {
	t.Helper()
	b, ok := a["blobs/"+strings.Replace(d.Digest, ":", "/", 1)]
	if !ok {
		t.Fatalf("the archive lacks the blob %s", d.Digest)
	}
	if v != nil {
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("blob %s: %v", d.Digest, err)
		}
	}
	return b
}

func readArchive(t *testing.T, path string) ociArchive {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("the image archive: %v (make image builds it)", err)
	}
	defer f.Close()
	a := ociArchive{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return a
		}
		if err != nil {
			t.Fatal(err)
		}
		if h.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			a[h.Name] = b
		}
	}
}

// make image's archive is an OCI layout naming one image index, whose
// images are linux/amd64 and linux/arm64; each is one layer holding the
// static with-lock binary for its architecture at /usr/bin/with-lock and
// nothing else, with with-lock as the entrypoint.
func TestImageArchiveHoldsOnlyTheStaticBinaryForAmd64AndArm64(t *testing.T) {
	a := readArchive(t, testbed.ImageArchive())
	var top struct{ Manifests []ociDescriptor }
	if err := json.Unmarshal(a["index.json"], &top); err != nil || len(top.Manifests) != 1 {
		t.Fatalf("index.json, want one image index: %v %s", err, a["index.json"])
	}
	var idx struct{ Manifests []ociDescriptor }
	a.blob(t, top.Manifests[0], &idx)
	var platforms []string
	for _, m := range idx.Manifests {
		if m.Platform == nil {
			t.Fatalf("manifest %s names no platform", m.Digest)
		}
		platform := m.Platform.OS + "/" + m.Platform.Architecture
		platforms = append(platforms, platform)
		var manifest struct {
			Config ociDescriptor
			Layers []ociDescriptor
		}
		a.blob(t, m, &manifest)
		var config struct {
			OS, Architecture string
			Config           struct{ Entrypoint []string }
		}
		a.blob(t, manifest.Config, &config)
		if config.OS+"/"+config.Architecture != platform || !slices.Equal(config.Config.Entrypoint, []string{"/usr/bin/with-lock"}) {
			t.Errorf("%s: config says %s/%s, entrypoint %q", platform, config.OS, config.Architecture, config.Config.Entrypoint)
		}
		if len(manifest.Layers) != 1 {
			t.Fatalf("%s: %d layers, want one", platform, len(manifest.Layers))
		}
		files, bin := layerFiles(t, a.blob(t, manifest.Layers[0], nil))
		if want := []string{"usr/", "usr/bin/", "usr/bin/with-lock"}; !slices.Equal(files, want) {
			t.Errorf("%s: the layer holds %q, want %q", platform, files, want)
		}
		checkStaticFor(t, platform, bin)
	}
	if want := []string{"linux/amd64", "linux/arm64"}; !slices.Equal(platforms, want) {
		t.Errorf("the image index's platforms are %q, want %q", platforms, want)
	}
}

// layerFiles lists a gzipped layer's entries and returns the binary's bytes.
func layerFiles(t *testing.T, layer []byte) (names []string, bin []byte) {
	t.Helper()
	zr, err := gzip.NewReader(bytes.NewReader(layer))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return names, bin
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, h.Name)
		if h.Name == "usr/bin/with-lock" {
			if bin, err = io.ReadAll(tr); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// checkStaticFor checks that bin is an ELF executable for platform's
// architecture with no program interpreter: static, it runs in an image
// that holds nothing else.
func checkStaticFor(t *testing.T, platform string, bin []byte) {
	t.Helper()
	f, err := elf.NewFile(bytes.NewReader(bin))
	if err != nil {
		t.Fatalf("%s: /usr/bin/with-lock is not an ELF file: %v", platform, err)
	}
	want := map[string]elf.Machine{"linux/amd64": elf.EM_X86_64, "linux/arm64": elf.EM_AARCH64}[platform]
	if f.Machine != want {
		t.Errorf("%s: the binary is for %v", platform, f.Machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s: the binary is dynamically linked", platform)
		}
	}
}

// The image runs with-lock as the container's entrypoint and PID 1: a job
// from the image (with-lock --version, the only program in it) runs under
// the lock, which is released.
func TestImageRunsJobUnderLockAsPID1(t *testing.T) {
	b := setup(t)
	c := b.Start(testbed.RunSpec{Image: b.ReleaseImage(),
		Args: []string{"--redis", b.URL(), "image-job", "/usr/bin/with-lock", "--version"}})
	res := c.Wait(wait)
	if res.Code != 0 || !strings.HasPrefix(res.Stdout, "with-lock ") {
		t.Errorf("exit %d, stdout %q, want 0 and the version", res.Code, res.Stdout)
	}
	if b.Holder("image-job") != "" {
		t.Errorf("the lock is still held after the container ended")
	}
	if n := b.Client().Exists(t.Context(), "{lock:image-job}:last").Val(); n != 1 {
		t.Errorf("no record of the run: the lock was never taken")
	}
	t.Logf("with-lock's stderr: %s", res.Stderr)
}
