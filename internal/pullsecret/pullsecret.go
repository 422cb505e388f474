// Package pullsecret follows one kubernetes.io/dockerconfigjson Secret and
// serves its registry credentials to the image source, so a rotated pull
// secret is used from the next registry operation on, without a restart.
package pullsecret

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"

	"github.com/catalogsync/catalogsync/internal/kubeinformer"
	"github.com/catalogsync/catalogsync/sync/source"
)

// ErrInvalid is wrapped by errors about a Secret that holds no usable
// docker config. Errors never quote the Secret's content.
var ErrInvalid = errors.New("invalid pull secret")

// Secret is the part of a core/v1 Secret that holds a docker config. Not
// k8s.io/api/core/v1's type: that package allocates about 100 KB in its
// init at every start of every command, for this one type.
type Secret struct {
	Type string            `json:"type"`
	Data map[string][]byte `json:"data"`
}

// The Secret types and keys of a docker config.
const (
	typeDockerConfigJSON = "kubernetes.io/dockerconfigjson"
	keyDockerConfigJSON  = ".dockerconfigjson"
	typeDockercfg        = "kubernetes.io/dockercfg"
	keyDockercfg         = ".dockercfg"
)

var secrets = schema.GroupVersionResource{Version: "v1", Resource: "secrets"}

// Watcher holds the credentials of one Secret, kept current by an
// informer on that Secret alone.
type Watcher struct {
	ns, name string
	dyn      dynamic.Interface
	log      *slog.Logger

	mu      sync.RWMutex
	creds   map[string]source.Credential
	sum     [32]byte
	version uint64
}

// Option configures a Watcher.
type Option func(*Watcher)

// WithLogger sets the logger.
func WithLogger(l *slog.Logger) Option { return func(w *Watcher) { w.log = l } }

// ParseName reads "namespace/name".
func ParseName(s string) (ns, name string, err error) {
	ns, name, ok := strings.Cut(s, "/")
	if !ok || ns == "" || name == "" || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("pull secret %q: want namespace/name", s)
	}
	return ns, name, nil
}

// New returns a Watcher of the Secret ns/name; Start runs it. The
// dynamic client, not the typed clientset: that one links every API
// group's client (about 230 packages) for this one Secret.
func New(dyn dynamic.Interface, ns, name string, opts ...Option) *Watcher {
	w := &Watcher{ns: ns, name: name, dyn: dyn, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(w)
	}
	return w
}

// Credentials implements source.CredentialProvider.
func (w *Watcher) Credentials() (map[string]source.Credential, uint64) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	return w.creds, w.version
}

// Start runs the informer until ctx ends and returns once it has listed
// the Secret or wait has passed (a Secret the service may not read would
// otherwise hold the start for ever). A missing Secret is not an error:
// pulls go without its credentials until it is created.
func (w *Watcher) Start(ctx context.Context, wait time.Duration) error {
	inf := kubeinformer.New(w.dyn, secrets, w.ns, 0,
		func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + w.name })
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { w.set(obj) },
		UpdateFunc: func(_, obj any) { w.set(obj) },
		DeleteFunc: func(any) { w.store(nil, [32]byte{}, "deleted") },
	}); err != nil {
		return err
	}
	go inf.Run(ctx.Done())
	wctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	if !cache.WaitForCacheSync(wctx.Done(), inf.HasSynced) {
		return fmt.Errorf("pull secret %s/%s: not listed within %s (may the service get, list and watch Secrets there?)", w.ns, w.name, wait)
	}
	return nil
}

func (w *Watcher) set(obj any) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok || u.GetName() != w.name {
		return
	}
	s := &Secret{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, s); err != nil {
		w.log.Warn("pull secret not usable; keeping the previous credentials", "secret", w.ns+"/"+w.name, "err", fmt.Errorf("%w: not a Secret", ErrInvalid))
		return
	}
	creds, err := Parse(s)
	if err != nil {
		// The previous credentials stay: a bad edit must not stop pulls.
		w.log.Warn("pull secret not usable; keeping the previous credentials", "secret", w.ns+"/"+w.name, "err", err)
		return
	}
	var sum [32]byte
	if b, err := json.Marshal(creds); err == nil { //nolint:gosec // G117: marshalled only to be hashed, never stored or sent
		sum = sha256.Sum256(b)
	}
	w.store(creds, sum, "updated")
}

func (w *Watcher) store(creds map[string]source.Credential, sum [32]byte, what string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if sum == w.sum && (creds == nil) == (w.creds == nil) {
		return
	}
	w.creds, w.sum = creds, sum
	w.version++
	hosts := make([]string, 0, len(creds))
	for h := range creds {
		hosts = append(hosts, h)
	}
	w.log.Info("pull secret "+what, "secret", w.ns+"/"+w.name, "registries", hosts)
}

// Parse reads the registry credentials of a kubernetes.io/dockerconfigjson
// (or legacy kubernetes.io/dockercfg) Secret, by registry host.
func Parse(s *Secret) (map[string]source.Credential, error) {
	var auths map[string]dockerAuth
	switch s.Type {
	case typeDockerConfigJSON:
		var cfg struct {
			Auths map[string]dockerAuth `json:"auths"`
		}
		if err := json.Unmarshal(s.Data[keyDockerConfigJSON], &cfg); err != nil {
			return nil, fmt.Errorf("%w: %s is not a docker config", ErrInvalid, keyDockerConfigJSON)
		}
		auths = cfg.Auths
	case typeDockercfg:
		if err := json.Unmarshal(s.Data[keyDockercfg], &auths); err != nil {
			return nil, fmt.Errorf("%w: %s is not a docker config", ErrInvalid, keyDockercfg)
		}
	default:
		return nil, fmt.Errorf("%w: type %q, want %s", ErrInvalid, s.Type, typeDockerConfigJSON)
	}
	out := make(map[string]source.Credential, len(auths))
	for key, a := range auths {
		host := registryHost(key)
		c, err := a.credential()
		if err != nil || host == "" {
			return nil, fmt.Errorf("%w: entry %q: %v", ErrInvalid, host, errOr(err, "no registry host"))
		}
		out[host] = c
	}
	return out, nil
}

type dockerAuth struct {
	Auth          string `json:"auth"`
	Username      string `json:"username"`
	Password      string `json:"password"`
	IdentityToken string `json:"identitytoken"`
}

func (a dockerAuth) credential() (source.Credential, error) {
	if a.Auth != "" {
		b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(a.Auth))
		if err != nil {
			return source.Credential{}, errors.New("auth is not base64")
		}
		u, p, ok := bytes.Cut(b, []byte(":"))
		if !ok {
			return source.Credential{}, errors.New("auth is not user:password")
		}
		return source.Credential{Username: string(u), Password: string(p)}, nil
	}
	if a.IdentityToken != "" {
		// regclient's convention for identity tokens.
		return source.Credential{Username: "<token>", Password: a.IdentityToken}, nil
	}
	if a.Username == "" && a.Password == "" {
		return source.Credential{}, errors.New("no credentials")
	}
	return source.Credential{Username: a.Username, Password: a.Password}, nil
}

// registryHost turns a docker config key ("host", "https://host/v1/") into
// the registry host.
func registryHost(key string) string {
	k := strings.TrimSpace(key)
	if i := strings.Index(k, "://"); i >= 0 {
		k = k[i+3:]
	}
	k, _, _ = strings.Cut(k, "/")
	return strings.ToLower(k)
}

func errOr(err error, msg string) string {
	if err != nil {
		return err.Error()
	}
	return msg
}
