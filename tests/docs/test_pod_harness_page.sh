#!/usr/bin/env bash
# docs/pod-harness.md's quick start, taken from the page: its pod.yaml, then
# its commands as they stand but for three substitutions (the tree is built
# by the test's build, so the cmake line is left out and build/ is that
# build; /tmp/pod is a directory of the suite's). Checks what the page's
# comments promise: the driver is uid 1001 with group 1000, it writes
# hangar-home, the agent reads it and cannot write it, stdin reaches the
# agent, and down leaves nothing behind.
# usage: test_pod_harness_page.sh BUILD_DIR [RUNTIME]
BUILD=$(realpath "$1")
RUNTIME=${2:-runsc}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/../lib/doclib.sh"
t_begin "docs/pod-harness.md: the quick start as the page gives it ($RUNTIME)"
POD_DIR=$T_TMP/pod
trap 't_main_shell || exit; "$ROOT/tests/pods/podrun" down --dir "$POD_DIR" >/dev/null 2>&1; t_cleanup' EXIT

page=$ROOT/docs/pod-harness.md
doc_block "$page" pod-harness-pod >"$T_TMP/pod.yaml" || t_fail "no pod-harness-pod block"
runtime_flag=""
[ "$RUNTIME" = runsc ] || runtime_flag=" --runtime $RUNTIME"
doc_script "$page" pod-harness-quickstart "$T_TMP/quickstart.sh" '/^cmake /d' "s|build/|$BUILD/|g" \
        "s|/tmp/pod|$POD_DIR|g" "s|\\(podrun up .*--dir [^ ]*\\)|\\1$runtime_flag|" ||
        t_fail "no pod-harness-quickstart block"
t_eq "the page's commands are all there (but the build)" 9 "$(grep -c 'podrun\|hangar-webhook inject' "$T_TMP/quickstart.sh")"

# pod.yaml and pod.json live where the page's commands are typed; podrun by
# its path from the top of the tree, as on the page.
mkdir -p "$T_TMP/work" && cp "$T_TMP/pod.yaml" "$T_TMP/work/"
ln -s "$ROOT/tests" "$T_TMP/work/tests"
cd "$T_TMP/work" || exit 1
t_check "every command exits 0" bash "$T_TMP/quickstart.sh" >"$T_TMP/out" 2>"$T_TMP/err" ||
        sed 's/^/       /' "$T_TMP/err" | tail -n 20
out=$(cat "$T_TMP/out")
jqe() { jq -e "$@" >/dev/null; }
t_check "inject wrote the pod with hangar-driver" \
        jqe '[.spec.containers[].name] == ["sandbox", "hangar-driver"]' pod.json
t_check "ps lists both containers running" \
        grep -qE '^hangar-driver +app +running' <<<"$out"
t_check "the driver is uid=1001 gid=1001 groups=1000, as the page says" \
        grep -qx 'uid=1001 gid=1001 groups=1000' <<<"$out"
t_check "the agent reads the x the driver wrote" grep -qx 'x' <<<"$out"
t_check "hangar-home is read-only for the agent" grep -qx 'read-only for the agent' <<<"$out"
t_check "stdin reaches the agent" grep -qx 'token' <<<"$out"
t_check "down removed the pod's directory" test ! -e "$POD_DIR"
t_end
