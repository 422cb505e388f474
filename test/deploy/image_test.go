package deploy_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/x509"
	"debug/buildinfo"
	"errors"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/regclient/regclient"
	"github.com/regclient/regclient/config"
	"github.com/regclient/regclient/types/manifest"
	v1 "github.com/regclient/regclient/types/oci/v1"
	"github.com/regclient/regclient/types/ref"

	"github.com/catalogsync/catalogsync/internal/freeport"
	"github.com/catalogsync/catalogsync/test/logbuf"
	"github.com/catalogsync/catalogsync/test/servers"
)

// builtImage is the image deploy/image/build.sh wrote and pushed.
type builtImage struct {
	config v1.Image
	rootfs string // its layers unpacked, as root, owners kept
	files  map[string]*tar.Header
	size   int64 // config and compressed layers, bytes
}

// buildImage runs deploy/image/build.sh as a user would, writing an OCI
// layout and pushing to a real Distribution registry, then checks both
// hold the same manifest and unpacks the layout's layers.
func buildImage(t *testing.T) builtImage {
	t.Helper()
	reg := servers.StartRegistry(t)
	dir := t.TempDir()
	layout := filepath.Join(dir, "oci")
	pushRef := reg.Host + "/catalogsync/catalogsync:test"
	cmd := exec.Command("bash", filepath.Join(deployDir(t), "image", "build.sh"),
		"--oci", layout, "--tag", "test", "--push", pushRef, "--plain-http")
	cmd.Dir = t.TempDir() // the script finds the repository itself
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("deploy/image/build.sh: %v\n%s", err, out)
	}

	h := config.HostNewName(reg.Host)
	h.TLS = config.TLSDisabled
	rc := regclient.New(regclient.WithConfigHost(*h))
	ctx := context.Background()
	lr, _ := ref.New("ocidir://" + layout + ":test")
	rr, _ := ref.New(pushRef)
	m, err := rc.ManifestGet(ctx, lr)
	if err != nil {
		t.Fatalf("the OCI layout holds no image tagged test: %v\n%s", err, out)
	}
	pushed, err := rc.ManifestHead(ctx, rr)
	if err != nil || pushed.GetDescriptor().Digest != m.GetDescriptor().Digest {
		t.Fatalf("registry has %v (err %v), the layout %s", pushed, err, m.GetDescriptor().Digest)
	}
	if !strings.Contains(string(out), "@"+m.GetDescriptor().Digest.String()) {
		t.Errorf("build.sh did not print the image's digest %s:\n%s", m.GetDescriptor().Digest, out)
	}
	im := m.(manifest.Imager)
	cd, _ := im.GetConfig()
	cfg, err := rc.BlobGetOCIConfig(ctx, lr, cd)
	if err != nil {
		t.Fatal(err)
	}
	img := builtImage{config: cfg.GetConfig(), rootfs: filepath.Join(dir, "rootfs"), files: map[string]*tar.Header{}, size: cd.Size}
	layers, _ := im.GetLayers()
	for _, l := range layers {
		img.size += l.Size
		br, err := rc.BlobGet(ctx, lr, l)
		if err != nil {
			t.Fatal(err)
		}
		err = unpackLayer(br, img.rootfs, img.files)
		br.Close()
		if err != nil {
			t.Fatalf("layer %s: %v", l.Digest, err)
		}
	}
	return img
}

// unpackLayer extracts a gzip tar layer into root, keeping modes and
// owners, and records each entry's header by its path.
func unpackLayer(r io.Reader, root string, files map[string]*tar.Header) error {
	gz, err := gzip.NewReader(r)
	if err != nil {
		return err
	}
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		name := filepath.Clean("/" + h.Name)
		if name != "/"+strings.TrimSuffix(h.Name, "/") {
			return errors.New("entry name is not a clean relative path: " + h.Name)
		}
		files[name] = h
		p := filepath.Join(root, name)
		switch h.Typeflag {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeReg:
			err = writeFileFrom(p, tr)
		default:
			return errors.New("unexpected entry type in " + h.Name)
		}
		if err == nil {
			err = os.Lchown(p, h.Uid, h.Gid)
		}
		if err == nil {
			err = os.Chmod(p, h.FileInfo().Mode()&(os.ModePerm|os.ModeSticky))
		}
		if err != nil {
			return err
		}
	}
}

func writeFileFrom(p string, r io.Reader) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	f, err := os.Create(p)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, r); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// TestImage builds the image without a container engine (the script a
// user runs), pushes it to a real registry, and checks what a cluster
// gets: user 65532, port 8080, OCI labels naming this commit, a CA bundle,
// and an entrypoint that serves /healthz when started as the image says,
// in a chroot of the unpacked layers, as that user.
func TestImage(t *testing.T) {
	img := buildImage(t)
	t.Logf("image size (config and compressed layers): %d bytes (%.1f MiB)", img.size, float64(img.size)/(1<<20))

	t.Run("config", func(t *testing.T) {
		c := img.config.Config
		if c.User != "65532:65532" {
			t.Errorf("User %q, want 65532:65532", c.User)
		}
		if ports := slices.Sorted(maps.Keys(c.ExposedPorts)); !slices.Equal(ports, []string{"8080/tcp"}) {
			t.Errorf("ExposedPorts %v, want [8080/tcp]", ports)
		}
		rev, err := exec.Command("git", "-C", repoRoot(t), "rev-parse", "HEAD").Output()
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]string{
			"org.opencontainers.image.source":   "https://github.com/catalogsync/catalogsync",
			"org.opencontainers.image.revision": strings.TrimSpace(string(rev)),
		}
		for k, v := range want {
			if c.Labels[k] != v {
				t.Errorf("label %s = %q, want %q", k, c.Labels[k], v)
			}
		}
		if c.Labels["org.opencontainers.image.version"] == "" {
			t.Error("no org.opencontainers.image.version label")
		}
		if img.config.OS != "linux" || img.config.Created == nil {
			t.Errorf("os %q created %v", img.config.OS, img.config.Created)
		}
	})

	t.Run("files", func(t *testing.T) {
		checkImageFiles(t, img)
	})

	t.Run("entrypoint serves healthz as user 65532 in a chroot", func(t *testing.T) {
		if os.Geteuid() != 0 {
			t.Skip("chroot needs root (tests run as root in CI)")
		}
		runImage(t, img)
	})

	t.Run("Dockerfile describes the same image", func(t *testing.T) {
		compareDockerfile(t, img)
	})
}

// checkImageFiles: only what the image needs, owned and moded for a
// non-root user on a read-only root filesystem.
func checkImageFiles(t *testing.T, img builtImage) {
	want := map[string]struct {
		uid  int
		mode os.FileMode
	}{
		"/usr/local/bin/catalogsync":         {0, 0o755},
		"/usr/local/bin/catalogsync-reader":  {0, 0o755},
		"/etc/passwd":                        {0, 0o644},
		"/etc/group":                         {0, 0o644},
		"/etc/ssl/certs/ca-certificates.crt": {0, 0o644},
		"/tmp":                               {0, 0o777 | os.ModeSticky},
		"/var/lib/catalogsync":               {65532, 0o755},
	}
	for p, w := range want {
		h, ok := img.files[p]
		if !ok {
			t.Errorf("image has no %s", p)
			continue
		}
		if m := h.FileInfo().Mode() & (os.ModePerm | os.ModeSticky); h.Uid != w.uid || m != w.mode {
			t.Errorf("%s: uid %d mode %v, want uid %d mode %v", p, h.Uid, m, w.uid, w.mode)
		}
	}
	var files []string
	for p, h := range img.files {
		if h.Typeflag == tar.TypeReg {
			files = append(files, p)
		}
	}
	sort.Strings(files)
	if len(files) != 5 {
		t.Errorf("image files %v, want only the two binaries, passwd, group and the CA bundle", files)
	}
	// The binary says which commit it is (catalogsync version reads it).
	bi, err := buildinfo.ReadFile(filepath.Join(img.rootfs, "usr", "local", "bin", "catalogsync"))
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range bi.Settings {
		settings[s.Key] = s.Value
	}
	if settings["CGO_ENABLED"] != "0" || settings["-trimpath"] != "true" {
		t.Errorf("binary build info: CGO_ENABLED %q, -trimpath %q", settings["CGO_ENABLED"], settings["-trimpath"])
	}
	// Go finds no repository in a git worktree (.git is a file there).
	if fi, err := os.Stat(filepath.Join(repoRoot(t), ".git")); err == nil && fi.IsDir() {
		rev, _ := exec.Command("git", "-C", repoRoot(t), "rev-parse", "HEAD").Output()
		if got := settings["vcs.revision"]; got != strings.TrimSpace(string(rev)) {
			t.Errorf("binary's vcs.revision %q, HEAD %s", got, rev)
		}
	}
	pw, _ := os.ReadFile(filepath.Join(img.rootfs, "etc", "passwd"))
	if !strings.Contains(string(pw), "\nnonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd has no user 65532:\n%s", pw)
	}
	ca, _ := os.ReadFile(filepath.Join(img.rootfs, "etc", "ssl", "certs", "ca-certificates.crt"))
	if pool := x509.NewCertPool(); !pool.AppendCertsFromPEM(ca) || len(bytes.Split(ca, []byte("BEGIN CERTIFICATE"))) < 50 {
		t.Errorf("the CA bundle holds %d certificates, want a full set", len(bytes.Split(ca, []byte("BEGIN CERTIFICATE")))-1)
	}
}

// runImage starts the entrypoint and command of the image config in a
// chroot of its root filesystem, as the config's user, with its env and
// its default store, and waits for /healthz; the store folder must end
// up written by that user.
func runImage(t *testing.T, img builtImage) {
	t.Helper()
	c := img.config.Config
	uid, gid, ok := strings.Cut(c.User, ":")
	u, err1 := strconv.Atoi(uid)
	g, err2 := strconv.Atoi(gid)
	if !ok || err1 != nil || err2 != nil {
		t.Fatalf("User %q is not uid:gid", c.User)
	}
	port := freeport.Port(t)
	args := append(slices.Clone(c.Entrypoint[1:]), c.Cmd...)
	args = append(args, "--addr=127.0.0.1:"+strconv.Itoa(port))
	cmd := &exec.Cmd{
		Path: c.Entrypoint[0],
		Args: append([]string{c.Entrypoint[0]}, args...),
		Env:  c.Env,
		Dir:  "/",
		SysProcAttr: &syscall.SysProcAttr{
			Chroot:     img.rootfs,
			Credential: &syscall.Credential{Uid: uint32(u), Gid: uint32(g)},
			Setpgid:    true,
		},
	}
	var logs logbuf.Buffer
	cmd.Stdout, cmd.Stderr = &logs, &logs
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %v in chroot %s: %v", cmd.Args, img.rootfs, err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})

	url := "http://127.0.0.1:" + strconv.Itoa(port) + "/healthz"
	for i := 0; ; i++ {
		select {
		case err := <-exited:
			t.Fatalf("the image's entrypoint %v exited: %v\n%s", cmd.Args, err, logs.String())
		case <-time.After(200 * time.Millisecond):
		}
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if i > 600 {
			t.Fatalf("GET %s never answered 200:\n%s", url, logs.String())
		}
	}
	st, err := os.ReadFile("/proc/" + strconv.Itoa(cmd.Process.Pid) + "/status")
	if err != nil || !strings.Contains(string(st), "\nUid:\t"+uid+"\t") {
		t.Errorf("the process does not run as uid %s: %v\n%s", uid, err, st)
	}
	// The default store (CATALOGSYNC_STORE) is where the non-root user
	// may write: serve has created its folders there.
	entries, err := os.ReadDir(filepath.Join(img.rootfs, "var", "lib", "catalogsync"))
	if err != nil || len(entries) == 0 {
		t.Errorf("serve wrote nothing to its store /var/lib/catalogsync (%v); log:\n%s", err, logs.String())
	}
}

// compareDockerfile: the Dockerfile's final stage sets the same user,
// ports, labels, env, entrypoint and command as the built image, puts its
// files where the image has them, and builds the binary the same way.
func compareDockerfile(t *testing.T, img builtImage) {
	df, err := parseDockerfile(filepath.Join(repoRoot(t), "Dockerfile"))
	if err != nil {
		t.Fatal(err)
	}
	c := img.config.Config
	if df.user != c.User {
		t.Errorf("Dockerfile USER %q, image %q", df.user, c.User)
	}
	var ports []string
	for _, p := range df.expose {
		if !strings.Contains(p, "/") {
			p += "/tcp"
		}
		ports = append(ports, p)
	}
	if slices.Sort(ports); !slices.Equal(ports, slices.Sorted(maps.Keys(c.ExposedPorts))) {
		t.Errorf("Dockerfile EXPOSE %v, image %v", ports, c.ExposedPorts)
	}
	if got, want := slices.Sorted(maps.Keys(df.labels)), slices.Sorted(maps.Keys(c.Labels)); !slices.Equal(got, want) {
		t.Errorf("Dockerfile LABEL keys %v, image %v", got, want)
	}
	for k, v := range df.labels {
		if !strings.Contains(v, "${") && c.Labels[k] != v {
			t.Errorf("LABEL %s: Dockerfile %q, image %q", k, v, c.Labels[k])
		}
	}
	env := map[string]string{}
	for _, e := range c.Env {
		k, v, _ := strings.Cut(e, "=")
		env[k] = v
	}
	if !maps.Equal(df.env, env) {
		t.Errorf("Dockerfile ENV %v, image %v", df.env, env)
	}
	if !slices.Equal(df.entrypoint, c.Entrypoint) || !slices.Equal(df.cmd, c.Cmd) {
		t.Errorf("Dockerfile ENTRYPOINT %q CMD %q, image %q %q", df.entrypoint, df.cmd, c.Entrypoint, c.Cmd)
	}
	for _, d := range df.copyDests {
		if _, ok := img.files[filepath.Clean(d)]; !ok {
			t.Errorf("Dockerfile copies to %s, which the image lacks", d)
		}
	}
	build := strings.Join(df.runs, "\n")
	for _, want := range []string{"CGO_ENABLED=0 go build -trimpath", `-ldflags="-s -w -X main.version=`} {
		if !strings.Contains(build, want) {
			t.Errorf("the Dockerfile's build lacks %s", want)
		}
	}
	// The users: every line of the image's passwd and group is printed by
	// the Dockerfile's build stage.
	for _, f := range []string{"passwd", "group"} {
		b, _ := os.ReadFile(filepath.Join(img.rootfs, "etc", f))
		for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
			if !strings.Contains(build, l+`\n`) {
				t.Errorf("the Dockerfile does not write /etc/%s line %q", f, l)
			}
		}
	}
}
