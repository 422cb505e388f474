package status

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/client-go/tools/clientcmd/api/latest"
)

// ErrKubeconfig is returned for a kubeconfig RESTConfig cannot use.
var ErrKubeconfig = errors.New("unusable kubeconfig")

// Client-side rate limits: client-go's defaults (5 requests/s) would
// queue status updates of a few catalogs pulling at once.
const (
	defaultQPS   = 50
	defaultBurst = 100
)

// RESTConfig returns the apiserver connection: the in-cluster service
// account when kubeconfig is "", otherwise the current context of that
// kubeconfig file (server, CA, client certificate, token or token file,
// basic auth, exec plugins; not the legacy auth-provider plugins).
//
// It reads the file with clientcmd's types rather than clientcmd itself,
// which would add a module (spf13/pflag) to go.mod.
func RESTConfig(kubeconfig string) (*rest.Config, error) {
	var cfg *rest.Config
	if kubeconfig == "" {
		c, err := rest.InClusterConfig()
		if err != nil {
			return nil, fmt.Errorf("in-cluster config: %w", err)
		}
		cfg = c
	} else {
		c, err := loadKubeconfig(kubeconfig)
		if err != nil {
			return nil, err
		}
		cfg = c
	}
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = defaultQPS, defaultBurst
	}
	cfg.UserAgent = "catalogsync"
	return cfg, nil
}

func loadKubeconfig(path string) (*rest.Config, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrKubeconfig, err)
	}
	obj, _, err := latest.Codec.Decode(b, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrKubeconfig, path, err)
	}
	kc, ok := obj.(*clientcmdapi.Config)
	if !ok {
		return nil, fmt.Errorf("%w: %s: decoded as %T", ErrKubeconfig, path, obj)
	}
	kctx := kc.Contexts[kc.CurrentContext]
	if kctx == nil {
		return nil, fmt.Errorf("%w: %s: no context %q", ErrKubeconfig, path, kc.CurrentContext)
	}
	cluster := kc.Clusters[kctx.Cluster]
	if cluster == nil || cluster.Server == "" {
		return nil, fmt.Errorf("%w: %s: no server for cluster %q", ErrKubeconfig, path, kctx.Cluster)
	}
	user := kc.AuthInfos[kctx.AuthInfo]
	if user == nil {
		user = &clientcmdapi.AuthInfo{}
	}
	if user.AuthProvider != nil {
		return nil, fmt.Errorf("%w: %s: auth-provider %q is not supported; use an exec plugin or a token", ErrKubeconfig, path, user.AuthProvider.Name)
	}
	return restConfig(path, cluster, user), nil
}

// restConfig is the client configuration of one kubeconfig's cluster and
// user.
func restConfig(path string, cluster *clientcmdapi.Cluster, user *clientcmdapi.AuthInfo) *rest.Config {
	// Relative file names are relative to the kubeconfig, as kubectl reads them.
	dir := filepath.Dir(path)
	rel := func(p string) string {
		if p == "" || filepath.IsAbs(p) {
			return p
		}
		return filepath.Join(dir, p)
	}
	cfg := &rest.Config{
		Host: cluster.Server,
		TLSClientConfig: rest.TLSClientConfig{
			Insecure:   cluster.InsecureSkipTLSVerify,
			ServerName: cluster.TLSServerName,
			CAFile:     rel(cluster.CertificateAuthority),
			CAData:     cluster.CertificateAuthorityData,
			CertFile:   rel(user.ClientCertificate),
			CertData:   user.ClientCertificateData,
			KeyFile:    rel(user.ClientKey),
			KeyData:    user.ClientKeyData,
		},
		BearerToken:     user.Token,
		BearerTokenFile: rel(user.TokenFile),
		Username:        user.Username,
		Password:        user.Password,
	}
	if user.Exec != nil {
		ex := *user.Exec
		if ex.InteractiveMode == "" {
			ex.InteractiveMode = clientcmdapi.NeverExecInteractiveMode
		}
		// A server has no terminal to ask on.
		ex.StdinUnavailable = true
		cfg.ExecProvider = &ex
	}
	return cfg
}
