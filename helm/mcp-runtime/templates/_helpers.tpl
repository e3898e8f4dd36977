{{/*
The chart name, overridable with nameOverride.
*/}}
{{- define "mcp-runtime.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The full name of the release's objects (63 characters at most, a DNS label).
*/}}
{{- define "mcp-runtime.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "mcp-runtime.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "mcp-runtime.labels" -}}
helm.sh/chart: {{ include "mcp-runtime.chart" . }}
{{ include "mcp-runtime.selectorLabels" . }}
app.kubernetes.io/version: {{ include "mcp-runtime.imageTag" . | replace "+" "_" | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/component: server
app.kubernetes.io/part-of: mcp-runtime
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "mcp-runtime.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mcp-runtime.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "mcp-runtime.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mcp-runtime.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "mcp-runtime.imageTag" -}}
{{- default .Chart.AppVersion .Values.image.tag }}
{{- end }}

{{/*
The image reference: by digest when one is given, else by tag.
*/}}
{{- define "mcp-runtime.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (include "mcp-runtime.imageTag" .) }}
{{- end }}
{{- end }}

{{/*
The secret-backed settings: the environment variable, the values section,
and the key of that section holding an inline value. One list, so the
Deployment and the chart's Secret cannot disagree.
*/}}
{{- define "mcp-runtime.secretSettings" -}}
- {env: DATABASE_URL, section: database, inline: url}
- {env: REDIS_URL, section: redis, inline: url}
- {env: MCP_ADMIN_TOKEN, section: adminToken, inline: value}
- {env: MCP_REQUEST_STATE_KEY, section: requestStateKey, inline: value}
{{- end }}

{{/*
Checks each secret-backed setting has at most one source, and prints the
inline values as "ENV: value" lines (the chart's Secret), in order.
*/}}
{{- define "mcp-runtime.inlineSecrets" -}}
{{- range (include "mcp-runtime.secretSettings" . | fromYamlArray) }}
{{- $s := index $.Values .section }}
{{- $inline := index $s .inline }}
{{- if and $s.existingSecret $inline }}
{{- fail (printf "%s: set existingSecret or %s, not both" .section .inline) }}
{{- end }}
{{- if $inline }}
{{ .env }}: {{ $inline | b64enc | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Whether a setting is configured at all: "true" or "".
*/}}
{{- define "mcp-runtime.hasSecret" -}}
{{- $s := index .root.Values .section }}
{{- if or $s.existingSecret (index $s .inline) }}true{{ end }}
{{- end }}

{{/*
The env entries of the secret-backed settings, each a secretKeyRef: to the
existing Secret, or to the chart's own.
*/}}
{{- define "mcp-runtime.secretEnv" -}}
{{- range (include "mcp-runtime.secretSettings" . | fromYamlArray) }}
{{- $s := index $.Values .section }}
{{- if $s.existingSecret }}
- name: {{ .env }}
  valueFrom:
    secretKeyRef:
      name: {{ $s.existingSecret }}
      key: {{ $s.secretKey }}
{{- else if index $s .inline }}
- name: {{ .env }}
  valueFrom:
    secretKeyRef:
      name: {{ include "mcp-runtime.fullname" $ }}
      key: {{ .env }}
{{- end }}
{{- end }}
{{- end }}

{{/*
The server's configuration file: config, as YAML.
*/}}
{{- define "mcp-runtime.configFile" -}}
{{- toYaml .Values.config }}
{{- end }}

{{/*
The URL scheme the pod serves.
*/}}
{{- define "mcp-runtime.scheme" -}}
{{- if .Values.tls.enabled }}HTTPS{{ else }}HTTP{{ end }}
{{- end }}

{{/*
Fails the render on combinations that would break at run time.
*/}}
{{- define "mcp-runtime.validate" -}}
{{- $shared := and (include "mcp-runtime.hasSecret" (dict "root" . "section" "database" "inline" "url")) (include "mcp-runtime.hasSecret" (dict "root" . "section" "redis" "inline" "url")) }}
{{- if and (or (gt (int .Values.replicaCount) 1) .Values.autoscaling.enabled) (not $shared) }}
{{- fail "more than one replica (replicaCount > 1 or autoscaling.enabled) needs database and redis: without them every pod keeps its own state and client sessions, and a client sent to another pod gets 404" }}
{{- end }}
{{- $graceMs := 25000 }}
{{- if hasKey .Values.config "shutdownGraceMs" }}
{{- $graceMs = int64 .Values.config.shutdownGraceMs }}
{{- end }}
{{- $needed := add (div (add $graceMs 999) 1000) (int .Values.lifecycle.preStopSleepSeconds) }}
{{- if le (int .Values.terminationGracePeriodSeconds) (int $needed) }}
{{- fail (printf "terminationGracePeriodSeconds (%d) must be longer than config.shutdownGraceMs (%d ms) plus lifecycle.preStopSleepSeconds (%d s), or pods are killed mid-drain" (int .Values.terminationGracePeriodSeconds) $graceMs (int .Values.lifecycle.preStopSleepSeconds)) }}
{{- end }}
{{- if and .Values.tls.enabled (not .Values.tls.secretName) }}
{{- fail "tls.enabled needs tls.secretName (a kubernetes.io/tls Secret)" }}
{{- end }}
{{- end }}
