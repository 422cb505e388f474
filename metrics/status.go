package metrics

// LeftAlone registers the count of ClusterCatalogs found managed by
// catalogd too, whose status this service leaves alone, and returns the
// hook that counts one (status.WithLeftAlone). Calling it again returns a
// hook counting into the same series.
func (m *Metrics) LeftAlone() func(name, why string) {
	f := m.reg.family(counter, "clustercatalogs_left_alone_total",
		"ClusterCatalogs found managed by catalogd (its finalizer or status field manager), whose status is then not written.",
		[]string{"catalog"})
	return func(name, _ string) { f.with(name).inc(1) }
}
