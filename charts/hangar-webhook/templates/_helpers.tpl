{{/*
Names, labels and the rendered config.yaml of the hangar-webhook chart.
*/}}

{{- define "hangar-webhook.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
Full name: RELEASE-hangar-webhook, or RELEASE when it already contains the
chart name. Truncated to leave room for the "-tls"/"-serving" suffixes.
*/}}
{{- define "hangar-webhook.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 52 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 52 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "hangar-webhook.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "hangar-webhook.selectorLabels" -}}
app.kubernetes.io/name: {{ include "hangar-webhook.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: admission-webhook
{{- end }}

{{- define "hangar-webhook.labels" -}}
helm.sh/chart: {{ include "hangar-webhook.chart" . }}
{{ include "hangar-webhook.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: hangar
{{- end }}

{{/* URL mode: the webhook runs outside the cluster; nothing runs in it. */}}
{{- define "hangar-webhook.urlMode" -}}
{{- if .Values.webhook.url }}true{{ end }}
{{- end }}

{{- define "hangar-webhook.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "hangar-webhook.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The MutatingWebhookConfiguration's name (the self-managed webhook patches it). */}}
{{- define "hangar-webhook.webhookConfigName" -}}
{{- include "hangar-webhook.fullname" . }}
{{- end }}

{{/* The namespaces never sent to either webhook, whatever the scope:
kube-system, the release's own (the webhook must never be needed to start
itself) and webhook.excludeNamespaces. */}}
{{- define "hangar-webhook.excludedNamespaces" -}}
{{- concat (list "kube-system" .Release.Namespace) .Values.webhook.excludeNamespaces | uniq | toJson }}
{{- end }}

{{/* The namespaces both webhook configurations see: under scope.mode optIn
only those labelled scope.namespaceLabel; never the excluded ones above;
and only those the extra selector (webhook.namespaceSelector) picks. */}}
{{- define "hangar-webhook.namespaceSelector" -}}
{{- $v := .Values }}
{{- $excluded := include "hangar-webhook.excludedNamespaces" . | fromJsonArray -}}
{{- $labels := deepCopy (default dict $v.webhook.namespaceSelector.matchLabels) }}
{{- if eq $v.scope.mode "optIn" }}
{{- $_ := set $labels $v.scope.namespaceLabel.key $v.scope.namespaceLabel.value }}
{{- end }}
{{- with $labels }}
matchLabels:
  {{- toYaml . | nindent 2 }}
{{- end }}
matchExpressions:
  - key: kubernetes.io/metadata.name
    operator: NotIn
    values:
      {{- toYaml $excluded | nindent 6 }}
  {{- with $v.webhook.namespaceSelector.matchExpressions }}
  {{- toYaml . | nindent 2 }}
  {{- end }}
{{- end }}

{{/* "true" when the API server serves ValidatingAdmissionPolicy v1 (GA in
Kubernetes 1.30): helm install and upgrade read it from the API server's
discovery; helm template needs --api-versions
admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy. Without it the
policies are not rendered and the webhook keeps the doors they hold. */}}
{{- define "hangar-webhook.hasPolicies" -}}
{{- if .Capabilities.APIVersions.Has "admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy" }}true{{ end }}
{{- end }}

{{/* The matchCondition that sends the guard only UPDATEs of hangar's pods:
either side carries one of hangar's two record annotations or a container
hangar-driver. When it is false the guard would allow the update anyway: no
record annotation changed (the only rule for every pod), the old pod is not
injected (its other rules read only injected pods) and neither is the new
one (ephemeral containers). The API server validates an UPDATE before
admission, so no UPDATE adds a container: the object's side is defence in
depth. Optional fields behind has(): under Fail an error refuses. */}}
{{- define "hangar-webhook.hangarPodCondition" -}}
- name: hangar-pod
  expression: >-
    (has(oldObject.metadata.annotations) &&
    ('hangar.dev/driver-sidecar' in oldObject.metadata.annotations ||
    'hangar.dev/driver-sidecar-reason' in oldObject.metadata.annotations)) ||
    (has(object.metadata.annotations) &&
    ('hangar.dev/driver-sidecar' in object.metadata.annotations ||
    'hangar.dev/driver-sidecar-reason' in object.metadata.annotations)) ||
    (has(oldObject.spec.containers) && oldObject.spec.containers.exists(c, c.name == 'hangar-driver')) ||
    (has(object.spec.containers) && object.spec.containers.exists(c, c.name == 'hangar-driver')) ||
    (has(oldObject.spec.initContainers) && oldObject.spec.initContainers.exists(c, c.name == 'hangar-driver')) ||
    (has(object.spec.initContainers) && object.spec.initContainers.exists(c, c.name == 'hangar-driver'))
{{- end }}

{{/* A ValidatingAdmissionPolicyBinding's validationActions for an
enforcement mode: enforce (refuse, and say so in the audit log), warn (a
warning to the client) or audit (the audit log only). Deny and Warn together
are invalid (the API server refuses the binding). */}}
{{- define "hangar-webhook.validationActions" -}}
{{- $mode := default "enforce" . }}
{{- if eq $mode "enforce" }}[Deny, Audit]
{{- else if eq $mode "warn" }}[Warn, Audit]
{{- else if eq $mode "audit" }}[Audit]
{{- else }}{{ fail (printf "enforcement mode %q: must be enforce, warn or audit" $mode) }}
{{- end }}
{{- end }}

{{/* URL mode: the validating endpoint (guard.url, else webhook.url with its
/mutate path replaced by /validate). */}}
{{- define "hangar-webhook.validateUrl" -}}
{{- if .Values.guard.url }}
{{- .Values.guard.url }}
{{- else }}
{{- printf "%s/validate" (trimSuffix "/" (trimSuffix "/mutate" .Values.webhook.url)) }}
{{- end }}
{{- end }}

{{/* clientConfig of the doors' webhooks: /validate beside /mutate. */}}
{{- define "hangar-webhook.guardClientConfig" -}}
{{- $v := .Values -}}
{{- if include "hangar-webhook.urlMode" . }}
url: {{ include "hangar-webhook.validateUrl" . | quote }}
caBundle: {{ $v.webhook.caBundle | quote }}
{{- else }}
service:
  name: {{ include "hangar-webhook.fullname" . }}
  namespace: {{ .Release.Namespace }}
  path: /validate
  port: {{ $v.service.port }}
{{- if eq $v.certificates.mode "provided" }}
caBundle: {{ $v.certificates.provided.caBundle | quote }}
{{- end }}
{{- end }}
{{- end }}

{{/* The Secret the serving certificate lives in, per certificate mode. */}}
{{- define "hangar-webhook.tlsSecretName" -}}
{{- $c := .Values.certificates }}
{{- if eq $c.mode "selfManaged" }}
{{- default (printf "%s-tls" (include "hangar-webhook.fullname" .)) $c.selfManaged.secretName }}
{{- else if eq $c.mode "certManager" }}
{{- printf "%s-tls" (include "hangar-webhook.fullname" .) }}
{{- else }}
{{- $c.provided.secretName }}
{{- end }}
{{- end }}

{{/* cert-manager: the serving Certificate (the CA is injected from it). */}}
{{- define "hangar-webhook.servingCertName" -}}
{{- printf "%s-serving" (include "hangar-webhook.fullname" .) }}
{{- end }}

{{- define "hangar-webhook.image" -}}
{{- $i := .Values.image }}
{{- if $i.digest }}
{{- printf "%s@%s" $i.repository $i.digest }}
{{- else }}
{{- printf "%s:%s" $i.repository (default .Chart.AppVersion $i.tag) }}
{{- end }}
{{- end }}

{{/* The bundle image the init container hangar-bin copies from. */}}
{{- define "hangar-webhook.bundleImage" -}}
{{- $b := .Values.driver.binaries.bundle }}
{{- if $b.digest }}
{{- printf "%s@%s" $b.repository $b.digest }}
{{- else }}
{{- printf "%s:%s" $b.repository (default .Chart.AppVersion $b.tag) }}
{{- end }}
{{- end }}

{{/* The Service's DNS names, as the API server resolves them. */}}
{{- define "hangar-webhook.serviceDNSNames" -}}
{{- $svc := include "hangar-webhook.fullname" . }}
{{- $ns := .Release.Namespace }}
- {{ $svc }}
- {{ printf "%s.%s" $svc $ns }}
- {{ printf "%s.%s.svc" $svc $ns }}
- {{ printf "%s.%s.svc.cluster.local" $svc $ns }}
{{- end }}

{{/*
Checks across values that the schema cannot express. Every message says
which value to change.
*/}}
{{- define "hangar-webhook.validate" -}}
{{- $v := .Values }}
{{- $c := $v.certificates }}
{{- if $v.webhook.url }}
{{- if not $v.webhook.caBundle }}
{{- fail "webhook.url is set (URL mode) but webhook.caBundle is empty: give the base64 PEM of the CA that signed the external webhook's certificate" }}
{{- end }}
{{- if not (contains "-----BEGIN CERTIFICATE-----" (b64dec $v.webhook.caBundle)) }}
{{- fail "webhook.caBundle is not a base64-encoded PEM certificate (expected base64 of '-----BEGIN CERTIFICATE-----...')" }}
{{- end }}
{{- else }}
{{- if $v.webhook.caBundle }}
{{- fail "webhook.caBundle is only used with webhook.url (URL mode); in service mode use certificates.provided.caBundle with certificates.mode=provided" }}
{{- end }}
{{- if eq $c.mode "provided" }}
{{- if or (not $c.provided.secretName) (not $c.provided.caBundle) }}
{{- fail "certificates.mode=provided needs both certificates.provided.secretName (a kubernetes.io/tls Secret in the release namespace) and certificates.provided.caBundle (base64 PEM of its CA)" }}
{{- end }}
{{- if not (contains "-----BEGIN CERTIFICATE-----" (b64dec $c.provided.caBundle)) }}
{{- fail "certificates.provided.caBundle is not a base64-encoded PEM certificate (expected base64 of '-----BEGIN CERTIFICATE-----...')" }}
{{- end }}
{{- else if $c.provided.secretName }}
{{- fail (printf "certificates.provided.secretName is set but certificates.mode is %s: set certificates.mode=provided or remove it" $c.mode) }}
{{- end }}
{{- if eq $c.mode "selfManaged" }}
{{- if ge (int $c.selfManaged.renewBeforeDays) (int $c.selfManaged.leafDays) }}
{{- fail "certificates.selfManaged.renewBeforeDays must be less than certificates.selfManaged.leafDays" }}
{{- end }}
{{- if le (int $c.selfManaged.caDays) (int $c.selfManaged.renewBeforeDays) }}
{{- fail "certificates.selfManaged.caDays must be more than certificates.selfManaged.renewBeforeDays" }}
{{- end }}
{{- if and (gt (int $c.selfManaged.caOverlapSeconds) 0) (le (int $c.selfManaged.caOverlapSeconds) (add (int $c.selfManaged.syncSeconds) (int $v.server.certPollSeconds))) }}
{{- fail "certificates.selfManaged.caOverlapSeconds must be more than certificates.selfManaged.syncSeconds plus server.certPollSeconds" }}
{{- end }}
{{- if and (not $v.serviceAccount.create) (not $v.serviceAccount.name) }}
{{- fail "certificates.mode=selfManaged binds RBAC to the webhook's ServiceAccount: with serviceAccount.create=false set serviceAccount.name" }}
{{- end }}
{{- end }}
{{- if and (eq $c.mode "certManager") $c.certManager.issuerRef }}
{{- if not $c.certManager.issuerRef.name }}
{{- fail "certificates.certManager.issuerRef needs a name (or leave issuerRef {} for the chart's self-signed CA)" }}
{{- end }}
{{- end }}
{{- end }}
{{- if and $v.podDisruptionBudget.enabled (gt (int $v.replicaCount) 1) (ge (int $v.podDisruptionBudget.minAvailable) (int $v.replicaCount)) }}
{{- fail "podDisruptionBudget.minAvailable must be less than replicaCount, or no node could ever be drained" }}
{{- end }}
{{- if eq (int $v.server.port) (int $v.server.healthPort) }}
{{- fail "server.healthPort must differ from server.port" }}
{{- end }}
{{- $home := trimSuffix "/" $v.volumes.home.mountPath }}
{{- $ctl := trimSuffix "/" $v.volumes.ctl.mountPath }}
{{- if or (eq $home $ctl) (hasPrefix (printf "%s/" $home) $ctl) (hasPrefix (printf "%s/" $ctl) $home) }}
{{- fail "volumes.home.mountPath and volumes.ctl.mountPath must not be equal or nested" }}
{{- end }}
{{- end }}

{{/*
config.yaml for `hangar-webhook serve`. Only keys the binary knows: it
rejects unknown ones. Strings go through toJson (a JSON string is a YAML
double-quoted scalar), so no value can break the document.
*/}}
{{- define "hangar-webhook.config" -}}
{{- $v := .Values -}}
driverSidecar: {{ $v.driverSidecar.enabled }}
agentServiceAccountToken: {{ $v.driverSidecar.agentServiceAccountToken | toJson }}
conflictEnforcement: {{ $v.driverSidecar.conflictEnforcement | default "enforce" | toJson }}
selector:
  key: {{ $v.selector.key | toJson }}
  value: {{ $v.selector.value | toJson }}
  operator: {{ $v.selector.operator | default "In" | toJson }}
agentContainer: {{ $v.agentContainer | toJson }}
driver:
  uid: {{ int64 $v.driver.uid }}
  gid: {{ int64 $v.driver.gid }}
  command: {{ $v.driver.command | toJson }}
  nativeSidecar: {{ $v.driver.nativeSidecar }}
  uidSplit: {{ $v.driver.uidSplit | default "auto" | toJson }}
  cloneSafety: {{ $v.driver.cloneSafety | default "auto" | toJson }}
  binaries:
    from: {{ $v.driver.binaries.from | default "agentImage" | toJson }}
    bundleImage: {{ include "hangar-webhook.bundleImage" . | toJson }}
  probes:
    enabled: {{ $v.driver.probes.enabled }}
    startup:
      periodSeconds: {{ int64 $v.driver.probes.startup.periodSeconds }}
      timeoutSeconds: {{ int64 $v.driver.probes.startup.timeoutSeconds }}
      failureThreshold: {{ int64 $v.driver.probes.startup.failureThreshold }}
    liveness:
      periodSeconds: {{ int64 $v.driver.probes.liveness.periodSeconds }}
      timeoutSeconds: {{ int64 $v.driver.probes.liveness.timeoutSeconds }}
      failureThreshold: {{ int64 $v.driver.probes.liveness.failureThreshold }}
  resources:
    requests:
      cpu: {{ $v.driver.resources.requests.cpu | toJson }}
      memory: {{ $v.driver.resources.requests.memory | toJson }}
    limits:
      cpu: {{ $v.driver.resources.limits.cpu | toJson }}
      memory: {{ $v.driver.resources.limits.memory | toJson }}
gvisor:
  runtimeClassNames: {{ $v.gvisor.runtimeClassNames | toJson }}
guard:
  driverUsers: {{ $v.guard.driverUsers | toJson }}
  driverGroups: {{ $v.guard.driverGroups | toJson }}
  enforcement: {{ $v.guard.enforcement | default "enforce" | toJson }}
volumes:
  home:
    mountPath: {{ $v.volumes.home.mountPath | toJson }}
  ctl:
    mountPath: {{ $v.volumes.ctl.mountPath | toJson }}
    sizeLimit: {{ $v.volumes.ctl.sizeLimit | toJson }}
server:
  address: "0.0.0.0"
  port: {{ int64 $v.server.port }}
  healthPort: {{ int64 $v.server.healthPort }}
  certFile: /etc/hangar-webhook/tls/tls.crt
  keyFile: /etc/hangar-webhook/tls/tls.key
  maxBodyBytes: {{ int64 $v.server.maxBodyBytes }}
  requestTimeoutSeconds: {{ int64 $v.server.requestTimeoutSeconds }}
  threads: {{ int64 $v.server.threads }}
  certPollSeconds: {{ int64 $v.server.certPollSeconds }}
logLevel: {{ $v.logLevel | toJson }}
{{- if and (not (include "hangar-webhook.urlMode" .)) (eq $v.certificates.mode "selfManaged") }}
{{- $s := $v.certificates.selfManaged }}
tls:
  mode: selfManaged
  secretName: {{ include "hangar-webhook.tlsSecretName" . | toJson }}
  webhookConfigName: {{ include "hangar-webhook.webhookConfigName" . | toJson }}
  {{- if $v.guard.enabled }}
  validatingWebhookConfigName: {{ include "hangar-webhook.webhookConfigName" . | toJson }}
  {{- end }}
  serviceName: {{ include "hangar-webhook.fullname" . | toJson }}
  dnsNames: {{ $s.dnsNames | toJson }}
  ipAddresses: {{ $s.ipAddresses | toJson }}
  leafDays: {{ int64 $s.leafDays }}
  renewBeforeDays: {{ int64 $s.renewBeforeDays }}
  caDays: {{ int64 $s.caDays }}
  syncSeconds: {{ int64 $s.syncSeconds }}
  caOverlapSeconds: {{ int64 $s.caOverlapSeconds }}
{{- end }}
{{- end }}
