{{/* The chart name. */}}
{{- define "mandate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The full name: the prefix of every resource. */}}
{{- define "mandate.fullname" -}}
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

{{/* Common labels. */}}
{{- define "mandate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "mandate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: mandate
{{- end }}

{{/* Selector labels. */}}
{{- define "mandate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "mandate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: webhook
{{- end }}

{{/* The ServiceAccount name. */}}
{{- define "mandate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "mandate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image reference. */}}
{{- define "mandate.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The TLS Secret the webhook serves from; fails without cert-manager and without one. */}}
{{- define "mandate.tlsSecretName" -}}
{{- if .Values.certManager.enabled }}
{{- default (printf "%s-tls" (include "mandate.fullname" .)) .Values.tls.secretName }}
{{- else }}
{{- include "mandate.validateTLS" . }}
{{- .Values.tls.secretName }}
{{- end }}
{{- end }}

{{/* The serving Certificate's name (the inject-ca-from target). */}}
{{- define "mandate.servingCertName" -}}
{{- printf "%s-serving" (include "mandate.fullname" .) }}
{{- end }}

{{/*
The webhooks' clientConfig for a path (dict "ctx" $ "path" "/mutate").
Without cert-manager the caBundle is required; with certs.mode selfSigned
mandate serve sets it.
*/}}
{{- define "mandate.clientConfig" -}}
{{- $ := .ctx -}}
service:
  namespace: {{ $.Release.Namespace }}
  name: {{ include "mandate.fullname" $ }}
  path: {{ .path }}
  port: 443
{{- if and (not (include "mandate.useCertManager" $)) (ne $.Values.certs.mode "selfSigned") }}
{{- include "mandate.validateTLS" $ }}
caBundle: {{ $.Values.tls.caBundle }}
{{- end }}
{{- end }}

{{/* Namespaces the workload webhooks never govern (webhook.Configurations). */}}
{{- define "mandate.excludedNamespaces" -}}
{{- $ns := concat (list "kube-system" "kube-public" "kube-node-lease") .Values.webhook.extraExcludedNamespaces (list .Release.Namespace) | uniq }}
{{- toJson $ns }}
{{- end }}

{{/* Everything a workload webhook has besides its name, clientConfig and rules. */}}
{{- define "mandate.workloadWebhookCommon" -}}
failurePolicy: {{ .Values.webhook.failurePolicy }}
{{ include "mandate.workloadWebhookSelection" . }}
{{- end }}

{{/* What every workload webhook shares but its failurePolicy: the eviction
guard's is always Ignore. */}}
{{- define "mandate.workloadWebhookSelection" -}}
matchPolicy: Exact
namespaceSelector:
  {{- with .Values.webhook.namespaceSelector.matchLabels }}
  matchLabels:
    {{- toYaml . | nindent 4 }}
  {{- end }}
  matchExpressions:
    {{- with .Values.webhook.namespaceSelector.matchExpressions }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values: {{ include "mandate.excludedNamespaces" . }}
sideEffects: None
timeoutSeconds: {{ .Values.webhook.timeoutSeconds }}
admissionReviewVersions: ["v1"]
{{- end }}

{{/* Without cert-manager, the Secret and the CA bundle must both be given. */}}
{{- define "mandate.validateTLS" -}}
{{- if and (not .Values.certManager.enabled) (or (not .Values.tls.secretName) (not .Values.tls.caBundle)) }}
{{- fail "certManager.enabled is false: tls.secretName (an existing kubernetes.io/tls Secret with tls.crt and tls.key in the release namespace) and tls.caBundle (the base64 PEM CA that signed it) are both required" }}
{{- end }}
{{- end }}

{{/* cert-manager issues the serving certificate (certs.mode files with certManager.enabled). */}}
{{- define "mandate.useCertManager" -}}
{{- if and .Values.certManager.enabled (ne .Values.certs.mode "selfSigned") }}true{{ end }}
{{- end }}

{{/* The CA Secret of certs.mode selfSigned. */}}
{{- define "mandate.caSecretName" -}}
{{- printf "%s-webhook-ca" (include "mandate.fullname" .) }}
{{- end }}

{{/*
GOMEMLIMIT for a container memory limit (a Kubernetes quantity such as 1Gi,
1024Mi or 1073741824): goMemLimitPercent of it, in bytes. The Go runtime
counts only its own memory against GOMEMLIMIT; the process's RSS also holds
what the runtime does not (thread stacks outside the heap, fragmentation,
pages it has not returned yet), so a GOMEMLIMIT equal to the limit lets the
RSS pass the limit before the collector pushes back: the OOM killer then
acts first. A limit below it (90%, as common practice) leaves that headroom.
*/}}
{{- define "mandate.goMemLimit" -}}
{{- $q := toString .limit -}}
{{- $units := dict "Ki" 1024 "Mi" 1048576 "Gi" 1073741824 "Ti" 1099511627776 "k" 1000 "M" 1000000 "G" 1000000000 "T" 1000000000000 "" 1 -}}
{{- $num := regexFind "^[0-9]+" $q -}}
{{- $suffix := trimPrefix $num $q -}}
{{- if or (not $num) (not (hasKey $units $suffix)) -}}
{{- fail (printf "resources.limits.memory %q: want whole bytes or a whole number of Ki, Mi, Gi, Ti, k, M, G or T to derive GOMEMLIMIT from" $q) -}}
{{- end -}}
{{- $percent := int64 .percent -}}
{{- if or (lt $percent 1) (gt $percent 100) -}}
{{- fail (printf "goMemLimitPercent %d: want 1 to 100" $percent) -}}
{{- end -}}
{{- div (mul (int64 $num) (int64 (get $units $suffix)) $percent) 100 -}}
{{- end -}}

{{/*
The bytes of admission requests a replica decides at once
(--max-in-flight-bytes): webhook.maxInFlightBytes, or, when it is 0, a
128th of resources.limits.memory (8 MiB of 1Gi), at least 1 MiB. A decision
holds about 30 times its request's bytes, so the requests in flight then
take about a quarter of the limit at most. Without a memory limit, ""
(serve's own default).
*/}}
{{- define "mandate.maxInFlightBytes" -}}
{{- $budget := int64 .Values.webhook.maxInFlightBytes -}}
{{- if and (eq $budget 0) (dig "limits" "memory" "" .Values.resources) -}}
{{- $limit := include "mandate.goMemLimit" (dict "limit" .Values.resources.limits.memory "percent" 100) | int64 -}}
{{- $budget = max 1048576 (div $limit 128) -}}
{{- end -}}
{{- if $budget }}{{ $budget }}{{ end -}}
{{- end -}}

{{/*
The file mandate serve reads the webhook callers' CA from
(webhook.clientAuth): the clientAuth.caConfigMap's key, else with
cert-manager the chart's CA beside the serving certificate; "" when client
authentication is off. Fails when it is on and there is neither.
*/}}
{{- define "mandate.clientCAFile" -}}
{{- $a := .Values.webhook.clientAuth }}
{{- if $a.enabled }}
{{- if $a.caConfigMap }}
{{- printf "/etc/mandate/client-ca/%s" $a.caKey }}
{{- else if include "mandate.useCertManager" . }}
{{- print "/tls/ca.crt" }}
{{- else }}
{{- fail "webhook.clientAuth.enabled is true without cert-manager: set webhook.clientAuth.caConfigMap to a ConfigMap holding the PEM CA that signs your API server's webhook client certificate, or webhook.clientAuth.enabled=false where the API server cannot present one (docs/security.md)" }}
{{- end }}
{{- end }}
{{- end }}
