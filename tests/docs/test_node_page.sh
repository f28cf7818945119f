#!/usr/bin/env bash
# docs/node.md's usage block, taken from the page and run as it stands but
# for three substitutions (build is this build, its images/ and /tmp/node
# directories of the suite's): install, tools, images, a node of its own started with the
# pause image, an image loaded, a gVisor pod run and exec'd into through the
# API server, status, a command in the node's namespaces, stop. Checks what
# the page's comments promise, and that stop leaves no node behind.
# usage: test_node_page.sh BUILD_DIR K8S_BIN NODE_BIN
BUILD=$(realpath "$1")
K8S_BIN=$(realpath "$2")
NODE_BIN=$(realpath "$3")
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/../lib/doclib.sh"
t_begin "docs/node.md: the usage block as the page gives it"
NODE_DIR=$T_TMP/node
trap 't_main_shell || exit; "$ROOT/scripts/node.sh" stop "$NODE_DIR" >/dev/null 2>&1; t_cleanup' EXIT
# The page's node.sh start takes the binaries from these when set (the
# page's next paragraph), as the node suites do.
export HANGAR_K8S_BIN=$K8S_BIN HANGAR_NODE_BIN=$NODE_BIN PATH=$K8S_BIN:$PATH

# The archives go to a directory of the suite's (--out), not the build's
# images/, which the node suites' shared node imports from.
doc_script "$ROOT/docs/node.md" node-usage "$T_TMP/usage.sh" "s|build/images/|$T_TMP/images/|g" \
        "s|--build-dir build |--build-dir $BUILD --out $T_TMP/images |" "s|/tmp/node|$NODE_DIR|g" ||
        t_fail "no node-usage block"
t_eq "the block ends with stop" 1 "$(tail -n 1 "$T_TMP/usage.sh" | grep -c 'node.sh stop ')"
head -n -1 "$T_TMP/usage.sh" >"$T_TMP/up.sh"
tail -n 1 "$T_TMP/usage.sh" >"$T_TMP/down.sh"

cd "$ROOT" || exit 1
t_check "every line up to stop exits 0" bash "$T_TMP/up.sh" >"$T_TMP/out" 2>"$T_TMP/err" ||
        { sed 's/^/       /' "$T_TMP/err" | tail -n 30; tail -n 30 "$NODE_DIR/node-start.log" 2>/dev/null; }
out=$(cat "$T_TMP/out")
t_check "kubectl get nodes: the node is Ready" grep -qE '^[^ ]+ +Ready ' <<<"$out"
t_check "the exec ran uname under gVisor (its made-up kernel: 4.4.0 or N-gvisor)" grep -qE '^Linux shell (4\.4\.0|[0-9.]+-gvisor) ' <<<"$out"
t_check "ctr lists the loaded image" grep -q 'localhost/hangar-sandbox:dev' <<<"$out"
t_check "ctr lists the pause image" grep -q 'registry.k8s.io/pause:3.10.2' <<<"$out"
t_check "status exits 0 while the node runs" "$ROOT/scripts/node.sh" status "$NODE_DIR"

t_check "stop, as the page gives it, exits 0" bash "$T_TMP/down.sh" >"$T_TMP/down.out" 2>&1 ||
        sed 's/^/       /' "$T_TMP/down.out" | tail -n 20
if "$ROOT/scripts/node.sh" status "$NODE_DIR" >/dev/null 2>&1; then
        t_fail "status still exits 0 after stop"
else
        t_check "status exits non-zero after stop" true
fi
t_check "a second stop is a no-op (idempotent, as the page says)" bash "$T_TMP/down.sh"
t_end
