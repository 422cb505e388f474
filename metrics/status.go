package metrics

import "github.com/prometheus/client_golang/prometheus"

// LeftAlone registers the count of ClusterCatalogs found managed by
// catalogd too, whose status this service leaves alone, and returns the
// hook that counts one (status.WithLeftAlone). Call it once.
func (m *Metrics) LeftAlone() func(name, why string) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Namespace: namespace, Name: "clustercatalogs_left_alone_total",
		Help: "ClusterCatalogs found managed by catalogd (its finalizer or status field manager), whose status is then not written.",
	}, []string{"catalog"})
	m.reg.MustRegister(c)
	return func(name, _ string) { c.WithLabelValues(name).Inc() }
}
