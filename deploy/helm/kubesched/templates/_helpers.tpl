{{- define "kubesched.labels" -}}
app.kubernetes.io/name: kubesched
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{- define "kubesched.selector" -}}
app.kubernetes.io/name: kubesched
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
