#!/usr/bin/env bash
# hangar-probe spec through a kubeconfig credential plugin (user.exec, as on
# GKE with gke-gcloud-auth-plugin), against a real kube-apiserver started
# with a static token file: a fake plugin (a shell script) prints an
# ExecCredential, a token the API server knows or a client certificate
# signed by its client CA. Checked:
#   - the pod is read through the plugin's token (v1 and v1beta1) and through
#     its certificate pair; the plugin gets its args, env and the exec info
#     that kubectl (client-go) gives the same plugin, byte for byte;
#   - a refused token (401): the plugin runs once more, then the 401 is the
#     answer; a plugin that gives a good token on its second run passes;
#   - failures, each with a clear message (exit 3): plugin missing (with its
#     installHint), non-zero exit (its stderr), bad JSON, expired credential,
#     interactiveMode Always, an answer of another apiVersion;
#   - KUBECONFIG=a:b merged as kubectl merges it (current-context from the
#     first file that sets it, the first file's stanza of a name), --context,
#     missing files in the list, --kubeconfig with one file only;
#   - scripts/before-enabling.sh hands the same --kubeconfig/--context to
#     kubectl and hangar-probe (both must then read the pod).
# usage: test_probe_exec.sh HANGAR_WEBHOOK HANGAR_PROBE TOOLS_BIN
WEBHOOK=$(realpath "$1")
PROBE=$(realpath "$2")
TOOLS_BIN=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=tests/lib/testlib.sh
. "$HERE/../lib/testlib.sh"
t_begin "hangar-probe spec through exec credential plugins (real API server)"
cd "$T_TMP" || exit 1
if [ -z "$TOOLS_BIN" ] || [ ! -x "$TOOLS_BIN/kube-apiserver" ] || [ ! -x "$TOOLS_BIN/kubectl" ]; then
        t_fail "kube-apiserver and kubectl not found in '$TOOLS_BIN' (scripts/k8s-tools.sh)"
        t_end
fi
KUBECTL=$TOOLS_BIN/kubectl
unset KUBECONFIG KUBERNETES_SERVICE_HOST KUBERNETES_SERVICE_PORT
export HOME=$T_TMP/home # no ~/.kube/config of the machine's
mkdir -p "$HOME"

# The API server knows one static token (user exec-user).
GOOD=hangar-exec-token-$RANDOM$RANDOM
printf '%s,exec-user,exec-uid,exec-group\n' "$GOOD" >tokens.csv
HANGAR_K8S_BIN=$TOOLS_BIN "$ROOT/scripts/control-plane.sh" start "$T_TMP/cp" \
        --apiserver-arg "--token-auth-file=$T_TMP/tokens.csv" >cp.log 2>&1 || {
        t_fail "control plane did not start: $(tail -n 5 cp.log)"
        t_end
}
trap 't_main_shell || exit; "$ROOT/scripts/control-plane.sh" stop "$T_TMP/cp" >/dev/null 2>&1; t_cleanup' EXIT
ADMIN=$T_TMP/cp/kubeconfig
PKI=$T_TMP/cp/pki
URL=$(sed -n 's/^export HANGAR_APISERVER_URL=//p' "$T_TMP/cp/env")
A=("$KUBECTL" --kubeconfig "$ADMIN")

# A pod in shape, and the right to read it for the plugin's two identities.
"$WEBHOOK" inject -f "$ROOT/tests/golden/cases/existing-volumes/pod.yaml" 2>/dev/null |
        jq '.spec.securityContext.runAsUser = 1000 | .metadata.name = "in-shape" | .metadata.namespace = "default"' >pod.json
printf 'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: gvisor}\nhandler: runsc\n' |
        "${A[@]}" create -f - >/dev/null
"${A[@]}" create -f pod.json >/dev/null || t_fail "cannot create the pod"
"${A[@]}" create clusterrole pod-reader --verb=get --resource=pods >/dev/null
"${A[@]}" create clusterrolebinding exec-readers --clusterrole=pod-reader \
        --user=exec-user --user=exec-cert-user >/dev/null
# A client certificate the plugin can print (signed by the client CA).
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout cert.key -out cert.csr \
        -subj "/CN=exec-cert-user" >/dev/null 2>&1
printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n' >cert.ext
openssl x509 -req -in cert.csr -CA "$PKI/client-ca.crt" -CAkey "$PKI/client-ca.key" -CAcreateserial \
        -days 1 -extfile cert.ext -out cert.crt >/dev/null 2>&1 || t_fail "cannot sign the plugin's certificate"

# The fake plugin: MODE (from the kubeconfig's env) says what it prints;
# each run appends to $STATE/runs and leaves its exec info and args.
mkdir -p kc
cat >kc/plugin.sh <<'PLUGIN'
#!/bin/sh
n=1
[ -f "$STATE/runs" ] && n=$(($(wc -l <"$STATE/runs") + 1))
echo "$MODE" >>"$STATE/runs"
printf '%s' "$KUBERNETES_EXEC_INFO" >"$STATE/info.$n"
printf '%s\n' "$@" >"$STATE/args.$n"
V=${ANSWER_VERSION:-client.authentication.k8s.io/v1}
exp=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
token() { printf '{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"%s"}}\n' "$V" "$1" "$exp"; }
case $MODE in
token) token "$GOOD_TOKEN" ;;
bad-token) token "not-a-known-token" ;;
flaky) if [ "$n" -eq 1 ]; then token "not-a-known-token"; else token "$GOOD_TOKEN"; fi ;;
cert) jq -n --arg v "$V" --rawfile c "$CERT" --rawfile k "$KEY" \
        '{apiVersion: $v, kind: "ExecCredential", status: {clientCertificateData: $c, clientKeyData: $k}}' ;;
fail) echo "ERROR: gke-gcloud-auth-plugin: not logged in (run: gcloud auth login)" >&2; exit 1 ;;
bad-json) echo '{"apiVersion": "client.authentication.k8s.io/v1", "kind": ExecCredential' ;;
expired) printf '{"apiVersion":"%s","kind":"ExecCredential","status":{"token":"%s","expirationTimestamp":"2020-01-01T00:00:00Z"}}\n' "$V" "$GOOD_TOKEN" ;;
*) echo "unknown MODE $MODE" >&2; exit 2 ;;
esac
PLUGIN
chmod 755 kc/plugin.sh
cp "$PKI/ca.crt" kc/ca.crt

# exec_kc FILE MODE [APIVERSION [INTERACTIVE [COMMAND [EXTRA]]]]: a kubeconfig in
# kc/ whose one user runs the plugin; "-" leaves interactiveMode out.
exec_kc() {
        local f=$1 mode=$2 api=${3:-client.authentication.k8s.io/v1} im=${4:-Never}
        local cmd=${5:-./plugin.sh} extra=${6:-} state=$T_TMP/state-$2-$RANDOM
        mkdir -p "$state"
        {
                printf 'apiVersion: v1\nkind: Config\ncurrent-context: exec\n'
                printf 'clusters:\n- name: test\n  cluster:\n    server: %s\n    certificate-authority: ca.crt\n' "$URL"
                printf 'contexts:\n- name: exec\n  context: {cluster: test, user: plugin, namespace: default}\n'
                printf 'users:\n- name: plugin\n  user:\n    exec:\n'
                printf '      apiVersion: %s\n      command: %s\n' "$api" "$cmd"
                printf '      args: [--project, "my project"]\n      provideClusterInfo: true\n'
                [ "$im" = - ] || printf '      interactiveMode: %s\n' "$im"
                printf '      env:\n'
                printf '      - {name: MODE, value: %s}\n      - {name: STATE, value: "%s"}\n' "$mode" "$state"
                printf '      - {name: GOOD_TOKEN, value: "%s"}\n' "$GOOD"
                printf '      - {name: CERT, value: "%s"}\n      - {name: KEY, value: "%s"}\n' "$T_TMP/cert.crt" "$T_TMP/cert.key"
                [ -z "$extra" ] || printf '%s\n' "$extra"
        } >"kc/$f"
        echo "$state"
}
runs() { if [ -f "$1/runs" ]; then wc -l <"$1/runs"; else echo 0; fi; }
# spec ARGS...: hangar-probe spec --name in-shape ARGS; exit status in $rc,
# the report's result in $res, stderr in spec.err.
spec() {
        "$PROBE" spec --name in-shape "$@" >spec.json 2>spec.err </dev/null
        rc=$?
        res=$(jq -r .result spec.json 2>/dev/null)
}

# 1. A token from the plugin.
S=$(exec_kc token.yaml token)
spec --kubeconfig kc/token.yaml
t_eq "token: the pod is read through the plugin and passes (exit 0; $(head -c 200 spec.err))" "0 pass" "$rc $res"
t_eq "token: the plugin ran once" 1 "$(runs "$S")"
t_eq "token: its args, as written" "--project|my project" "$(paste -sd'|' "$S/args.1")"
t_eq "token: exec info says interactive false" false "$(jq -r .spec.interactive "$S/info.1")"
t_eq "token: exec info has the cluster's server" "$URL" "$(jq -r .spec.cluster.server "$S/info.1")"
t_eq "token: ... and its CA, base64" "$(base64 -w0 kc/ca.crt)" "$(jq -r '.spec.cluster["certificate-authority-data"]' "$S/info.1")"
# The same kubeconfig through kubectl (client-go runs the plugin): the
# same exec info, byte for byte, and it reads the pod too.
K=$(exec_kc token-kubectl.yaml token)
"$KUBECTL" --kubeconfig kc/token-kubectl.yaml get pod in-shape -o name >kubectl.out 2>kubectl.err </dev/null
t_eq "kubectl reads the pod through the same plugin ($(head -c 200 kubectl.err))" pod/in-shape "$(cat kubectl.out)"
t_eq "the exec info is kubectl's" "$(jq -cS . "$K/info.1" 2>&1)" "$(jq -cS . "$S/info.1" 2>&1)"

# 2. v1beta1 (interactiveMode may be left out) and a certificate pair.
S=$(exec_kc beta.yaml token client.authentication.k8s.io/v1beta1 - ./plugin.sh \
        '      - {name: ANSWER_VERSION, value: client.authentication.k8s.io/v1beta1}')
spec --kubeconfig kc/beta.yaml
t_eq "v1beta1: passes ($(head -c 200 spec.err))" "0 pass" "$rc $res"
t_eq "v1beta1: exec info is v1beta1" client.authentication.k8s.io/v1beta1 "$(jq -r .apiVersion "$S/info.1")"
S=$(exec_kc cert.yaml cert)
spec --kubeconfig kc/cert.yaml
t_eq "client certificate from the plugin: passes ($(head -c 200 spec.err))" "0 pass" "$rc $res"
# Without the plugin's certificate the same request is anonymous: refused.
sed '/    exec:/,$d' kc/cert.yaml | sed 's/^  user:$/  user: {}/' >kc/anon.yaml
"$PROBE" spec --name in-shape --kubeconfig kc/anon.yaml >/dev/null 2>anon.err
t_eq "... while no credential is refused (control: exit 3)" 3 "$?"
t_check "... as anonymous ($(head -c 160 anon.err))" grep -q 'system:anonymous' anon.err

# 3. 401: run once more, then give up; a good second answer passes.
S=$(exec_kc bad.yaml bad-token)
spec --kubeconfig kc/bad.yaml
t_eq "unknown token: inconclusive (3)" 3 "$rc"
t_check "... says the API server refused it ($(head -c 160 spec.err))" grep -qi 'unauthorized' spec.err
t_eq "... after running the plugin twice (once more on the 401, not more)" 2 "$(runs "$S")"
S=$(exec_kc flaky.yaml flaky)
spec --kubeconfig kc/flaky.yaml
t_eq "a 401, then a good token from the second run: passes ($(head -c 160 spec.err))" "0 pass" "$rc $res"
t_eq "... the plugin ran twice" 2 "$(runs "$S")"

# 4. Failures, each said clearly.
fails() { # NAME KUBECONFIG EXPECTED-TEXT
        spec --kubeconfig "$2"
        t_eq "$1: inconclusive (3)" 3 "$rc"
        t_check "$1: says \"$3\" ($(head -c 240 spec.err))" grep -qF -- "$3" spec.err
}
exec_kc missing.yaml token client.authentication.k8s.io/v1 Never gke-gcloud-auth-plugin-not-here \
        '      installHint: "Install gke-gcloud-auth-plugin: gcloud components install gke-gcloud-auth-plugin"' >/dev/null
fails "plugin missing" kc/missing.yaml "exec plugin gke-gcloud-auth-plugin-not-here not found on PATH: Install gke-gcloud-auth-plugin"
S=$(exec_kc fail.yaml fail)
fails "plugin fails" kc/fail.yaml "exited with status 1: ERROR: gke-gcloud-auth-plugin: not logged in (run: gcloud auth login)"
exec_kc badjson.yaml bad-json >/dev/null
fails "bad JSON" kc/badjson.yaml "printed bad JSON, not an ExecCredential"
exec_kc expired.yaml expired >/dev/null
fails "expired credential" kc/expired.yaml "the credential expired at 2020-01-01T00:00:00Z"
S=$(exec_kc always.yaml token client.authentication.k8s.io/v1 Always)
fails "interactiveMode Always" kc/always.yaml "interactiveMode Always needs a terminal"
t_eq "... and the plugin never ran" 0 "$(runs "$S")"
exec_kc version.yaml token client.authentication.k8s.io/v1 Never ./plugin.sh \
        '      - {name: ANSWER_VERSION, value: client.authentication.k8s.io/v1beta1}' >/dev/null
fails "an answer of another apiVersion" kc/version.yaml 'is apiVersion "client.authentication.k8s.io/v1beta1", but the kubeconfig asks for client.authentication.k8s.io/v1'
exec_kc nointeractive.yaml token client.authentication.k8s.io/v1 - >/dev/null
fails "v1 without interactiveMode" kc/nointeractive.yaml "interactiveMode must be set"

# 5. KUBECONFIG=a:b. a: current-context exec-ctx (context only); b, in its
# own directory: the cluster (CA next to b), the plugin's user (plugin next
# to b), an admin user, current-context admin-ctx, and its own exec-ctx
# that points nowhere (a's wins).
mkdir -p m/a m/b
cp kc/plugin.sh kc/ca.crt m/b/
cp "$PKI/admin.crt" "$PKI/admin.key" m/b/
MS=$T_TMP/state-merge
mkdir -p "$MS"
cat >m/a/config <<EOF
apiVersion: v1
kind: Config
current-context: exec-ctx
contexts:
- {name: exec-ctx, context: {cluster: test, user: plugin, namespace: default}}
EOF
cat >m/b/config <<EOF
apiVersion: v1
kind: Config
current-context: admin-ctx
clusters:
- {name: test, cluster: {server: "$URL", certificate-authority: ca.crt}}
- {name: nowhere, cluster: {server: "https://127.0.0.1:1", certificate-authority: ca.crt}}
contexts:
- {name: admin-ctx, context: {cluster: test, user: admin, namespace: default}}
- {name: exec-ctx, context: {cluster: nowhere, user: admin}}
users:
- name: admin
  user: {client-certificate: admin.crt, client-key: admin.key}
- name: plugin
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1
      command: ./plugin.sh
      interactiveMode: IfAvailable
      env:
      - {name: MODE, value: token}
      - {name: STATE, value: "$MS"}
      - {name: GOOD_TOKEN, value: "$GOOD"}
EOF
AB=$T_TMP/m/a/config:$T_TMP/m/b/config
BA=$T_TMP/m/b/config:$T_TMP/m/a/config
t_eq "kubectl's current context of a:b" exec-ctx "$(KUBECONFIG=$AB "$KUBECTL" config current-context 2>&1)"
t_eq "kubectl's current context of b:a" admin-ctx "$(KUBECONFIG=$BA "$KUBECTL" config current-context 2>&1)"
KUBECONFIG=$AB spec
t_eq "KUBECONFIG=a:b: a's current context, a's exec-ctx, b's cluster and plugin: passes ($(head -c 200 spec.err))" "0 pass" "$rc $res"
t_eq "... through the plugin (relative to b)" 1 "$(runs "$MS")"
KUBECONFIG=$BA spec
t_eq "KUBECONFIG=b:a: b's current context (admin): passes" "0 pass" "$rc $res"
t_eq "... without the plugin" 1 "$(runs "$MS")"
KUBECONFIG=$BA spec --context exec-ctx
t_eq "KUBECONFIG=b:a --context exec-ctx: b's exec-ctx (nowhere) fails to connect (3)" 3 "$rc"
t_check "... to 127.0.0.1:1 ($(head -c 160 spec.err))" grep -qi 'connect' spec.err
KUBECONFIG=$AB spec --context admin-ctx
t_eq "KUBECONFIG=a:b --context admin-ctx: passes" "0 pass" "$rc $res"
t_eq "... without the plugin" 1 "$(runs "$MS")"
KUBECONFIG=$T_TMP/m/nothing-here:$AB spec
t_eq "a missing file in KUBECONFIG is passed over" "0 pass" "$rc $res"
t_eq "... (the plugin ran again: the process is new, so is its cache)" 2 "$(runs "$MS")"
KUBECONFIG=$AB spec --context nope
t_eq "--context nope: inconclusive (3)" 3 "$rc"
t_check "... context \"nope\" not found ($(head -c 160 spec.err))" grep -qF 'context "nope" not found' spec.err
KUBECONFIG=$BA spec --kubeconfig "$T_TMP/m/a/config"
t_eq "--kubeconfig a alone (no merging, \$KUBECONFIG ignored): 3" 3 "$rc"
t_check "... its context's cluster is not in it ($(head -c 160 spec.err))" grep -qF 'cluster "test" of context "exec-ctx" not found' spec.err
KUBECONFIG=$T_TMP/m/x:$T_TMP/m/y spec
t_eq "no file of KUBECONFIG exists: 3" 3 "$rc"
# shellcheck disable=SC2016 # the message names the variable
t_check "... says so ($(head -c 160 spec.err))" grep -qF 'none of the files in $KUBECONFIG' spec.err

# 6. before-enabling.sh: one --kubeconfig/--context for kubectl and the probe.
BE=$ROOT/scripts/before-enabling.sh
be() { # OUT ARGS...: the checklist of in-shape with ARGS
        local out=$1
        shift
        bash "$BE" --probe "$PROBE" --kubectl "$KUBECTL" "$@" in-shape >"$out" 2>&1 </dev/null
}
item() { grep -F -- "$2" "$1" | head -n 1 | cut -c1-9; }
N0=$(runs "$MS")
KUBECONFIG=$BA be be1.out --context exec-ctx
t_eq "before-enabling, KUBECONFIG=b:a --context exec-ctx: kubectl's item fails (nowhere)" "  [FAIL] " "$(item be1.out 2a.)"
t_eq "... and so does the probe's (the same context)" "  [FAIL] " "$(item be1.out 2b.)"
KUBECONFIG=$AB be be2.out
t_eq "before-enabling, KUBECONFIG=a:b: kubectl reads the pod (2a) ($(grep -F 2a. be2.out | head -c 200))" "  [pass] " "$(item be2.out 2a.)"
t_eq "... and hangar-probe spec passes (2b) ($(grep -F 2b. be2.out | head -c 200))" "  [pass] " "$(item be2.out 2b.)"
t_check "... in the context's namespace" grep -qF 'pod default/in-shape' be2.out
t_check "... both through the plugin ($N0 runs before, $(runs "$MS") after)" test "$(runs "$MS")" -ge $((N0 + 2))
KUBECONFIG=$AB be be3.out --context admin-ctx
t_eq "before-enabling --context admin-ctx: 2a" "  [pass] " "$(item be3.out 2a.)"
t_eq "... 2b" "  [pass] " "$(item be3.out 2b.)"
KUBECONFIG=$AB be be4.out --kubeconfig "$T_TMP/m/b/config" --context exec-ctx
t_eq "before-enabling --kubeconfig b --context exec-ctx (b's, nowhere): 2a fails" "  [FAIL] " "$(item be4.out 2a.)"
t_eq "... 2b fails" "  [FAIL] " "$(item be4.out 2b.)"
t_check "... the probe's reason is the connection ($(grep -F 2b. be4.out | head -c 200))" grep -qiE '2b\..*connect' be4.out
KUBECONFIG=$AB be be5.out --context exec-ctx -n kube-system
t_eq "before-enabling -n kube-system: both look there (2a)" "  [FAIL] " "$(item be5.out 2a.)"
t_check "... (2b not found there too)" grep -qE '2b\..*not found' be5.out
t_end
