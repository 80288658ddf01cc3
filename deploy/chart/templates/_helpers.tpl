{{/* The labels of everything the chart makes. */}}
{{- define "reconciler-host.labels" -}}
app.kubernetes.io/name: reconciler-host
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The pods' selector labels. */}}
{{- define "reconciler-host.selector" -}}
app.kubernetes.io/name: reconciler-host
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* A file of files/ with the host's ServiceAccount namespace made the release's. */}}
{{- define "reconciler-host.file" -}}
{{ .root.Files.Get .file | replace "namespace: reconciler-system" (printf "namespace: %s" .root.Release.Namespace) }}
{{- end }}
