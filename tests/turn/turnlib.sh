# shellcheck shell=bash
# The pod a turn runs in, for the turn suites (test_turn_pod.sh,
# test_attacks_pod.sh, test_terminal_pod.sh, test_daemon_pod.sh; the grade
# suite): the webhook's injected sandbox pod
# run by tests/pods/podrun, or, with RUNTIME "node", by tests/node/nodepod
# (podrun's interface: the pod created through the shared node's API server
# and run by its kubelet under gVisor, exec through kubectl exec; suites
# call "$PODRUN" exec --dir "$POD" ... for either), the probe's verdict
# delivered as hangar delivers it, and
# helpers that start the driver and the relay through exec. Source it after
# testlib.sh with WEBHOOK, DRIVER, RELAY, PROBE, RUNTIME, RUNTIME_BIN and
# EXTRA_BINS (an array of more --bin directories) set, and POD_EDIT (a jq
# filter for the injected pod) when a suite needs a pod of its own shape;
# then call turn_pod_up.

. "$HERE/../pods/podlib.sh"
# The sidecar's command. The suites that start the driver by exec
# (start_driver: hangar-driver relay --spec -, the daemon for one turn) give
# the pod the older driver that runs nothing, and so no probes (nothing
# would answer them); test_daemon_pod.sh sets the default, hangar-driver
# serve with its probes. Exported: hangar-probe spec below judges the pod by
# the same configuration.
export HANGAR_DRIVER_COMMAND=${HANGAR_DRIVER_COMMAND:-'["sleep", "infinity"]'}
export HANGAR_DRIVER_PROBES=${HANGAR_DRIVER_PROBES:-false}
PODRUN="$HERE/../pods/podrun"
UP_TIMEOUT=300
if [ "$RUNTIME" = node ]; then
        PODRUN="$HERE/../node/nodepod"
        UP_TIMEOUT=420 # nodepod's own wait for Ready is 300 s, after the namespace and the create
        # kubectl exec failures of every pod of the suite (checked at t_end, below)
        export NODEPOD_ERRORS=$T_TMP/nodepod-exec-errors
fi
POD=$T_TMP/pod
HOME_DIR=/var/lib/hangar
CTL_DIR=/var/lib/hangar-ctl

down() { "$PODRUN" down --dir "$POD" >/dev/null 2>&1; }

in_driver() { "$PODRUN" exec --dir "$POD" hangar-driver -- "$@"; }
in_agent() { "$PODRUN" exec --dir "$POD" sandbox -- "$@"; }
ctl() { in_driver hangar-driver ctl "$@"; }

# deliver MODE: the probe's verdict under MODE into hangar-ctl and hangar-home.
deliver() {
        in_driver sh -c "hangar-probe verdict --mode $1 --spec $CTL_DIR/spec.json \
                --agent $CTL_DIR/agent.json --driver $CTL_DIR/driver.json \
                --write $CTL_DIR/verdict.json >/dev/null; cp $CTL_DIR/verdict.json $HOME_DIR/verdict.json"
}

# turn_pod_up: the pod up and the verdict (required) delivered; 1 on failure.
turn_pod_up() {
        cd "$T_TMP" || return 1
        # shellcheck disable=SC2153 # RUNTIME is the sourcing suite's (see above), not a typo of runtime
        pods_preflight "$RUNTIME"
        cp "$HERE/../pods/fixtures/sandbox-pod.yaml" pod.yaml
        if [ "$RUNTIME" = node ]; then
                # GKE Sandbox's pod before the webhook sees it: RuntimeClass
                # gvisor (so the injection has its gVisor mount annotations)
                # and an image the node has (the driver runs the agent's).
                sed -i -e 's|^spec:$|spec:\n  runtimeClassName: gvisor|' \
                        -e "s|image: debian:12|image: ${NODEPOD_IMAGE:-localhost/hangar-sandbox:dev}|" pod.yaml
        fi
        HANGAR_K8S_DRIVER_SIDECAR=true "$WEBHOOK" inject -f pod.yaml >pod.json 2>inject.err ||
                { t_fail "hangar-webhook inject: $(cat inject.err)"; return 1; }
        # POD_EDIT: a jq filter a suite applies to the injected pod (a pod of
        # its own shape, as a user may give one: another container, a volume).
        if [ -n "${POD_EDIT:-}" ]; then
                jq "$POD_EDIT" pod.json >pod.edited.json ||
                        { t_fail "POD_EDIT: jq failed on the injected pod"; return 1; }
                mv pod.edited.json pod.json
        fi

        local UP_ARGS=(--pod pod.json --dir "$POD" --runtime "$RUNTIME" -q
                --bin "$(dirname "$DRIVER")" --bin "$(dirname "$RELAY")" --bin "$(dirname "$PROBE")")
        local b
        for b in "${EXTRA_BINS[@]}"; do UP_ARGS+=(--bin "$b"); done
        pods_runtime_opts "$RUNTIME" "$RUNTIME_BIN"
        UP_ARGS+=("${RT_OPTS[@]}")
        if ! timeout "$UP_TIMEOUT" "$PODRUN" up "${UP_ARGS[@]}" >up.log 2>&1; then
                t_fail "podrun up: $(tail -n 5 up.log)"
                return 1
        fi
        trap 't_main_shell || exit; down; t_cleanup' EXIT
        [ "$RUNTIME" != node ] || echo "  the pod on the shared node: $(tail -n 1 up.log)"
        in_agent hangar-probe check --role agent >agent.json
        in_driver hangar-probe check --role driver >driver.json
        "$PROBE" spec --pod-file pod.json >spec.json
        for f in agent driver spec; do
                "$PODRUN" exec --dir "$POD" --stdin hangar-driver -- sh -c "cat >$CTL_DIR/$f.json" <$f.json
        done
        deliver required
        t_eq "the probe's verdict in hangar-ctl: split active" split-active \
                "$(in_driver cat $CTL_DIR/verdict.json | jq -r .verdict)"
        t_eq "the relay's copy is readable by the agent" split-active \
                "$(in_agent cat $HOME_DIR/verdict.json | jq -r .verdict)"
        in_agent mkdir -p /tmp/turn /tmp/agent-home
}

# spec ID MODE SCRIPT [EXTRA_JSON]: a turn spec on stdout.
spec() {
        jq -n --arg id "$1" --arg mode "$2" --arg script "$3" --argjson extra "${4:-{\}}" \
                '{turn: $id, mode: $mode, cwd: "/tmp/turn", script: $script,
                  run_key: "RUN-KEY-SECRET-\($id)", linger_s: 60, connect_timeout_s: 60} + $extra'
}
# start_driver NAME SPEC_FILE [ENV...]: hangar-driver relay in the background.
start_driver() {
        local name=$1 specf=$2
        shift 2
        "$PODRUN" exec --dir "$POD" --stdin "${@/#/--env=}" hangar-driver -- \
                hangar-driver relay --spec - <"$specf" >"$name.driver.out" 2>"$name.driver.err" &
        echo $! >"$name.driver.pid"
        t_cleanup_pid "$(cat "$name.driver.pid")"
}
# start_relay NAME [ENV...]: the token from ctl, hangar-relay (or $RELAY_CMD) as the agent, in
# hangar's order (docs/protocol.md): the relay's stdout streams (a pipe, not a
# file), and the token is written only after its {"relay":"ready",...} line.
start_relay() {
        local name=$1 token
        shift
        t_wait_for "ctl token >$name.token.json 2>/dev/null" 90 ||
                { t_fail "$name: the driver never served a token: $(cat "$name.driver.err")"; return 1; }
        # The token and, next to it, the daemon's instance (the relay checks it).
        token=$(jq -r 'if .instance then "\(.token) \(.instance)" else .token end' "$name.token.json")
        : >"$name.relay.out"
        { t_wait_for "grep -q '\"relay\":' '$name.relay.out'" 120 &&
                grep -q '"relay":"ready"' "$name.relay.out" && printf '%s\n' "$token"; } |
                "$PODRUN" exec --dir "$POD" --stdin "${@/#/--env=}" sandbox -- "${RELAY_CMD:-hangar-relay}" \
                        > >(exec cat >>"$name.relay.out") 2>"$name.relay.err" &
        echo $! >"$name.relay.pid"
        t_cleanup_pid "$(cat "$name.relay.pid")"
}
# relay_result NAME: the relay's last line (its outcome), once it is there.
relay_result() {
        t_wait_for "tail -n 1 '$1.relay.out' 2>/dev/null | grep -qv '\"relay\":\"ready\"'" 5
        tail -n 1 "$1.relay.out"
}
# log_has TEXT: the run's log, read by the agent, has TEXT. Read whole first:
# grep -q closing the pipe early would fail the reader under pipefail.
log_has() {
        local log
        log=$(in_agent cat $HOME_DIR/run/log 2>/dev/null)
        grep -q -- "$1" <<<"$log"
}
# log_kept TEXT: a check that the run's log (read by the agent) still has TEXT.
log_kept() {
        if log_has "$1"; then
                t_eq "... the log is kept" kept kept
        else
                t_fail "... the log is kept: no [$1] in: $(in_agent tail -n 3 $HOME_DIR/run/log 2>&1 | tr '\n' '|')"
        fi
}
# The harness's processes in the agent's container (busybox has no pgrep).
# The harness's pids, oldest first (sorted as numbers: the glob sorts 108
# before 99, and a shell's forked child carries its parent's command line for
# a moment, so the first of an unsorted list may be a child already gone).
harness_pids() {
        # shellcheck disable=SC2016 # expanded by the container's shell
        in_agent sh -c 'for d in /proc/[0-9]*; do
                case "$(tr "\0" " " <$d/cmdline 2>/dev/null)" in "/bin/sh /var/lib/hangar/run/script ") echo ${d#/proc/} ;; esac
        done' | sort -n
}
harness_gone() { [ -z "$(harness_pids)" ]; }


# On the node backend an exec that kubectl could not make (not the command's
# own status; tests/node/nodepod) must fail the suite: a check that wants a
# command to fail (an attack that must not succeed) would count it as held.
# t_end checks there was none.
if [ "$RUNTIME" = node ]; then
        eval "$(declare -f t_end | sed '1s/^t_end /turnlib_testlib_t_end /')"
        t_end() {
                local errs
                errs=$(cat "$NODEPOD_ERRORS" 2>/dev/null)
                t_eq "every kubectl exec reached its container (failures in $NODEPOD_ERRORS)" "" "$errs"
                turnlib_testlib_t_end
        }
fi
