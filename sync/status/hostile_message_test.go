package status

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/catalogsync/catalogsync/sync/catalogspec"
	"github.com/catalogsync/catalogsync/sync/pipeline"
	"github.com/catalogsync/catalogsync/test/imagebuild"
)

// hostileCatalog is an image of 200 packages with invalid 50 KB names,
// each in a folder whose name carries a terminal escape, a bell, a
// bidirectional override and bytes that are not UTF-8; the first name is
// short, so its folder shows within the message.
func hostileCatalog() imagebuild.Image {
	var es []imagebuild.Entry
	for i := range 200 {
		pad := strings.Repeat("X", 50<<10)
		if i == 0 {
			pad = "X"
		}
		es = append(es, imagebuild.Entry{
			Name: fmt.Sprintf("configs/p%03d-\x1b[2J\a\u202e\xff\xfe/catalog.json", i),
			Body: fmt.Appendf(nil, `{"schema":"olm.package","name":"Bad-%03d-%s"}`+"\n", i, pad),
		})
	}
	return imagebuild.Image{Layers: []imagebuild.Layer{{Entries: es}}, Labels: map[string]string{imagebuild.ConfigsLabel: "/configs"}}
}

// TestHostileCatalogMessageRealAPIServer: the Progressing message of a
// failed sync of a hostile catalog, as the API server stores it, is
// bounded, valid UTF-8 and free of control characters and overrides.
func TestHostileCatalogMessageRealAPIServer(t *testing.T) {
	c := startCluster(t)
	r := startRegistry(t)
	image, _ := r.push("acme/hostile:v1", hostileCatalog())
	c.create(t, "hostile", image)
	rec := record(t, c, "hostile")
	cc := NewClusterCatalogs(c.dyn)
	w, err := NewWriter(c.dyn, cc, r.store, testBaseURL)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, 2)
	go func() { cc.Run(ctx); done <- struct{}{} }()
	go func() { w.Run(ctx); done <- struct{}{} }()
	defer func() { cancel(); <-done; <-done }()
	if _, err := r.pl.Run(ctx, catalogspec.Catalog{Name: "hostile", Image: catalogspec.ParseImage(image)}, w); err == nil {
		t.Fatal("the hostile catalog was published")
	}
	v, _ := rec.wait(30*time.Second, "Progressing of the failed sync", func(v seen) bool {
		cond := v.status.Condition(TypeProgressing)
		return cond != nil && strings.Contains(cond.Message, string(pipeline.ReasonInvalidCatalog))
	})
	msg := v.status.Condition(TypeProgressing).Message
	if !strings.Contains(msg, "Bad-000") || len(msg) > maxMessage || !utf8.ValidString(msg) {
		t.Fatalf("message of %d bytes (valid UTF-8 %v): %.300q", len(msg), utf8.ValidString(msg), msg)
	}
	for _, ch := range msg {
		if unicode.IsControl(ch) || ch == '\u202e' {
			t.Fatalf("message carries %U: %.300q", ch, msg)
		}
	}
}

// TestFailureMessageOfHostileText: a failure quoting megabytes of names
// and paths with control characters, overrides and bytes that are not
// UTF-8 makes a bounded, clean message.
func TestFailureMessageOfHostileText(t *testing.T) {
	var b strings.Builder
	b.WriteString("invalid catalog: 200 problem(s):")
	for i := range 200 {
		name := strings.Repeat("X", 50<<10)
		if i == 0 {
			name = "X" // its path shows within the message
		}
		fmt.Fprintf(&b, "\n  package %q: invalid package name (configs/p%03d-\x1b[2J\a\u202e\xff\xfe/catalog.json)", name, i)
	}
	msg := failureMessage(&pipeline.Error{Phase: pipeline.PhaseValidating, Reason: pipeline.ReasonInvalidCatalog, Err: errors.New(b.String())})
	if len(msg) > maxMessage || !utf8.ValidString(msg) || !strings.HasSuffix(msg, "…") {
		t.Fatalf("message of %d bytes (valid UTF-8 %v): %.300q", len(msg), utf8.ValidString(msg), msg)
	}
	for _, ch := range msg {
		if unicode.IsControl(ch) || ch == '\u202e' {
			t.Fatalf("message carries %U: %.300q", ch, msg)
		}
	}
}
