// Package kubeclient finds the apiserver and the credentials to talk to
// it with, as kubectl and controller-runtime do, for every part of the
// service that reads or writes the cluster: ClusterCatalog status, pull
// secrets, image mirror sets and TokenReview.
package kubeclient

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ErrKubeconfig is wrapped by errors about a kubeconfig that cannot be
// used.
var ErrKubeconfig = errors.New("unusable kubeconfig")

// Client-side rate limits: client-go's defaults (5 requests/s) would
// queue status updates of a few catalogs pulling at once.
const (
	defaultQPS   = 50
	defaultBurst = 100
)

// Config returns the apiserver connection, found in this order:
//
//  1. kubeconfig, when not "": one file, or a list in KUBECONFIG's syntax
//     (paths joined by ':', merged, the first file to set a value wins);
//  2. the files KUBECONFIG lists, when it is set;
//  3. the pod's service account (in-cluster);
//  4. ~/.kube/config.
//
// A kubeconfig is read with client-go's clientcmd: its current context,
// relative paths beside the file that names them, proxy-url,
// impersonation and exec plugins (never interactive: a server has no
// terminal to ask on). The legacy auth-provider plugins are refused.
func Config(kubeconfig string) (*rest.Config, error) {
	if kubeconfig == "" {
		kubeconfig = os.Getenv(clientcmd.RecommendedConfigPathEnvVar)
	}
	var cfg *rest.Config
	var err error
	if kubeconfig == "" {
		cfg, err = rest.InClusterConfig()
		if err != nil {
			// Outside a cluster: the home kubeconfig, as kubectl.
			cfg, err = load(&clientcmd.ClientConfigLoadingRules{Precedence: []string{clientcmd.RecommendedHomeFile}})
		}
		if err != nil {
			return nil, fmt.Errorf("no kubeconfig (--kubeconfig, KUBECONFIG or %s) and not in a cluster: %w",
				clientcmd.RecommendedHomeFile, err)
		}
	} else if cfg, err = load(rules(kubeconfig)); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrKubeconfig, kubeconfig, err)
	}
	if cfg.AuthProvider != nil {
		return nil, fmt.Errorf("%w: %s: auth-provider %q is not supported; use an exec plugin or a token",
			ErrKubeconfig, kubeconfig, cfg.AuthProvider.Name)
	}
	if cfg.ExecProvider != nil {
		ex := *cfg.ExecProvider
		ex.StdinUnavailable = true
		cfg.ExecProvider = &ex
	}
	if cfg.QPS == 0 {
		cfg.QPS, cfg.Burst = defaultQPS, defaultBurst
	}
	cfg.UserAgent = "catalogsync"
	return cfg, nil
}

// rules reads one file that must exist, or a list whose missing files
// are skipped.
func rules(kubeconfig string) *clientcmd.ClientConfigLoadingRules {
	if strings.ContainsRune(kubeconfig, filepath.ListSeparator) {
		return &clientcmd.ClientConfigLoadingRules{Precedence: filepath.SplitList(kubeconfig)}
	}
	return &clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}
}

func load(r *clientcmd.ClientConfigLoadingRules) (*rest.Config, error) {
	return clientcmd.NewNonInteractiveDeferredLoadingClientConfig(r, &clientcmd.ConfigOverrides{}).ClientConfig()
}
