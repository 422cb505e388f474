package fs

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/catalogsync/catalogsync/storage"
	"github.com/catalogsync/catalogsync/storage/storagetest"
)

func newStore(t testing.TB, root string) *Store {
	t.Helper()
	s, err := New(root)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func TestConformance(t *testing.T) {
	storagetest.Run(t, func(t *testing.T) storage.Store {
		return newStore(t, t.TempDir())
	})
}

// tempFiles lists every backend temp file under root, straight from disk.
func tempFiles(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	filepath.WalkDir(root, func(p string, d iofs.DirEntry, err error) error {
		if err == nil && strings.HasPrefix(d.Name(), TempPrefix) {
			out = append(out, p)
		}
		return nil
	})
	return out
}

type errReader struct{ n int }

func (e *errReader) Read(p []byte) (int, error) {
	if e.n <= 0 {
		return 0, errors.New("broken")
	}
	m := min(len(p), e.n)
	e.n -= m
	return m, nil
}

func TestFailedPutRemovesTempFile(t *testing.T) {
	root := t.TempDir()
	s := newStore(t, root)
	ctx := context.Background()
	if _, err := s.Put(ctx, "a/b", &errReader{n: 3 << 20}); err == nil {
		t.Fatal("Put with failing reader succeeded")
	}
	c, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := s.PutIf(ctx, "a/c", []byte("x"), "nope"); !errors.Is(err, storage.ErrPrecondition) {
		t.Fatal(err)
	}
	if _, err := s.Put(c, "a/d", strings.NewReader("x")); err == nil {
		t.Fatal("cancelled Put succeeded")
	}
	if left := tempFiles(t, root); len(left) != 0 {
		t.Errorf("temp files left behind: %q", left)
	}
}

func TestTempLeftovers(t *testing.T) {
	root := t.TempDir()
	s := newStore(t, root)
	ctx := context.Background()
	if _, err := s.Put(ctx, "a/obj", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	// What a writer killed between create and rename leaves behind.
	crashed := []string{
		filepath.Join(root, "a", TempPrefix+"0123456789abcdef"),
		filepath.Join(root, TempPrefix+"fedcba9876543210"),
	}
	os.MkdirAll(filepath.Join(root, "b"), 0o755)
	crashed = append(crashed, filepath.Join(root, "b", TempPrefix+"00"))
	for _, p := range crashed {
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	list, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Key != "a/obj" {
		t.Errorf("List shows temp or lock files: %+v", list)
	}
	for _, k := range []string{TempPrefix + "fedcba9876543210", "a/" + TempPrefix + "x", TempPrefix + "d/x", lockName} {
		if _, err := s.Stat(ctx, k); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("Stat(%q) = %v, want ErrInvalidKey for a reserved name", k, err)
		}
		if _, err := s.Put(ctx, k, strings.NewReader("x")); !errors.Is(err, storage.ErrInvalidKey) {
			t.Errorf("Put(%q) = %v, want ErrInvalidKey for a reserved name", k, err)
		}
	}
	// Fresh leftovers might belong to a live writer: kept.
	if n, err := s.CleanTemp(ctx, time.Hour); err != nil || n != 0 {
		t.Errorf("CleanTemp of fresh files = %d, %v", n, err)
	}
	old := time.Now().Add(-2 * time.Hour)
	for _, p := range crashed[:2] {
		os.Chtimes(p, old, old)
	}
	if n, err := s.CleanTemp(ctx, time.Hour); err != nil || n != 2 {
		t.Errorf("CleanTemp = %d, %v; want 2 removed", n, err)
	}
	if _, err := os.Stat(crashed[2]); err != nil {
		t.Errorf("fresh temp file removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(root, lockName)); err != nil {
		t.Errorf("lock file: %v", err)
	}
	if got, err := s.Stat(ctx, "a/obj"); err != nil || got.Size != 1 {
		t.Errorf("object after CleanTemp: %+v, %v", got, err)
	}
}

func TestSymlinkEscape(t *testing.T) {
	base := t.TempDir()
	root := filepath.Join(base, "root")
	outside := filepath.Join(base, "outside")
	os.MkdirAll(outside, 0o755)
	secret := filepath.Join(outside, "secret")
	os.WriteFile(secret, []byte("secret"), 0o644)
	s := newStore(t, root)
	ctx := context.Background()
	links := map[string]string{
		"dirlink":         outside,                         // absolute, to a directory
		"rellink":         "../outside",                    // relative, to a directory
		"filelink":        secret,                          // absolute, to a file
		"relfile":         "../outside/secret",             // relative, to a file
		"sub/deeplink":    "../../outside",                 // from a subdirectory
		"sub/loop":        "loop",                          // to itself
		"sub/inside":      "../sub",                        // stays inside, then
		"sub/insideout":   "inside/../../outside",          // leaves through it
		"sub/viaabsolute": filepath.Join(root, "sub", "x"), // absolute, even if inside
	}
	os.MkdirAll(filepath.Join(root, "sub"), 0o755)
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(root, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, key := range []string{
		"dirlink/secret", "rellink/secret", "filelink", "relfile", "sub/deeplink/secret",
		"sub/loop", "sub/insideout/secret", "sub/viaabsolute",
	} {
		if _, err := s.Stat(ctx, key); err == nil {
			t.Errorf("Stat(%q) succeeded through a symlink", key)
		}
		if rc, err := s.Get(ctx, key, 0, -1); err == nil {
			b, _ := io.ReadAll(rc)
			rc.Close()
			t.Errorf("Get(%q) read %q through a symlink", key, b)
		}
		s.Delete(ctx, key)
		if b, err := os.ReadFile(secret); err != nil || string(b) != "secret" {
			t.Fatalf("after Delete(%q) the outside file is %q, %v", key, b, err)
		}
	}
	for _, key := range []string{"dirlink/new", "rellink/new", "sub/deeplink/new", "sub/insideout/new", "dirlink/d/new"} {
		if _, err := s.Put(ctx, key, strings.NewReader("pwned")); err == nil {
			t.Errorf("Put(%q) succeeded through a symlink", key)
		}
		if _, err := s.PutIf(ctx, key, []byte("pwned"), ""); err == nil {
			t.Errorf("PutIf(%q) succeeded through a symlink", key)
		}
	}
	// Replacing a key that is a symlink replaces the link, never its target.
	if _, err := s.Put(ctx, "filelink", strings.NewReader("mine")); err != nil {
		t.Errorf("Put over a symlink key: %v", err)
	}
	if b, _ := os.ReadFile(secret); string(b) != "secret" {
		t.Errorf("outside file changed: %q", b)
	}
	entries, _ := os.ReadDir(outside)
	if len(entries) != 1 {
		t.Errorf("files appeared outside the root: %v", entries)
	}
	list, err := s.List(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range list {
		if in.Key != "filelink" {
			t.Errorf("List shows %q", in.Key)
		}
	}
	if n, err := s.CleanTemp(ctx, 0); err != nil || n != 0 {
		t.Errorf("CleanTemp = %d, %v", n, err)
	}
	// Deleting the last object below a symlinked directory must not
	// unlink the symlink that stands in for a parent.
	if _, err := s.Put(ctx, "sub/inside/obj", strings.NewReader("x")); err != nil {
		t.Fatalf("Put through an in-root symlink: %v", err)
	}
	if err := s.Delete(ctx, "sub/inside/obj"); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Lstat(filepath.Join(root, "sub", "inside")); err != nil || fi.Mode()&os.ModeSymlink == 0 {
		t.Errorf("in-root symlink removed by Delete: %v", err)
	}
}

func TestETagChangesOnIdenticalRewrite(t *testing.T) {
	s := newStore(t, t.TempDir())
	ctx := context.Background()
	seen := map[string]bool{}
	for i := range 50 {
		var in storage.Info
		var err error
		if i%2 == 0 {
			in, err = s.Put(ctx, "k", strings.NewReader("same"))
		} else {
			in, err = s.PutIf(ctx, "k", []byte("same"), stat(t, s, "k").ETag)
		}
		if err != nil {
			t.Fatal(err)
		}
		if seen[in.ETag] {
			t.Fatalf("write %d: ETag %q repeats", i, in.ETag)
		}
		seen[in.ETag] = true
	}
}

func stat(t *testing.T, s *Store, key string) storage.Info {
	t.Helper()
	in, err := s.Stat(context.Background(), key)
	if err != nil {
		t.Fatal(err)
	}
	return in
}

func TestDeleteRemovesEmptyParents(t *testing.T) {
	root := t.TempDir()
	s := newStore(t, root)
	ctx := context.Background()
	for _, k := range []string{"a/b/c/d", "a/x"} {
		if _, err := s.Put(ctx, k, strings.NewReader("x")); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Delete(ctx, "a/b/c/d"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "a", "b")); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("empty a/b kept: %v", err)
	}
	if err := s.Delete(ctx, "a/x"); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "a")); !errors.Is(err, iofs.ErrNotExist) {
		t.Errorf("empty a kept: %v", err)
	}
	if _, err := os.Stat(root); err != nil {
		t.Errorf("root removed: %v", err)
	}
	// Deleting a key that names a directory deletes nothing.
	if _, err := s.Put(ctx, "d/e", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(ctx, "d"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Stat(ctx, "d/e"); err != nil {
		t.Errorf("Delete of a directory key removed its content: %v", err)
	}
}

// Two Stores on one root exclude each other through flock alone.
func TestPutIfAcrossStores(t *testing.T) {
	root := t.TempDir()
	stores := []*Store{newStore(t, root), newStore(t, root), newStore(t, root), newStore(t, root)}
	ctx := context.Background()
	const perWorker = 30
	var wg sync.WaitGroup
	for i, s := range stores {
		for range 2 {
			wg.Go(func() {
				if err := increment(ctx, s, "counter", perWorker); err != nil {
					t.Errorf("store %d: %v", i, err)
				}
			})
		}
	}
	wg.Wait()
	if got := readCounter(t, stores[0], "counter"); got != 2*len(stores)*perWorker {
		t.Errorf("counter = %d, want %d (lost updates)", got, 2*len(stores)*perWorker)
	}
}

// increment adds n to the decimal counter at key, one CAS at a time; a lost
// update anywhere shows as a final count below the number of increments.
func increment(ctx context.Context, s storage.Store, key string, n int) error {
	for done := 0; done < n; {
		etag, cur := "", 0
		in, err := s.Stat(ctx, key)
		switch {
		case err == nil:
			etag = in.ETag
			rc, err := s.Get(ctx, key, 0, -1)
			if errors.Is(err, storage.ErrNotExist) {
				continue
			}
			if err != nil {
				return err
			}
			b, err := io.ReadAll(rc)
			rc.Close()
			if err != nil {
				return err
			}
			if cur, err = strconv.Atoi(string(b)); err != nil {
				return fmt.Errorf("counter %q: %w", b, err)
			}
		case !errors.Is(err, storage.ErrNotExist):
			return err
		}
		_, err = s.PutIf(ctx, key, []byte(strconv.Itoa(cur+1)), etag)
		if errors.Is(err, storage.ErrPrecondition) {
			continue
		}
		if err != nil {
			return err
		}
		done++
	}
	return nil
}

func readCounter(t *testing.T, s storage.Store, key string) int {
	t.Helper()
	rc, err := s.Get(context.Background(), key, 0, -1)
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	b, _ := io.ReadAll(rc)
	n, err := strconv.Atoi(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

const childEnv = "CATALOGSYNC_FS_TEST_CHILD_ROOT"

// TestPutIfAcrossProcesses re-runs the test binary as several children that
// increment one counter on a shared root.
func TestPutIfAcrossProcesses(t *testing.T) {
	if root := os.Getenv(childEnv); root != "" {
		s, err := New(root)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		n, _ := strconv.Atoi(os.Getenv(childEnv + "_N"))
		if err := increment(context.Background(), s, "counter", n); err != nil {
			t.Fatal(err)
		}
		return
	}
	if testing.Short() {
		t.Skip("spawns processes")
	}
	root := t.TempDir()
	const procs, perProc = 4, 40
	cmds := make([]*exec.Cmd, procs)
	outs := make([]bytes.Buffer, procs)
	for i := range cmds {
		cmd := exec.Command(os.Args[0], "-test.run=^TestPutIfAcrossProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(), childEnv+"="+root, fmt.Sprintf("%s_N=%d", childEnv, perProc))
		cmd.Stdout, cmd.Stderr = &outs[i], &outs[i]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[i] = cmd
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Errorf("child %d: %v\n%s", i, err, outs[i].String())
		}
	}
	s := newStore(t, root)
	if got := readCounter(t, s, "counter"); got != procs*perProc {
		t.Errorf("counter = %d, want %d (lost updates across processes)", got, procs*perProc)
	}
}

// A waiter for the lock gives up when its context ends.
func TestLockHonoursContext(t *testing.T) {
	root := t.TempDir()
	a, b := newStore(t, root), newStore(t, root)
	unlock, err := a.lock(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := b.PutIf(ctx, "k", []byte("x"), ""); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("PutIf while another Store holds the lock = %v, want DeadlineExceeded", err)
	}
	unlock()
	if _, err := b.PutIf(context.Background(), "k", []byte("x"), ""); err != nil {
		t.Errorf("PutIf after unlock: %v", err)
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New(""); err == nil {
		t.Error("New(\"\") succeeded")
	}
	f := filepath.Join(t.TempDir(), "file")
	os.WriteFile(f, nil, 0o644)
	if _, err := New(f); err == nil {
		t.Error("New on a file succeeded")
	}
}

// Put must not leave the object half visible when the key's parent is a
// file: the error is reported and nothing changes.
func TestPutUnderFile(t *testing.T) {
	s := newStore(t, t.TempDir())
	ctx := context.Background()
	if _, err := s.Put(ctx, "f", strings.NewReader("x")); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Put(ctx, "f/g", strings.NewReader("y")); err == nil {
		t.Error("Put below a file succeeded")
	}
	if got := stat(t, s, "f"); got.Size != 1 {
		t.Errorf("f changed: %+v", got)
	}
}
