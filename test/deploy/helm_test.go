package deploy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/mcp-runtime/mcp-runtime/internal/config"
)

const chartDir = "helm/mcp-runtime" // relative to the repository root

// The settings that must only ever reach the pod from a Secret.
var secretEnvVars = []string{config.EnvDatabaseURL, config.EnvRedisURL, config.EnvAdminToken, config.EnvRequestStateKey}

// Inline secret values of the "inline secrets and TLS" render: they must
// appear in the chart's Secret and nowhere else.
const (
	inlineDatabaseURL = "postgres://mcp:pg-inline-pass@db.internal:5432/mcp"
	inlineRedisURL    = "redis://:redis-inline-pass@redis.internal:6379/0"
	inlineAdminToken  = "admin-inline-token-0123456789"
	inlineStateKey    = "request-state-inline-key-0123456789abcdef"
)

// renders are the value sets the chart is checked with.
var renders = []struct {
	name string
	args []string
	// kinds that must be rendered, and kinds that must not be.
	want, absent []string
	// Secrets the values name (existingSecret) rather than the chart creating them.
	externalSecrets []string
}{
	{
		name:   "default values",
		want:   []string{"Deployment", "Service", "ConfigMap", "ServiceAccount", "PodDisruptionBudget"},
		absent: []string{"Secret", "Ingress", "HorizontalPodAutoscaler", "ServiceMonitor"},
	},
	{
		name:            "production values",
		args:            []string{"-f", filepath.Join(repoRoot, chartDir, "ci", "production-values.yaml")},
		want:            []string{"Deployment", "Service", "ConfigMap", "ServiceAccount", "Ingress", "HorizontalPodAutoscaler", "PodDisruptionBudget", "ServiceMonitor"},
		absent:          []string{"Secret"}, // every credential comes from an existing Secret
		externalSecrets: []string{"mcp-runtime-postgres", "mcp-runtime-redis", "mcp-runtime-admin"},
	},
	{
		name: "inline secrets and TLS",
		args: []string{
			"--set", "replicaCount=2",
			"--set", "database.url=" + inlineDatabaseURL,
			"--set", "redis.url=" + inlineRedisURL,
			"--set", "adminToken.value=" + inlineAdminToken,
			"--set", "requestStateKey.value=" + inlineStateKey,
			"--set", "tls.enabled=true", "--set", "tls.secretName=mcp-runtime-tls",
			"--set", "ingress.enabled=true",
			"--set", "serviceMonitor.enabled=true",
			"--set", "containerPort=9443",
			"--set", "config.transport.maxBodyBytes=8388608",
		},
		want: []string{"Deployment", "Service", "ConfigMap", "Secret", "Ingress", "ServiceMonitor"},
	},
}

// --- rendering ---

// helmBinary returns the pinned helm that scripts/install-tools.sh helm
// installs. Outside CI a missing helm skips the test; in CI it fails it,
// so the chart can never go unchecked there.
func helmBinary(t *testing.T) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join(repoRoot, ".cache", "bin", "helm"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("helm is not installed at %s (CI=true): make helm installs it (scripts/install-tools.sh helm)", bin)
		}
		t.Skipf("helm is not installed at %s; run scripts/install-tools.sh helm", bin)
	}
	return bin
}

var kubeVersionRE = regexp.MustCompile(`(?m)^HELM_KUBE_VERSION="([^"]+)"`)

// kubeVersion is the Kubernetes version `make helm` renders for.
func kubeVersion(t *testing.T) string {
	t.Helper()
	m := kubeVersionRE.FindSubmatch(readRepoFile(t, "scripts/lib.sh"))
	if m == nil {
		t.Fatal("scripts/lib.sh: no HELM_KUBE_VERSION")
	}
	return string(m[1])
}

// helmTemplate renders the chart as release "mcp" and returns helm's
// output, or its error message.
func helmTemplate(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmdArgs := append([]string{"template", "mcp", filepath.Join(repoRoot, chartDir), "--kube-version", kubeVersion(t)}, args...)
	cmd := exec.Command(helmBinary(t), cmdArgs...)
	cmd.Env = append(os.Environ(), "HELM_CACHE_HOME="+t.TempDir(), "HELM_CONFIG_HOME="+t.TempDir(), "HELM_DATA_HOME="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("helm %s: %v: %s", strings.Join(cmdArgs, " "), err, stderr.String())
	}
	return stdout.String(), nil
}

// --- the manifests, as far as the checks read them ---

type objectMeta struct {
	Name        string            `yaml:"name"`
	Labels      map[string]string `yaml:"labels"`
	Annotations map[string]string `yaml:"annotations"`
}

type object struct {
	APIVersion string     `yaml:"apiVersion"`
	Kind       string     `yaml:"kind"`
	Metadata   objectMeta `yaml:"metadata"`
	node       *yaml.Node
	source     string // the document, as YAML
}

func (o object) decode(t *testing.T, v any) {
	t.Helper()
	if err := o.node.Decode(v); err != nil {
		t.Fatalf("decode %s %s: %v", o.Kind, o.Metadata.Name, err)
	}
}

type securityContext struct {
	RunAsNonRoot             *bool  `yaml:"runAsNonRoot"`
	RunAsUser                *int64 `yaml:"runAsUser"`
	ReadOnlyRootFilesystem   *bool  `yaml:"readOnlyRootFilesystem"`
	AllowPrivilegeEscalation *bool  `yaml:"allowPrivilegeEscalation"`
	Privileged               *bool  `yaml:"privileged"`
	Capabilities             *struct {
		Drop []string `yaml:"drop"`
		Add  []string `yaml:"add"`
	} `yaml:"capabilities"`
	SeccompProfile *struct {
		Type string `yaml:"type"`
	} `yaml:"seccompProfile"`
}

type probe struct {
	HTTPGet *struct {
		Path   string `yaml:"path"`
		Port   string `yaml:"port"` // a number or a port name
		Scheme string `yaml:"scheme"`
	} `yaml:"httpGet"`
}

type envVar struct {
	Name      string  `yaml:"name"`
	Value     *string `yaml:"value"`
	ValueFrom *struct {
		SecretKeyRef *struct {
			Name string `yaml:"name"`
			Key  string `yaml:"key"`
		} `yaml:"secretKeyRef"`
		ConfigMapKeyRef  any `yaml:"configMapKeyRef"`
		ResourceFieldRef *struct {
			Resource string `yaml:"resource"`
		} `yaml:"resourceFieldRef"`
	} `yaml:"valueFrom"`
}

type container struct {
	Name  string `yaml:"name"`
	Image string `yaml:"image"`
	Ports []struct {
		Name          string `yaml:"name"`
		ContainerPort int    `yaml:"containerPort"`
	} `yaml:"ports"`
	Env            []envVar        `yaml:"env"`
	StartupProbe   *probe          `yaml:"startupProbe"`
	LivenessProbe  *probe          `yaml:"livenessProbe"`
	ReadinessProbe *probe          `yaml:"readinessProbe"`
	Security       securityContext `yaml:"securityContext"`
	VolumeMounts   []struct {
		Name      string `yaml:"name"`
		MountPath string `yaml:"mountPath"`
		SubPath   string `yaml:"subPath"`
	} `yaml:"volumeMounts"`
	Lifecycle *struct {
		PreStop *struct {
			Sleep *struct {
				Seconds int64 `yaml:"seconds"`
			} `yaml:"sleep"`
		} `yaml:"preStop"`
	} `yaml:"lifecycle"`
}

type deployment struct {
	Spec struct {
		Replicas *int `yaml:"replicas"`
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Template struct {
			Metadata objectMeta `yaml:"metadata"`
			Spec     struct {
				TerminationGracePeriodSeconds *int64          `yaml:"terminationGracePeriodSeconds"`
				Security                      securityContext `yaml:"securityContext"`
				Containers                    []container     `yaml:"containers"`
				Volumes                       []struct {
					Name      string `yaml:"name"`
					ConfigMap *struct {
						Name string `yaml:"name"`
					} `yaml:"configMap"`
					Secret *struct {
						SecretName string `yaml:"secretName"`
					} `yaml:"secret"`
				} `yaml:"volumes"`
			} `yaml:"spec"`
		} `yaml:"template"`
	} `yaml:"spec"`
}

type service struct {
	Spec struct {
		Selector map[string]string `yaml:"selector"`
		Ports    []struct {
			Name       string `yaml:"name"`
			Port       int    `yaml:"port"`
			TargetPort string `yaml:"targetPort"`
		} `yaml:"ports"`
	} `yaml:"spec"`
}

type ingress struct {
	Spec struct {
		TLS []struct {
			SecretName string   `yaml:"secretName"`
			Hosts      []string `yaml:"hosts"`
		} `yaml:"tls"`
		Rules []struct {
			Host string `yaml:"host"`
			HTTP struct {
				Paths []struct {
					Path     string `yaml:"path"`
					PathType string `yaml:"pathType"`
					Backend  struct {
						Service struct {
							Name string `yaml:"name"`
							Port struct {
								Name   string `yaml:"name"`
								Number int    `yaml:"number"`
							} `yaml:"port"`
						} `yaml:"service"`
					} `yaml:"backend"`
				} `yaml:"paths"`
			} `yaml:"http"`
		} `yaml:"rules"`
	} `yaml:"spec"`
}

type hpa struct {
	Spec struct {
		ScaleTargetRef struct {
			Kind string `yaml:"kind"`
			Name string `yaml:"name"`
		} `yaml:"scaleTargetRef"`
		MinReplicas int `yaml:"minReplicas"`
		MaxReplicas int `yaml:"maxReplicas"`
	} `yaml:"spec"`
}

type pdb struct {
	Spec struct {
		MinAvailable   *string `yaml:"minAvailable"`
		MaxUnavailable *string `yaml:"maxUnavailable"`
		Selector       struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
	} `yaml:"spec"`
}

type serviceMonitor struct {
	Spec struct {
		Selector struct {
			MatchLabels map[string]string `yaml:"matchLabels"`
		} `yaml:"selector"`
		Endpoints []struct {
			Port   string `yaml:"port"`
			Path   string `yaml:"path"`
			Scheme string `yaml:"scheme"`
		} `yaml:"endpoints"`
	} `yaml:"spec"`
}

// manifests is one render of the chart.
type manifests struct {
	objects []object
}

func parseManifests(t *testing.T, out string) manifests {
	t.Helper()
	var m manifests
	dec := yaml.NewDecoder(strings.NewReader(out))
	for {
		var n yaml.Node
		err := dec.Decode(&n)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("decode the rendered manifests: %v", err)
		}
		if len(n.Content) == 0 || n.Content[0].Kind != yaml.MappingNode {
			continue // an empty document
		}
		var o object
		if err := n.Decode(&o); err != nil {
			t.Fatal(err)
		}
		o.node = &n
		src, err := yaml.Marshal(&n)
		if err != nil {
			t.Fatal(err)
		}
		o.source = string(src)
		if o.Kind == "" || o.APIVersion == "" || o.Metadata.Name == "" {
			t.Fatalf("a rendered document without kind, apiVersion or name:\n%s", o.source)
		}
		m.objects = append(m.objects, o)
	}
	return m
}

func (m manifests) all(kind string) []object {
	var out []object
	for _, o := range m.objects {
		if o.Kind == kind {
			out = append(out, o)
		}
	}
	return out
}

// one returns the only object of kind, or false when there is none.
func (m manifests) one(t *testing.T, kind string, v any) (object, bool) {
	t.Helper()
	objs := m.all(kind)
	switch len(objs) {
	case 0:
		return object{}, false
	case 1:
		if v != nil {
			objs[0].decode(t, v)
		}
		return objs[0], true
	}
	t.Fatalf("%d objects of kind %s; want one", len(objs), kind)
	return object{}, false
}

// must is one for an object the check cannot do without.
func (m manifests) must(t *testing.T, kind string, v any) object {
	t.Helper()
	o, ok := m.one(t, kind, v)
	if !ok {
		t.Fatalf("no %s rendered", kind)
	}
	return o
}

func (d *deployment) server(t *testing.T) container {
	t.Helper()
	cs := d.Spec.Template.Spec.Containers
	if len(cs) != 1 {
		t.Fatalf("the Deployment has %d containers; want the server alone", len(cs))
	}
	return cs[0]
}

func (c container) env(name string) (envVar, bool) {
	for _, e := range c.Env {
		if e.Name == name {
			return e, true
		}
	}
	return envVar{}, false
}

// httpPort is the container's port named "http".
func (c container) httpPort(t *testing.T) int {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == "http" {
			return p.ContainerPort
		}
	}
	t.Fatalf("the server container has no port named http: %+v", c.Ports)
	return 0
}

// resolvePort turns a probe's or Service's port (a number or a name) into
// the container port number it reaches, or 0.
func (c container) resolvePort(port string) int {
	if n, err := strconv.Atoi(port); err == nil {
		return n
	}
	for _, p := range c.Ports {
		if p.Name == port {
			return p.ContainerPort
		}
	}
	return 0
}

// --- the routes the server really serves ---

// documentedRoutes are the paths of openapi.yaml (which documents every
// route of cmd/api) and the methods of each.
func documentedRoutes(t *testing.T) map[string][]string {
	t.Helper()
	var doc struct {
		Paths map[string]map[string]any `yaml:"paths"`
	}
	if err := yaml.Unmarshal(readRepoFile(t, "openapi.yaml"), &doc); err != nil {
		t.Fatalf("openapi.yaml: %v", err)
	}
	routes := map[string][]string{}
	for p, ops := range doc.Paths {
		for method := range ops {
			routes[p] = append(routes[p], strings.ToUpper(method))
		}
	}
	for _, p := range []string{"/healthz", "/readyz", "/metrics", "/mcp"} {
		if !slices.Contains(routes[p], "GET") {
			t.Fatalf("openapi.yaml documents no GET %s; the chart's probes and scrapes rely on it", p)
		}
	}
	return routes
}

// --- the checks ---

func TestHelmChart(t *testing.T) {
	helmBinary(t) // skip or fail once, before any subtest
	routes := documentedRoutes(t)
	dockerUID := int64(imageUID) // checkNonRoot holds the Dockerfile's USER to it
	for _, r := range renders {
		t.Run(r.name, func(t *testing.T) {
			out, err := helmTemplate(t, r.args...)
			if err != nil {
				t.Fatal(err)
			}
			m := parseManifests(t, out)
			var d deployment
			dObj := m.must(t, "Deployment", &d)
			c := d.server(t)
			cfg := loadServerConfig(t, m, &d, c) // the server loads it, or the render fails here

			t.Run("objects", func(t *testing.T) {
				for _, k := range r.want {
					if len(m.all(k)) == 0 {
						t.Errorf("no %s rendered", k)
					}
				}
				for _, k := range r.absent {
					if objs := m.all(k); len(objs) > 0 {
						t.Errorf("%s %s rendered; want none", k, objs[0].Metadata.Name)
					}
				}
			})

			t.Run("probes hit real routes", func(t *testing.T) {
				for _, p := range []struct {
					name string
					pr   *probe
					path string // "" = any documented GET route
				}{
					{"livenessProbe", c.LivenessProbe, "/healthz"},
					// /readyz, not /healthz: a pod whose database is gone must
					// leave the Service, not keep getting calls it cannot serve.
					{"readinessProbe", c.ReadinessProbe, "/readyz"},
					{"startupProbe", c.StartupProbe, ""},
				} {
					if p.pr == nil || p.pr.HTTPGet == nil {
						t.Errorf("%s: missing or not an HTTP probe", p.name)
						continue
					}
					got := p.pr.HTTPGet.Path
					if !slices.Contains(routes[got], "GET") {
						t.Errorf("%s: GET %s is not a route openapi.yaml documents", p.name, got)
					}
					if p.path != "" && got != p.path {
						t.Errorf("%s: path %s; want %s", p.name, got, p.path)
					}
				}
			})

			t.Run("ports agree", func(t *testing.T) {
				port := c.httpPort(t)
				for name, p := range map[string]*probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe} {
					if p == nil || p.HTTPGet == nil {
						continue // reported by "probes hit real routes"
					}
					if got := c.resolvePort(p.HTTPGet.Port); got != port {
						t.Errorf("%s probe port %q reaches %d; the server listens on %d", name, p.HTTPGet.Port, got, port)
					}
				}
				addr, ok := c.env("MCP_ADDR")
				if !ok || addr.Value == nil {
					t.Fatal("MCP_ADDR is not set: the server would listen on 127.0.0.1:8080, unreachable by probes and the Service")
				}
				host, p, err := net.SplitHostPort(*addr.Value)
				if err != nil || host != "0.0.0.0" || p != strconv.Itoa(port) {
					t.Errorf("MCP_ADDR=%s; want 0.0.0.0:%d (the container port)", *addr.Value, port)
				}
				var svc service
				svcObj := m.must(t, "Service", &svc)
				if len(svc.Spec.Ports) != 1 {
					t.Fatalf("the Service has %d ports; want 1", len(svc.Spec.Ports))
				}
				sp := svc.Spec.Ports[0]
				if got := c.resolvePort(sp.TargetPort); got != port {
					t.Errorf("Service targetPort %q reaches %d; the server listens on %d", sp.TargetPort, got, port)
				}
				if !selects(svc.Spec.Selector, d.Spec.Template.Metadata.Labels) {
					t.Errorf("the Service selector %v does not select the pods %v", svc.Spec.Selector, d.Spec.Template.Metadata.Labels)
				}
				var ing ingress
				if _, ok := m.one(t, "Ingress", &ing); ok {
					for _, rule := range ing.Spec.Rules {
						for _, ip := range rule.HTTP.Paths {
							b := ip.Backend.Service
							if b.Name != svcObj.Metadata.Name || (b.Port.Name != sp.Name && b.Port.Number != sp.Port) {
								t.Errorf("Ingress %s%s goes to %s port %+v; the Service is %s port %s/%d", rule.Host, ip.Path, b.Name, b.Port, svcObj.Metadata.Name, sp.Name, sp.Port)
							}
						}
					}
				}
				var sm serviceMonitor
				if smo, ok := m.one(t, "ServiceMonitor", &sm); ok {
					if !selects(sm.Spec.Selector.MatchLabels, svcObj.Metadata.Labels) {
						t.Errorf("ServiceMonitor %s selects %v; the Service's labels are %v", smo.Metadata.Name, sm.Spec.Selector.MatchLabels, svcObj.Metadata.Labels)
					}
					if len(sm.Spec.Endpoints) != 1 || sm.Spec.Endpoints[0].Port != sp.Name || sm.Spec.Endpoints[0].Path != "/metrics" {
						t.Errorf("ServiceMonitor endpoints %+v; want port %s path /metrics", sm.Spec.Endpoints, sp.Name)
					}
				}
			})

			t.Run("security context", func(t *testing.T) {
				pod := d.Spec.Template.Spec.Security
				for _, sc := range []struct {
					level string
					ctx   securityContext
				}{{"pod", pod}, {"container", c.Security}} {
					if sc.ctx.RunAsNonRoot == nil || !*sc.ctx.RunAsNonRoot {
						t.Errorf("%s: runAsNonRoot is not true", sc.level)
					}
					if sc.ctx.RunAsUser == nil || *sc.ctx.RunAsUser != dockerUID {
						t.Errorf("%s: runAsUser %v; want %d, the image's USER", sc.level, deref(sc.ctx.RunAsUser), dockerUID)
					}
					if sc.ctx.SeccompProfile == nil || sc.ctx.SeccompProfile.Type != "RuntimeDefault" {
						t.Errorf("%s: seccompProfile is not RuntimeDefault", sc.level)
					}
				}
				cs := c.Security
				if cs.ReadOnlyRootFilesystem == nil || !*cs.ReadOnlyRootFilesystem {
					t.Error("container: readOnlyRootFilesystem is not true")
				}
				if cs.AllowPrivilegeEscalation == nil || *cs.AllowPrivilegeEscalation {
					t.Error("container: allowPrivilegeEscalation is not false")
				}
				if cs.Privileged != nil && *cs.Privileged {
					t.Error("container: privileged")
				}
				if cs.Capabilities == nil || !slices.Contains(cs.Capabilities.Drop, "ALL") || len(cs.Capabilities.Add) > 0 {
					t.Errorf("container: capabilities %+v; want drop [ALL] and nothing added", cs.Capabilities)
				}
			})

			t.Run("secrets only by reference", func(t *testing.T) {
				secrets := map[string]map[string]string{} // the chart's Secrets: name -> data keys
				for _, o := range m.all("Secret") {
					var s struct {
						Data map[string]string `yaml:"data"`
					}
					o.decode(t, &s)
					secrets[o.Metadata.Name] = s.Data
				}
				for _, e := range c.Env {
					if !slices.Contains(secretEnvVars, e.Name) {
						continue
					}
					if e.Value != nil {
						t.Errorf("%s is set in plain text in the Deployment", e.Name)
						continue
					}
					if e.ValueFrom == nil || e.ValueFrom.SecretKeyRef == nil {
						t.Errorf("%s does not come from a secretKeyRef", e.Name)
						continue
					}
					ref := e.ValueFrom.SecretKeyRef
					data, ours := secrets[ref.Name]
					switch {
					case ours:
						if _, ok := data[ref.Key]; !ok {
							t.Errorf("%s refers to key %s of the chart's Secret %s, which holds %v", e.Name, ref.Key, ref.Name, keys(data))
						}
					case !slices.Contains(r.externalSecrets, ref.Name):
						t.Errorf("%s refers to Secret %s, which the chart does not create and the values do not name: the pod would not start", e.Name, ref.Name)
					}
				}
				// Inline values reach the chart's Secret and nothing else:
				// not the Deployment, not the ConfigMap, not an annotation.
				for _, o := range m.objects {
					if o.Kind == "Secret" {
						continue
					}
					for _, v := range []string{inlineDatabaseURL, inlineRedisURL, inlineAdminToken, inlineStateKey} {
						if strings.Contains(o.source, v) {
							t.Errorf("%s %s holds a secret value in plain text", o.Kind, o.Metadata.Name)
						}
					}
				}
				var cm struct {
					Data map[string]string `yaml:"data"`
				}
				m.must(t, "ConfigMap", &cm)
				for _, key := range []string{"databaseURL", "redisURL", "token"} {
					if regexp.MustCompile(`(?m)^\s*` + key + `:`).MatchString(cm.Data["config.yaml"]) {
						t.Errorf("the ConfigMap's config.yaml sets %s; it belongs in a Secret", key)
					}
				}
			})

			t.Run("server accepts the configuration", func(t *testing.T) {
				grace := time.Duration(deref(d.Spec.Template.Spec.TerminationGracePeriodSeconds)) * time.Second
				var preStop time.Duration
				if c.Lifecycle != nil && c.Lifecycle.PreStop != nil && c.Lifecycle.PreStop.Sleep != nil {
					preStop = time.Duration(c.Lifecycle.PreStop.Sleep.Seconds) * time.Second
				}
				if grace <= cfg.ShutdownGrace()+preStop {
					t.Errorf("terminationGracePeriodSeconds %v is not above shutdownGraceMs %v plus the preStop sleep %v: pods are killed mid-drain", grace, cfg.ShutdownGrace(), preStop)
				}
				if d.Spec.Template.Metadata.Annotations["checksum/config"] == "" {
					t.Error("no checksum/config annotation on the pod template: a config change would not roll the pods")
				}
				// OpenTelemetry: the OTEL_* variables only with an endpoint
				// (production values), and then the sampler with its ratio.
				endpoint, traced := c.env("OTEL_EXPORTER_OTLP_ENDPOINT")
				sampler, _ := c.env("OTEL_TRACES_SAMPLER")
				ratio, _ := c.env("OTEL_TRACES_SAMPLER_ARG")
				if want := r.name == "production values"; traced != want {
					t.Errorf("OTEL_EXPORTER_OTLP_ENDPOINT set %v (%q), want %v", traced, deref(endpoint.Value), want)
				} else if traced && (deref(sampler.Value) != "parentbased_traceidratio" || deref(ratio.Value) != "0.01") {
					t.Errorf("sampler %q with %q, want parentbased_traceidratio with 0.01", deref(sampler.Value), deref(ratio.Value))
				}
				if lim, ok := c.env("GOMEMLIMIT"); !ok || lim.ValueFrom == nil || lim.ValueFrom.ResourceFieldRef == nil || lim.ValueFrom.ResourceFieldRef.Resource != "limits.memory" {
					t.Error("GOMEMLIMIT does not come from limits.memory: the memory-pressure gate has no ceiling to measure against")
				}
				if cfg.TLS.Enabled() {
					var ing ingress
					if ingObj, ok := m.one(t, "Ingress", &ing); ok && ingObj.Metadata.Annotations["nginx.ingress.kubernetes.io/backend-protocol"] != "HTTPS" {
						t.Error("the pod serves HTTPS but the Ingress talks HTTP to it")
					}
					for name, p := range map[string]*probe{"liveness": c.LivenessProbe, "readiness": c.ReadinessProbe, "startup": c.StartupProbe} {
						if p != nil && p.HTTPGet != nil && p.HTTPGet.Scheme != "HTTPS" {
							t.Errorf("%s probe scheme %q; the pod serves HTTPS", name, p.HTTPGet.Scheme)
						}
					}
				}
			})

			t.Run("scaling", func(t *testing.T) {
				var h hpa
				_, autoscaled := m.one(t, "HorizontalPodAutoscaler", &h)
				replicas := 1
				if d.Spec.Replicas != nil {
					replicas = *d.Spec.Replicas
				}
				if autoscaled {
					if d.Spec.Replicas != nil {
						t.Error("the Deployment sets replicas while an HPA scales it: every helm upgrade would reset the scale")
					}
					if h.Spec.ScaleTargetRef.Kind != "Deployment" || h.Spec.ScaleTargetRef.Name != dObj.Metadata.Name {
						t.Errorf("the HPA scales %s %s; want Deployment %s", h.Spec.ScaleTargetRef.Kind, h.Spec.ScaleTargetRef.Name, dObj.Metadata.Name)
					}
					replicas = h.Spec.MinReplicas
				}
				var p pdb
				if _, ok := m.one(t, "PodDisruptionBudget", &p); ok {
					if !selects(p.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels) || !selects(d.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels) {
						t.Errorf("the PDB selects %v; the pods are %v", p.Spec.Selector.MatchLabels, d.Spec.Template.Metadata.Labels)
					}
					if p.Spec.MinAvailable != nil {
						if n, err := strconv.Atoi(*p.Spec.MinAvailable); err == nil && n >= replicas {
							t.Errorf("PDB minAvailable %d with %d replicas: no node could ever be drained", n, replicas)
						}
					}
				}
				if r.name == "production values" && replicas < 3 {
					t.Errorf("production runs %d replicas at least; want 3", replicas)
				}
			})

			t.Run("ingress is SSE-safe", func(t *testing.T) {
				var ing ingress
				ingObj, ok := m.one(t, "Ingress", &ing)
				if !ok {
					return // this render has no Ingress ("objects" says whether it should)
				}
				a := ingObj.Metadata.Annotations
				if a["nginx.ingress.kubernetes.io/proxy-buffering"] != "off" {
					t.Errorf("proxy-buffering %q: ingress-nginx would hold SSE events back until its buffer fills", a["nginx.ingress.kubernetes.io/proxy-buffering"])
				}
				for _, k := range []string{"proxy-read-timeout", "proxy-send-timeout"} {
					v := a["nginx.ingress.kubernetes.io/"+k]
					if n, err := strconv.Atoi(v); err != nil || n < 3600 {
						t.Errorf("%s %q: want at least 3600 s, or idle SSE streams are cut at nginx's 60 s default", k, v)
					}
				}
				body := a["nginx.ingress.kubernetes.io/proxy-body-size"]
				if n, err := nginxSize(body); err != nil || n < cfg.Transport.MaxBodyBytes {
					t.Errorf("proxy-body-size %q is below transport.maxBodyBytes %d: nginx would answer 413 to requests the server accepts", body, cfg.Transport.MaxBodyBytes)
				}
				if len(ing.Spec.TLS) == 0 && r.name == "production values" {
					t.Error("the production Ingress has no TLS")
				}
				for _, rule := range ing.Spec.Rules {
					for _, ip := range rule.HTTP.Paths {
						var reached []string
						for route := range routes {
							if pathMatches(ip.Path, ip.PathType, route) {
								reached = append(reached, route)
							}
						}
						if len(reached) == 0 {
							t.Errorf("Ingress path %s reaches no documented route", ip.Path)
						}
						for _, route := range reached {
							if route == "/metrics" || strings.HasPrefix(route, "/admin") {
								t.Errorf("Ingress path %s %s publishes %s to the internet", ip.PathType, ip.Path, route)
							}
						}
					}
				}
			})
		})
	}
}

// TestHelmConfigChangeRollsPods: changing the server configuration changes
// the pod template (so the Deployment rolls), and a change elsewhere does
// not restart anything.
func TestHelmConfigChangeRollsPods(t *testing.T) {
	helmBinary(t) // skip or fail once, before any subtest
	podTemplate := func(args ...string) (annotations map[string]string) {
		out, err := helmTemplate(t, args...)
		if err != nil {
			t.Fatal(err)
		}
		var d deployment
		parseManifests(t, out).must(t, "Deployment", &d)
		return d.Spec.Template.Metadata.Annotations
	}
	base := podTemplate()
	for _, tc := range []struct {
		name  string
		args  []string
		rolls bool
	}{
		{"log level", []string{"--set", "config.logLevel=debug"}, true},
		{"a nested key", []string{"--set", "config.transport.maxSessions=500"}, true},
		{"an inline secret", []string{"--set", "adminToken.value=t0ken"}, true},
		{"the Service port", []string{"--set", "service.port=8081"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := podTemplate(tc.args...)
			changed := got["checksum/config"] != base["checksum/config"] || got["checksum/secret"] != base["checksum/secret"]
			if changed != tc.rolls {
				t.Errorf("checksums changed = %v; want %v (before %v, after %v)", changed, tc.rolls, base, got)
			}
		})
	}
}

// TestHelmRefusesBrokenValues: values that would deploy something broken
// fail the render with a message naming the problem.
func TestHelmRefusesBrokenValues(t *testing.T) {
	helmBinary(t) // skip or fail once, before any subtest
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"misspelt top-level key", []string{"--set", "replicas=3"}, "replicas"},
		{"misspelt nested key", []string{"--set", "ingress.enable=true"}, "enable"},
		{"a telemetry endpoint without a scheme", []string{"--set", "telemetry.endpoint=collector:4318"}, "endpoint"},
		{"an unknown sampler", []string{"--set", "telemetry.sampler=sometimes"}, "sampler"},
		{"database URL in the ConfigMap", []string{"--set", "config.databaseURL=postgres://u:p@db/mcp"}, "databaseURL"},
		{"listen address in the config", []string{"--set", "config.listen=127.0.0.1:8080"}, "listen"},
		{"unknown log level", []string{"--set", "config.logLevel=verbose"}, "logLevel"},
		{"several replicas on the in-memory store", []string{"--set", "replicaCount=3"}, "needs database and redis"},
		{"autoscaling without Redis", []string{"--set", "autoscaling.enabled=true", "--set", "database.existingSecret=pg"}, "needs database and redis"},
		{"secret given twice", []string{"--set", "database.existingSecret=pg", "--set", "database.url=postgres://u:p@db/mcp"}, "not both"},
		{"grace period shorter than the drain", []string{"--set", "terminationGracePeriodSeconds=20"}, "terminationGracePeriodSeconds"},
		{"grace period eaten by the preStop sleep", []string{"--set", "lifecycle.preStopSleepSeconds=5"}, "terminationGracePeriodSeconds"},
		{"TLS without a Secret", []string{"--set", "tls.enabled=true"}, "tls.secretName"},
		{"image digest malformed", []string{"--set", "image.digest=latest"}, "digest"},
		{"unknown Redis mode", []string{"--set", "redis.mode=ring"}, "/redis/mode"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := helmTemplate(t, tc.args...)
			if err == nil {
				t.Fatalf("helm template %v succeeded; want an error mentioning %q", tc.args, tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error does not mention %q:\n%v", tc.want, err)
			}
		})
	}
}

// loadServerConfig runs the server's own configuration loader on what the
// pod would see: the ConfigMap's file at MCP_CONFIG and the Deployment's
// environment, secret references replaced by plausible values. A key the
// server does not know, or a value it refuses, would crash-loop the pods.
func loadServerConfig(t *testing.T, m manifests, d *deployment, c container) config.Config {
	t.Helper()
	var cm struct {
		Data map[string]string `yaml:"data"`
	}
	cmObj := m.must(t, "ConfigMap", &cm)

	env := map[string]string{}
	placeholders := map[string]string{
		config.EnvDatabaseURL:     "postgres://mcp:secret@postgres:5432/mcp",
		config.EnvRedisURL:        "redis://redis:6379/0",
		config.EnvAdminToken:      "admin-token",
		config.EnvRequestStateKey: "request-state-placeholder-key-0123456789",
	}
	for _, e := range c.Env {
		switch {
		case e.Value != nil:
			env[e.Name] = *e.Value
		case e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil:
			v, ok := placeholders[e.Name]
			if !ok {
				t.Fatalf("env %s from a Secret: no placeholder for it in this test", e.Name)
			}
			env[e.Name] = v
		}
	}
	path := env[config.EnvConfig]
	if path == "" {
		t.Fatal("MCP_CONFIG is not set: the ConfigMap would be ignored")
	}
	// MCP_CONFIG must be the file the ConfigMap volume puts there.
	file, ok := mountedConfigMapKey(d, c, path, cmObj.Metadata.Name)
	if !ok {
		t.Fatalf("MCP_CONFIG=%s is not a file of the ConfigMap %s mounted in the container", path, cmObj.Metadata.Name)
	}
	data, ok := cm.Data[file]
	if !ok {
		t.Fatalf("the ConfigMap has no key %s (MCP_CONFIG=%s)", file, path)
	}
	local := filepath.Join(t.TempDir(), "config.yaml")
	if err := os.WriteFile(local, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	env[config.EnvConfig] = local
	// TLS files must be under the mounted TLS Secret.
	for _, k := range []string{config.EnvTLSCertFile, config.EnvTLSKeyFile} {
		if p := env[k]; p != "" && !mountedFromSecret(d, c, p) {
			t.Errorf("%s=%s is not inside a mounted Secret", k, p)
		}
	}
	cfg, err := config.LoadWithOutput(nil, func(k string) string { return env[k] }, io.Discard)
	if err != nil {
		t.Fatalf("the server refuses the rendered configuration: %v\nconfig.yaml:\n%s", err, data)
	}
	return cfg
}

// mountedConfigMapKey returns the key of ConfigMap cmName that appears at
// path in the container.
func mountedConfigMapKey(d *deployment, c container, path, cmName string) (string, bool) {
	for _, vm := range c.VolumeMounts {
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name != vm.Name || v.ConfigMap == nil || v.ConfigMap.Name != cmName {
				continue
			}
			if vm.SubPath != "" && vm.MountPath == path {
				return vm.SubPath, true
			}
			if vm.SubPath == "" && filepath.Dir(path) == filepath.Clean(vm.MountPath) {
				return filepath.Base(path), true
			}
		}
	}
	return "", false
}

func mountedFromSecret(d *deployment, c container, path string) bool {
	for _, vm := range c.VolumeMounts {
		for _, v := range d.Spec.Template.Spec.Volumes {
			if v.Name == vm.Name && v.Secret != nil && vm.SubPath == "" && filepath.Dir(path) == filepath.Clean(vm.MountPath) {
				return true
			}
		}
	}
	return false
}

// selects reports whether every label of selector is on labels.
func selects(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// pathMatches reports whether an Ingress path sends requests for route to
// the backend (an OpenAPI template like /admin/upstreams/{id} counts by its
// literal prefix).
func pathMatches(path, pathType, route string) bool {
	if pathType == "Exact" {
		return path == route
	}
	path = strings.TrimSuffix(path, "/")
	return path == "" || route == path || strings.HasPrefix(route, path+"/")
}

// nginxSize parses an nginx size ("4194304", "8m", "1g").
func nginxSize(s string) (int64, error) {
	mult := int64(1)
	switch {
	case strings.HasSuffix(strings.ToLower(s), "k"):
		mult = 1 << 10
	case strings.HasSuffix(strings.ToLower(s), "m"):
		mult = 1 << 20
	case strings.HasSuffix(strings.ToLower(s), "g"):
		mult = 1 << 30
	}
	if mult > 1 {
		s = s[:len(s)-1]
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n * mult, err
}

func keys(m map[string]string) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}
