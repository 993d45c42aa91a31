{{/* The name of every object: the release's when it names the chart, else <release>-farm-apiserver. */}}
{{- define "farm.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The labels that select the server's Pods. */}}
{{- define "farm.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* The labels of every object. */}}
{{- define "farm.labels" -}}
{{ include "farm.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The Secret of the serving certificate. */}}
{{- define "farm.servingSecret" -}}
{{- if eq .Values.certificates.mode "secret" -}}
{{- required "certificates.secretName is required with certificates.mode secret" .Values.certificates.secretName -}}
{{- else -}}
{{- include "farm.fullname" . }}-serving-cert
{{- end -}}
{{- end -}}

{{/* The versions served, each with its APIService. */}}
{{- define "farm.versions" -}}
v1: 20
v1alpha: 15
{{- end -}}

{{/* The etcd of the chart's own, its Service's name. */}}
{{- define "farm.etcd" -}}
{{- include "farm.fullname" . }}-etcd
{{- end -}}

{{/* The Secret of the server's etcd client certificate. */}}
{{- define "farm.etcdClientSecret" -}}
{{- if .Values.storage.etcd.deploy -}}
{{- include "farm.etcd" . }}-client
{{- else -}}
{{- required "storage.etcd.clientSecret is required for an etcd of yours" .Values.storage.etcd.clientSecret -}}
{{- end -}}
{{- end -}}

{{/* The Pod of etcd-secrets' Job and CronJob: dict root, name (its ServiceAccount), args, restart. */}}
{{- define "farm.etcdSecretsPod" -}}
{{- $root := .root -}}
metadata:
  labels:
    app.kubernetes.io/component: etcd-secrets
    app.kubernetes.io/instance: {{ $root.Release.Name }}
spec:
  serviceAccountName: {{ .name }}
  restartPolicy: {{ .restart }}
  priorityClassName: {{ $root.Values.priorityClassName | quote }}
  nodeSelector:
    kubernetes.io/os: linux
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    seccompProfile:
      type: RuntimeDefault
  containers:
  - name: etcd-secrets
    image: "{{ $root.Values.image.repository }}:{{ $root.Values.image.tag | default $root.Chart.AppVersion }}"
    imagePullPolicy: {{ $root.Values.image.pullPolicy }}
    args: {{ toJson .args }}
    resources:
      requests: {cpu: 10m, memory: 16Mi}
      limits: {memory: 64Mi}
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities:
        drop: ["ALL"]
{{- end -}}

{{/* The Pod of the etcd backup's CronJob and Job: a snapshot into the backup claim. */}}
{{- define "farm.etcdBackupPod" -}}
metadata:
  labels:
    app.kubernetes.io/component: etcd-backup
    app.kubernetes.io/instance: {{ .Release.Name }}
spec:
  restartPolicy: Never
  automountServiceAccountToken: false
  {{- with .Values.storage.etcd.backup.nodeSelector }}
  nodeSelector:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.storage.etcd.backup.tolerations }}
  tolerations:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  {{- with .Values.storage.etcd.backup.affinity }}
  affinity:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  securityContext:
    runAsNonRoot: true
    runAsUser: 65532
    runAsGroup: 65532
    fsGroup: 65532
    seccompProfile:
      type: RuntimeDefault
  containers:
  - name: backup
    image: "{{ .Values.storage.etcd.image.repository }}:{{ .Values.storage.etcd.image.tag }}"
    imagePullPolicy: {{ .Values.storage.etcd.image.pullPolicy }}
    command:
    - /usr/local/bin/etcdctl
    - {{ printf "--endpoints=https://%s.%s.svc:2379" (include "farm.etcd" .) .Release.Namespace }}
    - --cacert=/etc/etcd/client/ca.crt
    - --cert=/etc/etcd/client/tls.crt
    - --key=/etc/etcd/client/tls.key
    - --command-timeout=600s
    - snapshot
    - save
    - /backup/snapshot.db
    resources:
      requests: {cpu: 10m, memory: 32Mi}
      limits: {memory: 256Mi}
    securityContext:
      allowPrivilegeEscalation: false
      readOnlyRootFilesystem: true
      capabilities:
        drop: ["ALL"]
    volumeMounts:
    - name: etcd-client
      mountPath: /etc/etcd/client
      readOnly: true
    - name: backup
      mountPath: /backup
  volumes:
  - name: etcd-client
    secret:
      secretName: {{ include "farm.etcdClientSecret" . }}
  - name: backup
    persistentVolumeClaim:
      claimName: {{ include "farm.etcd" . }}-backup
{{- end -}}
