#!/usr/bin/env bash
# Sealed grades on the host (no pod): hangar-driver serve as uid 1001, the
# grader side (hangar-grade) as uid 1000 in a PID namespace of its own (as
# in a container), hangar's order kept (the token and port only after the
# ready line). A clean grade is isolated with the exec's status and output
# and the grader's report; a grader past its timeout is 124; a report over
# its cap is report-refused; a grade is refused while a turn... (no turn
# here: refused specs instead); one grade at a time; ids once; show; the
# pod's spec report at finish: another container or an unread pod is
# other-containers, a failing one split-not-active, none refused.
# usage: test_grade_native.sh DRIVER GRADE
# shellcheck disable=SC2016,SC2094 # scripts for the grader's shell; the out file is read as it grows
DRIVER=$(realpath "$1")
GRADE=$(realpath "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../turn/hostlib.sh"
host_unshared "$0" "$DRIVER" "$GRADE"
. "$HERE/../lib/testlib.sh"
. "$HERE/gradelib.sh"
t_begin "sealed grades on the host (serve + hangar-grade)"
host_turn_up "$DRIVER" "$GRADE"
host_serve d1 || t_end

mkdir -p tests1 && cat >tests1/run.sh <<'SH'
echo "graded $(cat "$HANGAR_GRADE_TESTS/data/expected")"
env | sort | sed 's/^/env: /'
echo '{"passed": 2, "failed": 0}' >"$HANGAR_GRADE_REPORT"
exit 3
SH
mkdir -p tests1/data && echo "42" >tests1/data/expected
echo 'print("the workspace")' >turn/solution.py
chown -R 1000:1000 turn

# There is no pod here: the spec check's report hangar passes at finish is
# the one of a pod with nothing beside the agent's container and the
# driver, unless a case says otherwise (SPEC_REPORT).
NO_POD='{"result": "pass", "checks": [{"code": "spec.native", "status": "pass", "detail": "no pod: the host"}], "other_containers": []}'
# grade NAME SPEC_FILE: begin, the grader side in hangar's order, finish
# (with $SPEC_REPORT, or $NO_POD); the sealed grade in NAME.grade.
grade() {
        local name=$1 token port
        ctl grade begin --spec - <"$2" >"$name.begin" 2>"$name.begin.err" ||
                { t_fail "$name: begin: $(cat "$name.begin.err") $(cat "$name.begin")"; return 1; }
        token=$(jq -r .token "$name.begin")
        port=$(jq -r .port "$name.begin")
        : >"$name.out"
        { t_wait_for "grep -q '\"grade\":' '$name.out'" 30 &&
                grep -q '"grade":"ready"' "$name.out" && printf '%s %s\n' "$token" "$port"; } |
                HOME=$T_TMP/agent-home HANGAR_HOME_PATH=$AGENT_HOME_VIEW LD_PRELOAD=/nonexistent.so \
                        PYTHONPATH=$T_TMP/turn unshare --pid --fork --mount-proc -- \
                        sh -c "setpriv --reuid 1000 --regid 1000 --clear-groups -- $GRADE --sweep-ms ${SWEEP_MS:-3000}; echo \$? >$T_TMP/$name.status" \
                        >"$name.out" 2>"$name.err"
        jq -n --arg id "$(jq -r .grade "$name.begin")" --argjson st "$(cat "$name.status")" \
                --arg out "$(base64 -w0 <"$name.out")" --argjson rep "${SPEC_REPORT:-$NO_POD}" \
                '{grade: $id, exit_status: $st, output_base64: $out, spec_report: $rep}' >"$name.finish"
        ctl grade finish --spec - <"$name.finish" >"$name.finished" 2>"$name.finish.err" ||
                t_fail "$name: finish: $(cat "$name.finish.err")"
        ctl grade show "$(jq -r .grade "$name.begin")" | jq .grade >"$name.grade"
}

grade_spec g1 tests1 "$T_TMP/turn" 30 '["/bin/sh", "-c", ". \"$HANGAR_GRADE_TESTS/run.sh\""]' >g1.spec
grade g1 g1.spec
t_eq "the grader side exits with the grader's status" 3 "$(cat g1.status)"
t_eq "clean grade: isolated, no reason, status 3" "isolated [] 3" \
        "$(jq -c -r '"\(.trust) \(.reasons) \(.exit_status)"' g1.grade)"
t_eq "... the report as the grader wrote it" '{"passed":2,"failed":0}' "$(jq -c .report g1.grade)"
t_eq "... the tests' hash, as begin said" "$(jq -r .tests_sha256 g1.begin)" "$(jq -r .tests_sha256 g1.grade)"
t_check "... the output's hash is the exec's output" \
        test "$(jq -r .output_sha256 g1.grade)" = "$(sha256sum <g1.out | cut -d' ' -f1)"
t_check "... the grader read the hidden tests" grep -q "^graded 42$" g1.out
t_check "... a tree hash of the workspace" test "$(jq -r .tree g1.grade | wc -c)" = 65
t_check "... no LD_PRELOAD or PYTHONPATH reached the grader" sh -c '! grep -q "env: \(LD_PRELOAD\|PYTHONPATH\)" g1.out'
t_check "... HOME is fresh, not the agent's" grep -q "env: HOME=/tmp/hangar-grade-" g1.out
t_check "... the tests left hangar-home with the grade" test ! -e home/grades/g1
t_check "... the record is uid 1001's, 0600" test "$(stat -c '%u %a' ctl/grades/g1/grade.json)" = "1001 600"
t_eq "... no other container in the pod, as the spec report said" "[]" "$(jq -c .other_containers g1.grade)"

# ---- what ran beside the agent's container: the pod's spec report ----
# Another container (in a PID namespace of its own: no sweep sees it)
# could have changed what the grader read; a pod hangar could not read
# could have had one. A spec report that fails: the split is not active.
grade_spec o1 tests1 "$T_TMP/turn" 30 '["/bin/true"]' >o1.spec
SPEC_REPORT='{"result": "pass", "checks": [{"code": "spec.native", "status": "pass", "detail": "d"}], "other_containers": ["helper"]}' \
        grade o1 o1.spec
t_eq "another container: best_effort, other-containers, named" 'best_effort ["other-containers"] ["helper"]' \
        "$(jq -c -r '"\(.trust) \(.reasons) \(.other_containers)"' o1.grade)"
grade_spec o2 tests1 "$T_TMP/turn" 30 '["/bin/true"]' >o2.spec
SPEC_REPORT=null grade o2 o2.spec
t_eq "the pod not read (null): best_effort, other-containers" 'best_effort ["other-containers"] null' \
        "$(jq -c -r '"\(.trust) \(.reasons) \(.other_containers)"' o2.grade)"
grade_spec o3 tests1 "$T_TMP/turn" 30 '["/bin/true"]' >o3.spec
SPEC_REPORT='{"result": "fail", "checks": [{"code": "spec.share-process-namespace", "status": "fail", "detail": "d"}], "other_containers": []}' \
        grade o3 o3.spec
t_eq "a spec report that fails: best_effort, split-not-active" 'best_effort ["split-not-active"]' \
        "$(jq -c -r '"\(.trust) \(.reasons)"' o3.grade)"
grade_spec o4 tests1 "$T_TMP/turn" 30 '["/bin/true"]' >o4.spec
ctl grade begin --spec - <o4.spec >o4.begin
for bad in '{"grade": "o4", "exit_status": 0, "output_base64": ""}' \
        '{"grade": "o4", "exit_status": 0, "output_base64": "", "spec_report": {"result": "pass", "checks": [{"code": "c", "status": "fail"}], "other_containers": []}}' \
        '{"grade": "o4", "exit_status": 0, "output_base64": "", "spec_report": {"result": "pass", "checks": [{"code": "c", "status": "pass"}]}}'; do
        t_check "finish refused without a whole spec report: $bad" sh -c "! echo '$bad' | ctl grade finish --spec - >/dev/null 2>&1"
done
jq -n --argjson rep "$NO_POD" '{grade: "o4", exit_status: 0, output_base64: "", spec_report: $rep}' |
        ctl grade finish --spec - >o4.finished
t_eq "... and then finished with one" "true" "$(jq -r .grade.sealed o4.finished)"

grade_spec g1 tests1 "$T_TMP/turn" 30 '["/bin/true"]' >g1b.spec
t_check "a grade id is used once" sh -c "! ctl grade begin --spec - <g1b.spec >/dev/null 2>&1"

grade_spec g2 tests1 "$T_TMP/turn" 2 '["/bin/sh", "-c", "sleep 30"]' >g2.spec
grade g2 g2.spec
t_eq "a grader past its timeout: 124, the grade still sealed" "124 timeout isolated" \
        "$(jq -r '"\(.exit_status) \(.grader_side.end) \(.trust)"' g2.grade)"

grade_spec g3 tests1 "$T_TMP/turn" 30 '["/bin/sh", "-c", "head -c 5000 /dev/zero | tr \"\\\\0\" x >$HANGAR_GRADE_REPORT"]' >g3.spec
grade g3 g3.spec
t_eq "a report over its cap: best_effort, report-refused" 'best_effort ["report-refused","grader-incomplete"]' \
        "$(jq -c -r '"\(.trust) \(.reasons)"' g3.grade)"

for bad in '{"grade": "x/y", "tests": [], "argv": ["a"], "cwd": "/"}' \
        '{"grade": "b1", "tests": [{"path": "../x", "data_base64": ""}], "argv": ["a"], "cwd": "/"}' \
        '{"grade": "b2", "tests": [{"path": "a", "data_base64": ""}, {"path": "a/b", "data_base64": ""}], "argv": ["a"], "cwd": "/"}' \
        '{"grade": "b3", "tests": [], "argv": ["a"], "cwd": "/x/../y"}' \
        '{"grade": "b4", "tests": [], "argv": [], "cwd": "/"}' \
        '{"grade": "b5", "tests": [], "argv": ["a"], "cwd": "/", "extra": 1}'; do
        t_check "refused: $bad" sh -c "! echo '$bad' | ctl grade begin --spec - >/dev/null 2>&1"
done
grade_spec g4 tests1 "$T_TMP/turn" 30 '["/bin/true"]' '{"connect_timeout_s": 1}' >g4.spec
ctl grade begin --spec - <g4.spec >g4.begin
t_check "one grade at a time" sh -c "! ctl grade begin --spec - <g2.spec >/dev/null 2>&1"
jq -n --arg cwd "$T_TMP/turn" '{turn: "t1", mode: "ask", cwd: $cwd, script: "true", run_key: "K"}' >t1.spec
start_refused() { ! ctl start --spec - <t1.spec >t1.start 2>&1 && grep -q "a grade is in flight" t1.start; }
t_check "no turn starts while a grade is in flight" start_refused
sleep 2
jq -n --argjson rep "$NO_POD" '{grade: "g4", exit_status: 0, output_base64: "", spec_report: $rep}' |
        ctl grade finish --spec - >g4.finished
t_eq "no grader side: best_effort, grader-incomplete" 'best_effort ["grader-incomplete"]' \
        "$(jq -c -r '.grade | "\(.trust) \(.reasons)"' g4.finished)"
ping_quiet() { ctl ping >/dev/null; }
t_check "ctl ping still answers" ping_quiet
t_end
