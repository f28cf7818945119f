#!/usr/bin/env bash
# The chart's API server alerts (monitoring.apiServerRules) on what a real
# kube-apiserver exports, not on series written by hand: the doors fixture
# (tests/e2e/doorslib.sh: the chart in URL mode, the webhook local, its
# driver-exec policy) scraped before and after the webhook is stopped and
# then asked for a sandbox pod, a port-forward and an exec into
# hangar-driver, and a sandbox pod is created in a namespace that did not
# opt in. Both scrapes become promtool's input series (job
# "apiserver", five minutes apart) and the rules the chart renders must fire
# HangarAPIServerCannotCallWebhook for exactly the two calls that failed,
# HangarDriverExecRefused and HangarSandboxOutOfScope for the two policies,
# HangarWebhookUnreachable (the
# webhook reviewed nothing), and no policy or match-condition error alert.
# Fails if the API server renames a metric or a label the rules read.
# usage: test_apiserver_metrics.sh HANGAR_WEBHOOK PROM_BIN TOOLS_BIN
WEBHOOK=$(realpath "$1")
PROM_BIN=${2:-}
TOOLS_BIN=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "the API server's alerts on a real kube-apiserver's /metrics (promtool)"
PROMTOOL=$PROM_BIN/promtool
if [ -z "$PROM_BIN" ] || [ ! -x "$PROMTOOL" ]; then
        t_fail "promtool not found in '$PROM_BIN': configure with -DHANGAR_PROM_BIN=\"\$(scripts/prom-tools.sh --print-bin-dir)\""
        t_end
fi
if [ -z "$TOOLS_BIN" ] || [ ! -x "$TOOLS_BIN/kube-apiserver" ]; then
        t_fail "kube-apiserver not found in '$TOOLS_BIN': configure with -DHANGAR_TOOLS_BIN=\"\$(scripts/k8s-tools.sh --print-bin-dir)\""
        t_end
fi
TOOLS_BIN=$(realpath "$TOOLS_BIN")
cd "$T_TMP" || exit 1
export PATH=$TOOLS_BIN:$PATH
export HELM_CONFIG_HOME=$T_TMP/helm/config HELM_CACHE_HOME=$T_TMP/helm/cache HELM_DATA_HOME=$T_TMP/helm/data
. "$ROOT/tests/e2e/doorslib.sh"

# shellcheck disable=SC2119 # the default control plane
doors_up
pod box | kubectl create -f - >/dev/null
kubectl create namespace elsewhere >/dev/null
doors_wait
# The series the rules read, as the API server exports them.
FAMILIES='^(apiserver_admission_webhook_(rejection_count|fail_open_count|request_total|admission_duration_seconds_bucket)|apiserver_admission_match_condition_evaluation_errors_total|apiserver_validating_admission_policy_check_total)[{]'
scrape() { kubectl get --raw /metrics | grep -E "$FAMILIES"; }
scrape >before.prom
curl -sf --cacert pki/ca.crt "https://127.0.0.1:$PORT/metrics" | grep -E '^hangar_webhook_reviews_total[{]' >reviews.prom

t_signal TERM "$WEBHOOK_PID"
wait "$WEBHOOK_PID" 2>/dev/null
out=$(pod down | kubectl create -f - 2>&1)
t_check "webhook down: a sandbox pod is refused (got: $(head -c 160 <<<"$out"))" grep -q "failed calling webhook" <<<"$out"
out=$(kubectl get --raw "/api/v1/namespaces/$NS/pods/box/portforward?ports=1" "${H[@]}" 2>&1)
t_check "webhook down: a port-forward to the injected pod is refused" grep -q "failed calling webhook" <<<"$out"
out=$(kubectl exec -n $NS box -c hangar-driver "${M[@]}" -- id 2>&1)
t_check "an exec into hangar-driver by an unlisted user is refused by the policy" grep -q "hangar driver-exec" <<<"$out"
out=$(pod stray | jq '.metadata.namespace = "elsewhere"' | kubectl create -f - 2>&1)
t_check "a sandbox pod in a namespace that did not opt in is refused by the scope policy" grep -q "hangar scope" <<<"$out"
scrape >after.prom
t_check "the API server exports the families the rules read" \
        bash -c "grep -q '^apiserver_admission_webhook_rejection_count{' after.prom && grep -q '^apiserver_validating_admission_policy_check_total{' after.prom"

# The rules as the chart renders them for this release.
helm template hangar "$ROOT/charts/hangar-webhook" -n hangar-system \
        --set webhook.url="https://127.0.0.1:$PORT/mutate" --set webhook.caBundle="$(base64 -w0 pki/ca.crt)" \
        --set-json "guard.driverUsers=[\"$HANGAR\"]" \
        --set monitoring.prometheusRule.enabled=true --set monitoring.apiServerRules.enabled=true \
        --set-string 'monitoring.prometheusRule.selector=job="hangar-local"' \
        --show-only templates/prometheusrule.yaml >rule.yaml 2>rule.err || t_fail "helm template: $(cat rule.err)"
kubectl patch --local -f rule.yaml --type=merge -p '{}' -o json | jq '.spec | del(.groups[].rules[].annotations)' >rules.yaml

# Two scrapes, five minutes apart, as promtool input series; the webhook's
# own counter stands still (it is down), under the rules' job.
python3 - before.prom after.prom reviews.prom >input.yaml <<'PY'
import json, re, sys
def read(path, extra):
    out = {}
    for line in open(path):
        m = re.match(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)\{(.*)\}\s+(\S+)', line)
        if m:
            out[m.group(1) + '{' + extra + m.group(2) + '}'] = float(m.group(3))
    return out
before, after = read(sys.argv[1], 'job="apiserver",'), read(sys.argv[2], 'job="apiserver",')
reviews = read(sys.argv[3], 'job="hangar-local",')
series = [{"series": k, "values": "%s %s" % (repr(before.get(k, 0.0)), repr(v))} for k, v in sorted(after.items())]
series += [{"series": k, "values": "%s %s" % (repr(v), repr(v))} for k, v in sorted(reviews.items())]
print(json.dumps(series))
PY
t_check "input series built from both scrapes ($(jq length input.yaml) series)" test "$(jq length input.yaml)" -gt 10
jq -n --slurpfile s input.yaml '{rule_files: ["rules.yaml"], evaluation_interval: "1m", tests: [{
        name: "the real API server after the webhook stopped", interval: "5m", input_series: $s[0],
        alert_rule_test: [
          {eval_time: "5m", alertname: "HangarAPIServerCannotCallWebhook", exp_alerts: [
            {exp_labels: {severity: "critical", name: "connect.driver-sidecar.hangar.dev", type: "validating", operation: "CONNECT"}},
            {exp_labels: {severity: "critical", name: "driver-sidecar.hangar.dev", type: "admit", operation: "CREATE"}}]},
          {eval_time: "5m", alertname: "HangarDriverExecRefused", exp_alerts: [
            {exp_labels: {severity: "warning", policy: "hangar-hangar-webhook-driver-exec"}}]},
          {eval_time: "5m", alertname: "HangarSandboxOutOfScope", exp_alerts: [
            {exp_labels: {severity: "warning", policy: "hangar-hangar-webhook-sandbox-scope"}}]},
          {eval_time: "5m", alertname: "HangarWebhookUnreachable", exp_alerts: [{exp_labels: {severity: "critical"}}]},
          {eval_time: "5m", alertname: "HangarPolicyBroken", exp_alerts: []},
          {eval_time: "5m", alertname: "HangarMatchConditionErrors", exp_alerts: []},
          {eval_time: "5m", alertname: "HangarAPIServerWebhookFailedOpen", exp_alerts: []}]}]}' >real_test.yaml
t_check "promtool test rules: the chart's rules on the real API server's series" \
        bash -c "'$PROMTOOL' test rules real_test.yaml >promtool.out 2>&1 || { cat promtool.out; false; }"
# The same series before the failures fire nothing: the test can fail.
jq -n --slurpfile s input.yaml '{rule_files: ["rules.yaml"], evaluation_interval: "1m", tests: [{
        name: "only the scrape before", interval: "5m",
        input_series: ($s[0] | map(.values |= (split(" ")[0] + " " + split(" ")[0]))),
        alert_rule_test: [{eval_time: "5m", alertname: "HangarAPIServerCannotCallWebhook", exp_alerts: []},
                          {eval_time: "5m", alertname: "HangarDriverExecRefused", exp_alerts: []},
                          {eval_time: "5m", alertname: "HangarSandboxOutOfScope", exp_alerts: []}]}]}' >quiet_test.yaml
t_check "control: the scrape from before the failures fires neither" \
        bash -c "'$PROMTOOL' test rules quiet_test.yaml >quiet.out 2>&1 || { cat quiet.out; false; }"
t_end
