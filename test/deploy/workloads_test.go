package deploy_test

import (
	"fmt"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/catalogsync/catalogsync/handlers/webhook"
)

// No Knative CRDs are available offline, and hand-written ones would
// validate nothing. So the Knative objects are decoded strictly (unknown
// fields are errors) into the structs below, which mirror the fields of
// Knative's documented APIs that deploy/ uses: serving.knative.dev/v1
// Service, eventing.knative.dev/v1 Broker and Trigger, sources.knative.dev/v1
// PingSource and ApiServerSource. A misspelt or misplaced field fails; a
// value Knative's own webhook would reject may not.

type typeMeta struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
}

type meta struct {
	Name        string            `json:"name,omitempty"`
	Namespace   string            `json:"namespace,omitempty"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

type knService struct {
	typeMeta
	Metadata meta `json:"metadata"`
	Spec     struct {
		Template struct {
			Metadata meta         `json:"metadata"`
			Spec     revisionSpec `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

// revisionSpec is Knative's RevisionSpec: a pod spec subset (no pod-level
// securityContext without a feature flag) plus its own fields.
type revisionSpec struct {
	ServiceAccountName   string      `json:"serviceAccountName,omitempty"`
	ContainerConcurrency *int64      `json:"containerConcurrency,omitempty"`
	TimeoutSeconds       *int64      `json:"timeoutSeconds,omitempty"`
	Containers           []container `json:"containers"`
	Volumes              []volume    `json:"volumes,omitempty"`
}

type container struct {
	Name            string           `json:"name,omitempty"`
	Image           string           `json:"image"`
	Command         []string         `json:"command,omitempty"`
	Args            []string         `json:"args,omitempty"`
	Ports           []containerPort  `json:"ports,omitempty"`
	Env             []envVar         `json:"env,omitempty"`
	EnvFrom         []envFromSource  `json:"envFrom,omitempty"`
	ReadinessProbe  *probe           `json:"readinessProbe,omitempty"`
	LivenessProbe   *probe           `json:"livenessProbe,omitempty"`
	Resources       resources        `json:"resources"`
	SecurityContext *securityContext `json:"securityContext,omitempty"`
	VolumeMounts    []volumeMount    `json:"volumeMounts,omitempty"`
}

type containerPort struct {
	Name          string `json:"name,omitempty"`
	ContainerPort int32  `json:"containerPort"`
}

type envVar struct {
	Name      string `json:"name"`
	Value     string `json:"value,omitempty"`
	ValueFrom *struct {
		SecretKeyRef    *keyRef `json:"secretKeyRef,omitempty"`
		ConfigMapKeyRef *keyRef `json:"configMapKeyRef,omitempty"`
		FieldRef        *struct {
			FieldPath string `json:"fieldPath"`
		} `json:"fieldRef,omitempty"`
	} `json:"valueFrom,omitempty"`
}

type keyRef struct {
	Name     string `json:"name"`
	Key      string `json:"key"`
	Optional *bool  `json:"optional,omitempty"`
}

type envFromSource struct {
	ConfigMapRef *nameRef `json:"configMapRef,omitempty"`
	SecretRef    *nameRef `json:"secretRef,omitempty"`
}

type nameRef struct {
	Name     string `json:"name"`
	Optional *bool  `json:"optional,omitempty"`
}

type probe struct {
	HTTPGet *struct {
		Path   string `json:"path"`
		Port   any    `json:"port,omitempty"`
		Scheme string `json:"scheme,omitempty"`
	} `json:"httpGet,omitempty"`
	InitialDelaySeconds int32 `json:"initialDelaySeconds,omitempty"`
	PeriodSeconds       int32 `json:"periodSeconds,omitempty"`
	TimeoutSeconds      int32 `json:"timeoutSeconds,omitempty"`
	FailureThreshold    int32 `json:"failureThreshold,omitempty"`
}

type resources struct {
	Requests map[string]string `json:"requests,omitempty"`
	Limits   map[string]string `json:"limits,omitempty"`
}

type securityContext struct {
	RunAsNonRoot             *bool  `json:"runAsNonRoot,omitempty"`
	RunAsUser                *int64 `json:"runAsUser,omitempty"`
	RunAsGroup               *int64 `json:"runAsGroup,omitempty"`
	ReadOnlyRootFilesystem   *bool  `json:"readOnlyRootFilesystem,omitempty"`
	AllowPrivilegeEscalation *bool  `json:"allowPrivilegeEscalation,omitempty"`
	Capabilities             *struct {
		Drop []string `json:"drop,omitempty"`
		Add  []string `json:"add,omitempty"`
	} `json:"capabilities,omitempty"`
	SeccompProfile *struct {
		Type string `json:"type"`
	} `json:"seccompProfile,omitempty"`
}

// podSecurityContext is the pod-level securityContext of a Deployment.
type podSecurityContext struct {
	RunAsNonRoot   *bool  `json:"runAsNonRoot,omitempty"`
	RunAsUser      *int64 `json:"runAsUser,omitempty"`
	RunAsGroup     *int64 `json:"runAsGroup,omitempty"`
	FSGroup        *int64 `json:"fsGroup,omitempty"`
	SeccompProfile *struct {
		Type string `json:"type"`
	} `json:"seccompProfile,omitempty"`
}

type volumeMount struct {
	Name      string `json:"name"`
	MountPath string `json:"mountPath"`
	ReadOnly  bool   `json:"readOnly,omitempty"`
}

type volume struct {
	Name      string `json:"name"`
	ConfigMap *struct {
		Name string `json:"name"`
	} `json:"configMap,omitempty"`
	Secret *struct {
		SecretName string `json:"secretName"`
	} `json:"secret,omitempty"`
	PersistentVolumeClaim *struct {
		ClaimName string `json:"claimName"`
	} `json:"persistentVolumeClaim,omitempty"`
	EmptyDir *struct {
		SizeLimit string `json:"sizeLimit,omitempty"`
	} `json:"emptyDir,omitempty"`
}

type broker struct {
	typeMeta
	Metadata meta `json:"metadata"`
}

// destination is Knative's duckv1.Destination: a reference, a URI, or a
// URI relative to the reference's address.
type destination struct {
	Ref *struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
		Name       string `json:"name"`
		Namespace  string `json:"namespace,omitempty"`
	} `json:"ref,omitempty"`
	URI string `json:"uri,omitempty"`
	// Audience is the OIDC audience the sender requests a token for.
	Audience string `json:"audience,omitempty"`
}

type trigger struct {
	typeMeta
	Metadata meta `json:"metadata"`
	Spec     struct {
		Broker string `json:"broker"`
		Filter *struct {
			Attributes map[string]string `json:"attributes"`
		} `json:"filter,omitempty"`
		Subscriber destination `json:"subscriber"`
	} `json:"spec"`
}

type pingSource struct {
	typeMeta
	Metadata meta `json:"metadata"`
	Spec     struct {
		Schedule    string      `json:"schedule"`
		Timezone    string      `json:"timezone,omitempty"`
		ContentType string      `json:"contentType,omitempty"`
		Data        string      `json:"data,omitempty"`
		Sink        destination `json:"sink"`
	} `json:"spec"`
}

type apiServerSource struct {
	typeMeta
	Metadata meta `json:"metadata"`
	Spec     struct {
		Mode               string `json:"mode"`
		ServiceAccountName string `json:"serviceAccountName"`
		Resources          []struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		} `json:"resources"`
		Sink destination `json:"sink"`
	} `json:"spec"`
}

// The plain overlay's objects, decoded the same strict way so a field the
// checks read cannot silently sit at the wrong path.
type deployment struct {
	typeMeta
	Metadata meta `json:"metadata"`
	Spec     struct {
		Replicas *int32 `json:"replicas,omitempty"`
		Strategy struct {
			Type          string `json:"type"`
			RollingUpdate *struct {
				MaxSurge       any `json:"maxSurge,omitempty"`
				MaxUnavailable any `json:"maxUnavailable,omitempty"`
			} `json:"rollingUpdate,omitempty"`
		} `json:"strategy"`
		Selector struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
		Template struct {
			Metadata meta `json:"metadata"`
			Spec     struct {
				ServiceAccountName string              `json:"serviceAccountName,omitempty"`
				SecurityContext    *podSecurityContext `json:"securityContext,omitempty"`
				Containers         []container         `json:"containers"`
				Volumes            []volume            `json:"volumes,omitempty"`
			} `json:"spec"`
		} `json:"template"`
	} `json:"spec"`
}

type service struct {
	typeMeta
	Metadata meta `json:"metadata"`
	Spec     struct {
		Selector map[string]string `json:"selector"`
		Ports    []struct {
			Name       string `json:"name,omitempty"`
			Port       int32  `json:"port"`
			TargetPort any    `json:"targetPort,omitempty"`
		} `json:"ports"`
	} `json:"spec"`
}

func decodeStrict(t *testing.T, o object, v any) {
	t.Helper()
	if err := yaml.UnmarshalStrict(o.raw, v); err != nil {
		t.Fatalf("%s: strict decode: %v", o, err)
	}
}

// workload is what the checks shared by both overlays look at.
type workload struct {
	overlay            string
	serviceAccountName string
	container          container
	volumes            []volume
	podSecurity        *podSecurityContext
}

// TestKnativeObjects decodes every Knative object of deploy/knative
// strictly and checks that every event reaches the catalogsync Service's
// /events endpoint, for event types the service handles.
func TestKnativeObjects(t *testing.T) {
	objs := render(t, knativeDir)
	var (
		svc       *knService
		brokers   = map[string]bool{}
		triggers  []trigger
		pings     []pingSource
		apiSrcs   []apiServerSource
		nKnative  int
		knSvcName = "catalogsync"
	)
	for _, o := range objs {
		if !o.isKnative() {
			continue
		}
		nKnative++
		switch o.apiVersion() + " " + o.kind() {
		case "serving.knative.dev/v1 Service":
			var s knService
			decodeStrict(t, o, &s)
			if svc != nil {
				t.Fatalf("two Knative Services: %s and %s", svc.Metadata.Name, s.Metadata.Name)
			}
			svc = &s
		case "eventing.knative.dev/v1 Broker":
			var b broker
			decodeStrict(t, o, &b)
			brokers[b.Metadata.Name] = true
		case "eventing.knative.dev/v1 Trigger":
			var tr trigger
			decodeStrict(t, o, &tr)
			triggers = append(triggers, tr)
		case "sources.knative.dev/v1 PingSource":
			var p pingSource
			decodeStrict(t, o, &p)
			pings = append(pings, p)
		case "sources.knative.dev/v1 ApiServerSource":
			var a apiServerSource
			decodeStrict(t, o, &a)
			apiSrcs = append(apiSrcs, a)
		default:
			t.Errorf("%s: no typed check for this Knative kind; add one", o)
		}
	}
	if svc == nil || len(triggers) == 0 || len(pings) == 0 || len(apiSrcs) == 0 {
		t.Fatalf("deploy/knative lacks a Service, Trigger, PingSource or ApiServerSource (%d Knative objects)", nKnative)
	}
	if svc.Metadata.Name != knSvcName || svc.Metadata.Namespace != namespace {
		t.Errorf("Knative Service is %s/%s, want %s/%s (CATALOGSYNC_BASE_URL names it)", svc.Metadata.Namespace, svc.Metadata.Name, namespace, knSvcName)
	}

	// Autoscaling: min-scale may be 0 (the activator holds requests until
	// a pod is ready); max-scale above 1, since any number of pods may
	// run (one Progressing writer per catalog: its sync lease holder).
	ann := svc.Spec.Template.Metadata.Annotations
	if n, err := strconv.Atoi(ann["autoscaling.knative.dev/min-scale"]); err != nil || n < 0 {
		t.Errorf("template annotation autoscaling.knative.dev/min-scale = %q, want an integer >= 0", ann["autoscaling.knative.dev/min-scale"])
	}
	if n, err := strconv.Atoi(ann["autoscaling.knative.dev/max-scale"]); err != nil || n <= 1 {
		t.Errorf("template annotation autoscaling.knative.dev/max-scale = %q, want an integer > 1", ann["autoscaling.knative.dev/max-scale"])
	}
	rs := svc.Spec.Template.Spec
	if rs.ContainerConcurrency == nil || *rs.ContainerConcurrency < 0 {
		t.Errorf("containerConcurrency is unset or negative")
	}
	// Knative's default max-revision-timeout-seconds is 600.
	if rs.TimeoutSeconds == nil || *rs.TimeoutSeconds <= 0 || *rs.TimeoutSeconds > 600 {
		t.Errorf("timeoutSeconds = %v, want 1..600", rs.TimeoutSeconds)
	}
	if len(rs.Containers) != 1 {
		t.Fatalf("Knative Service has %d containers, want 1", len(rs.Containers))
	}
	c := rs.Containers[0]
	// Knative routes to the one declared port and sets PORT to it.
	if len(c.Ports) != 1 || c.Ports[0].ContainerPort != 8080 {
		t.Errorf("container ports %+v, want exactly one, 8080", c.Ports)
	}
	checkWorkload(t, objs, workload{overlay: knativeDir, serviceAccountName: rs.ServiceAccountName, container: c, volumes: rs.Volumes})

	cfg := serveConfig(t, objs)
	if _, ok := cfg["events"]; !ok {
		t.Error("catalogsync.yaml has no events section, so /events answers 404 to every Knative delivery")
	}
	checkSink := func(what string, d destination) {
		t.Helper()
		if d.Ref == nil || d.Ref.APIVersion != "serving.knative.dev/v1" || d.Ref.Kind != "Service" || d.Ref.Name != knSvcName ||
			(d.Ref.Namespace != "" && d.Ref.Namespace != namespace) {
			t.Errorf("%s: sink ref %+v, want the Knative Service %s", what, d.Ref, knSvcName)
		}
		if d.URI != "/events" {
			t.Errorf("%s: sink uri %q, want /events", what, d.URI)
		}
		// Knative's sender tokens are for this audience; /events accepts
		// only events.audience's.
		if ev, _ := cfg["events"].(map[string]any); d.Audience == "" || d.Audience != ev["audience"] {
			t.Errorf("%s: sink audience %q, want events.audience %v", what, d.Audience, ev["audience"])
		}
	}

	handled := map[string]bool{webhook.HarborArtifactPushed: false, webhook.ZotImageUpdated: false, webhook.ACRImagePushed: false}
	for _, tr := range triggers {
		what := "Trigger " + tr.Metadata.Name
		if !brokers[tr.Spec.Broker] {
			t.Errorf("%s: broker %q is not in deploy/knative", what, tr.Spec.Broker)
		}
		if tr.Spec.Filter == nil {
			t.Errorf("%s: no filter: every event of the broker would be sent", what)
		} else {
			typ := tr.Spec.Filter.Attributes["type"]
			if _, ok := handled[typ]; !ok {
				t.Errorf("%s: filters on type %q, which the events endpoint ignores", what, typ)
			}
			handled[typ] = true
		}
		checkSink(what, tr.Spec.Subscriber)
	}
	for typ, seen := range handled {
		if !seen {
			t.Errorf("no Trigger for registry event type %s", typ)
		}
	}
	for _, p := range pings {
		what := "PingSource " + p.Metadata.Name
		if p.Spec.Schedule != "* * * * *" {
			t.Errorf("%s: schedule %q, want every minute", what, p.Spec.Schedule)
		}
		checkSink(what, p.Spec.Sink)
	}
	group, version, kind := crdGVK(t, objs)
	for _, a := range apiSrcs {
		what := "ApiServerSource " + a.Metadata.Name
		// Resource mode carries metadata.generation, which the endpoint
		// needs to ignore status-only updates.
		if a.Spec.Mode != "Resource" {
			t.Errorf("%s: mode %q, want Resource", what, a.Spec.Mode)
		}
		if len(a.Spec.Resources) != 1 || a.Spec.Resources[0].APIVersion != group+"/"+version || a.Spec.Resources[0].Kind != kind {
			t.Errorf("%s: resources %+v, want only %s/%s %s (the CRD's)", what, a.Spec.Resources, group, version, kind)
		}
		if _, ok := find(objs, "ServiceAccount", a.Spec.ServiceAccountName); !ok || a.Spec.ServiceAccountName == "catalogsync" {
			t.Errorf("%s: serviceAccountName %q must be its own ServiceAccount in deploy/knative", what, a.Spec.ServiceAccountName)
		}
		checkSink(what, a.Spec.Sink)
	}
}

// crdGVK reads the ClusterCatalog CRD's group, served version and kind.
func crdGVK(t *testing.T, objs []object) (group, version, kind string) {
	t.Helper()
	o, ok := find(objs, "CustomResourceDefinition", "clustercatalogs.olm.operatorframework.io")
	if !ok {
		t.Fatal("the ClusterCatalog CRD is not rendered")
	}
	var crd struct {
		Spec struct {
			Group string `json:"group"`
			Names struct {
				Kind string `json:"kind"`
			} `json:"names"`
			Versions []struct {
				Name    string `json:"name"`
				Served  bool   `json:"served"`
				Storage bool   `json:"storage"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(o.raw, &crd); err != nil {
		t.Fatal(err)
	}
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			version = v.Name
		}
	}
	return crd.Spec.Group, version, crd.Spec.Names.Kind
}

// TestPlainObjects checks the plain overlay's Deployment and Service.
func TestPlainObjects(t *testing.T) {
	objs := render(t, plainDir)
	o, ok := find(objs, "Deployment", "catalogsync")
	if !ok {
		t.Fatal("deploy/plain renders no Deployment catalogsync")
	}
	var d deployment
	decodeStrict(t, o, &d)
	// Two replicas for availability, each with its own id.
	if d.Spec.Replicas == nil || *d.Spec.Replicas != 2 {
		t.Errorf("replicas = %v, want 2", d.Spec.Replicas)
	}
	checkPDB(t, objs, d.Spec.Template.Metadata.Labels)
	for k, v := range d.Spec.Selector.MatchLabels {
		if d.Spec.Template.Metadata.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the pod template's labels", k, v)
		}
	}
	ps := d.Spec.Template.Spec
	if len(ps.Containers) != 1 {
		t.Fatalf("Deployment has %d containers, want 1", len(ps.Containers))
	}
	c := ps.Containers[0]
	if !slices.ContainsFunc(c.Env, func(e envVar) bool {
		return e.Name == "POD_NAME" && e.ValueFrom != nil && e.ValueFrom.FieldRef != nil && e.ValueFrom.FieldRef.FieldPath == "metadata.name"
	}) {
		t.Errorf("container env %+v: want POD_NAME from the downward API (metadata.name), the replica id", c.Env)
	}
	checkWorkload(t, objs, workload{overlay: plainDir, serviceAccountName: ps.ServiceAccountName, container: c, volumes: ps.Volumes, podSecurity: ps.SecurityContext})

	so, ok := find(objs, "Service", "catalogsync")
	if !ok {
		t.Fatal("deploy/plain renders no Service catalogsync")
	}
	var s service
	decodeStrict(t, so, &s)
	for k, v := range s.Spec.Selector {
		if d.Spec.Template.Metadata.Labels[k] != v {
			t.Errorf("Service selector %s=%s matches no catalogsync pod", k, v)
		}
	}
	if len(s.Spec.Ports) != 1 || s.Spec.Ports[0].Port != 80 {
		t.Fatalf("Service ports %+v, want one, port 80", s.Spec.Ports)
	}
	// targetPort names a container port; that port must be 8080.
	target := fmt.Sprint(s.Spec.Ports[0].TargetPort)
	var got int32
	for _, p := range c.Ports {
		if p.Name == target || strconv.Itoa(int(p.ContainerPort)) == target {
			got = p.ContainerPort
		}
	}
	if got != 8080 {
		t.Errorf("Service targetPort %v reaches container port %d, want 8080", s.Spec.Ports[0].TargetPort, got)
	}
}

var envRef = regexp.MustCompile(`\benv:([A-Za-z_][A-Za-z0-9_]*)`)

// serveConfig parses the catalogsync ConfigMap's catalogsync.yaml.
func serveConfig(t *testing.T, objs []object) map[string]any {
	t.Helper()
	raw := configMapData(t, objs, "catalogsync")["catalogsync.yaml"]
	var cfg map[string]any
	if err := yaml.Unmarshal([]byte(raw), &cfg); err != nil || cfg == nil {
		t.Fatalf("ConfigMap catalogsync: catalogsync.yaml: %v", err)
	}
	return cfg
}

func configMapData(t *testing.T, objs []object, name string) map[string]string {
	t.Helper()
	o, ok := find(objs, "ConfigMap", name)
	if !ok {
		t.Fatalf("ConfigMap %s is not rendered", name)
	}
	var cm struct {
		Data map[string]string `json:"data"`
	}
	if err := yaml.Unmarshal(o.raw, &cm); err != nil {
		t.Fatal(err)
	}
	return cm.Data
}

func secretKeys(t *testing.T, objs []object, name string) map[string]bool {
	t.Helper()
	o, ok := find(objs, "Secret", name)
	if !ok {
		return nil
	}
	var s struct {
		Data       map[string]string `json:"data"`
		StringData map[string]string `json:"stringData"`
	}
	if err := yaml.Unmarshal(o.raw, &s); err != nil {
		t.Fatal(err)
	}
	keys := map[string]bool{}
	for k := range s.Data {
		keys[k] = true
	}
	for k := range s.StringData {
		keys[k] = true
	}
	return keys
}

// containerEnv is every variable the container gets: env, and the keys of
// envFrom's ConfigMaps and Secrets, with literal values where known.
func containerEnv(t *testing.T, objs []object, c container) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, ef := range c.EnvFrom {
		switch {
		case ef.ConfigMapRef != nil:
			for k, v := range configMapData(t, objs, ef.ConfigMapRef.Name) {
				env[k] = v
			}
		case ef.SecretRef != nil:
			keys := secretKeys(t, objs, ef.SecretRef.Name)
			if keys == nil {
				t.Errorf("envFrom Secret %s is not rendered", ef.SecretRef.Name)
			}
			for k := range keys {
				env[k] = ""
			}
		}
	}
	for _, e := range c.Env {
		env[e.Name] = e.Value
		if e.ValueFrom == nil {
			continue
		}
		if r := e.ValueFrom.SecretKeyRef; r != nil && !secretKeys(t, objs, r.Name)[r.Key] {
			t.Errorf("env %s: Secret %s has no key %s", e.Name, r.Name, r.Key)
		}
		if r := e.ValueFrom.ConfigMapKeyRef; r != nil {
			if _, ok := configMapData(t, objs, r.Name)[r.Key]; !ok {
				t.Errorf("env %s: ConfigMap %s has no key %s", e.Name, r.Name, r.Key)
			}
		}
	}
	return env
}

// checkWorkload checks what both overlays' catalogsync containers must
// get right: serve's flags and env vars as the real binary knows them,
// the config file mounted where --config points, every env:NAME of that
// file set, probes, security and memory settings.
func checkWorkload(t *testing.T, objs []object, w workload) {
	t.Helper()
	c := w.container
	prefix := "deploy/" + w.overlay + ": "
	if w.serviceAccountName != "catalogsync" {
		t.Errorf(prefix+"serviceAccountName %q, want catalogsync (the one the ClusterRoleBinding names)", w.serviceAccountName)
	}
	args := parseArgs(t, prefix, c.Args)
	if _, ok := args["clustercatalogs"]; !ok {
		t.Error(prefix + "serve runs without --clustercatalogs")
	}

	// --config must name the catalogsync.yaml key of a mounted ConfigMap.
	cfgPath, ok := args["config"]
	if !ok {
		t.Fatal(prefix + "serve runs without --config")
	}
	mounted := false
	for _, m := range c.VolumeMounts {
		if path.Dir(cfgPath) != path.Clean(m.MountPath) {
			continue
		}
		for _, v := range w.volumes {
			if v.Name == m.Name && v.ConfigMap != nil {
				_, mounted = configMapData(t, objs, v.ConfigMap.Name)[path.Base(cfgPath)]
			}
		}
	}
	if !mounted {
		t.Errorf(prefix+"--config=%s is no key of a ConfigMap mounted in the container", cfgPath)
	}

	env := containerEnv(t, objs, c)
	documented := documentedEnv(t)
	cfgRefs := map[string]bool{}
	for _, m := range envRef.FindAllStringSubmatch(configMapData(t, objs, "catalogsync")["catalogsync.yaml"], -1) {
		cfgRefs[m[1]] = true
		// serve refuses to start when an env:NAME secret is unset.
		if _, ok := env[m[1]]; !ok {
			t.Errorf(prefix+"catalogsync.yaml reads env:%s, which the container does not set", m[1])
		}
	}
	for name := range env {
		switch {
		case documented[name]:
		case envFromElsewhere[name] != "":
		case cfgRefs[name]:
		default:
			t.Errorf(prefix+"env %s is neither in `catalogsync serve -h`, nor read by the config file, nor a known runtime/SDK variable", name)
		}
	}
	if env["CATALOGSYNC_BASE_URL"] == "" && args["base-url"] == "" {
		t.Error(prefix + "--clustercatalogs needs CATALOGSYNC_BASE_URL or --base-url")
	}
	if !strings.HasPrefix(env["CATALOGSYNC_BASE_URL"], "http://catalogsync."+namespace+".svc") &&
		!strings.HasPrefix(env["CATALOGSYNC_BASE_URL"], "https://catalogsync."+namespace+".svc") {
		t.Errorf(prefix+"CATALOGSYNC_BASE_URL %q does not name the catalogsync Service", env["CATALOGSYNC_BASE_URL"])
	}

	if c.ReadinessProbe == nil || c.ReadinessProbe.HTTPGet == nil || c.ReadinessProbe.HTTPGet.Path != "/readyz" {
		t.Error(prefix + "readiness probe is not GET /readyz")
	}
	if c.LivenessProbe == nil || c.LivenessProbe.HTTPGet == nil || c.LivenessProbe.HTTPGet.Path != "/healthz" {
		t.Error(prefix + "liveness probe is not GET /healthz")
	}

	// Security: non-root, read-only root, no privilege, a writable /tmp.
	sc := c.SecurityContext
	if sc == nil {
		t.Fatal(prefix + "container has no securityContext")
	}
	nonRoot := sc.RunAsNonRoot != nil && *sc.RunAsNonRoot
	if w.podSecurity != nil && w.podSecurity.RunAsNonRoot != nil && *w.podSecurity.RunAsNonRoot && sc.RunAsNonRoot == nil {
		nonRoot = true
	}
	if !nonRoot {
		t.Error(prefix + "runAsNonRoot is not true")
	}
	if sc.ReadOnlyRootFilesystem == nil || !*sc.ReadOnlyRootFilesystem {
		t.Error(prefix + "readOnlyRootFilesystem is not true")
	}
	if sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
		t.Error(prefix + "allowPrivilegeEscalation is not false")
	}
	if sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0 {
		t.Error(prefix + "capabilities are not drop: [ALL]")
	}
	tmp := false
	for _, m := range c.VolumeMounts {
		for _, v := range w.volumes {
			if m.Name == v.Name && path.Clean(m.MountPath) == "/tmp" && v.EmptyDir != nil && !m.ReadOnly {
				tmp = true
			}
		}
	}
	if !tmp {
		t.Error(prefix + "no writable emptyDir at /tmp for the spool file")
	}
	// The spool goes to /tmp, whether by default or by setting.
	if d, ok := env["CATALOGSYNC_TMP_DIR"]; ok && path.Clean(d) != "/tmp" {
		t.Errorf(prefix+"CATALOGSYNC_TMP_DIR=%s is not the /tmp emptyDir", d)
	}
	// S3, or the filesystem store on a volume: never the read-only root.
	if env["CATALOGSYNC_S3_BUCKET"] == "" && !storeOnVolume(t, objs, w, env) {
		t.Error(prefix + "neither CATALOGSYNC_S3_BUCKET nor a PersistentVolumeClaim at the store: catalogs would go to the read-only root filesystem")
	}

	limit, err := parseQuantity(c.Resources.Limits["memory"])
	if err != nil || limit != 256<<20 {
		t.Errorf(prefix+"memory limit %q, want 256Mi", c.Resources.Limits["memory"])
	}
	if c.Resources.Requests["memory"] == "" || c.Resources.Requests["cpu"] == "" {
		t.Error(prefix + "no cpu and memory requests")
	}
	gml, err := parseGoMemLimit(env["GOMEMLIMIT"])
	if err != nil || gml >= limit || gml < limit*8/10 {
		t.Errorf(prefix+"GOMEMLIMIT %q (%v) should be a little below the memory limit %d", env["GOMEMLIMIT"], err, limit)
	}
}

// parseArgs checks container args against `catalogsync serve -h`: the
// subcommand is serve and every flag is one serve accepts, with a value
// exactly when the flag takes one. It returns flag name to value.
func parseArgs(t *testing.T, prefix string, args []string) map[string]string {
	t.Helper()
	flags := serveFlags(t)
	if len(args) == 0 || args[0] != "serve" {
		t.Fatalf(prefix+"container args %q do not start with serve", args)
	}
	out := map[string]string{}
	for i := 1; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-") {
			t.Errorf(prefix+"serve takes no arguments, got %q", a)
			continue
		}
		name, val, hasVal := strings.Cut(strings.TrimLeft(a, "-"), "=")
		takesValue, known := flags[name]
		switch {
		case !known:
			t.Errorf(prefix+"flag --%s is not accepted by `catalogsync serve` (serve -h lists %v)", name, keys(flags))
		case takesValue && !hasVal:
			if i+1 >= len(args) {
				t.Errorf(prefix+"flag --%s needs a value", name)
			} else {
				i++
				val = args[i]
			}
		case !takesValue && hasVal && val != "true" && val != "false":
			t.Errorf(prefix+"boolean flag --%s=%s", name, val)
		}
		out[name] = val
	}
	return out
}

func keys(m map[string]bool) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// parseQuantity reads the binary-suffix Kubernetes quantities used here.
func parseQuantity(s string) (int64, error) {
	for suf, mul := range map[string]int64{"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30} {
		if n, ok := strings.CutSuffix(s, suf); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			return v * mul, err
		}
	}
	return strconv.ParseInt(s, 10, 64)
}

// parseGoMemLimit reads GOMEMLIMIT's syntax (runtime/debug): a number
// with B, KiB, MiB, GiB or TiB.
func parseGoMemLimit(s string) (int64, error) {
	for _, u := range []struct {
		suf string
		mul int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40}, {"B", 1}} {
		if n, ok := strings.CutSuffix(s, u.suf); ok {
			v, err := strconv.ParseInt(n, 10, 64)
			return v * u.mul, err
		}
	}
	return 0, fmt.Errorf("GOMEMLIMIT %q has no unit", s)
}

type pdb struct {
	typeMeta
	Metadata meta `json:"metadata"`
	Spec     struct {
		MinAvailable   any `json:"minAvailable,omitempty"`
		MaxUnavailable any `json:"maxUnavailable,omitempty"`
		Selector       struct {
			MatchLabels map[string]string `json:"matchLabels"`
		} `json:"selector"`
	} `json:"spec"`
}

// checkPDB: a PodDisruptionBudget keeps one of the replicas up, selecting
// the Deployment's pods.
func checkPDB(t *testing.T, objs []object, podLabels map[string]string) {
	t.Helper()
	o, ok := find(objs, "PodDisruptionBudget", "catalogsync")
	if !ok {
		t.Error("deploy/plain renders no PodDisruptionBudget catalogsync")
		return
	}
	var p pdb
	decodeStrict(t, o, &p)
	if fmt.Sprint(p.Spec.MinAvailable) != "1" || p.Spec.MaxUnavailable != nil {
		t.Errorf("PodDisruptionBudget minAvailable %v maxUnavailable %v, want minAvailable 1", p.Spec.MinAvailable, p.Spec.MaxUnavailable)
	}
	if len(p.Spec.Selector.MatchLabels) == 0 {
		t.Error("PodDisruptionBudget selects nothing")
	}
	for k, v := range p.Spec.Selector.MatchLabels {
		if podLabels[k] != v {
			t.Errorf("PodDisruptionBudget selector %s=%s matches no catalogsync pod", k, v)
		}
	}
}

// storeOnVolume: the filesystem store (CATALOGSYNC_STORE, the image's
// /var/lib/catalogsync by default) is a mounted PersistentVolumeClaim the
// rendered objects create, writable by the pod's user.
func storeOnVolume(t *testing.T, objs []object, w workload, env map[string]string) bool {
	t.Helper()
	dir := env["CATALOGSYNC_STORE"]
	if dir == "" {
		dir = "/var/lib/catalogsync"
	}
	for _, m := range w.container.VolumeMounts {
		for _, v := range w.volumes {
			if m.Name != v.Name || path.Clean(m.MountPath) != dir || m.ReadOnly || v.PersistentVolumeClaim == nil {
				continue
			}
			if _, ok := find(objs, "PersistentVolumeClaim", v.PersistentVolumeClaim.ClaimName); !ok {
				t.Errorf("deploy/%s: PersistentVolumeClaim %s is not rendered", w.overlay, v.PersistentVolumeClaim.ClaimName)
			}
			if w.podSecurity == nil || w.podSecurity.FSGroup == nil || *w.podSecurity.FSGroup != 65532 {
				t.Errorf("deploy/%s: no fsGroup 65532: the image's user may not write the store volume", w.overlay)
			}
			return true
		}
	}
	return false
}
