#!/usr/bin/env bash
# shellcheck disable=SC1091,SC2016 # testlib is sourced; single-quoted container commands
# The `hangar` client (client/, docs/client.md) on the real node, against
# the real API server and kubelet (pods/exec over WebSocket, v5), the chart
# installed with its guard, as hangar's own identity (a token of its
# ServiceAccount in a kubeconfig of its own, as a deployment would have):
#   - hangar exec: the command's exit status; stdout and stderr apart; stdin
#     forwarded and closed (a command that reads to EOF ends); v4 alone
#     (--protocol v4: the older path, through the kubelet); an exec
#     credential plugin whose first token is refused (401, run again); 8 MiB each way
#     intact; the errors, each its own status and reason: an exec into
#     hangar-driver by an identity the guard does not list (403, the guard's
#     words), a pod that is not there (404), a container that is not there,
#     a command that cannot start, a kubeconfig that cannot be read;
#   - hangar pod check: on an injected pod the spec, both containers'
#     reports and the verdict split-active, written into hangar-ctl and
#     hangar-home (read back from both containers); on a pod whose agent
#     adds a capability (the spec fails: refused under required,
#     single-user under auto, with the reason) and on a pod hangar did not
#     inject (no hangar-driver: the reasons say so);
#   - docs/client.md's Python example, run as the page has it.
# usage: test_node_client.sh K8S_BIN HANGAR
# Needs root and the shared node (HANGAR_TEST_NODE_DIR, namespace "client").
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/../lib/doclib.sh"
# shellcheck source=../../scripts/lib/hangar-chart.sh
. "$ROOT/scripts/lib/hangar-chart.sh"
. "$HERE/nodelib.sh"
t_begin "the hangar client on the node: exec over WebSocket, pod check"

K8S_BIN=${1:-} HANGAR=$(realpath -m "${2:-.}")
node_attach "$K8S_BIN" "$K8S_BIN/helm" "$HANGAR"
NS=client
cd "$T_TMP" || exit 1
node_identity "$NS"
# A WebSocket upgrade is a GET: the API server authorizes pods/exec as
# "get" and, since 1.35, "create" too (docs/client.md, RBAC); node_identity
# grants both, as an admin must for hangar (kubectl falls back to SPDY, a
# POST that needs "create" alone; hangar has no fallback).
node_chart hangar "$NS"
logged() { "$@" >>helm.log 2>&1; }
t_check "helm install (the chart's defaults)" logged hangar_chart_install hangar "${NODE_CHART_ARGS[@]}"
t_check "the replicas patched the caBundle and the API server sends sandbox pods to the webhook" \
	hangar_chart_ready hangar "$NS" 60

pod() { node_sandbox_pod "$NS" "$@"; }
pod box
pod capped '.spec.containers[0].securityContext.capabilities.add = ["CHOWN"]'
pod plain 'del(.metadata.labels)'
# As agent-sandbox's templates name their containers: the agent named by
# the pod's hangar.dev/agent-container.
pod named '.metadata.annotations = {"hangar.dev/agent-container": "agent"} | .spec.containers[0].name = "agent"'
for p in box capped plain named; do
	kubectl wait -n "$NS" --for=condition=Ready "pod/$p" --timeout=300s >>wait.log 2>&1
	t_eq "pod $p is Ready" 0 "$?"
done
t_eq "box and capped carry hangar-driver, plain does not" "1 1 0" \
	"$(for p in box capped plain; do kubectl get pod -n "$NS" "$p" -o json |
		jq '[.spec.containers[] | select(.name == "hangar-driver")] | length'; done | xargs)"

# hangar's identity: a token of its ServiceAccount, the cluster's CA.
node_identity_kubeconfig "$NS" hangar.kubeconfig
ADMIN_KUBECONFIG=$KUBECONFIG
export KUBECONFIG=$T_TMP/hangar.kubeconfig
H() { "$HANGAR" "$@"; }

echo "-- hangar exec"
H exec "$NS/box" -c sandbox -- sh -c 'exit 7' </dev/null
t_eq "the command's exit status is hangar's (7)" 7 "$?"
H exec "$NS/box" -c sandbox -- true </dev/null
t_eq "... and 0" 0 "$?"
H exec "$NS/box" -c sandbox -- sh -c 'echo to-stdout; echo to-stderr >&2; echo more-stdout' \
	</dev/null >apart.out 2>apart.err
t_eq "stdout and stderr come apart" "to-stdout more-stdout|to-stderr" \
	"$(xargs <apart.out)|$(xargs <apart.err)"
printf 'from-stdin' | H exec -i "$NS/box" -c sandbox -- sh -c 'cat; echo " after-eof"' >stdin.out
t_eq "stdin is forwarded and closed (cat ends at EOF, v5's close signal)" "from-stdin after-eof" \
	"$(cat stdin.out)"
H exec -i "$NS/box" -c sandbox -- wc -c </dev/null >empty.out
t_eq "an empty stdin is closed at once" 0 "$(xargs <empty.out)"
head -c $((8 * 1024 * 1024)) /dev/urandom >big.bin
H exec -i "$NS/box" -c sandbox -- sh -c 'cat >/tmp/big.bin && sha256sum </tmp/big.bin' <big.bin >up.sum
t_eq "8 MiB of stdin arrive intact (sha256)" "$(sha256sum <big.bin | cut -d' ' -f1)" "$(cut -d' ' -f1 up.sum)"
H exec "$NS/box" -c sandbox -- cat /tmp/big.bin </dev/null >down.bin
t_eq "8 MiB of stdout arrive intact (sha256, 8388608 bytes)" \
	"$(sha256sum <big.bin | cut -d' ' -f1) 8388608" "$(sha256sum <down.bin | cut -d' ' -f1) $(stat -c %s down.bin)"
H exec "$NS/box" -c sandbox -- sh -c 'head -c 1048576 /tmp/big.bin >&2; echo done' </dev/null >mixed.out 2>mixed.err
t_eq "1 MiB on stderr beside stdout: each on its own" "done 1048576" "$(cat mixed.out) $(stat -c %s mixed.err)"

H exec --protocol v4 "$NS/box" -c sandbox -- sh -c 'echo over-v4; echo err-v4 >&2; exit 5' </dev/null >v4.out 2>v4.err
t_eq "v4.channel.k8s.io alone (the API server proxies it to the kubelet): exit 5, stdout and stderr apart" \
	"5 over-v4 err-v4" "$? $(cat v4.out) $(cat v4.err)"
printf 'x' | H exec -i --protocol v4 "$NS/box" -c sandbox -- head -c 1 >v4in.out 2>v4in.err
t_eq "... stdin goes through, and hangar says v4 could not close it" "0 x 1" \
	"$? $(cat v4in.out) $(grep -c 'v4.channel.k8s.io only: the command was not told that stdin ended' v4in.err)"

# The same identity through an exec credential plugin (GKE's way): its first
# token is one the API server does not know, so the upgrade is answered 401;
# hangar runs the plugin again, as kubectl does, and the exec goes through.
printf '%s\n' '#!/bin/sh' 'n=$(($(cat "$0.runs" 2>/dev/null || echo 0) + 1)); echo "$n" >"$0.runs"' \
	'if [ "$n" = 1 ]; then t=not-a-token; else t=$(cat "$0.token"); fi' \
	'printf "{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\",\"status\":{\"token\":\"%s\"}}\n" "$t"' \
	>plugin.sh
chmod 700 plugin.sh
jq -j '.users[0].user.token' hangar.kubeconfig >plugin.sh.token
jq --arg cmd "$T_TMP/plugin.sh" '.users = [{name: "hangar", user: {exec: {apiVersion: "client.authentication.k8s.io/v1",
	command: $cmd, interactiveMode: "Never"}}}]' <(kubectl config view --raw --kubeconfig hangar.kubeconfig -o json) >plugin.kubeconfig
H exec --kubeconfig plugin.kubeconfig "$NS/box" -c sandbox -- echo through-the-plugin </dev/null >plugin.out 2>plugin.err
t_eq "an exec plugin's credential: refused once (401), the plugin run again, the exec through" \
	"0 through-the-plugin 2" "$? $(cat plugin.out) $(cat plugin.sh.runs)"

# Figures for the report, not checks (no timing is asserted on this
# shared machine): 5 bare execs each way, and the 8 MiB read back.
ms() { local t0; t0=$(date +%s%N); "$@" >/dev/null 2>&1 </dev/null; echo $((($(date +%s%N) - t0) / 1000000)); }
echo "  figures: hangar exec true (ms): $(for _ in 1 2 3 4 5; do ms H exec "$NS/box" -c sandbox -- true; done | xargs)"
echo "  figures: kubectl exec true (ms): $(for _ in 1 2 3 4 5; do ms kubectl exec -n "$NS" box -c sandbox -- true; done | xargs)"
echo "  figures: hangar exec cat 8 MiB (ms): $(ms H exec "$NS/box" -c sandbox -- cat /tmp/big.bin)"
echo "  figures: kubectl exec cat 8 MiB (ms): $(ms kubectl exec -n "$NS" box -c sandbox -- cat /tmp/big.bin)"

echo "-- hangar exec: what fails, and how"
KUBECONFIG=$ADMIN_KUBECONFIG H exec "$NS/box" -c hangar-driver -- true </dev/null 2>guard.err
t_eq "an identity the guard does not list, into hangar-driver: refused (67)" 67 "$?"
t_check "... with the guard's words ($(head -c 160 guard.err))" \
	grep -q 'refused: .*reserved for the identities in guard.driverUsers' guard.err
H exec "$NS/box" -c hangar-driver -- true </dev/null
t_eq "... and hangar's identity may (0)" 0 "$?"
H exec "$NS/gone" -c sandbox -- true </dev/null 2>gone.err
t_eq "a pod that is not there: not found (68)" 68 "$?"
t_check "... saying so ($(head -c 160 gone.err))" grep -q 'not-found: HTTP 404: pods "gone" not found' gone.err
H exec "$NS/box" -c nope -- true </dev/null 2>nope.err
t_eq "a container that is not there: not runnable (69)" 69 "$?"
t_check "... saying so ($(head -c 160 nope.err))" grep -q 'not-runnable: HTTP 400: .*nope' nope.err
H exec "$NS/box" -c sandbox -- /no/such/command </dev/null 2>nostart.err
st=$?
t_check "a command that cannot start: its own status ($st: $(head -c 160 nostart.err))" \
	sh -c "[ $st = 72 ] || [ $st = 126 ] || [ $st = 127 ]"
H exec --kubeconfig "$T_TMP/missing.kubeconfig" "$NS/box" -- true </dev/null 2>cfg.err
t_eq "a kubeconfig that cannot be read: config (65)" 65 "$?"
H exec "$NS/box" true </dev/null 2>usage.err
t_eq "no -- before the command: usage (64)" 64 "$?"

echo "-- hangar pod check"
# in_driver/in_agent CMD: read back what the client wrote, as hangar.
in_c() { H exec "$NS/$1" -c "$2" -- "${@:3}" </dev/null; }
in_c box hangar-driver rm -f /var/lib/hangar-ctl/verdict.json /var/lib/hangar/verdict.json
H pod check "$NS/box" --mode required >box.jsonl 2>box.err
t_eq "box: split-active (0)" 0 "$?"
t_eq "box: one JSON line per step, protocol v1" "1 spec pass|1 check pass|1 check pass|1 verdict split-active" \
	"$(jq -r '"\(.v) \(.event) \(.result // .verdict)"' box.jsonl | paste -sd'|')"
t_eq "box: the checks ran in sandbox (agent) and hangar-driver (driver)" "agent sandbox driver hangar-driver" \
	"$(jq -r 'select(.event == "check") | "\(.role) \(.container)"' box.jsonl | xargs)"
t_eq "box: each report is the probe's own (role, checks)" "agent true driver true" \
	"$(jq -r 'select(.event == "check") | "\(.report.role) \(.report.checks | length > 5)"' box.jsonl | xargs)"
t_eq "box: delivered to hangar-ctl and hangar-home" '["/var/lib/hangar-ctl/verdict.json","/var/lib/hangar/verdict.json"]' \
	"$(jq -c 'select(.event == "verdict") | .delivered' box.jsonl)"
t_eq "the driver reads split-active, mode required, in hangar-ctl (0644, uid 1001)" "split-active required 644 1001" \
	"$(in_c box hangar-driver cat /var/lib/hangar-ctl/verdict.json | jq -r '"\(.verdict) \(.mode)"') $(in_c box hangar-driver stat -c '%a %u' /var/lib/hangar-ctl/verdict.json)"
t_eq "the agent reads the same in hangar-home (its read-only mount)" "split-active required 644" \
	"$(in_c box sandbox cat /var/lib/hangar/verdict.json | jq -r '"\(.verdict) \(.mode)"') $(in_c box sandbox stat -c '%a' /var/lib/hangar/verdict.json)"
t_eq "the two copies are the same bytes" "$(in_c box hangar-driver cat /var/lib/hangar-ctl/verdict.json)" \
	"$(in_c box sandbox cat /var/lib/hangar/verdict.json)"
t_eq "no temporary file left in either volume" "" \
	"$(in_c box hangar-driver sh -c 'ls -A /var/lib/hangar-ctl /var/lib/hangar | grep "verdict.json."')"
# The delivery is hangar-driver's own binary (no shell): it stores only a
# verdict the probe could make, and a refused one changes nothing.
printf '{"mode":"auto","verdict":"split-active","reasons":[{"code":"x"}]}' |
	H exec -i "$NS/box" -c hangar-driver -- hangar-driver verdict >forged.out 2>forged.err
t_eq "hangar-driver verdict refuses a split-active verdict with a reason (2)" 2 "$?"
t_check "... and says why" grep -qF "a split-active verdict with some reasons" forged.err
t_eq "... hangar-ctl's copy unchanged" "split-active required" \
	"$(in_c box hangar-driver cat /var/lib/hangar-ctl/verdict.json | jq -r '"\(.verdict) \(.mode)"')"

H pod check "$NS/capped" --mode required >capped.jsonl 2>capped.err
t_eq "capped (the agent adds CHOWN): refused under required (4)" 4 "$?"
t_eq "... the spec fails on spec.agent-capabilities, the verdict says why" "fail refused true" \
	"$(jq -r 'select(.event == "spec") | .result' capped.jsonl) $(jq -r 'select(.event == "verdict") | .verdict' capped.jsonl) $(jq 'select(.event == "verdict") | [.reasons[] | tostring | test("agent-capabilities")] | any' capped.jsonl)"
t_eq "... and delivered: hangar-driver refuses a turn on it" refused \
	"$(in_c capped hangar-driver cat /var/lib/hangar-ctl/verdict.json | jq -r .verdict)"
H pod check "$NS/capped" --mode auto >capped-auto.jsonl 2>/dev/null
t_eq "capped under auto: single-user (1)" "1 single-user" \
	"$? $(jq -r 'select(.event == "verdict") | .verdict' capped-auto.jsonl)"

H pod check "$NS/plain" --mode auto >plain.jsonl 2>plain.err
t_eq "plain (not injected): single-user, not delivered (no hangar-driver: 69, the delivery's status)" \
	"69 single-user not-runnable" \
	"$? $(jq -r 'select(.event == "verdict") | "\(.verdict) \(.delivery_error.kind)"' plain.jsonl)"
t_eq "... its driver check is an error: no such container" "driver error not-runnable" \
	"$(jq -r 'select(.event == "check" and .role == "driver") | "\(.role) \(.result) \(.error.kind)"' plain.jsonl)"
t_eq "... the spec says spec.no-driver" true \
	"$(jq 'select(.event == "spec") | [.report.checks[].code] | index("spec.no-driver") != null' plain.jsonl)"

H pod check "$NS/named" --mode required --no-deliver >named.jsonl 2>named.err
t_eq "named (its agent is 'agent', by annotation): split-active (0)" 0 "$?"
t_eq "... the agent's probe ran in the container the pod names" "agent agent driver hangar-driver" \
	"$(jq -r 'select(.event == "check") | "\(.role) \(.container)"' named.jsonl | xargs)"

H pod check "$NS/gone" >gone.jsonl 2>/dev/null
t_eq "a pod that is not there: 68 and an error line" "68 error not-found" \
	"$? $(jq -r '"\(.event) \(.kind)"' gone.jsonl)"

echo "-- docs/client.md's Python example"
doc_block "$ROOT/docs/client.md" client-python >example.py || t_fail "no client-python block in docs/client.md"
PATH=$(dirname "$HANGAR"):$PATH HANGAR_POD="$NS/box" python3 example.py >example.out 2>example.err
t_eq "the example runs (0)" 0 "$?"
t_eq "... and prints what the page says it prints" "split-active|exit 3|hello from stdin" \
	"$(paste -sd'|' example.out)"

export KUBECONFIG=$ADMIN_KUBECONFIG
t_check "helm uninstall" logged helm uninstall hangar -n hangar-system --wait --timeout 2m
t_end
