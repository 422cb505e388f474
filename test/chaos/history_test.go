package chaos

import (
	"encoding/json"
	"os"
	"sync"
	"time"
)

// Kinds of recorded operations.
const (
	kPush    = "push"    // a new digest pushed to a catalog's tag
	kTrigger = "trigger" // a webhook, CloudEvent or REST sync sent to one replica
	kRead    = "read"    // GET /all through the front
	kStatus  = "status"  // a ClusterCatalog status seen by the watch
	kGC      = "gc"      // one `catalogsync gc` pass
	kPointer = "pointer" // a pointer write seen on its way to the store
	kLease   = "lease"   // a lease write seen on its way to the store
	kFault   = "fault"   // a fault, from start to heal
	kFinal   = "final"   // a read after the last heal, from one replica directly
	kPull    = "pull"    // a layer GET the registry answered (from its log)
)

// op is one recorded operation. Start and End are monotonic offsets from
// the recorder's start; Wall is the wall clock at End, for comparing with
// times written into stored records (lease expiry).
type op struct {
	Kind    string        `json:"kind"`
	Start   time.Duration `json:"start"`
	End     time.Duration `json:"end"`
	Wall    time.Time     `json:"wall,omitzero"`
	Catalog string        `json:"catalog,omitempty"`
	Replica int           `json:"replica"` // -1: none or unknown
	OK      bool          `json:"ok"`
	Err     string        `json:"err,omitempty"`
	Via     string        `json:"via,omitempty"` // trigger: hook, event, rest; fault: its kind
	Gen     int           `json:"gen,omitempty"` // push: generation; read/status/final: what was seen (0: unknown)
	Digest  string        `json:"digest,omitempty"`
	Layer   string        `json:"layer,omitempty"` // push: the layer a pull GETs
	Code    int           `json:"code,omitempty"`
	Sum     string        `json:"sum,omitempty"`     // read: sha256 of the body
	Markers []int         `json:"markers,omitempty"` // read: generations named in the body
	// Status watch.
	RV           int64     `json:"rv,omitempty"`
	Serving      string    `json:"serving,omitempty"`
	LastUnpacked time.Time `json:"lastUnpacked,omitzero"`
	// Lease and pointer writes, and faults.
	Holder   string    `json:"holder,omitempty"`
	Expires  time.Time `json:"expires,omitzero"`
	StoreCut bool      `json:"storeCut,omitempty"` // fault: the replica's way to the store is cut or it is stopped
}

// recorder collects the history; safe for concurrent use.
type recorder struct {
	start time.Time
	mu    sync.Mutex
	ops   []op
}

func newRecorder() *recorder { return &recorder{start: time.Now()} }

func (r *recorder) now() time.Duration { return time.Since(r.start) }

func (r *recorder) add(o op) {
	if o.Wall.IsZero() {
		o.Wall = time.Now()
	}
	r.mu.Lock()
	r.ops = append(r.ops, o)
	r.mu.Unlock()
}

func (r *recorder) history() []op {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]op(nil), r.ops...)
}

// save writes the history as JSON lines.
func (r *recorder) save(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(f)
	for _, o := range r.history() {
		if err := enc.Encode(o); err != nil {
			f.Close()
			return err
		}
	}
	return f.Close()
}
