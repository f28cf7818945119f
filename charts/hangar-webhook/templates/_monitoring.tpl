{{/*
Names and checks of the monitoring templates (servicemonitor.yaml,
prometheusrule.yaml); docs/metrics.md describes the alerts.
*/}}

{{/* The Service the ServiceMonitor scrapes; also its job label in Prometheus
(the Prometheus Operator names the job after the Service). */}}
{{- define "hangar-webhook.metricsServiceName" -}}
{{- printf "%s-metrics" (include "hangar-webhook.fullname" .) }}
{{- end }}

{{/* PromQL matchers that pick the webhook's own series. */}}
{{- define "hangar-webhook.metricsSelector" -}}
{{- with .Values.monitoring.prometheusRule.selector }}
{{- . }}
{{- else }}
{{- printf "job=%s,namespace=%s" (include "hangar-webhook.metricsServiceName" . | quote) (.Release.Namespace | quote) }}
{{- end }}
{{- end }}

{{- define "hangar-webhook.validateMonitoring" -}}
{{- $v := .Values }}
{{- $m := $v.monitoring }}
{{- if and $m.serviceMonitor.enabled (include "hangar-webhook.urlMode" .) }}
{{- fail "monitoring.serviceMonitor.enabled: in URL mode (webhook.url) no webhook runs in the cluster to scrape; scrape it where it runs and set monitoring.prometheusRule.selector" }}
{{- end }}
{{- if $m.prometheusRule.enabled }}
{{- if and (include "hangar-webhook.urlMode" .) (not $m.prometheusRule.selector) }}
{{- fail "monitoring.prometheusRule.enabled in URL mode (webhook.url) needs monitoring.prometheusRule.selector: the PromQL matchers of the job that scrapes the webhook" }}
{{- end }}
{{- $t := $m.prometheusRule.thresholds }}
{{- if and (not (include "hangar-webhook.urlMode" .)) (eq $v.certificates.mode "selfManaged") }}
{{- $s := $v.certificates.selfManaged }}
{{- if ge (int $t.certExpiryDays) (int $s.renewBeforeDays) }}
{{- fail "monitoring.prometheusRule.thresholds.certExpiryDays must be less than certificates.selfManaged.renewBeforeDays, or every renewal would page" }}
{{- end }}
{{- if ge (int $t.caExpiryDays) (int $s.renewBeforeDays) }}
{{- fail "monitoring.prometheusRule.thresholds.caExpiryDays must be less than certificates.selfManaged.renewBeforeDays (the CA is rotated that long before it expires)" }}
{{- end }}
{{- if le (int $t.caBundleStaleSeconds) (mul 2 (int $s.syncSeconds)) }}
{{- fail "monitoring.prometheusRule.thresholds.caBundleStaleSeconds must be more than twice certificates.selfManaged.syncSeconds" }}
{{- end }}
{{- end }}
{{- end }}
{{- end }}
