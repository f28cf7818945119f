#!/usr/bin/env bash
# The Helm chart (charts/hangar-webhook), checked with the real tools:
#   1. helm lint --strict with the defaults and each mode's values;
#   2. helm template of each mode, read back as JSON by kubectl, and the facts
#      that matter checked with jq (webhook configuration, Pod Security,
#      RBAC, certificates, labels);
#   3. each rendered config.yaml accepted by the real `hangar-webhook config`,
#      which prints the effective settings compared with the values;
#   4. bad values refused by the schema or the chart with a clear message;
#   5. a real etcd + kube-apiserver (scripts/control-plane.sh): every mode
#      accepted by `kubectl apply --dry-run=server`, the pod template admitted
#      under Pod Security "restricted", RBAC checked with `kubectl auth can-i`,
#      a real install/upgrade/uninstall in self-managed mode (the real webhook,
#      with the stored configuration and a token of the chart's
#      ServiceAccount, creates its Secret and patches its caBundle, which
#      survives the upgrade) and in URL mode with the webhook running locally
#      on TLS (sandbox pods injected, excluded namespaces and unlabelled pods
#      not; nothing sent after uninstall).
# usage: test_chart.sh PATH/TO/hangar-webhook TOOLS_BIN
#   TOOLS_BIN: directory with helm, kubectl, kube-apiserver, etcd
#   (scripts/k8s-tools.sh --print-bin-dir).
# Environment: HANGAR_CHART (another chart directory, default charts/hangar-webhook:
# to check that this test catches a broken chart),
# T_KEEP_TMP=1 (keep the work directory).
WEBHOOK=$(realpath "$1")
TOOLS=${2:-}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "helm chart: lint, render, schema, real kube-apiserver"

CHART=${HANGAR_CHART:-$ROOT/charts/hangar-webhook}
VALUES=$HERE/values
HELM=$TOOLS/helm
KUBECTL=$TOOLS/kubectl
for tool in helm kubectl kube-apiserver etcd; do
        if [ -z "$TOOLS" ] || [ ! -x "$TOOLS/$tool" ]; then
                t_fail "$tool not found in '$TOOLS': configure with -DHANGAR_TOOLS_BIN=\"\$(scripts/k8s-tools.sh --print-bin-dir)\""
                t_end
        fi
done
[ -x "$WEBHOOK" ] || { t_fail "hangar-webhook not found at '$1'"; t_end; }
cd "$T_TMP" || exit 1

# Helm keeps its state here, not in the user's home; no cluster is reachable
# until the control plane starts.
export HELM_CONFIG_HOME=$T_TMP/helm/config HELM_CACHE_HOME=$T_TMP/helm/cache HELM_DATA_HOME=$T_TMP/helm/data
export KUBECONFIG=/dev/null
NS=hangar-system # the release namespace used for every render
REL=hw
FULL=hw-hangar-webhook
MODES=(default self-managed cert-manager provided url driver-on)
# What helm install learns from a 1.30+ API server's discovery: it serves
# ValidatingAdmissionPolicy v1, so the chart renders its policies.
CAPS=(--api-versions admissionregistration.k8s.io/v1/ValidatingAdmissionPolicy)

mode_args() { # MODE: the helm arguments selecting that mode's values
        [ "$1" = default ] || printf '%s\n' -f "$VALUES/$1.yaml"
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

# to_json: Kubernetes YAML on stdin -> a JSON array of the objects, read by
# kubectl's own decoder (patch --local needs no cluster).
to_json() {
        "$KUBECTL" patch --local -f - --type=merge -p '{}' -o json | jq -s .
}

# ---- 1. helm lint --strict ---------------------------------------------------
echo "-- helm lint --strict"
for m in "${MODES[@]}"; do
        mapfile -t args < <(mode_args "$m")
        out=$("$HELM" lint --strict "$CHART" "${args[@]}" 2>&1)
        rc=$?
        t_eq "helm lint --strict ($m) exits 0" 0 "$rc"
        t_check "helm lint --strict ($m): no warning or error" \
                bash -c "! grep -Eq '\\[(WARNING|ERROR)\\]' <<<\"\$1\" && grep -q '0 chart(s) failed' <<<\"\$1\"" _ "$out"
        # shellcheck disable=SC2001 # indents every line of it
        [ "$rc" = 0 ] || echo "$out" | sed 's/^/       /'
done

# ---- 2. render every mode -----------------------------------------------------
echo "-- helm template, each mode"
for m in "${MODES[@]}"; do
        mapfile -t args < <(mode_args "$m")
        if "$HELM" template "$REL" "$CHART" -n "$NS" "${CAPS[@]}" "${args[@]}" >"$m.yaml" 2>"$m.err" &&
                to_json <"$m.yaml" >"$m.json" 2>>"$m.err"; then
                t_check "$m renders ($(jq -r 'map(.kind) | join(",")' "$m.json"))" true
        else
                t_fail "$m does not render: $(cat "$m.err")"
                echo '[]' >"$m.json"
        fi
done

# Objects by kind: obj KIND [NAME] as a jq filter over the array.
MWC='(map(select(.kind=="MutatingWebhookConfiguration")) | .[0])'
WH="($MWC.webhooks[0])"
VWC='(map(select(.kind=="ValidatingWebhookConfiguration")) | .[0])'
DEP='(map(select(.kind=="Deployment")) | .[0])'
POD="($DEP.spec.template.spec)"
CTR="($POD.containers[0])"
RBAC_KINDS='["Role","RoleBinding","ClusterRole","ClusterRoleBinding"]'

for m in "${MODES[@]}"; do
        f=$m.json
        echo "-- $m: webhook configuration"
        jq_check "$m: one MutatingWebhookConfiguration with one webhook" "$f" \
                "(map(select(.kind==\"MutatingWebhookConfiguration\")) | length == 1) and ($MWC.webhooks | length == 1)"
        jq_check "$m: apiVersion admissionregistration.k8s.io/v1" "$f" "$MWC.apiVersion == \"admissionregistration.k8s.io/v1\""
        jq_check "$m: sideEffects None" "$f" "$WH.sideEffects == \"None\""
        jq_check "$m: admissionReviewVersions [v1]" "$f" "$WH.admissionReviewVersions == [\"v1\"]"
        jq_check "$m: reinvocationPolicy IfNeeded, matchPolicy Equivalent" "$f" \
                "$WH.reinvocationPolicy == \"IfNeeded\" and $WH.matchPolicy == \"Equivalent\""
        jq_check "$m: rules are pods CREATE only (core v1, Namespaced)" "$f" \
                "$WH.rules == [{apiGroups:[\"\"], apiVersions:[\"v1\"], resources:[\"pods\"], operations:[\"CREATE\"], scope:\"Namespaced\"}]"
        jq_check "$m: namespaceSelector excludes kube-system and the release namespace" "$f" \
                "$WH.namespaceSelector.matchExpressions | any(.key==\"kubernetes.io/metadata.name\" and .operator==\"NotIn\" and (.values | index(\"kube-system\") and index(\"$NS\")))"
        jq_check "$m: scope optIn (default): only namespaces labelled hangar.dev/injection=enabled" "$f" \
                "$WH.namespaceSelector.matchLabels[\"hangar.dev/injection\"] == \"enabled\""
        jq_check "$m: the scope policy and its two bindings (not opted in; never served)" "$f" "
                (map(select(.kind==\"ValidatingAdmissionPolicy\")) | map(.metadata.name) | index(\"$FULL-sandbox-scope\")) != null and
                (map(select(.kind==\"ValidatingAdmissionPolicyBinding\" and .spec.policyName==\"$FULL-sandbox-scope\"))
                 | map({n: .metadata.name, a: .spec.validationActions, s: .spec.matchResources.namespaceSelector}) | sort_by(.n)) ==
                [{n: \"$FULL-sandbox-scope\", a: [\"Deny\",\"Audit\"], s: {matchExpressions: [{key: \"hangar.dev/injection\", operator: \"NotIn\", values: [\"enabled\"]}]}},
                 {n: \"$FULL-sandbox-scope-excluded\", a: [\"Deny\",\"Audit\"], s: {matchExpressions: [{key: \"kubernetes.io/metadata.name\", operator: \"In\", values: $WH.namespaceSelector.matchExpressions[0].values}]}}]"
        # shellcheck disable=SC2016 # $l and $k are jq's variables
        jq_check "$m: every object has the standard labels" "$f" \
                'all(.[]; .metadata.labels as $l | ["app.kubernetes.io/name","app.kubernetes.io/instance","app.kubernetes.io/version","app.kubernetes.io/managed-by","app.kubernetes.io/component","app.kubernetes.io/part-of","helm.sh/chart"] | all(. as $k | $l[$k] | type == "string" and length > 0))'
        jq_check "$m: namespaced objects are in the release namespace" "$f" \
                "all(.[] | select(.kind | IN(\"MutatingWebhookConfiguration\",\"ValidatingWebhookConfiguration\",\"ValidatingAdmissionPolicy\",\"ValidatingAdmissionPolicyBinding\",\"ClusterRole\",\"ClusterRoleBinding\") | not); .metadata.namespace == \"$NS\")"
        jq_check "$m: one ValidatingWebhookConfiguration (the doors), named as the mutating one" "$f" \
                "(map(select(.kind==\"ValidatingWebhookConfiguration\")) | length == 1) and ($VWC.metadata.name == $MWC.metadata.name)"
        jq_check "$m: doors: UPDATE of pods, ephemeral containers and resize; CONNECT portforward (exec and attach: the policy); UPDATE pods/status; CREATE pods" "$f" \
                "[$VWC.webhooks[].rules] == [[{apiGroups:[\"\"], apiVersions:[\"v1\"], resources:[\"pods\",\"pods/ephemeralcontainers\",\"pods/resize\"], operations:[\"UPDATE\"], scope:\"Namespaced\"}], [{apiGroups:[\"\"], apiVersions:[\"v1\"], resources:[\"pods/portforward\"], operations:[\"CONNECT\"], scope:\"Namespaced\"}], [{apiGroups:[\"\"], apiVersions:[\"v1\"], resources:[\"pods/status\"], operations:[\"UPDATE\"], scope:\"Namespaced\"}], [{apiGroups:[\"\"], apiVersions:[\"v1\"], resources:[\"pods\"], operations:[\"CREATE\"], scope:\"Namespaced\"}]]"
        jq_check "$m: doors: matchConditions: only hangar's pods' UPDATEs, label/annotation status writes of them, CREATEs carrying hangar-driver" "$f" \
                "[$VWC.webhooks[] | [.matchConditions[]?.name]] == [[\"hangar-pod\"], [], [\"labels-or-annotations-change\", \"hangar-pod\"], [\"carries-hangar-driver\"]]"
        jq_check "$m: the driver-exec policy: CONNECT exec and attach, Fail, bound everywhere, [Deny, Audit]" "$f" "
                (map(select(.kind==\"ValidatingAdmissionPolicy\" and .metadata.name==\"$FULL-driver-exec\")) | .[0].spec) as \$p |
                (map(select(.kind==\"ValidatingAdmissionPolicyBinding\" and .spec.policyName==\"$FULL-driver-exec\"))) as \$b |
                \$p.failurePolicy == \"Fail\" and \$p.paramKind == null and
                \$p.matchConstraints.resourceRules == [{apiGroups:[\"\"], apiVersions:[\"v1\"], resources:[\"pods/exec\",\"pods/attach\"], operations:[\"CONNECT\"]}] and
                (\$b | length == 1) and \$b[0].spec.validationActions == [\"Deny\",\"Audit\"] and
                \$b[0].spec.matchResources == (if \"$m\" == \"driver-on\" then {namespaceSelector: {matchLabels: {\"hangar.dev/sandboxes\": \"enabled\"}}} else null end)"
        jq_check "$m: doors: no objectSelector (CONNECT objects have no labels), the pods' namespaceSelector, Fail, /validate" "$f" \
                "$WH.namespaceSelector as \$ns | $VWC.webhooks | all(.objectSelector == null and .namespaceSelector == \$ns and .failurePolicy == \"Fail\" and .sideEffects == \"None\" and ((.clientConfig.service.path // .clientConfig.url) | endswith(\"/validate\")))"
        if [ "$m" = driver-on ]; then
                jq_check "$m: objectSelector is example.com/agent-sandbox=yes" "$f" \
                        "$WH.objectSelector == {matchLabels: {\"example.com/agent-sandbox\": \"yes\"}}"
                jq_check "$m: failurePolicy Ignore, timeoutSeconds 3" "$f" \
                        "$WH.failurePolicy == \"Ignore\" and $WH.timeoutSeconds == 3"
                jq_check "$m: extra excluded namespaces and the extra namespace selector" "$f" \
                        "($WH.namespaceSelector.matchExpressions[0].values | sort) == ([\"kube-system\",\"$NS\",\"kube-public\",\"kube-node-lease\"] | sort) and $WH.namespaceSelector.matchLabels == {\"hangar.dev/sandboxes\": \"enabled\", \"hangar.dev/injection\": \"enabled\"}"
        else
                jq_check "$m: objectSelector is hangar.dev/sandbox=true" "$f" \
                        "$WH.objectSelector == {matchLabels: {\"hangar.dev/sandbox\": \"true\"}}"
                jq_check "$m: failurePolicy Fail, timeoutSeconds 5 (defaults)" "$f" \
                        "$WH.failurePolicy == \"Fail\" and $WH.timeoutSeconds == 5"
        fi
        case $m in
        url)
                jq_check "$m: clientConfig is the URL with the caBundle value" "$f" \
                        "$WH.clientConfig == {url: \"https://127.0.0.1:9443/mutate\", caBundle: \"$(sed -n 's/^  caBundle: //p' "$VALUES/url.yaml")\"}"
                jq_check "$m: only the ConfigMap, the webhook configurations and the policies" "$f" \
                        '(map(.kind) | unique) == ["ConfigMap","MutatingWebhookConfiguration","ValidatingAdmissionPolicy","ValidatingAdmissionPolicyBinding","ValidatingWebhookConfiguration"]'
                ;;
        provided)
                jq_check "$m: service clientConfig with the provided caBundle" "$f" \
                        "$WH.clientConfig == {service: {name: \"$FULL\", namespace: \"$NS\", path: \"/mutate\", port: 443}, caBundle: \"$(sed -n 's/^    caBundle: //p' "$VALUES/provided.yaml")\"}"
                ;;
        *)
                jq_check "$m: service clientConfig without a caBundle (patched at run time)" "$f" \
                        "$WH.clientConfig == {service: {name: \"$FULL\", namespace: \"$NS\", path: \"/mutate\", port: 443}}"
                ;;
        esac
        if [ "$m" = cert-manager ]; then
                jq_check "$m: cert-manager.io/inject-ca-from names the serving Certificate" "$f" \
                        "$MWC.metadata.annotations[\"cert-manager.io/inject-ca-from\"] == \"$NS/$FULL-serving\""
        else
                jq_check "$m: no cert-manager annotation" "$f" "$MWC.metadata.annotations == null"
        fi

        [ "$m" = url ] && continue
        echo "-- $m: Deployment, Service, PodDisruptionBudget"
        jq_check "$m: pod securityContext is restricted (non-root 65532, RuntimeDefault)" "$f" \
                "$POD.securityContext | .runAsNonRoot == true and .runAsUser == 65532 and .seccompProfile.type == \"RuntimeDefault\""
        jq_check "$m: container securityContext is restricted" "$f" \
                "$CTR.securityContext | .allowPrivilegeEscalation == false and .readOnlyRootFilesystem == true and .capabilities.drop == [\"ALL\"] and (.capabilities.add == null) and .runAsNonRoot == true and .runAsUser == 65532 and .seccompProfile.type == \"RuntimeDefault\" and .privileged != true"
        jq_check "$m: one container, args serve --config /etc/hangar-webhook/config.yaml" "$f" \
                "($POD.containers | length == 1) and $CTR.args == [\"serve\",\"--config\",\"/etc/hangar-webhook/config.yaml\"]"
        jq_check "$m: POD_NAMESPACE from the downward API" "$f" \
                "$CTR.env | any(.name == \"POD_NAMESPACE\" and .valueFrom.fieldRef.fieldPath == \"metadata.namespace\")"
        jq_check "$m: probes GET /readyz and /healthz on the plain health port" "$f" \
                "$CTR | .readinessProbe.httpGet == {path: \"/readyz\", port: \"health\", scheme: \"HTTP\"} and .livenessProbe.httpGet == {path: \"/healthz\", port: \"health\", scheme: \"HTTP\"}"
        jq_check "$m: checksum/config annotation on the pod template" "$f" \
                "$DEP.spec.template.metadata.annotations[\"checksum/config\"] | test(\"^[0-9a-f]{64}$\")"
        jq_check "$m: requests and limits set" "$f" \
                "$CTR.resources | (.requests.cpu and .requests.memory and .limits.cpu and .limits.memory) != null"
        jq_check "$m: spread across kubernetes.io/hostname plus soft anti-affinity" "$f" \
                "($POD.topologySpreadConstraints | any(.topologyKey == \"kubernetes.io/hostname\")) and ($POD.affinity.podAntiAffinity.preferredDuringSchedulingIgnoredDuringExecution | any(.podAffinityTerm.topologyKey == \"kubernetes.io/hostname\"))"
        jq_check "$m: Service 443 -> https (named port)" "$f" \
                "map(select(.kind==\"Service\")) | .[0].spec.ports == [{name: \"https\", port: 443, targetPort: \"https\", protocol: \"TCP\"}]"
        jq_check "$m: TLS files at /etc/hangar-webhook/tls" "$f" \
                "$CTR.volumeMounts | any(.name == \"tls\" and .mountPath == \"/etc/hangar-webhook/tls\")"
        if [ "$m" = driver-on ]; then
                jq_check "$m: 3 replicas, ports 9443 (https) and 9090 (health), priorityClassName" "$f" \
                        "$DEP.spec.replicas == 3 and ($CTR.ports | map({name, containerPort})) == [{name: \"https\", containerPort: 9443}, {name: \"health\", containerPort: 9090}] and $POD.priorityClassName == \"hangar-critical\""
        else
                jq_check "$m: 2 replicas, ports 8443 (https) and 8081 (health)" "$f" \
                        "$DEP.spec.replicas == 2 and ($CTR.ports | map({name, containerPort})) == [{name: \"https\", containerPort: 8443}, {name: \"health\", containerPort: 8081}]"
        fi
        jq_check "$m: PodDisruptionBudget minAvailable 1 selecting the pods" "$f" \
                "(map(select(.kind==\"PodDisruptionBudget\")) | .[0]) as \$p | \$p.spec.minAvailable == 1 and \$p.spec.selector.matchLabels == $DEP.spec.selector.matchLabels"

        echo "-- $m: certificates and RBAC"
        case $m in
        default | self-managed | driver-on)
                secret=$FULL-tls
                [ "$m" = self-managed ] && secret=hangar-webhook-certs
                jq_check "$m: token mounted (the webhook patches its caBundle)" "$f" "$POD.automountServiceAccountToken == true"
                jq_check "$m: TLS directory is an emptyDir the webhook writes" "$f" \
                        "$POD.volumes | any(.name == \"tls\" and .emptyDir != null)"
                jq_check "$m: Role: get/update on the one TLS Secret by name, create without a name" "$f" \
                        "(map(select(.kind==\"Role\")) | .[0].rules | sort_by(.verbs)) == [{apiGroups:[\"\"], resources:[\"secrets\"], verbs:[\"create\"]}, {apiGroups:[\"\"], resources:[\"secrets\"], resourceNames:[\"$secret\"], verbs:[\"get\",\"update\"]}]"
                jq_check "$m: ClusterRole: get/patch on this webhook configuration by name only" "$f" \
                        "(map(select(.kind==\"ClusterRole\")) | .[0].rules) == [{apiGroups:[\"admissionregistration.k8s.io\"], resources:[\"mutatingwebhookconfigurations\",\"validatingwebhookconfigurations\"], resourceNames:[$MWC.metadata.name], verbs:[\"get\",\"patch\"]}, {apiGroups:[\"\"], resources:[\"pods\"], verbs:[\"get\"]}]"
                jq_check "$m: no wildcard in any RBAC rule" "$f" \
                        "[.[] | select(.kind | IN(\"Role\",\"ClusterRole\")) | .rules[] | (.verbs + .resources + .apiGroups)[]] | all(. != \"*\")"
                jq_check "$m: bindings name the webhook's ServiceAccount" "$f" \
                        "$POD.serviceAccountName as \$sa | [.[] | select(.kind | IN(\"RoleBinding\",\"ClusterRoleBinding\")) | .subjects] | all(. == [{kind: \"ServiceAccount\", name: \$sa, namespace: \"$NS\"}]) and length == 2"
                ;;
        cert-manager | provided)
                jq_check "$m: RBAC: only get on pods (the guard reads the pod a port-forward names)" "$f" \
                        "(map(select(.kind | IN(${RBAC_KINDS}[])) | .kind) | sort) == [\"ClusterRole\",\"ClusterRoleBinding\"] and (map(select(.kind==\"ClusterRole\")) | .[0].rules) == [{apiGroups:[\"\"], resources:[\"pods\"], verbs:[\"get\"]}]"
                jq_check "$m: service-account token in the pod (the guard's pod reads)" "$f" "$POD.automountServiceAccountToken == true"
                secret=$FULL-tls
                [ "$m" = provided ] && secret=hangar-webhook-serving
                jq_check "$m: TLS directory is Secret $secret (no subPath: rotation reaches the pod)" "$f" \
                        "($POD.volumes | any(.name == \"tls\" and .secret.secretName == \"$secret\")) and ($CTR.volumeMounts | all(.name != \"tls\" or .subPath == null))"
                ;;
        esac
        jq_check "$m: the ServiceAccount itself does not automount a token" "$f" \
                'map(select(.kind=="ServiceAccount")) | .[0].automountServiceAccountToken == false'
done

# The guard off: no doors' configuration, and a cert-manager install goes
# back to no RBAC and no token at all.
"$HELM" template "$REL" "$CHART" -n "$NS" -f "$VALUES/cert-manager.yaml" --set guard.enabled=false 2>guard-off.err |
        to_json >guard-off.json 2>>guard-off.err
jq_check "guard off: no ValidatingWebhookConfiguration" guard-off.json \
        'map(select(.kind=="ValidatingWebhookConfiguration")) | length == 0'
"$HELM" template "$REL" "$CHART" -n "$NS" "${CAPS[@]}" --set guard.enabled=false 2>guard-off-vap.err | to_json >guard-off-vap.json 2>>guard-off-vap.err
jq_check "guard off: no driver-exec policy (the scope policy stays)" guard-off-vap.json \
        "(map(select(.kind | startswith(\"ValidatingAdmissionPolicy\")) | .metadata.name) | sort) == [\"$FULL-sandbox-scope\", \"$FULL-sandbox-scope\", \"$FULL-sandbox-scope-excluded\"]"
jq_check "guard off, cert-manager: no RBAC and no token" guard-off.json \
        "(map(select(.kind | IN(${RBAC_KINDS}[]))) | length == 0) and $POD.automountServiceAccountToken == false"

# scope.mode all: the namespace selection of the chart before scopes, and
# only the never-served binding.
"$HELM" template "$REL" "$CHART" -n "$NS" "${CAPS[@]}" --set scope.mode=all 2>scope-all.err | to_json >scope-all.json 2>>scope-all.err
jq_check "scope.mode all: every namespace but kube-system and the release's, as before scopes" scope-all.json \
        "[.[] | select(.kind | IN(\"MutatingWebhookConfiguration\",\"ValidatingWebhookConfiguration\")) | .webhooks[].namespaceSelector] | unique == [{matchExpressions: [{key: \"kubernetes.io/metadata.name\", operator: \"NotIn\", values: [\"kube-system\", \"$NS\"]}]}]"
jq_check "scope.mode all: the scope policy binds only the never-served namespaces" scope-all.json \
        "map(select(.kind==\"ValidatingAdmissionPolicyBinding\" and .spec.policyName==\"$FULL-sandbox-scope\") | .metadata.name) == [\"$FULL-sandbox-scope-excluded\"]"
"$HELM" template "$REL" "$CHART" -n "$NS" "${CAPS[@]}" --set scope.namespaceLabel.key=example.com/hangar \
        --set scope.namespaceLabel.value=on 2>scope-label.err | to_json >scope-label.json 2>>scope-label.err
jq_check "scope.namespaceLabel: another label selects the namespaces and binds the policy" scope-label.json \
        "$WH.namespaceSelector.matchLabels == {\"example.com/hangar\": \"on\"} and (map(select(.kind==\"ValidatingAdmissionPolicyBinding\" and .metadata.name==\"$FULL-sandbox-scope\")) | .[0].spec.matchResources.namespaceSelector.matchExpressions == [{key: \"example.com/hangar\", operator: \"NotIn\", values: [\"on\"]}])"
# An API server without ValidatingAdmissionPolicy v1 (before 1.30; helm
# template without --api-versions): no policy is rendered.
"$HELM" template "$REL" "$CHART" -n "$NS" 2>no-vap.err | to_json >no-vap.json 2>>no-vap.err
jq_check "no ValidatingAdmissionPolicy v1 on the API server: no policy or binding rendered" no-vap.json \
        'map(select(.kind | startswith("ValidatingAdmissionPolicy"))) | length == 0'
jq_check "... and the webhook keeps exec and attach, sent only when they name hangar-driver (or a port-forward)" no-vap.json \
        "($VWC.webhooks[1].rules[0].resources == [\"pods/exec\",\"pods/attach\",\"pods/portforward\"]) and ($VWC.webhooks[1].matchConditions | map(.name)) == [\"driver-or-port-forward\"]"
# Before 1.28 (matchConditions off): the doors as before, every one sent.
"$HELM" template "$REL" "$CHART" -n "$NS" --kube-version 1.27.0 2>k127.err | to_json >k127.json 2>>k127.err
jq_check "Kubernetes 1.27: updates and connect (exec, attach, port-forward) only, no matchConditions" k127.json \
        "[$VWC.webhooks[] | {n: .name, r: .rules[0].resources, c: .matchConditions}] == [{n: \"updates.driver-sidecar.hangar.dev\", r: [\"pods\",\"pods/ephemeralcontainers\",\"pods/resize\"], c: null}, {n: \"connect.driver-sidecar.hangar.dev\", r: [\"pods/exec\",\"pods/attach\",\"pods/portforward\"], c: null}]"

echo "-- cert-manager: the CA chain (client-side checks only: no cert-manager CRDs here)"
f=cert-manager.json
CM='map(select(.apiVersion == "cert-manager.io/v1"))'
jq_check "selfSigned Issuer -> CA Certificate (isCA) -> CA Issuer -> serving Certificate" "$f" "
        ($CM | map(select(.kind==\"Issuer\" and .spec.selfSigned == {})) | .[0].metadata.name) as \$ss |
        ($CM | map(select(.kind==\"Certificate\" and .spec.isCA == true)) | .[0]) as \$ca |
        ($CM | map(select(.kind==\"Issuer\" and .spec.ca != null)) | .[0]) as \$caIssuer |
        ($CM | map(select(.kind==\"Certificate\" and .metadata.name == \"$FULL-serving\")) | .[0]) as \$srv |
        \$ss != null and \$ca.spec.issuerRef.name == \$ss and \$caIssuer.spec.ca.secretName == \$ca.spec.secretName
        and \$srv.spec.issuerRef == {name: \$caIssuer.metadata.name, kind: \"Issuer\", group: \"cert-manager.io\"}
        and (\$srv.spec.isCA != true)"
jq_check "serving Certificate: Secret $FULL-tls, the Service's DNS names, server auth" "$f" "
        ($CM | map(select(.metadata.name == \"$FULL-serving\")) | .[0].spec) as \$s |
        \$s.secretName == \"$FULL-tls\" and (\$s.dnsNames | index(\"$FULL.$NS.svc\") and index(\"$FULL.$NS.svc.cluster.local\"))
        and (\$s.usages | index(\"server auth\")) and \$s.privateKey.rotationPolicy == \"Always\"
        and \$s.duration == \"720h\" and \$s.renewBefore == \"240h\""
"$HELM" template "$REL" "$CHART" -n "$NS" -f "$VALUES/cert-manager.yaml" \
        --set certificates.certManager.issuerRef.name=corp-ca --set certificates.certManager.issuerRef.kind=ClusterIssuer |
        to_json >cm-issuer.json
jq_check "an existing issuerRef replaces the self-signed chain" cm-issuer.json \
        "($CM | map(.kind)) == [\"Certificate\"] and ($CM | .[0].spec.issuerRef) == {name: \"corp-ca\", kind: \"ClusterIssuer\", group: \"cert-manager.io\"}"

# ---- 3. config.yaml through the real binary ---------------------------------
echo "-- config.yaml accepted by hangar-webhook config"
for m in "${MODES[@]}"; do
        jq -r '.[] | select(.kind=="ConfigMap") | .data["config.yaml"]' "$m.json" >"config-$m.yaml"
        t_check "$m: config.yaml rendered (non-empty)" test -s "config-$m.yaml"
        cfg=config-$m.yaml
        if grep -q '^tls:' "$cfg"; then
                jq_check "$m: tls: selfManaged names this webhook configuration, Service and Secret" "$m.json" "
                        $MWC.metadata.name as \$mwc |
                        (map(select(.kind==\"Role\")) | .[0].rules | map(.resourceNames // []) | add | .[0]) as \$secret |
                        (.[] | select(.kind==\"ConfigMap\") | .data[\"config.yaml\"]) as \$c |
                        (\$c | test(\"\\ntls:\\n  mode: selfManaged\\n\")) and
                        (\$c | test(\"\\n  webhookConfigName: \\\"\" + \$mwc + \"\\\"\\n\")) and
                        (\$c | test(\"\\n  serviceName: \\\"$FULL\\\"\\n\")) and
                        (\$c | test(\"\\n  secretName: \\\"\" + \$secret + \"\\\"\\n\"))"
        else
                t_check "$m: no tls: section outside self-managed mode" true
        fi
        if "$WEBHOOK" config --config "$cfg" >"effective-$m.json" 2>"effective-$m.err"; then
                t_check "$m: hangar-webhook config accepts it" true
        else
                t_fail "$m: hangar-webhook config refuses it: $(cat "effective-$m.err")"
                echo '{}' >"effective-$m.json"
        fi
        case $m in
        self-managed)
                jq_check "$m: effective tls settings are the chart's certificates.selfManaged" "effective-$m.json" '
                        ."tls.mode" == "selfManaged" and ."tls.secretName" == "hangar-webhook-certs"
                        and ."tls.secretNamespace" == "" and ."tls.webhookConfigName" == "'"$FULL"'"
                        and ."tls.serviceName" == "'"$FULL"'" and ."tls.dnsNames" == ["hangar-webhook.example.internal"]
                        and ."tls.ipAddresses" == ["10.0.0.10"] and ."tls.leafDays" == 60
                        and ."tls.renewBeforeDays" == 20 and ."tls.caDays" == 1825 and ."tls.syncSeconds" == 30
                        and .kubeconfig == ""'
                ;;
        default | driver-on)
                jq_check "$m: effective tls mode selfManaged with the chart's names" "effective-$m.json" '
                        ."tls.mode" == "selfManaged" and ."tls.secretName" == "'"$FULL"'-tls"
                        and ."tls.webhookConfigName" == "'"$FULL"'" and ."tls.serviceName" == "'"$FULL"'"
                        and ."tls.leafDays" == 90 and ."tls.renewBeforeDays" == 30 and ."tls.caDays" == 3650
                        and ."tls.caOverlapSeconds" == 0'
                ;;
        *)
                jq_check "$m: effective tls mode files (the mounted certificate)" "effective-$m.json" '."tls.mode" == "files"'
                ;;
        esac
        if [ "$m" = driver-on ]; then
                jq_check "$m: every changed value reaches the effective configuration" "effective-$m.json" '
                        .driverSidecar == true and ."selector.key" == "example.com/agent-sandbox" and ."selector.value" == "yes"
                        and .agentContainer == "agent" and ."driver.uid" == 2001 and ."driver.gid" == 2002
                        and ."driver.command" == ["/usr/local/bin/hangar-driver", "--relay"]
                        and ."driver.resources.requests.cpu" == "100m" and ."driver.resources.requests.memory" == "96Mi"
                        and ."driver.resources.limits.cpu" == "1" and ."driver.resources.limits.memory" == "256Mi"
                        and ."volumes.home.mountPath" == "/opt/hangar/home" and ."volumes.ctl.mountPath" == "/opt/hangar/ctl"
                        and ."volumes.ctl.sizeLimit" == "32Mi" and ."server.port" == 9443 and ."server.healthPort" == 9090
                        and ."server.maxBodyBytes" == 1048576 and ."server.requestTimeoutSeconds" == 5
                        and ."server.threads" == 4 and ."server.certPollSeconds" == 5 and .logLevel == "debug"'
        else
                jq_check "$m: effective configuration has the chart defaults (injection off, health port 8081)" "effective-$m.json" '
                        .driverSidecar == false and ."selector.key" == "hangar.dev/sandbox" and ."selector.value" == "true"
                        and ."server.port" == 8443 and ."server.healthPort" == 8081
                        and ."server.certFile" == "/etc/hangar-webhook/tls/tls.crt" and ."server.keyFile" == "/etc/hangar-webhook/tls/tls.key"
                        and ."driver.command" == ["hangar-driver", "serve"] and ."driver.resources.limits.memory" == ""'
        fi
done
"$HELM" template "$REL" "$CHART" -n "$NS" --set driverSidecar.enabled=true --show-only templates/configmap.yaml | to_json >on.json
jq_check "driverSidecar.enabled=true renders driverSidecar: true" on.json \
        '.[0].data["config.yaml"] | test("(^|\n)driverSidecar: true\n")'
jq_check "driverSidecar.enabled defaults to driverSidecar: false" default.json \
        '.[] | select(.kind=="ConfigMap") | .data["config.yaml"] | test("(^|\n)driverSidecar: false\n")'
checksum() { jq -r "$DEP.spec.template.metadata.annotations[\"checksum/config\"]" "$1"; }
"$HELM" template "$REL" "$CHART" -n "$NS" --set replicaCount=4 | to_json >replicas4.json
t_check "a config change changes checksum/config (rolls the pods)" test "$(checksum default.json)" != "$(checksum driver-on.json)"
t_eq "a non-config change keeps checksum/config" "$(checksum default.json)" "$(checksum replicas4.json)"
"$HELM" template "$REL" "$CHART" -n "$NS" --set replicaCount=1 | to_json >replicas1.json
jq_check "replicaCount 1: no PodDisruptionBudget (it would block every drain)" replicas1.json \
        'map(select(.kind=="PodDisruptionBudget")) | length == 0'

# ---- 4. bad values -------------------------------------------------------------
echo "-- bad values are refused with a clear message"
CA_B64=$(sed -n 's/^    caBundle: //p' "$VALUES/provided.yaml")
cat >bad-types.yaml <<'EOF'
driverSidecar:
  enabled: "yes"
EOF
cat >bad-unknown.yaml <<'EOF'
sidecarEnabled: true
EOF
cat >bad-nested-unknown.yaml <<'EOF'
webhook:
  timeout: 5
EOF
# expect_refused DESCRIPTION 'MESSAGE REGEX' HELM-ARGS...
expect_refused() {
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
expect_refused "webhook.timeoutSeconds=99" "/webhook/timeoutSeconds.*maximum" --set webhook.timeoutSeconds=99
expect_refused "webhook.timeoutSeconds=0" "/webhook/timeoutSeconds.*minimum" --set webhook.timeoutSeconds=0
expect_refused "webhook.failurePolicy=Maybe" "/webhook/failurePolicy.*must be one of 'Fail', 'Ignore'" --set webhook.failurePolicy=Maybe
expect_refused 'driverSidecar.enabled: "yes"' "/driverSidecar/enabled.*want boolean" -f bad-types.yaml
expect_refused "an unknown top-level key" "additional properties 'sidecarEnabled' not allowed" -f bad-unknown.yaml
expect_refused "an unknown nested key" "/webhook.*additional properties 'timeout' not allowed" -f bad-nested-unknown.yaml
expect_refused "certificates.mode=acme" "/certificates/mode.*must be one of" --set certificates.mode=acme
expect_refused "driver.uid=0 (root)" "/driver/uid.*minimum" --set driver.uid=0
expect_refused "webhook.url over http" "/webhook/url.*does not match" --set webhook.url=http://127.0.0.1:9443/mutate
expect_refused "webhook.url with a query" "/webhook/url.*does not match" --set "webhook.url=https://127.0.0.1:9443/mutate?x=1" --set webhook.caBundle="$CA_B64"
expect_refused "a label value with a slash" "/selector/value.*does not match" --set selector.value=a/b
expect_refused "a driver limit that is not a quantity" "/driver/resources/limits/cpu.*does not match" --set driver.resources.limits.cpu=lots
expect_refused "replicaCount 0" "/replicaCount.*minimum" --set replicaCount=0
expect_refused "scope.mode=some" "/scope/mode.*must be one of 'optIn', 'all'" --set scope.mode=some
expect_refused "an empty scope.namespaceLabel.value" "/scope/namespaceLabel/value" --set scope.namespaceLabel.value=
expect_refused "a scope.namespaceLabel.key that is not a label key" "/scope/namespaceLabel/key.*does not match" --set "scope.namespaceLabel.key=a b"
expect_refused "URL mode without a caBundle" "webhook.url is set \\(URL mode\\) but webhook.caBundle is empty" --set webhook.url=https://127.0.0.1:9443/mutate
expect_refused "URL mode with a caBundle that is not PEM" "webhook.caBundle is not a base64-encoded PEM" --set webhook.url=https://127.0.0.1:9443/mutate --set webhook.caBundle=aGVsbG8=
expect_refused "provided mode without a Secret and caBundle" "certificates.mode=provided needs both" --set certificates.mode=provided
expect_refused "provided mode without a caBundle" "certificates.mode=provided needs both" --set certificates.mode=provided --set certificates.provided.secretName=s
expect_refused "a provided Secret in another mode" "certificates.provided.secretName is set but certificates.mode is selfManaged" --set certificates.provided.secretName=s
expect_refused "webhook.caBundle in service mode" "webhook.caBundle is only used with webhook.url" --set webhook.caBundle="$CA_B64"
expect_refused "an issuerRef without a name" "certificates.certManager.issuerRef needs a name" --set certificates.mode=certManager --set certificates.certManager.issuerRef.kind=ClusterIssuer
expect_refused "certificates.selfManaged.caDays=0" "/certificates/selfManaged/caDays.*minimum" --set certificates.selfManaged.caDays=0
expect_refused "a wildcard DNS SAN" "/certificates/selfManaged/dnsNames/0.*does not match" --set "certificates.selfManaged.dnsNames={*.example.com}"
expect_refused "renewBeforeDays >= leafDays" "renewBeforeDays must be less than" --set certificates.selfManaged.leafDays=30
expect_refused "caDays <= renewBeforeDays" "caDays must be more than" --set certificates.selfManaged.caDays=30
expect_refused "caOverlapSeconds <= syncSeconds + certPollSeconds" "caOverlapSeconds must be more than" --set certificates.selfManaged.caOverlapSeconds=62
expect_refused "healthPort equal to port" "server.healthPort must differ from server.port" --set server.healthPort=8443
expect_refused "nested volume paths" "must not be equal or nested" --set volumes.ctl.mountPath=/var/lib/hangar/ctl
expect_refused "PDB minAvailable >= replicas" "minAvailable must be less than replicaCount" --set podDisruptionBudget.minAvailable=2

# ---- 4b. the optional parts: NetworkPolicy, the helm test hook, the package ----
echo "-- NetworkPolicy and the helm test hook, rendered"
render() { # OUT ARGS...: helm template with ARGS, as JSON in OUT
        local out=$1
        shift
        if "$HELM" template "$REL" "$CHART" -n "$NS" "$@" 2>"$out.err" | to_json >"$out" 2>>"$out.err"; then
                return 0
        fi
        t_fail "render $*: $(cat "$out.err")"
        echo '[]' >"$out"
}
# agent-sandbox's pods (selector.operator Exists) and the driver's environment.
echo "-- selector.operator Exists, driver.uidSplit and driver.cloneSafety"
render asb.json --set selector.key=agents.x-k8s.io/sandbox-name-hash --set selector.operator=Exists \
        --set driver.uidSplit=off --set driver.cloneSafety=required
jq_check "selector.operator Exists: the objectSelector asks for the label's presence only" asb.json \
        "$MWC.webhooks[0].objectSelector == {matchExpressions: [{key: \"agents.x-k8s.io/sandbox-name-hash\", operator: \"Exists\"}]}"
jq_check "selector.operator In (the default): the label's value, as before" default.json \
        "$MWC.webhooks[0].objectSelector == {matchLabels: {\"hangar.dev/sandbox\": \"true\"}}"
jq -r '.[] | select(.kind=="ConfigMap") | .data["config.yaml"]' asb.json >config-asb.yaml
if "$WEBHOOK" config --config config-asb.yaml >effective-asb.json 2>effective-asb.err; then
        jq_check "the webhook reads selector.operator, driver.uidSplit and driver.cloneSafety as set" effective-asb.json \
                '."selector.operator" == "Exists" and ."driver.uidSplit" == "off" and ."driver.cloneSafety" == "required"'
else
        t_fail "hangar-webhook config refuses the agent-sandbox values: $(cat effective-asb.err)"
fi
expect_refused "selector.operator NotIn" "/selector/operator" --set selector.operator=NotIn
expect_refused "driver.uidSplit maybe" "/driver/uidSplit" --set driver.uidSplit=maybe
expect_refused "driver.cloneSafety off" "/driver/cloneSafety" --set driver.cloneSafety=off

# Delivered binaries: the value reaches the webhook, with the bundle image
# named from the chart's appVersion or pinned by digest.
echo "-- driver.binaries"
jq -r '.[] | select(.kind=="ConfigMap") | .data["config.yaml"]' default.json >config-default.yaml
if "$WEBHOOK" config --config config-default.yaml >effective-default.json 2>effective-default.err; then
        jq_check "driver.binaries.from is agentImage by default (the binaries are the agent image's)" \
                effective-default.json '."driver.binaries.from" == "agentImage"'
else
        t_fail "hangar-webhook config refuses the default values: $(cat effective-default.err)"
fi
bundle_digest=sha256:$(printf '%064d' 7)
render deliver.json --set driver.binaries.from=initContainer
render deliver-digest.json --set driver.binaries.from=initContainer \
        --set driver.binaries.bundle.repository=registry.example/hangar-bin --set driver.binaries.bundle.digest="$bundle_digest"
app_version=$("$HELM" show chart "$CHART" | sed -n 's/^appVersion: *"\{0,1\}\([^"]*\)"\{0,1\}$/\1/p')
for r in deliver deliver-digest; do
        jq -r '.[] | select(.kind=="ConfigMap") | .data["config.yaml"]' $r.json >config-$r.yaml
        if ! "$WEBHOOK" config --config config-$r.yaml >effective-$r.json 2>effective-$r.err; then
                t_fail "hangar-webhook config refuses driver.binaries ($r): $(cat effective-$r.err)"
        fi
done
jq_check "initContainer, the bundle image at the chart's appVersion ($app_version)" effective-deliver.json \
        "(.\"driver.binaries.from\" == \"initContainer\") and (.\"driver.binaries.bundleImage\" == \"localhost/hangar-bin:$app_version\")"
jq_check "a digest pins the bundle image" effective-deliver-digest.json \
        ".\"driver.binaries.bundleImage\" == \"registry.example/hangar-bin@$bundle_digest\""
expect_refused "driver.binaries.from baked" "/driver/binaries/from" --set driver.binaries.from=baked
render deliver-iv.json --set driver.binaries.from=imageVolume
jq -r '.[] | select(.kind=="ConfigMap") | .data["config.yaml"]' deliver-iv.json >config-deliver-iv.yaml
if "$WEBHOOK" config --config config-deliver-iv.yaml >effective-deliver-iv.json 2>effective-deliver-iv.err; then
        jq_check "imageVolume reaches the webhook" effective-deliver-iv.json '."driver.binaries.from" == "imageVolume"'
else
        t_fail "hangar-webhook config refuses driver.binaries.from imageVolume: $(cat effective-deliver-iv.err)"
fi
expect_refused "a bundle digest that is no sha256" "/driver/binaries/bundle/digest" --set driver.binaries.bundle.digest=latest

NP='(map(select(.kind=="NetworkPolicy")) | .[0])'
HOOKS='map(select(.metadata.annotations["helm.sh/hook"] == "test"))'
TPOD="($HOOKS | map(select(.kind==\"Pod\")) | .[0])"
render extras.json -f "$VALUES/extras.yaml"
jq_check "default: one NetworkPolicy, no test hook" default.json \
        "(map(select(.kind==\"NetworkPolicy\")) | length == 1) and ($HOOKS | length == 0)"
# On by default with automatic peers: the konnectivity agents (GKE's and
# AKS's labels) and every address outside the pod ranges. `helm template`
# cannot read the ranges: then the konnectivity agents only (an ipBlock
# without the pods' ranges would let every pod in), saying so, and any
# address on the API server's ports for egress (docs/chart.md,
# NetworkPolicy).
KONN='{namespaceSelector: {matchLabels: {"kubernetes.io/metadata.name": "kube-system"}}, podSelector: {matchLabels: {"k8s-app": "konnectivity-agent"}}}, {namespaceSelector: {matchLabels: {"kubernetes.io/metadata.name": "kube-system"}}, podSelector: {matchLabels: {app: "konnectivity-agent"}}}'
jq_check "default networkPolicy, pod ranges unknown (helm template): the HTTPS port from the konnectivity agents only" default.json \
        "$NP.spec.ingress[0] == {from: [$KONN], ports: [{port: \"https\", protocol: \"TCP\"}]}"
"$HELM" template "$REL" "$CHART" -n "$NS" --show-only templates/networkpolicy.yaml >np-default.yaml 2>&1
t_check "... and the rendered policy says why, naming the values to set" \
        bash -c "grep -q 'ONLY THE KONNECTIVITY AGENTS' np-default.yaml && grep -q 'networkPolicy.podCIDRs or' np-default.yaml"
t_check "... and no ipBlock at all (none could leave the pods out)" bash -c "! grep -q ipBlock np-default.yaml"
jq_check "default networkPolicy: the health port from the monitoring namespaces" default.json \
        "($NP.spec.ingress | length == 2) and $NP.spec.ingress[1].from == [{namespaceSelector: {matchExpressions: [{key: \"kubernetes.io/metadata.name\", operator: \"In\", values: [\"monitoring\", \"gmp-system\"]}]}}]"
jq_check "default networkPolicy: egress to the API server's ports only (its endpoints unknown to helm template)" default.json \
        "$NP.spec.egress == [{ports: [{port: 443, protocol: \"TCP\"}, {port: 6443, protocol: \"TCP\"}]}]"
render np-pods.json --set-json 'networkPolicy.podCIDRs=["10.4.0.0/14","fd00:10::/56"]'
jq_check "networkPolicy.podCIDRs: every address but the pods' ranges" np-pods.json \
        "$NP.spec.ingress[0].from[2:] == [{ipBlock: {cidr: \"0.0.0.0/0\", except: [\"10.4.0.0/14\"]}}, {ipBlock: {cidr: \"::/0\", except: [\"fd00:10::/56\"]}}]"
jq_check "networkPolicy: one, selecting exactly the webhook's pods" extras.json \
        "(map(select(.kind==\"NetworkPolicy\")) | length == 1) and $NP.spec.podSelector.matchLabels == $DEP.spec.selector.matchLabels"
jq_check "networkPolicy: Ingress and Egress both restricted" extras.json "$NP.spec.policyTypes == [\"Ingress\",\"Egress\"]"
jq_check "networkPolicy: the HTTPS port only from webhookFrom" extras.json \
        "$NP.spec.ingress[0] == {from: [{ipBlock: {cidr: \"172.16.0.0/28\"}}, {namespaceSelector: {matchLabels: {\"kubernetes.io/metadata.name\": \"kube-system\"}}, podSelector: {matchLabels: {\"k8s-app\": \"konnectivity-agent\"}}}], ports: [{port: \"https\", protocol: \"TCP\"}]}"
jq_check "networkPolicy: the health/metrics port only from metricsFrom; no other ingress" extras.json \
        "($NP.spec.ingress | length == 2) and $NP.spec.ingress[1] == {from: [{namespaceSelector: {matchLabels: {\"kubernetes.io/metadata.name\": \"monitoring\"}}}], ports: [{port: \"health\", protocol: \"TCP\"}]}"
jq_check "networkPolicy: its named ports are the container's" extras.json \
        "($CTR.ports | map(.name)) as \$p | [$NP.spec.ingress[].ports[].port] | all(. as \$n | \$p | index(\$n))"
jq_check "networkPolicy: egress only to the API server's endpoints on 443 and 6443" extras.json \
        "$NP.spec.egress == [{to: [{ipBlock: {cidr: \"172.16.0.2/32\"}}], ports: [{port: 443, protocol: \"TCP\"}, {port: 6443, protocol: \"TCP\"}]}]"
render np-closed.json -f "$VALUES/provided.yaml" --set guard.enabled=false --set networkPolicy.enabled=true \
        --set-json 'networkPolicy.webhookFrom=[{"ipBlock":{"cidr":"10.0.0.0/8"}}]' --set-json 'networkPolicy.monitoringNamespaces=[]'
jq_check "networkPolicy (provided certificates, no guard: no API access needed): no egress at all, no metrics rule" np-closed.json \
        "$NP.spec.egress == [] and $NP.spec.policyTypes == [\"Ingress\",\"Egress\"] and ($NP.spec.ingress | length == 1)"
jq_check "networkPolicy: the pods of that mode get no token either" np-closed.json "$POD.automountServiceAccountToken == false"
render np-url.json -f "$VALUES/url.yaml" --set networkPolicy.enabled=true --set-json 'networkPolicy.webhookFrom=[{"ipBlock":{"cidr":"10.0.0.0/8"}}]'
jq_check "networkPolicy: nothing in URL mode (nothing runs in the cluster)" np-url.json '(map(select(.kind=="NetworkPolicy")) | length) == 0'
expect_refused "networkPolicy.podCIDRs with a bare address" "/networkPolicy/podCIDRs/0" --set-json 'networkPolicy.podCIDRs=["10.4.0.0"]'
# The connection limits (server.*) reach the webhook as its environment.
jq_check "server.* connection limits reach the container as HANGAR_* variables" default.json \
        "($CTR.env | map({(.name): .value}) | add) as \$e | \$e.HANGAR_MAX_CONNECTIONS == \"512\" and \$e.HANGAR_MAX_IDLE_PER_CLIENT == \"64\" and \$e.HANGAR_HEADER_TIMEOUT_SECONDS == \"5\" and \$e.HANGAR_TRUSTED_CLIENT_CIDRS == \"[]\""
expect_refused "server.maxIdleConnections above server.maxConnections" "must not exceed server.maxConnections" \
        --set server.maxConnections=100
expect_refused "networkPolicy peer with a bad CIDR" "/networkPolicy/webhookFrom/0/ipBlock/cidr" \
        --set networkPolicy.enabled=true --set-json 'networkPolicy.webhookFrom=[{"ipBlock":{"cidr":"10.0.0.0"}}]'
expect_refused "networkPolicy peer with an unknown field" "/networkPolicy/webhookFrom/0" \
        --set networkPolicy.enabled=true --set-json 'networkPolicy.webhookFrom=[{"ipblock":{"cidr":"10.0.0.0/8"}}]'
expect_refused "networkPolicy.apiServerPorts 0" "/networkPolicy/apiServerPorts/0" --set-json 'networkPolicy.apiServerPorts=[0]'

jq_check "test hook: ServiceAccount, Role, RoleBinding and Pod, all helm.sh/hook test" extras.json \
        "($HOOKS | map(.kind) | sort) == [\"Pod\",\"Role\",\"RoleBinding\",\"ServiceAccount\"]"
jq_check "test hook: each deleted before the next run and once the test passed" extras.json \
        "$HOOKS | all(.metadata.annotations[\"helm.sh/hook-delete-policy\"] == \"before-hook-creation,hook-succeeded\")"
jq_check "test hook: RBAC first (weight -10), the pod after" extras.json \
        "($HOOKS | map(select(.kind != \"Pod\")) | all(.metadata.annotations[\"helm.sh/hook-weight\"] == \"-10\")) and $TPOD.metadata.annotations[\"helm.sh/hook-weight\"] == \"0\""
jq_check "test hook: the Role may only create pods, in tests.namespace" extras.json \
        "($HOOKS | map(select(.kind == \"Role\")) | .[0]) | .metadata.namespace == \"sandboxes\" and .rules == [{apiGroups: [\"\"], resources: [\"pods\"], verbs: [\"create\"]}]"
jq_check "test hook: bound to the test's own ServiceAccount (not the webhook's)" extras.json \
        "($HOOKS | map(select(.kind == \"RoleBinding\")) | .[0]) | .metadata.namespace == \"sandboxes\" and .subjects == [{kind: \"ServiceAccount\", name: \"$FULL-test\", namespace: \"$NS\"}] and .roleRef.name == \"$FULL-test\""
jq_check "test hook: the pod runs the webhook's image: test-injection in sandboxes" extras.json \
        "($CTR.image) as \$img | $TPOD.spec.containers[0] | .image == \$img and .args[0:1] == [\"test-injection\"] and (.args | index(\"--namespace\")) as \$i | .args[\$i + 1] == \"sandboxes\""
jq_check "test hook: the pod reads the release's config.yaml" extras.json \
        "$TPOD.spec.volumes == [{name: \"config\", configMap: {name: \"$FULL\"}}]"
jq_check "test hook: restricted securityContext, never restarted, its own ServiceAccount" extras.json \
        "$TPOD.spec | .restartPolicy == \"Never\" and .serviceAccountName == \"$FULL-test\" and .securityContext.runAsNonRoot == true and .securityContext.seccompProfile.type == \"RuntimeDefault\" and (.containers[0].securityContext | .allowPrivilegeEscalation == false and .readOnlyRootFilesystem == true and .capabilities.drop == [\"ALL\"])"
jq_check "test hook: the pod is not one of the Service's endpoints (component test)" extras.json \
        "($TPOD.metadata.labels) as \$l | ($DEP.spec.selector.matchLabels | to_entries | all(\$l[.key] == .value)) | not"
AUDIT='map(select(.metadata.labels["app.kubernetes.io/component"] == "audit"))'
ACJ="($AUDIT | map(select(.kind==\"CronJob\")) | .[0])"
ACTR="($ACJ.spec.jobTemplate.spec.template.spec.containers[0])"
jq_check "audit: none by default" default.json "$AUDIT | length == 0"
jq_check "audit: ServiceAccount, ClusterRole, ClusterRoleBinding and CronJob" extras.json \
        "($AUDIT | map(.kind) | sort) == [\"ClusterRole\",\"ClusterRoleBinding\",\"CronJob\",\"ServiceAccount\"]"
jq_check "audit: the ClusterRole lists pods, gets namespaces and this release's webhook configuration, writes events; nothing else" extras.json \
        "($AUDIT | map(select(.kind == \"ClusterRole\")) | .[0].rules) == [{apiGroups: [\"\"], resources: [\"pods\"], verbs: [\"list\"]}, {apiGroups: [\"\"], resources: [\"namespaces\"], verbs: [\"get\"]}, {apiGroups: [\"admissionregistration.k8s.io\"], resources: [\"mutatingwebhookconfigurations\"], resourceNames: [\"$FULL\"], verbs: [\"get\"]}, {apiGroups: [\"\"], resources: [\"events\"], verbs: [\"create\", \"get\", \"patch\"]}]"
jq_check "audit: bound to its own ServiceAccount" extras.json \
        "($AUDIT | map(select(.kind == \"ClusterRoleBinding\")) | .[0]) | .subjects == [{kind: \"ServiceAccount\", name: \"$FULL-audit\", namespace: \"$NS\"}] and .roleRef.name == \"$FULL-audit\""
jq_check "audit: the schedule; one run at a time, never retried" extras.json \
        "$ACJ.spec | .schedule == \"*/5 * * * *\" and .concurrencyPolicy == \"Forbid\" and .jobTemplate.spec.backoffLimit == 0"
jq_check "audit: the webhook's image: audit -A --events with the release's webhook configuration and scope" extras.json \
        "($CTR.image) as \$img | $ACTR | .image == \$img and .args == [\"audit\", \"--config\", \"/etc/hangar-webhook/config.yaml\", \"--all-namespaces\", \"--webhook-configuration\", \"$FULL\", \"--scope\", \"hangar.dev/injection=enabled\", \"--events\", \"--output\", \"json\"]"
jq_check "audit: the release's config.yaml, restricted securityContext, its own ServiceAccount" extras.json \
        "$ACJ.spec.jobTemplate.spec.template.spec | .volumes == [{name: \"config\", configMap: {name: \"$FULL\"}}] and .restartPolicy == \"Never\" and .serviceAccountName == \"$FULL-audit\" and .securityContext.runAsNonRoot == true and (.containers[0].securityContext | .allowPrivilegeEscalation == false and .readOnlyRootFilesystem == true and .capabilities.drop == [\"ALL\"])"
jq_check "audit: its pods are not the Service's endpoints nor the NetworkPolicy's (component audit)" extras.json \
        "($ACJ.spec.jobTemplate.spec.template.metadata.labels) as \$l | ($DEP.spec.selector.matchLabels | to_entries | all(\$l[.key] == .value)) | not"
render audit-all.json --set audit.enabled=true --set scope.mode=all
jq_check "audit: --scope all with scope.mode all" audit-all.json \
        "$ACTR.args | index(\"--scope\") as \$i | .[\$i + 1] == \"all\""
expect_refused "audit.schedule not a cron schedule" "/audit/schedule" --set audit.enabled=true --set audit.schedule=often
render hooks-url.json -f "$VALUES/url.yaml" --set tests.namespace=sandboxes
jq_check "test hook: none in URL mode" hooks-url.json "$HOOKS | length == 0"
expect_refused "tests.namespace kube-system" "tests.namespace kube-system is never sent" --set tests.namespace=kube-system
expect_refused "tests.namespace the release namespace" "tests.namespace $NS is never sent" --set tests.namespace="$NS"
expect_refused "tests.namespace excluded" "is never sent" --set tests.namespace=other --set-json 'webhook.excludeNamespaces=["other"]'
expect_refused "tests.namespace not a DNS label" "/tests/namespace" --set tests.namespace=Bad_NS

echo "-- helm package, lint and metadata of the package"
mkdir -p pkg
if "$HELM" package "$CHART" -d pkg >package.log 2>&1; then
        t_check "helm package" true
else
        t_fail "helm package: $(cat package.log)"
fi
TGZ=$(compgen -G "pkg/hangar-webhook-*.tgz" | head -n 1)
t_check "the package is named for the chart's version ($TGZ)" test "$TGZ" = "pkg/hangar-webhook-$("$HELM" show chart "$CHART" | sed -n 's/^version: //p').tgz"
out=$("$HELM" lint --strict "${TGZ:-none}" 2>&1)
t_check "helm lint --strict of the package: no warning or error" \
        bash -c "! grep -Eq '\\[(WARNING|ERROR)\\]' <<<\"\$1\" && grep -q '0 chart(s) failed' <<<\"\$1\"" _ "$out"
t_check "the package holds the README, the schema and the test hook" bash -c \
        "tar -tzf '${TGZ:-none}' | sort | grep -qx hangar-webhook/README.md && tar -tzf '${TGZ:-none}' | grep -qx hangar-webhook/values.schema.json && tar -tzf '${TGZ:-none}' | grep -qx hangar-webhook/templates/tests/test-injection.yaml"
"$HELM" show chart "${TGZ:-none}" 2>/dev/null |
        python3 -c 'import json,sys,yaml; print(json.dumps(yaml.safe_load(sys.stdin)))' >chart-meta.json 2>/dev/null ||
        echo '{}' >chart-meta.json
jq_check "Chart.yaml: kubeVersion, keywords, maintainers" chart-meta.json \
        '.kubeVersion == ">=1.27.0-0" and (.keywords | length >= 3) and (.maintainers[0].name | length > 0)'
python3 - chart-meta.json >artifacthub.json <<'PY' || echo '{}' >artifacthub.json
import json, sys, yaml
a = json.load(open(sys.argv[1]))["annotations"]
out = {k.removeprefix("artifacthub.io/"): v for k, v in a.items() if k.startswith("artifacthub.io/")}
for k in ("images", "changes", "recommendations", "links"):
    if k in out:
        out[k] = yaml.safe_load(out[k])
print(json.dumps(out))
PY
jq_check "ArtifactHub: images name the webhook image at the appVersion" artifacthub.json \
        '.images == [{name: "hangar-webhook", image: "localhost/hangar-webhook:0.1.0"}]'
jq_check "ArtifactHub: changes are kind/description pairs of known kinds" artifacthub.json \
        '(.changes | length > 0) and (.changes | all(keys == ["description","kind"] and (.kind | IN("added","changed","deprecated","removed","fixed","security"))))'
jq_check "ArtifactHub: containsSecurityUpdates, prerelease and operator are booleans in strings" artifacthub.json \
        '[.containsSecurityUpdates, .prerelease, .operator] | all(. == "true" or . == "false")'

# ---- 5. the real API server ------------------------------------------------------
echo "-- real control plane (scripts/control-plane.sh)"
CP=$T_TMP/cp
cp_stop() { "$ROOT/scripts/control-plane.sh" stop "$CP" >"$T_TMP/cp-stop.log" 2>&1 || cat "$T_TMP/cp-stop.log"; }
trap 't_main_shell || exit; cp_stop; t_cleanup' EXIT
if ! HANGAR_K8S_BIN=$TOOLS "$ROOT/scripts/control-plane.sh" start "$CP" >cp-start.log 2>&1; then
        t_fail "control plane did not start: $(tail -n 20 cp-start.log)"
        t_end
fi
# shellcheck source=/dev/null # written by control-plane.sh start
. "$CP/env"
K=("$KUBECTL" --request-timeout 20s --cache-dir "$T_TMP/kubecache")
t_check "kube-apiserver answers /readyz" bash -c "[ \"\$('$KUBECTL' get --raw /readyz)\" = ok ]"

# The NetworkPolicy where helm reads the cluster (template --dry-run=server
# runs lookup): with no Node listing a pod range, the konnectivity agents
# only, as offline; once a Node lists one, every address outside it too.
"$HELM" template "$REL" "$CHART" -n "$NS" --dry-run=server --show-only templates/networkpolicy.yaml 2>&1 |
        to_json >np-lookup-none.json
jq_check "networkPolicy, lookup finds no pod range: the konnectivity agents only" np-lookup-none.json \
        '.[0].spec.ingress[0].from | length == 2 and all(has("podSelector"))'
jq -n '{apiVersion: "v1", kind: "Node", metadata: {name: "np-node"}, spec: {podCIDR: "10.244.0.0/24", podCIDRs: ["10.244.0.0/24"]}}' |
        "${K[@]}" create -f - >/dev/null || t_fail "a Node with a pod range refused"
"$HELM" template "$REL" "$CHART" -n "$NS" --dry-run=server --show-only templates/networkpolicy.yaml 2>&1 |
        to_json >np-lookup-node.json
jq_check "networkPolicy, lookup finds the Node's pod range: every address outside it" np-lookup-node.json \
        '.[0].spec.ingress[0].from[2:] == [{ipBlock: {cidr: "0.0.0.0/0", except: ["10.244.0.0/24"]}}, {ipBlock: {cidr: "::/0"}}]'
"${K[@]}" delete node np-node >/dev/null

# The release namespace enforces Pod Security "restricted" and warns about it.
"${K[@]}" create namespace "$NS" >/dev/null
"${K[@]}" label namespace "$NS" pod-security.kubernetes.io/enforce=restricted \
        pod-security.kubernetes.io/warn=restricted >/dev/null

# cert-manager is not installed here: stand-in CRDs (tests/chart/fixtures,
# written for this test: the fields the chart uses, typed) let the API server
# validate the chart's cert-manager objects; kubectl's strict field
# validation refuses any field the stand-ins do not declare.
"${K[@]}" apply -f "$HERE/fixtures/cert-manager-crds.json" >/dev/null || t_fail "stand-in cert-manager CRDs refused"
"${K[@]}" wait --for condition=established --timeout=60s \
        crd/certificates.cert-manager.io crd/issuers.cert-manager.io crd/clusterissuers.cert-manager.io >/dev/null
# kubectl caches discovery (in this test's own cache dir): drop it so the
# new kinds are known.
rm -rf "$T_TMP/kubecache"

echo "-- every mode through kubectl apply --dry-run=server"
for m in "${MODES[@]}"; do
        jq '{apiVersion: "v1", kind: "List", items: .}' "$m.json" >"$m-server.json"
        out=$("${K[@]}" apply --dry-run=server -f "$m-server.json" 2>&1)
        rc=$?
        n=$(jq '.items | length' "$m-server.json")
        t_eq "$m: all $n objects accepted by the API server (dry-run=server)" 0 "$rc"
        t_eq "$m: every object reported created" "$n" "$(grep -c 'created (server dry run)' <<<"$out")"
        t_check "$m: no warning (Pod Security or otherwise)" bash -c "! grep -qi warning <<<\"\$1\"" _ "$out"
        # shellcheck disable=SC2001 # indents every line of it
        [ "$rc" = 0 ] || echo "$out" | sed 's/^/       /'
done

echo "-- the driver-exec policy's identities with quotes and backslashes (CEL from toJson)"
ODD_USER='o"dd\user'
ODD_GROUP="g'r\"p"
ODD_TWIN='o"dd\\user' # the same with the backslash doubled: someone else
"$HELM" template "$REL" "$CHART" -n "$NS" "${CAPS[@]}" --set-json "guard.driverUsers=$(jq -cn --arg u "$ODD_USER" '[$u]')" \
        --set-json "guard.driverGroups=$(jq -cn --arg g "$ODD_GROUP" '[$g]')" \
        --show-only templates/validatingadmissionpolicy-exec.yaml 2>odd.err | to_json >odd.json 2>>odd.err
jq '{apiVersion: "v1", kind: "List", items: .}' odd.json >odd-list.json
out=$("${K[@]}" apply --dry-run=server -f odd-list.json 2>&1)
t_check "the policy's CEL with those names compiles on the API server (dry-run=server: $(head -c 200 <<<"$out"))" \
        bash -c "[ \$(grep -c 'created (server dry run)' <<<\"\$1\") = 2 ]" _ "$out"
# For real: the names compare exactly, as the webhook's do.
"${K[@]}" apply -f odd-list.json >/dev/null
"${K[@]}" create namespace odd >/dev/null
"${K[@]}" create role -n odd execer --verb=get,create --resource=pods,pods/exec >/dev/null
"${K[@]}" create rolebinding -n odd execer --role=execer --user="$ODD_USER" --user="$ODD_TWIN" --user=odd --group="$ODD_GROUP" >/dev/null
jq -n '{apiVersion: "v1", kind: "Pod", metadata: {name: "box", namespace: "odd"},
        spec: {containers: [{name: "sandbox", image: "registry.example/a:1"}, {name: "hangar-driver", image: "registry.example/a:1"}]}}' |
        "${K[@]}" create -f - >/dev/null
odd_exec() { "$KUBECTL" exec -n odd box -c hangar-driver "$@" -- true 2>&1; }
t_check "the policy is active (an unlisted user is refused)" t_wait_for "grep -q 'hangar driver-exec' <<<\"\$(odd_exec --as odd)\"" 30
# (admitted, an exec then fails for want of a node)
t_check "exec by the user named with quotes and a backslash: admitted" \
        grep -q 'does not have a host assigned' <<<"$(odd_exec --as "$ODD_USER")"
t_check "exec by a member of the group so named: admitted" \
        grep -q 'does not have a host assigned' <<<"$(odd_exec --as someone --as-group "$ODD_GROUP")"
t_check "exec by the user with the backslash doubled: refused" \
        grep -q 'hangar driver-exec: exec into hangar-driver' <<<"$(odd_exec --as "$ODD_TWIN")"
"${K[@]}" delete -f odd-list.json >/dev/null
"${K[@]}" delete namespace odd --wait=false >/dev/null

echo "-- the webhook's pod under Pod Security restricted (enforced)"
pod_from_template() { # JSON FILE -> a Pod with the Deployment's pod template
        jq "$DEP.spec.template as \$t | {apiVersion: \"v1\", kind: \"Pod\", metadata: {name: \"pss-check\", namespace: \"$NS\", labels: \$t.metadata.labels}, spec: \$t.spec}" "$1"
}
for m in default cert-manager provided; do
        pod_from_template "$m.json" >"pod-$m.json"
        out=$("${K[@]}" create --dry-run=server -f "pod-$m.json" 2>&1)
        t_check "$m: the webhook pod is admitted in a restricted namespace ($out)" grep -q 'created (server dry run)' <<<"$out"
done
# The same check must be able to fail: loosen one field and it is refused.
jq '.spec.containers[0].securityContext.allowPrivilegeEscalation = true' pod-default.json >pod-loose.json
out=$("${K[@]}" create --dry-run=server -f pod-loose.json 2>&1)
t_check "control: a pod allowing privilege escalation is refused by Pod Security" grep -q 'violates PodSecurity "restricted' <<<"$out"

echo "-- bad values refused by helm install too (nothing installed)"
out=$("$HELM" install bad "$CHART" -n "$NS" --set webhook.timeoutSeconds=99 2>&1)
rc=$?
t_check "helm install with timeoutSeconds=99 fails with the schema message" \
        bash -c "[ $rc != 0 ] && grep -q '/webhook/timeoutSeconds.*maximum' <<<\"\$1\"" _ "$out"
t_eq "no release 'bad' exists" "" "$("$HELM" list -n "$NS" -q --filter '^bad$')"

echo "-- self-managed: real install, RBAC, caBundle kept across an upgrade"
if "$HELM" install "$REL" "$CHART" -n "$NS" >install-sm.log 2>&1; then
        t_check "helm install (self-managed, the default)" true
else
        t_fail "helm install (self-managed): $(cat install-sm.log)"
fi
t_check "NOTES.txt printed" grep -q "Certificates: selfManaged" install-sm.log
t_check "NOTES.txt prints the command that opts a namespace in" \
        grep -q "kubectl label namespace NAMESPACE hangar.dev/injection=enabled" install-sm.log
t_check "NOTES.txt names the driver-exec policy" grep -q "ValidatingAdmissionPolicy/$FULL-driver-exec" install-sm.log
SA=system:serviceaccount:$NS:$FULL
can() { "${K[@]}" auth can-i "$@" --as="$SA" 2>/dev/null; }
t_eq "SA may get its TLS Secret" yes "$(can get "secrets/$FULL-tls" -n "$NS")"
t_eq "SA may update its TLS Secret" yes "$(can update "secrets/$FULL-tls" -n "$NS")"
t_eq "SA may create Secrets (create cannot be limited by name)" yes "$(can create secrets -n "$NS")"
t_eq "SA may not get another Secret" no "$(can get secrets/other -n "$NS")"
t_eq "SA may not list Secrets" no "$(can list secrets -n "$NS")"
t_eq "SA may not delete its Secret" no "$(can delete "secrets/$FULL-tls" -n "$NS")"
t_eq "SA may not read Secrets in another namespace" no "$(can get "secrets/$FULL-tls" -n default)"
t_eq "SA may patch its webhook configuration" yes "$(can patch "mutatingwebhookconfigurations/$FULL")"
t_eq "SA may not patch another webhook configuration" no "$(can patch mutatingwebhookconfigurations/other)"
t_eq "SA may not list webhook configurations" no "$(can list mutatingwebhookconfigurations)"
t_eq "SA may not touch pods" no "$(can create pods -n "$NS")"
# The scheduled audit's RBAC, for real, beside the release; the audit then
# runs here with a token of its ServiceAccount, as its CronJob would.
"$HELM" template "$REL" "$CHART" -n "$NS" --set audit.enabled=true --show-only templates/audit-cronjob.yaml |
        to_json | jq '{apiVersion: "v1", kind: "List", items: map(select(.kind != "CronJob"))}' >audit-rbac.json
"${K[@]}" apply -f audit-rbac.json >/dev/null || t_fail "the audit's RBAC refused"
ASA=system:serviceaccount:$NS:$FULL-audit
acan() { "${K[@]}" auth can-i "$@" --as="$ASA" 2>/dev/null; }
t_eq "audit SA may list pods everywhere, get namespaces" "yes yes" "$(acan list pods -A) $(acan get namespaces/default)"
t_eq "audit SA may get this release's webhook configuration, not another" "yes no" \
        "$(acan get "mutatingwebhookconfigurations/$FULL") $(acan get mutatingwebhookconfigurations/other)"
t_eq "audit SA may create, get and patch events" "yes yes yes" \
        "$(acan create events -n default) $(acan get events -n default) $(acan patch events -n default)"
t_eq "audit SA may not get pods, exec, delete events or read Secrets" "no no no no" \
        "$(acan get pods -n default) $(acan create pods --subresource=exec -n default) $(acan delete events -n default) $(acan get secrets -n "$NS")"
# The real webhook, run here with the configuration the release stored and a
# token of the chart's ServiceAccount (what the pod would have): with only the
# chart's RBAC it must create its Secret and patch its caBundle.
echo "-- self-managed: the webhook, as the chart's ServiceAccount, creates its Secret and patches the caBundle"
"${K[@]}" get configmap -n "$NS" "$FULL" -o json | jq -r '.data["config.yaml"]' >sm-config.yaml
TOKEN=$("${K[@]}" create token "$FULL" -n "$NS" --duration 10m 2>token.err) ||
        t_fail "no token for the ServiceAccount: $(cat token.err)"
cat >sa-kubeconfig <<KUBECONFIG_END
apiVersion: v1
kind: Config
clusters: [{name: test, cluster: {server: "$HANGAR_APISERVER_URL", certificate-authority: "$HANGAR_APISERVER_CA"}}]
users: [{name: sa, user: {token: "$TOKEN"}}]
contexts: [{name: sa, context: {cluster: test, user: sa, namespace: "$NS"}}]
current-context: sa
KUBECONFIG_END
mkdir -p sm-tls
SM_HEALTH=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
POD_NAMESPACE=$NS HANGAR_KUBECONFIG=$T_TMP/sa-kubeconfig HANGAR_LISTEN_ADDRESS=127.0.0.1 HANGAR_PORT=0 \
        HANGAR_HEALTH_PORT=$SM_HEALTH HANGAR_TLS_CERT_FILE=$T_TMP/sm-tls/tls.crt \
        HANGAR_TLS_KEY_FILE=$T_TMP/sm-tls/tls.key "$WEBHOOK" serve --config sm-config.yaml 2>sm-webhook.log &
SM_PID=$!
t_cleanup_pid $SM_PID
SM_PORT=$(t_webhook_port sm-webhook.log) || t_fail "self-managed webhook did not start: $(cat sm-webhook.log)"
t_check "ready once its certificate is in place" t_wait_for "curl -sf http://127.0.0.1:$SM_HEALTH/readyz >/dev/null" 30
t_check "it logged the caBundle update" t_wait_for "grep -q '\"msg\":\"caBundle updated\"' sm-webhook.log" 10
t_check "no error in its log (the chart's RBAC was enough)" bash -c "! grep -q '\"level\":\"error\"' sm-webhook.log"
"${K[@]}" get secret -n "$NS" "$FULL-tls" -o json >sm-secret.json 2>/dev/null || echo '{}' >sm-secret.json
jq_check "Secret $FULL-tls holds ca.crt, ca.key, tls.crt, tls.key" sm-secret.json \
        '.data | keys == ["ca.crt","ca.key","tls.crt","tls.key"]'
CA_SM=$(jq -r '.data["ca.crt"] // "none"' sm-secret.json)
"${K[@]}" get mutatingwebhookconfiguration "$FULL" -o json >mwc-patched.json
jq_check "the caBundle is the Secret's CA" mwc-patched.json ".webhooks[0].clientConfig.caBundle == \"$CA_SM\""
base64 -d <<<"$CA_SM" >sm-ca.crt 2>/dev/null
# (any HTTP answer: the TLS port serves only the reviews, health is on its own port)
t_check "it serves a certificate for $FULL.$NS.svc that the caBundle verifies" \
        curl -s --max-time 5 --cacert sm-ca.crt --resolve "$FULL.$NS.svc:$SM_PORT:127.0.0.1" \
        -o /dev/null "https://$FULL.$NS.svc:$SM_PORT/mutate"
t_signal TERM "$SM_PID"
wait "$SM_PID"
t_eq "it exits 0 on SIGTERM" 0 "$?"
ATOKEN=$("${K[@]}" create token "$FULL-audit" -n "$NS" --duration 10m 2>token.err) ||
        t_fail "no token for the audit's ServiceAccount: $(cat token.err)"
sed "s|token: \"[^\"]*\"|token: \"$ATOKEN\"|" sa-kubeconfig >audit-kubeconfig
"$WEBHOOK" audit --kubeconfig audit-kubeconfig --config sm-config.yaml -A --webhook-configuration "$FULL" \
        --events -o json >audit-sa.json 2>audit-sa.err
rc=$?
# (it finishes: 0, 1 or 4 by what it finds; 3 is "could not finish", e.g. a refused read)
t_check "the audit as its ServiceAccount (the CronJob's args): finishes (exit $rc), a JSON report" \
        bash -c "[ $rc = 0 ] || [ $rc = 1 ] || [ $rc = 4 ] && jq -e '.counts' audit-sa.json >/dev/null"
[ "$rc" = 0 ] || [ "$rc" = 1 ] || [ "$rc" = 4 ] || cat audit-sa.err
"${K[@]}" delete -f audit-rbac.json >/dev/null
CA_NEW=$CA_SM
if "$HELM" upgrade "$REL" "$CHART" -n "$NS" --set webhook.timeoutSeconds=7 >upgrade-sm.log 2>&1; then
        t_check "helm upgrade (a changed value)" true
else
        t_fail "helm upgrade: $(cat upgrade-sm.log)"
fi
"${K[@]}" get mutatingwebhookconfiguration "$FULL" -o json >mwc-upgraded.json
jq_check "after the upgrade: new timeoutSeconds and the runtime caBundle kept" mwc-upgraded.json \
        ".webhooks[0].timeoutSeconds == 7 and .webhooks[0].clientConfig.caBundle == \"$CA_NEW\""
t_check "helm uninstall (self-managed)" bash -c "'$HELM' uninstall '$REL' -n '$NS' --wait --timeout 60s >/dev/null"
t_check "webhook configuration, ClusterRole and binding gone" bash -c \
        "! '$KUBECTL' get mutatingwebhookconfiguration/$FULL clusterrole/$FULL clusterrolebinding/$FULL 2>/dev/null | grep -q $FULL"
t_check "the webhook's Secret outlives the release (a reinstall keeps the CA)" \
        bash -c "'$KUBECTL' get secret -n '$NS' '$FULL-tls' -o name >/dev/null"

echo "-- URL mode: real install with hangar-webhook running locally on TLS"
"$WEBHOOK" certs --out-dir pki --ip 127.0.0.1 --dns localhost >/dev/null
CA_LOCAL=$(base64 -w0 <pki/ca.crt)
# The webhook runs with the configuration the chart renders (injection on);
# only where it listens and its certificate come from the environment.
"$HELM" template "$REL" "$CHART" -n "$NS" -f "$VALUES/url.yaml" --set driverSidecar.enabled=true \
        --show-only templates/configmap.yaml | to_json | jq -r '.[0].data["config.yaml"]' >url-config.yaml
HEALTH_PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
HANGAR_LISTEN_ADDRESS=127.0.0.1 HANGAR_PORT=0 HANGAR_HEALTH_PORT=$HEALTH_PORT \
        HANGAR_TLS_CERT_FILE=$T_TMP/pki/tls.crt HANGAR_TLS_KEY_FILE=$T_TMP/pki/tls.key \
        "$WEBHOOK" serve --config url-config.yaml 2>webhook.log &
t_cleanup_pid $!
PORT=$(t_webhook_port webhook.log) || { t_fail "webhook did not start: $(cat webhook.log)"; t_end; }
t_check "local webhook ready" t_wait_for "curl -sf http://127.0.0.1:$HEALTH_PORT/readyz >/dev/null" 10
URL=https://127.0.0.1:$PORT/mutate
UREL=hwurl
UNS=hangar-url
# From the package (helm package above), as a chart repository serves it.
if "$HELM" install "$UREL" "${TGZ:-$CHART}" -n "$UNS" --create-namespace -f "$VALUES/url.yaml" \
        --set driverSidecar.enabled=true --set webhook.url="$URL" --set webhook.caBundle="$CA_LOCAL" >install-url.log 2>&1; then
        t_check "helm install (URL mode)" true
else
        t_fail "helm install (URL mode): $(cat install-url.log)"
fi
"${K[@]}" get mutatingwebhookconfiguration "$UREL-hangar-webhook" -o json >mwc-url.json 2>/dev/null || echo '{}' >mwc-url.json
jq_check "the webhook configuration exists with the URL and caBundle" mwc-url.json \
        ".webhooks[0].clientConfig == {url: \"$URL\", caBundle: \"$CA_LOCAL\"}"
t_eq "nothing runs in the cluster in URL mode" "" \
        "$("${K[@]}" get deployments,services,serviceaccounts,roles,rolebindings -n "$UNS" -l app.kubernetes.io/instance=$UREL -o name 2>/dev/null)"
"${K[@]}" get configmap -n "$UNS" "$UREL-hangar-webhook" -o json 2>/dev/null | jq -r '.data["config.yaml"]' >url-config-stored.yaml
t_check "the stored ConfigMap is the configuration the local webhook runs" cmp -s url-config-stored.yaml url-config.yaml

for ns in sandboxes kube-system "$UNS" outside leaving; do
        "${K[@]}" get namespace "$ns" >/dev/null 2>&1 || "${K[@]}" create namespace "$ns" >/dev/null
done
# sandboxes and leaving opt in (the chart's scope); outside does not.
"${K[@]}" label namespace sandboxes hangar.dev/injection=enabled >/dev/null
"${K[@]}" label namespace leaving hangar.dev/injection=enabled >/dev/null
pod_json() { # NAME NAMESPACE LABELLED
        local labels='{}'
        [ "$3" = 1 ] && labels='{"hangar.dev/sandbox": "true"}'
        jq -n --arg n "$1" --arg ns "$2" --argjson l "$labels" \
                '{apiVersion: "v1", kind: "Pod", metadata: {name: $n, namespace: $ns, labels: $l},
                  spec: {containers: [{name: "sandbox", image: "registry.example/agent:1"}]}}'
}
# The API server picks a new webhook configuration up after a moment.
injected() { # a dry-run create of a labelled pod comes back injected
        pod_json probe sandboxes 1 | "$KUBECTL" create --dry-run=server -f - -o json 2>/dev/null |
                jq -e '.metadata.annotations["hangar.dev/driver-sidecar"] == "injected"' >/dev/null
}
t_check "the API server calls the webhook (a dry-run create is injected)" t_wait_for injected 30
# So does a new policy: until then a sandbox pod out of scope is created.
t_check "the scope policy is active (a dry-run sandbox pod out of scope is refused)" t_wait_for \
        "grep -q 'hangar scope' <<<\"\$(pod_json probe outside 1 | '$KUBECTL' create --dry-run=server -f - 2>&1)\"" 30

echo "-- the optional parts on the API server: NetworkPolicy and the helm test hook"
jq '{apiVersion: "v1", kind: "List", items: .}' extras.json >extras-server.json
out=$("${K[@]}" apply --dry-run=server -f extras-server.json 2>&1)
t_check "extras: every object accepted (dry-run=server), the test pod under restricted Pod Security without a warning" \
        bash -c "[ \$(grep -c 'created (server dry run)' <<<\"\$1\") = $(jq length extras.json) ] && ! grep -qi warning <<<\"\$1\"" _ "$out"
[ "$(grep -c 'created (server dry run)' <<<"$out")" = "$(jq length extras.json)" ] || awk '{print "       " $0}' <<<"$out"
# The hook's RBAC, for real, in the URL-mode release's namespace (what
# `helm test` creates before its pod); its pod's command then runs here
# with a token of the hook's ServiceAccount: the chart's RBAC alone must
# be enough for it, and nothing more is granted.
"$HELM" template "$UREL" "${TGZ:-$CHART}" -n "$UNS" --set tests.namespace=sandboxes \
        --show-only templates/tests/test-injection.yaml | to_json | jq '{apiVersion: "v1", kind: "List", items: map(select(.kind != "Pod"))}' >hook-rbac.json
"${K[@]}" apply -f hook-rbac.json >/dev/null || t_fail "the test hook's RBAC refused"
TSA=system:serviceaccount:$UNS:$UREL-hangar-webhook-test
tcan() { "${K[@]}" auth can-i "$@" --as="$TSA" 2>/dev/null; }
t_eq "test SA may create pods in sandboxes" yes "$(tcan create pods -n sandboxes)"
t_eq "test SA may not get pods there" no "$(tcan get pods -n sandboxes)"
t_eq "test SA may not delete pods there" no "$(tcan delete pods -n sandboxes)"
t_eq "test SA may not create pods in another namespace" no "$(tcan create pods -n default)"
t_eq "test SA may not exec into pods" no "$(tcan create pods --subresource=exec -n sandboxes)"
TTOKEN=$("${K[@]}" create token "$UREL-hangar-webhook-test" -n "$UNS" --duration 10m 2>token.err) ||
        t_fail "no token for the test's ServiceAccount: $(cat token.err)"
sed "s|token: \"[^\"]*\"|token: \"$TTOKEN\"|; s|namespace: \"$NS\"|namespace: \"$UNS\"|" sa-kubeconfig >test-kubeconfig
"$WEBHOOK" test-injection --kubeconfig test-kubeconfig --config url-config.yaml --namespace sandboxes \
        --image registry.example/agent:1 >ti-ok.out 2>&1
t_eq "test-injection as the hook's ServiceAccount: passes" 0 "$?"
t_check "... saying the dry-run pod is stored with hangar-driver in the current shape" \
        grep -q '^ok: sandbox pod sandboxes/hangar-test-injection-.* (dry run) is stored with hangar-driver in the current shape' ti-ok.out
t_eq "... and nothing was stored" "" "$("${K[@]}" get pods -n sandboxes -o name | grep hangar-test-injection)"
"$WEBHOOK" test-injection --kubeconfig test-kubeconfig --config url-config.yaml --namespace default \
        --image registry.example/agent:1 >ti-rbac.out 2>&1
t_eq "test-injection in a namespace its Role does not cover: fails" 1 "$?"
t_check "... with the API server's refusal" grep -q 'refused (HTTP 403)' ti-rbac.out
# Not injected: a namespace the webhook configuration leaves out (the
# release's own), as an admin.
"$WEBHOOK" test-injection --kubeconfig "$KUBECONFIG" --config url-config.yaml --namespace "$UNS" \
        --image registry.example/agent:1 >ti-ns.out 2>&1
t_eq "test-injection in a namespace hangar never serves: fails" 1 "$?"
t_check "... with the scope policy's refusal" grep -q 'hangar scope: namespace' ti-ns.out
# Injected, but not in the shape the test's configuration says (the webhook
# runs another configuration than the release's).
sed 's/^  uid: 1001$/  uid: 1005/' url-config.yaml >url-config-other.yaml
t_check "(that configuration differs in the driver's uid)" bash -c "! cmp -s url-config.yaml url-config-other.yaml"
"$WEBHOOK" test-injection --kubeconfig test-kubeconfig --config url-config-other.yaml --namespace sandboxes \
        --image registry.example/agent:1 >ti-shape.out 2>&1
t_eq "test-injection against another configuration than the webhook's: fails" 1 "$?"
t_check "... naming the driver's difference" grep -q 'FAIL: the dry-run sandbox pod is stale (shape): injected by another configuration.*driver' ti-shape.out
sed 's/^driverSidecar: true/driverSidecar: false/' url-config.yaml >url-config-off.yaml
"$WEBHOOK" test-injection --kubeconfig test-kubeconfig --config url-config-off.yaml \
        --namespace sandboxes --image registry.example/agent:1 >ti-off.out 2>&1
t_eq "test-injection with driverSidecar off: fails" 1 "$?"
t_check "... saying there is no injection to test" grep -q 'driverSidecar is off' ti-off.out
"${K[@]}" delete -f hook-rbac.json >/dev/null
create_pod() { # NAME NAMESPACE LABELLED -> stored pod JSON in pod-NAME.json
        pod_json "$@" | "${K[@]}" create -f - -o json >"pod-$1.json" 2>"pod-$1.err" || echo '{}' >"pod-$1.json"
}
create_pod agent sandboxes 1
jq_check "sandbox pod stored with hangar-driver and the injected annotation" pod-agent.json '
        (.spec.containers | map(.name)) == ["sandbox", "hangar-driver"]
        and .metadata.annotations["hangar.dev/driver-sidecar"] == "injected"
        and .metadata.annotations["hangar.dev/driver-sidecar-reason"] == "injected"
        and .spec.shareProcessNamespace == false'
create_pod plain sandboxes 0
jq_check "an unlabelled pod is not sent (objectSelector)" pod-plain.json \
        '(.spec.containers | length) == 1 and .metadata.annotations == null'
# Out of scope (docs/security-model.md, Scope): never sent to the webhooks,
# and a sandbox pod there is refused by the API server itself.
scope_refused() { # WHAT FILE REGEX: the create was refused by the scope policy
        local what=$1 err=$2 re=$3
        t_check "$what (got: $(head -c 240 "$err"))" bash -c \
                "grep -q \"ValidatingAdmissionPolicy '$UREL-hangar-webhook-sandbox-scope'\" '$err' && grep -Eq -- '$re' '$err'"
}
create_pod sys kube-system 1
scope_refused "a sandbox pod in kube-system: refused (never served)" pod-sys.err "hangar scope: namespace kube-system is never served"
create_pod own "$UNS" 1
scope_refused "a sandbox pod in the release namespace: refused (never served)" pod-own.err "hangar scope: namespace $UNS is never served"
create_pod stray outside 1
scope_refused "a sandbox pod in a namespace that did not opt in: refused" pod-stray.err \
        "hangar scope: namespace outside has not opted in to hangar \\(kubectl label namespace outside hangar.dev/injection=enabled\\)"
create_pod bystander outside 0
jq_check "an ordinary pod there is created, untouched" pod-bystander.json \
        '.metadata.name == "bystander" and (.spec.containers | length) == 1 and .metadata.annotations == null'
jq 'del(.metadata.labels, .metadata.resourceVersion, .metadata.uid, .metadata.creationTimestamp, .metadata.annotations, .status) |
        .metadata.name = "copy" | .metadata.namespace = "outside"' pod-agent.json >copy.json
"${K[@]}" create -f copy.json >pod-copy.out 2>pod-copy.err
scope_refused "a copy carrying hangar-driver, unlabelled, out of scope: refused" pod-copy.err "hangar scope: namespace outside"
pod_json marked outside 0 | jq '.metadata.annotations = {"hangar.dev/driver-sidecar": "injected"}' |
        "${K[@]}" create -f - >pod-marked.out 2>pod-marked.err
scope_refused "a pod marked injected, out of scope: refused" pod-marked.err "hangar scope: namespace outside"
"${K[@]}" label pod -n outside bystander hangar.dev/sandbox=true >label-late.out 2>label-late.err
scope_refused "the sandbox label added to a pod out of scope: refused" label-late.err "hangar scope: namespace outside"
# A namespace that leaves the scope keeps its sandbox pods updatable and deletable.
create_pod resident leaving 1
jq_check "(a sandbox pod injected while its namespace was in scope)" pod-resident.json \
        '.metadata.annotations["hangar.dev/driver-sidecar"] == "injected"'
"${K[@]}" label namespace leaving hangar.dev/injection- >/dev/null
out=$("${K[@]}" annotate pod -n leaving resident team.example/owner=a 2>&1)
t_check "an UPDATE of a sandbox pod whose namespace left the scope: admitted ($out)" grep -q annotated <<<"$out"
t_check "and it is deleted" "${K[@]}" delete pod -n leaving resident --wait=false
t_eq "the webhook reviewed only sandbox pods in selected namespaces (log; test-injection's dry-run pod among them)" "agent hangar-test-injection- probe resident" \
        "$(grep '"msg":"review"' webhook.log | jq -r 'select(.decision != "allowed" and .decision != "denied") | .pod' | sort -u | xargs)"
# The doors' CREATE entry: sent only pods that carry hangar-driver once
# injected (matchConditions), every one of them in shape.
t_check "the doors' CREATE entry saw the injected sandbox pod and allowed it" bash -c \
        "grep '\"msg\":\"review\"' webhook.log | jq -e -s 'any(.operation == \"CREATE\" and .pod == \"agent\" and .decision == \"allowed\")' >/dev/null"
t_eq "... and no other pod, none refused" "" \
        "$(grep '"msg":"review"' webhook.log | jq -r 'select(.operation == "CREATE" and (.decision == "allowed" or .decision == "denied")) | select(.decision == "denied" or (.pod | IN("plain", "sys", "own"))) | "\(.pod) \(.decision)"' | sort -u | xargs)"

t_check "helm uninstall (URL mode)" bash -c "'$HELM' uninstall '$UREL' -n '$UNS' --wait --timeout 60s >/dev/null"
t_check "the webhook configuration is gone" bash -c \
        "! '$KUBECTL' get mutatingwebhookconfiguration '$UREL-hangar-webhook' >/dev/null 2>&1"
t_check "the API server stops calling the webhook" t_wait_for '! injected' 30
create_pod after sandboxes 1
jq_check "a sandbox pod created after uninstall is untouched" pod-after.json \
        '.metadata.name == "after" and (.spec.containers | length) == 1 and .metadata.annotations == null'
t_end
