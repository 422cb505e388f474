package status

import "testing"

// A ClusterCatalog's reference is parsed when it changes, not at every
// lookup of the informer's cache (each lookup reads the object again).
func TestImageCacheParsesAReferenceOnce(t *testing.T) {
	var c imageCache
	const v1, v2 = "registry.test/acme/cat:v1", "registry.test/acme/cat:v2"
	first := c.parse("cat", v1)
	if allocs := testing.AllocsPerRun(10, func() {
		if c.parse("cat", v1) != first {
			t.Fatal("the reference read differently")
		}
	}); allocs != 0 {
		t.Errorf("a lookup of an unchanged reference allocates %v times: it is parsed again", allocs)
	}
	if got := c.parse("cat", v2); got.String() != v2 {
		t.Errorf("after the spec changed: %s, want %s", got, v2)
	}
	c.forget("cat")
	if len(c.m) != 0 {
		t.Errorf("a deleted catalog's reference is kept: %v", c.m)
	}
}
