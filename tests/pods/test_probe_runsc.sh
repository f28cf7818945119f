#!/usr/bin/env bash
# hangar-probe inside a real gVisor pod: the webhook's injected pod, run with
# the pod harness under runsc, passes `check` in both containers and `spec`,
# and the verdict is split-active (auto, required) or single-user (off). The
# same pod with a shared PID namespace is caught from inside by the agent and
# refused under required.
# usage: test_probe_runsc.sh HANGAR_WEBHOOK HANGAR_PROBE [RUNTIME]
WEBHOOK=$(realpath "$1")
PROBE=$(realpath "$2")
RUNTIME=${3:-runsc}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "hangar-probe in a real $RUNTIME pod"
cd "$T_TMP" || exit 1
PODRUN="$HERE/podrun"
BINS=(--bin "$(dirname "$WEBHOOK")" --bin "$(dirname "$PROBE")")

cp "$HERE/fixtures/sandbox-pod.yaml" pod.yaml
"$WEBHOOK" inject -f pod.yaml >pod.json 2>/dev/null

# run_pod NAME POD_JSON: up, the three reports, down.
run_pod() {
        local dir=$T_TMP/$1
        if ! timeout 300 "$PODRUN" up --pod "$2" --dir "$dir" --runtime "$RUNTIME" "${BINS[@]}" \
                >"$1.up.log" 2>&1; then
                t_fail "$1: podrun up failed: $(tail -n 3 "$1.up.log")"
                return 1
        fi
        "$PODRUN" exec --dir "$dir" sandbox -- hangar-probe check --role agent >"$1.agent.json"
        echo $? >"$1.agent.rc"
        "$PODRUN" exec --dir "$dir" hangar-driver -- hangar-probe check --role driver >"$1.driver.json"
        echo $? >"$1.driver.rc"
        "$PODRUN" down --dir "$dir" >/dev/null 2>&1
        "$PROBE" spec --pod-file "$2" >"$1.spec.json" || true
}
verdict() { "$PROBE" verdict --mode "$1" --spec "$2.spec.json" --agent "$2.agent.json" --driver "$2.driver.json" | jq -r .verdict; }
failed() { jq -r '[.checks[] | select(.required and .status != "pass") | .name] | join(",")' "$1"; }

if run_pod shaped pod.json; then
        t_eq "agent passes inside $RUNTIME ($(failed shaped.agent.json))" 0 "$(cat shaped.agent.rc)"
        t_eq "driver passes inside $RUNTIME ($(failed shaped.driver.json))" 0 "$(cat shaped.driver.rc)"
        t_eq "the injected pod's spec passes" pass "$(jq -r .result shaped.spec.json)"
        t_eq "verdict auto: split active" split-active "$(verdict auto shaped)"
        t_eq "verdict required: split active" split-active "$(verdict required shaped)"
        t_eq "verdict off: single-user" single-user "$(verdict off shaped)"
        if [ "$RUNTIME" = runsc ]; then
                t_eq "the probe sees gVisor" true \
                        "$(jq -r '.checks[] | select(.name == "runtime.gvisor") | .observed.gvisor' shaped.driver.json)"
        fi
fi

# The same pod with a shared PID namespace (set after the webhook, which forces it off).
jq '.spec.shareProcessNamespace = true' pod.json >shared.json
if run_pod shared shared.json; then
        t_check "shared PID namespace caught from inside the agent ($(failed shared.agent.json))" \
                grep -qw processes.isolated <<<"$(failed shared.agent.json | tr ',' ' ')"
        t_eq "shared PID namespace: spec fails too" fail "$(jq -r .result shared.spec.json)"
        t_eq "shared PID namespace: refused under required" refused "$(verdict required shared)"
        t_eq "shared PID namespace: single-user under auto" single-user "$(verdict auto shared)"
fi
t_end
