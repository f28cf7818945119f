#!/usr/bin/env bash
# docs/control-plane.md's usage block, taken from the page and run as it
# stands with DIR a directory of this suite's: the tools' lines, then start,
# status and stop of a real etcd + kube-apiserver. Checks what the page says
# each line does: the bin dir holds the tools, the key is printed, start
# leaves a kubeconfig that answers, status exits 0 while up and non-zero once
# stopped.
# usage: test_control_plane_page.sh
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/../lib/doclib.sh"
t_begin "docs/control-plane.md: the usage block as the page gives it"
trap 't_main_shell || exit; "$ROOT/scripts/control-plane.sh" stop "$T_TMP/cp" >/dev/null 2>&1; t_cleanup' EXIT

# The page's block up to status; its last line (stop) comes after the checks
# of the running control plane.
if ! doc_script "$ROOT/docs/control-plane.md" control-plane-usage "$T_TMP/usage.sh" "s|DIR|$T_TMP/cp|g"; then
        t_fail "docs/control-plane.md has no control-plane-usage block"
        t_end
fi
t_eq "the block ends with stop" 1 "$(tail -n 1 "$T_TMP/usage.sh" | grep -c 'control-plane.sh stop ')"
head -n -1 "$T_TMP/usage.sh" >"$T_TMP/up.sh"
# shellcheck disable=SC2016 # expanded by up.sh, where the page set bin
printf '%s\n' 'echo "bin=$bin"' >>"$T_TMP/up.sh"
tail -n 1 "$T_TMP/usage.sh" >"$T_TMP/down.sh"

cd "$ROOT" || exit 1
t_check "every line up to status exits 0" bash "$T_TMP/up.sh" >"$T_TMP/up.out" 2>"$T_TMP/up.err" ||
        sed 's/^/       /' "$T_TMP/up.err" | tail -n 20
bin=$(sed -n 's/^bin=//p' "$T_TMP/up.out")
for tool in kube-apiserver etcd kubectl helm; do
        t_check "the bin dir the page prints holds $tool" test -x "$bin/$tool"
done
t_check "--print-key prints the cache key" grep -qE '^[A-Za-z0-9._-]{8,}$' "$T_TMP/up.out"
t_check "start wrote the kubeconfig the page names" test -s "$T_TMP/cp/kubeconfig"
t_eq "the API server answers through it" ok \
        "$(KUBECONFIG=$T_TMP/cp/kubeconfig "$bin/kubectl" get --raw /readyz 2>&1)"
t_check "status exits 0 while both run" "$ROOT/scripts/control-plane.sh" status "$T_TMP/cp"

t_check "stop, as the page gives it, exits 0" bash "$T_TMP/down.sh" >"$T_TMP/down.out" 2>&1 ||
        sed 's/^/       /' "$T_TMP/down.out" | tail -n 20
if "$ROOT/scripts/control-plane.sh" status "$T_TMP/cp" >/dev/null 2>&1; then
        t_fail "status still exits 0 after stop"
else
        t_check "status exits non-zero after stop" true
fi
t_end
