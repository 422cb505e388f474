package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"k8s.io/client-go/dynamic"

	"github.com/catalogsync/catalogsync/internal/kubeclient"
	"github.com/catalogsync/catalogsync/internal/mirrorsets"
	"github.com/catalogsync/catalogsync/internal/pullsecret"
	"github.com/catalogsync/catalogsync/internal/regconf"
	"github.com/catalogsync/catalogsync/sync/source"
)

// registriesConf reads --registries-conf: the default path only when it
// exists, any other path always.
func (c *commonFlags) registriesConf() (*regconf.Config, error) {
	if c.RegConf == "" {
		return nil, nil
	}
	rc, err := regconf.Load(c.RegConf, c.RegConf == regconf.DefaultPath)
	if err != nil {
		return nil, fmt.Errorf("--registries-conf: %w", err)
	}
	return rc, nil
}

// startPullSecret follows the Secret --pull-secret names, if any, and
// returns its credentials' provider once the first list is in.
func startPullSecret(ctx context.Context, name, kubeconfig string, log *slog.Logger) (source.CredentialProvider, error) {
	if name == "" {
		return nil, nil
	}
	ns, n, err := pullsecret.ParseName(name)
	if err != nil {
		return nil, usageError{Msg: "--pull-secret: " + err.Error()}
	}
	dyn, err := dynamicClient(kubeconfig)
	if err != nil {
		return nil, err
	}
	w := pullsecret.New(dyn, ns, n, pullsecret.WithLogger(log))
	if err := w.Start(ctx, time.Minute); err != nil {
		return nil, fmt.Errorf("--pull-secret: %w", err)
	}
	return w, nil
}

// startMirrorSets follows the cluster's image mirror sets, merged after
// the registries.conf file's rules, once they are listed.
func (c *serveCmd) startMirrorSets(ctx context.Context, log *slog.Logger) (source.Mirrors, error) {
	file, err := c.registriesConf()
	if err != nil {
		return nil, err
	}
	restCfg, err := kubeclient.Config(c.Kubeconfig)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(restCfg)
	if err != nil {
		return nil, err
	}
	disc, err := mirrorsets.NewDiscovery(restCfg)
	if err != nil {
		return nil, err
	}
	w := mirrorsets.New(dyn, disc, file, log)
	if err := w.Start(ctx, time.Minute); err != nil {
		return nil, fmt.Errorf("%w (--no-image-mirror-sets turns them off)", err)
	}
	return w, nil
}
