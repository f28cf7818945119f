#!/usr/bin/env bash
# The chart's monitoring (charts/hangar-webhook: monitoring.serviceMonitor,
# monitoring.prometheusRule), checked with the real tools:
#   1. off by default: no ServiceMonitor, PrometheusRule or metrics Service in
#      any mode;
#   2. on: the ServiceMonitor picks the metrics Service, whose port reaches
#      the pods' health port; labels, interval and thresholds come from the
#      values; the alerts per mode;
#   3. `promtool check rules` on every rendered rule file, and `promtool test
#      rules` (rules_test.yaml: each alert against series that should and
#      should not fire it) on the rule file extracted from `helm template`,
#      so the test tests what ships; the annotations as rendered
#      (rules_annotations_test.yaml); a changed threshold makes the tests fail
#      (they read the rendered values, not a copy);
#      the API server's group (monitoring.apiServerRules) the same way
#      (rules_apiserver_test.yaml);
#   4. bad monitoring values refused with a clear message;
#   5. with kube-apiserver in TOOLS_BIN: the Prometheus Operator's own CRDs
#      installed and both objects accepted by `kubectl apply --dry-run=server`.
# usage: test_monitoring_chart.sh TOOLS_BIN PROM_BIN
#   TOOLS_BIN: helm, kubectl (and kube-apiserver, etcd for part 5)
#   PROM_BIN: promtool, and ../crds from scripts/prom-tools.sh
TOOLS=${1:-}
PROM_BIN=${2:-}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "chart monitoring: ServiceMonitor, PrometheusRule, promtool test rules"

CHART=${HANGAR_CHART:-$ROOT/charts/hangar-webhook}
VALUES=$ROOT/tests/chart/values
HELM=$TOOLS/helm
KUBECTL=$TOOLS/kubectl
PROMTOOL=$PROM_BIN/promtool
for tool in "$HELM" "$KUBECTL"; do
        if [ -z "$TOOLS" ] || [ ! -x "$tool" ]; then
                t_fail "$tool not found: configure with -DHANGAR_TOOLS_BIN=\"\$(scripts/k8s-tools.sh --print-bin-dir)\""
                t_end
        fi
done
if [ -z "$PROM_BIN" ] || [ ! -x "$PROMTOOL" ]; then
        t_fail "promtool not found in '$PROM_BIN': configure with -DHANGAR_PROM_BIN=\"\$(scripts/prom-tools.sh --print-bin-dir)\""
        t_end
fi
cd "$T_TMP" || exit 1
export HELM_CONFIG_HOME=$T_TMP/helm/config HELM_CACHE_HOME=$T_TMP/helm/cache HELM_DATA_HOME=$T_TMP/helm/data
export KUBECONFIG=/dev/null
NS=hangar-system
REL=hw
FULL=hw-hangar-webhook
ON=(--set monitoring.serviceMonitor.enabled=true --set monitoring.prometheusRule.enabled=true)

# render NAME HELM-ARGS...: helm template into NAME.yaml and NAME.json (an
# array of the objects, read by kubectl's decoder).
render() {
        local name=$1
        shift
        if ! "$HELM" template "$REL" "$CHART" -n "$NS" "$@" >"$name.yaml" 2>"$name.err"; then
                t_fail "helm template $name: $(cat "$name.err")"
                echo '[]' >"$name.json"
                return 1
        fi
        "$KUBECTL" patch --local -f "$name.yaml" --type=merge -p '{}' -o json | jq -s . >"$name.json"
}

# jq_check DESCRIPTION FILE EXPR: passes when jq -e EXPR holds on FILE.
jq_check() {
        local what=$1 file=$2 expr=$3
        T_CHECKS=$((T_CHECKS + 1))
        if jq -e "$expr" "$file" >/dev/null 2>"$T_TMP/jq.err"; then
                echo "  ok   $what"
        else
                echo "  FAIL $what"
                echo "       jq: $expr"
                sed 's/^/       /' "$T_TMP/jq.err"
                T_FAILURES=$((T_FAILURES + 1))
        fi
}

# rules NAME: the PrometheusRule of NAME.json as a Prometheus rule file
# (NAME-rules.yaml, as rendered) and without annotations (NAME-bare.yaml).
rules() {
        jq '[.[] | select(.kind == "PrometheusRule")][0].spec' "$1.json" >"$1-rules.yaml"
        jq 'del(.groups[].rules[].annotations)' "$1-rules.yaml" >"$1-bare.yaml"
}

# rules_ok WHAT FILE: FILE passes promtool check rules (its output shown if not).
rules_ok() {
        t_check "promtool check rules ($1)" bash -c "'$PROMTOOL' check rules '$2' >'$2.check' 2>&1 || { cat '$2.check'; false; }"
}

# ---- 1. off by default --------------------------------------------------------
echo "-- off by default, in every mode"
for m in default self-managed cert-manager provided url driver-on; do
        args=()
        [ "$m" = default ] || args=(-f "$VALUES/$m.yaml")
        render "off-$m" "${args[@]}" || continue
        jq_check "$m: no ServiceMonitor, PrometheusRule or metrics Service" "off-$m.json" \
                "map(select(.kind == \"ServiceMonitor\" or .kind == \"PrometheusRule\" or .metadata.name == \"$FULL-metrics\")) | length == 0"
done

# ---- 2. on ---------------------------------------------------------------------
echo "-- on: the ServiceMonitor, its Service and the rules"
render on "${ON[@]}" \
        --set monitoring.serviceMonitor.labels.release=prometheus \
        --set monitoring.prometheusRule.labels.role=alert-rules \
        --set monitoring.prometheusRule.alertLabels.team=platform
t_check "helm lint --strict with monitoring on" \
        bash -c "'$HELM' lint --strict '$CHART' ${ON[*]} >lint.out 2>&1 || { cat lint.out; false; }"
SVC=".[] | select(.kind == \"Service\" and .metadata.name == \"$FULL-metrics\")"
SM='.[] | select(.kind == "ServiceMonitor")'
DEP='.[] | select(.kind == "Deployment")'
jq_check "one ServiceMonitor (monitoring.coreos.com/v1) and one PrometheusRule" on.json \
        '(map(select(.kind == "ServiceMonitor" and .apiVersion == "monitoring.coreos.com/v1")) | length == 1)
         and (map(select(.kind == "PrometheusRule" and .apiVersion == "monitoring.coreos.com/v1")) | length == 1)'
jq_check "the ServiceMonitor picks the metrics Service and no other" on.json \
        "($SM | .spec.selector.matchLabels) as \$sel
         | [.[] | select(.kind == \"Service\") | select(.metadata.labels | contains(\$sel)) | .metadata.name] == [\"$FULL-metrics\"]"
jq_check "... in the release namespace" on.json \
        "$SM | .metadata.namespace == \"$NS\" and .spec.namespaceSelector.matchNames == [\"$NS\"]"
jq_check "its endpoint is the Service's port, /metrics over plain HTTP, every 30s" on.json \
        "($SVC | .spec.ports[0].name) as \$p
         | $SM | .spec.endpoints == [{port: \$p, path: \"/metrics\", scheme: \"http\", interval: \"30s\", scrapeTimeout: \"10s\"}]"
jq_check "the metrics Service selects the webhook's pods" on.json \
        "($DEP | .spec.template.metadata.labels) as \$pod | $SVC | (\$pod | contains(.spec.selector // {})) and (.spec.selector | length > 0)"
jq_check "... and reaches their health port (server.healthPort)" on.json \
        "($DEP | .spec.template.spec.containers[0].ports[] | select(.name == \"health\") | .containerPort) as \$hp
         | $SVC | .spec.ports == [{name: \"metrics\", port: \$hp, targetPort: \"health\", protocol: \"TCP\"}]"
jq_check "the webhook's own Service is unchanged (https only)" on.json \
        ".[] | select(.kind == \"Service\" and .metadata.name == \"$FULL\") | [.spec.ports[].name] == [\"https\"]"
jq_check "ServiceMonitor labels from the values" on.json "$SM | .metadata.labels.release == \"prometheus\""
jq_check "PrometheusRule labels from the values" on.json \
        '.[] | select(.kind == "PrometheusRule") | .metadata.labels.role == "alert-rules"'
rules on
ALERTS_SM='["HangarWebhookCABundleFlapping","HangarWebhookCABundleOutOfSync","HangarWebhookCAExpiring","HangarWebhookCertificateExpiring","HangarWebhookDenialsRising","HangarWebhookDown","HangarWebhookErrorsRising","HangarWebhookNotReady","HangarWebhookReplicasUnavailable","HangarWebhookSlowReviews"]'
jq_check "self-managed: the ten alerts" on-rules.yaml "[.groups[].rules[].alert] | sort == $ALERTS_SM"
# shellcheck disable=SC2016 # $r is jq's
jq_check "every alert has a severity, the extra alert labels, a summary and a description naming its runbook" on-rules.yaml \
        '[.groups[].rules[] | . as $r | (.labels.severity | IN("critical", "warning")) and .labels.team == "platform"
          and (.annotations.summary | length > 0)
          and (.annotations.description | contains("docs/metrics.md#" + ($r.alert | ascii_downcase)))] | all'
jq_check "every webhook series is picked by the ServiceMonitor's job and namespace" on-rules.yaml \
        "[.groups[].rules[] | select(.alert != \"HangarWebhookReplicasUnavailable\") | .expr
          | test(\"job=\\\"$FULL-metrics\\\",namespace=\\\"$NS\\\"\")] | all"
jq_check "the latency budget is webhook.timeoutSeconds x latencyBudgetRatio (5 x 0.5)" on-rules.yaml \
        '.groups[].rules[] | select(.alert == "HangarWebhookSlowReviews") | .expr | test("> 2.5$")'
rules_ok "self-managed" on-rules.yaml

render cm "${ON[@]}" -f "$VALUES/cert-manager.yaml" && rules cm
jq_check "cert-manager: no CA or caBundle alerts (cert-manager owns them)" cm-rules.yaml \
        '[.groups[].rules[].alert] | (index("HangarWebhookCertificateExpiring") != null)
         and (map(select(test("CA"))) | length == 0) and length == 7'
rules_ok "cert-manager" cm-rules.yaml
render noksm "${ON[@]}" --set monitoring.prometheusRule.kubeStateMetrics=false && rules noksm
jq_check "kubeStateMetrics=false: no kube-state-metrics alert" noksm-rules.yaml \
        '[.groups[].rules[].alert] | index("HangarWebhookReplicasUnavailable") == null and length == 9'
# (A fraction through --set arrives as a string: a values file, as admins would.)
cat >tuned-values.yaml <<'EOF'
webhook:
  timeoutSeconds: 10
monitoring:
  prometheusRule:
    selector: 'job="hangar", cluster=~"eu-.*"'
    thresholds:
      latencyBudgetRatio: 0.3
      downFor: 2m
EOF
render tuned "${ON[@]}" -f tuned-values.yaml && rules tuned
jq_check "a chosen selector, threshold and for" tuned-rules.yaml \
        '(.groups[].rules[] | select(.alert == "HangarWebhookSlowReviews") | .expr | test("> 3$"))
         and (.groups[].rules[] | select(.alert == "HangarWebhookNotReady")
              | .for == "2m" and (.expr | contains("hangar_webhook_ready{job=\"hangar\", cluster=~\"eu-.*\"} == 0")))'
rules_ok "a chosen selector" tuned-rules.yaml
render url "${ON[@]}" --set monitoring.serviceMonitor.enabled=false -f "$VALUES/url.yaml" \
        --set-string 'monitoring.prometheusRule.selector=job="hangar-local"' && rules url
jq_check "URL mode: rules on the given selector, without kube-state-metrics or self-managed alerts" url-rules.yaml \
        '[.groups[].rules[].alert] | length == 6 and index("HangarWebhookReplicasUnavailable") == null'
rules_ok "URL mode" url-rules.yaml
render api "${ON[@]}" --set monitoring.apiServerRules.enabled=true && rules api
ALERTS_API='["HangarAPIServerCannotCallWebhook","HangarAPIServerWebhookErrorRatio","HangarAPIServerWebhookFailedOpen","HangarAPIServerWebhookSlow","HangarDriverExecRefused","HangarMatchConditionErrors","HangarPolicyBroken","HangarSandboxOutOfScope","HangarWebhookUnreachable"]'
jq_check "apiServerRules: a second group, hangar-webhook-apiserver, with the nine API server alerts" api-rules.yaml \
        "(.groups | map(.name)) == [\"hangar-webhook\", \"hangar-webhook-apiserver\"] and ([.groups[1].rules[].alert] | sort == $ALERTS_API)"
t_check "apiServerRules: the webhook's own group is unchanged" \
        bash -c "[ \"\$(jq -c '.groups[0]' api-rules.yaml)\" = \"\$(jq -c '.groups[0]' on-rules.yaml | sed 's/,\"team\":\"platform\"//g')\" ]"
# shellcheck disable=SC2016 # $r is jq's
jq_check "apiServerRules: every alert has a severity, a summary and its runbook" api-rules.yaml \
        '[.groups[1].rules[] | . as $r | (.labels.severity | IN("critical", "warning"))
          and (.annotations.summary | length > 0)
          and (.annotations.description | contains("docs/metrics.md#" + ($r.alert | ascii_downcase)))] | all'
jq_check "apiServerRules: the API server's series through its selector; hangar's webhooks and this release's policies only" api-rules.yaml \
        "([.groups[1].rules[].expr | [scan(\"apiserver_[a-z_]+[{][^}]*\")] | all(startswith(\"apiserver_\") and contains(\"{job=\\\"apiserver\\\",\"))] | all)
         and ([.groups[1].rules[].expr | select(test(\"apiserver_admission_webhook\"))] | all(contains(\"name=~\\\"(.+[.])?driver-sidecar[.]hangar[.]dev\")))
         and ([.groups[1].rules[].expr | select(test(\"policy_check_total\"))] | all(contains(\"policy=~\\\"$FULL-(driver-exec|sandbox-scope)\\\"\") or contains(\"policy=\\\"$FULL-driver-exec\\\"\") or contains(\"policy=\\\"$FULL-sandbox-scope\\\"\")))"
rules_ok "apiServerRules" api-rules.yaml

# ---- 3. promtool test rules on what ships -------------------------------------
echo "-- promtool test rules"
# The rule file as it ships: monitoring on, every other value its default.
render ship "${ON[@]}" && rules ship
mkdir -p rt
cp ship-bare.yaml rt/rules.yaml
cp ship-rules.yaml rt/rules-full.yaml
cp "$HERE/rules_test.yaml" "$HERE/rules_annotations_test.yaml" rt/
t_check "every alert fires on its series and not on the others (rules_test.yaml)" \
        bash -c "'$PROMTOOL' test rules rt/rules_test.yaml >rt/out 2>&1 || { cat rt/out; false; }"
t_check "annotations as the on-call reads them (rules_annotations_test.yaml)" \
        bash -c "'$PROMTOOL' test rules rt/rules_annotations_test.yaml >rt/out-ann 2>&1 || { cat rt/out-ann; false; }"
for a in $(jq -r '.groups[].rules[].alert' on-rules.yaml); do
        t_check "$a: tested firing and not firing" python3 - "$HERE/rules_test.yaml" "$a" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
cases = [c for t in doc["tests"] for c in t.get("alert_rule_test", []) if c["alertname"] == sys.argv[2]]
sys.exit(0 if any(c.get("exp_alerts") for c in cases) and any(not c.get("exp_alerts") for c in cases) else 1)
PY
done
# The API server's group, as it ships with apiServerRules on.
mkdir -p rta
cp api-bare.yaml rta/rules.yaml
cp "$HERE/rules_apiserver_test.yaml" rta/
t_check "every API server alert fires on its series and not on the others (rules_apiserver_test.yaml)" \
        bash -c "'$PROMTOOL' test rules rta/rules_apiserver_test.yaml >rta/out 2>&1 || { cat rta/out; false; }"
for a in $(jq -r '.groups[1].rules[].alert' api-rules.yaml); do
        t_check "$a: tested firing and not firing" python3 - "$HERE/rules_apiserver_test.yaml" "$a" <<'PY'
import sys, yaml
doc = yaml.safe_load(open(sys.argv[1]))
cases = [c for t in doc["tests"] for c in t.get("alert_rule_test", []) if c["alertname"] == sys.argv[2]]
sys.exit(0 if any(c.get("exp_alerts") for c in cases) and any(not c.get("exp_alerts") for c in cases) else 1)
PY
done
printf 'monitoring:\n  apiServerRules:\n    errorRatio: 0.1\n' >api-mutant-values.yaml
render apimutant "${ON[@]}" --set monitoring.apiServerRules.enabled=true -f api-mutant-values.yaml && rules apimutant
mkdir -p mta && cp apimutant-bare.yaml mta/rules.yaml && cp "$HERE/rules_apiserver_test.yaml" mta/
"$PROMTOOL" test rules mta/rules_apiserver_test.yaml >mta/out 2>&1
t_check "another errorRatio fails the API server tests (they test the rendered file)" \
        grep -q 'alertname: HangarAPIServerWebhookErrorRatio' mta/out
# The tests read the rendered thresholds: other values must fail them.
render mutant "${ON[@]}" --set monitoring.prometheusRule.thresholds.deniedReviews=50 \
        --set monitoring.prometheusRule.thresholds.caBundleStaleSeconds=3600 && rules mutant
mkdir -p mt && cp mutant-bare.yaml mt/rules.yaml && cp "$HERE/rules_test.yaml" mt/
"$PROMTOOL" test rules mt/rules_test.yaml >mt/out 2>&1
t_check "other thresholds fail the tests (they test the rendered file)" \
        bash -c "grep -q 'alertname: HangarWebhookDenialsRising' mt/out && grep -q 'alertname: HangarWebhookCABundleOutOfSync' mt/out"

# ---- 4. bad values --------------------------------------------------------------
echo "-- bad monitoring values are refused with a clear message"
expect_refused() { # DESCRIPTION 'MESSAGE REGEX' HELM-ARGS...
        local what=$1 re=$2 out rc
        shift 2
        out=$("$HELM" template "$REL" "$CHART" -n "$NS" "$@" 2>&1 >/dev/null)
        rc=$?
        if [ "$rc" != 0 ] && grep -Eq -- "$re" <<<"$out"; then
                T_CHECKS=$((T_CHECKS + 1))
                echo "  ok   refused: $what ($(grep -E -- "$re" <<<"$out" | head -n 1 | sed 's/^[- ]*//' | cut -c1-110))"
        else
                t_fail "$what: expected a refusal matching /$re/, got exit $rc: $out"
        fi
}
expect_refused "an unknown monitoring key" "/monitoring/serviceMonitor.*additional properties 'port' not allowed" \
        --set monitoring.serviceMonitor.port=8081
expect_refused "an unknown threshold" "/monitoring/prometheusRule/thresholds.*additional properties 'p99' not allowed" \
        --set monitoring.prometheusRule.thresholds.p99=1
expect_refused "enabled: \"yes\"" "/monitoring/prometheusRule/enabled.*want boolean" \
        --set-string monitoring.prometheusRule.enabled=yes
expect_refused "an interval that is not a duration" "/monitoring/serviceMonitor/interval.*does not match" \
        --set "monitoring.serviceMonitor.interval=30 seconds"
expect_refused "downFor empty" "/monitoring/prometheusRule/thresholds/downFor.*does not match" \
        --set monitoring.prometheusRule.thresholds.downFor=
expect_refused "latencyBudgetRatio over 1" "/monitoring/prometheusRule/thresholds/latencyBudgetRatio.*maximum" \
        --set monitoring.prometheusRule.thresholds.latencyBudgetRatio=2
expect_refused "a selector that would break out of its braces" "/monitoring/prometheusRule/selector.*does not match" \
        --set-string 'monitoring.prometheusRule.selector=job="x"} or vector(1)'
expect_refused "a ServiceMonitor in URL mode" "monitoring.serviceMonitor.enabled: in URL mode" \
        -f "$VALUES/url.yaml" --set monitoring.serviceMonitor.enabled=true
expect_refused "rules in URL mode without a selector" "URL mode .* needs monitoring.prometheusRule.selector" \
        -f "$VALUES/url.yaml" --set monitoring.prometheusRule.enabled=true
expect_refused "certExpiryDays inside the renewal window" "certExpiryDays must be less than certificates.selfManaged.renewBeforeDays" \
        "${ON[@]}" --set monitoring.prometheusRule.thresholds.certExpiryDays=30
expect_refused "caExpiryDays inside the rotation window" "caExpiryDays must be less than" \
        "${ON[@]}" --set monitoring.prometheusRule.thresholds.caExpiryDays=45
expect_refused "apiServerRules without the PrometheusRule" "monitoring.apiServerRules.enabled adds a group to the chart's PrometheusRule" \
        --set monitoring.apiServerRules.enabled=true
expect_refused "an apiServerRules selector that would break out of its braces" "/monitoring/apiServerRules/selector.*does not match" \
        --set-string 'monitoring.apiServerRules.selector=job="x"} or vector(1)'
expect_refused "an empty apiServerRules selector" "/monitoring/apiServerRules/selector" \
        --set-string 'monitoring.apiServerRules.selector='
expect_refused "caBundleStaleSeconds within two syncs" "caBundleStaleSeconds must be more than twice" \
        "${ON[@]}" --set certificates.selfManaged.syncSeconds=600

# ---- 5. the Prometheus Operator's CRDs on a real API server ----------------------
CRDS=$PROM_BIN/../crds
if [ ! -x "$TOOLS/kube-apiserver" ] || [ ! -x "$TOOLS/etcd" ] || [ ! -d "$CRDS" ]; then
        echo "-- real API server: skipped (no kube-apiserver/etcd in TOOLS_BIN or no CRDs beside promtool)"
        t_end
fi
echo "-- the Prometheus Operator's CRDs on a real kube-apiserver"
CP=$T_TMP/cp
# shellcheck disable=SC2317 # called from the EXIT trap
cp_stop() { "$ROOT/scripts/control-plane.sh" stop "$CP" >"$T_TMP/cp-stop.log" 2>&1 || cat "$T_TMP/cp-stop.log"; }
trap 't_main_shell || exit; cp_stop; t_cleanup' EXIT
if ! HANGAR_K8S_BIN=$TOOLS "$ROOT/scripts/control-plane.sh" start "$CP" >cp-start.log 2>&1; then
        t_fail "control plane did not start: $(tail -n 20 cp-start.log)"
        t_end
fi
# shellcheck source=/dev/null # written by control-plane.sh start
. "$CP/env"
K=("$KUBECTL" --request-timeout 30s --cache-dir "$T_TMP/kubecache")
"${K[@]}" create namespace "$NS" >/dev/null
t_check "the operator's ServiceMonitor and PrometheusRule CRDs install" \
        bash -c "'${K[0]}' --request-timeout 60s apply --server-side -f '$CRDS' >crds.out 2>&1 || { cat crds.out; false; }"
"${K[@]}" wait --for condition=established --timeout=60s \
        crd/servicemonitors.monitoring.coreos.com crd/prometheusrules.monitoring.coreos.com >/dev/null
rm -rf "$T_TMP/kubecache"
for name in on cm tuned api; do
        jq '{apiVersion: "v1", kind: "List", items: map(select(.kind == "ServiceMonitor" or .kind == "PrometheusRule"
                or (.kind == "Service" and (.metadata.name | endswith("-metrics")))))}' "$name.json" >"$name-mon.json"
        t_check "$name: accepted by kubectl apply --dry-run=server (strict field validation)" \
                bash -c "'$KUBECTL' --request-timeout 30s --cache-dir '$T_TMP/kubecache' apply --dry-run=server --validate=strict -f '$name-mon.json' >'$name-apply.out' 2>&1 || { cat '$name-apply.out'; false; }"
done
t_end
