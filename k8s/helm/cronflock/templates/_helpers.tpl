{{/* Name of the chart (or nameOverride), at most 63 characters. */}}
{{- define "cronflock.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name of the release's objects: the release name when it already contains the chart's name (release
"cronflock" -> "cronflock"), else "<release>-<name>"; at most 63 characters.
*/}}
{{- define "cronflock.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "cronflock.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Selector labels of the replicas: `app.kubernetes.io/name: <full name>`. The full name (not only the chart's
name) keeps two releases in one namespace apart, and for a release named "cronflock" these are the kustomize
base's labels, so both render the same pod spec (its topology spread constraints select by them).
*/}}
{{- define "cronflock.selectorLabels" -}}
app.kubernetes.io/name: {{ include "cronflock.fullname" . }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "cronflock.labels" -}}
{{ include "cronflock.selectorLabels" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/part-of: cronflock
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The ServiceAccount the replicas run as. */}}
{{- define "cronflock.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "cronflock.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Secret holding REDIS_URL, and its key. */}}
{{- define "cronflock.redisSecret" -}}
{{- default (printf "%s-redis" (include "cronflock.fullname" .)) .Values.redis.existingSecret }}
{{- end }}
{{- define "cronflock.redisSecretKey" -}}
{{- if .Values.redis.existingSecret }}{{ .Values.redis.existingSecretKey }}{{ else }}REDIS_URL{{ end }}
{{- end }}

{{/* The ConfigMap holding the schedule files. */}}
{{- define "cronflock.schedulesConfigMap" -}}
{{- default (printf "%s-schedules" (include "cronflock.fullname" .)) .Values.schedules.existingConfigMap }}
{{- end }}

{{/* Seconds of a duration written as <n>s, <n>m, <n>h or <n>d (values.schema.json checks the form). */}}
{{- define "cronflock.seconds" -}}
{{- $d := toString . }}
{{- $n := regexFind "^[0-9]+" $d }}
{{- $unit := trimPrefix $n $d }}
{{- $per := dict "s" 1 "m" 60 "h" 3600 "d" 86400 }}
{{- if or (not $n) (not (hasKey $per $unit)) }}
{{- fail (printf "%q is not a duration like 90s, 30m, 2h or 1d" $d) }}
{{- end }}
{{- mul (int $n) (get $per $unit) }}
{{- end }}

{{/* A rule per entry of `resources` ({apiGroups, resources}) with `verbs`. */}}
{{- define "cronflock.resourceRules" -}}
{{- $verbs := .verbs }}
{{- range .resources }}
- apiGroups: {{ toJson .apiGroups }}
  resources: {{ toJson .resources }}
  verbs: {{ toJson $verbs }}
{{- end }}
{{- end }}
