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

{{- /* The objects of extender.enabled: kube-scheduler-extended, apart from kubesched's. */ -}}
{{- define "kubesched.extender.labels" -}}
app.kubernetes.io/name: kube-scheduler-extended
app.kubernetes.io/part-of: kubesched
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{- define "kubesched.extender.selector" -}}
app.kubernetes.io/name: kube-scheduler-extended
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}
