package pipeline

import "testing"

func TestFileBufSizes(t *testing.T) {
	for _, n := range []int64{0, 1, 2, 3, 4095, 4096, 4097, 400 << 10, 4 << 20, 4<<20 + 1} {
		b := getFileBuf(n)
		if int64(len(b)) != n {
			t.Fatalf("getFileBuf(%d): len %d", n, len(b))
		}
		if c := cap(b); int64(c) < n || int64(c) >= 2*max(n, 1) {
			t.Fatalf("getFileBuf(%d): cap %d, want the power of two at or above it", n, c)
		}
		putFileBuf(b)
	}
}

func TestSizeClass(t *testing.T) {
	for n, want := range map[int64]int{0: 0, 1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 4096: 12, 4097: 13} {
		if got := sizeClass(n); got != want {
			t.Errorf("sizeClass(%d) = %d, want %d", n, got, want)
		}
	}
}

// TestFileBufNotPooledWhenOdd checks a buffer whose capacity is not its
// class's (one a caller made itself) is not handed out for a larger file.
func TestFileBufNotPooledWhenOdd(t *testing.T) {
	for range 100 {
		putFileBuf(make([]byte, 0, 3000)) // class 12 is 4096
		if b := getFileBuf(4000); cap(b) < 4000 {
			t.Fatalf("getFileBuf(4000) handed out a buffer of cap %d", cap(b))
		}
	}
}

// TestFileBufReused: a buffer given back is handed out again for a file
// of its size class (the point of the pool: a full sync reads the whole
// catalog through these buffers). sync.Pool may drop it at a GC, so a few
// tries are allowed.
func TestFileBufReused(t *testing.T) {
	for range 20 {
		b := getFileBuf(5000)
		p := &b[:1][0]
		putFileBuf(b)
		if c := getFileBuf(6000); &c[:1][0] == p {
			return
		}
	}
	t.Fatal("a buffer given back was never handed out again")
}
