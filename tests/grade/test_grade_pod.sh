#!/usr/bin/env bash
# Sealed grades in a real pod (tests/pods/podrun), every case in ONE pod
# (one pod session per runtime: CI time): the webhook's injected pod with
# hangar-driver serve as the sidecar's PID 1, `ctl grade begin` (exec into
# hangar-driver), hangar-grade (exec into the agent's container, the token
# and port written only after its ready line), `ctl grade finish` with the
# exec's status and output, `ctl grade show`. A clean trial is graded with
# the runtime's baseline (runsc: isolated; a kernel without Yama under crun:
# best_effort, pid1-open, the agent's PID 1 being the agent's own), then
# each attack on a grade (docs/graders.md), as the trial's processes left behind in the
# agent's container, must leave the grade as it is (the report, the tests'
# hash, the baseline trust) or downgrade it with the right reason. Last, a
# second pod with a third container beside the agent's (other-containers).
# usage: test_grade_pod.sh WEBHOOK DRIVER RELAY PROBE [RUNTIME [RUNTIME_BIN]]
# (RELAY's directory holds hangar-grade.)
# shellcheck disable=SC2016  # scripts for the containers' shells
WEBHOOK=$(realpath "$1")
DRIVER=$(realpath "$2")
RELAY=$(realpath "$3")
PROBE=$(realpath "$4")
RUNTIME=${5:-runsc}
RUNTIME_BIN=${6:-}
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/gradelib.sh"
t_begin "sealed grades in a real $RUNTIME pod"
# Debian's python3 (its standard library comes with the host's /usr/lib, as
# podrun mounts it): the planted-hooks case needs an interpreter.
EXTRA_BINS=()
PY=/usr/bin/python3.11
if [ -x "$PY" ]; then
        mkdir -p "$T_TMP/py-bin" && cp "$PY" "$T_TMP/py-bin/python3"
        EXTRA_BINS+=("$T_TMP/py-bin")
fi
export HANGAR_DRIVER_COMMAND='["hangar-driver", "serve"]'
. "$HERE/../turn/turnlib.sh"
# down removes the pod's directory; after a failure its logs (the runtime's,
# each container's output, runsc's own under PODRUN_DEBUG=1) and the
# containers' states are kept with the suite's files first (a failure that
# took its pod's files with it could not be explained).
eval "$(declare -f down | sed '1s/^down /turnlib_down /')"
down() {
        if [ "$T_FAILURES" -gt 0 ] && [ -d "$POD" ]; then
                local keep
                keep=$T_TMP/kept-$(basename "$POD")
                mkdir -p "$keep"
                [ "$RUNTIME" = node ] || "$PODRUN" ps --dir "$POD" >"$keep/ps.txt" 2>&1
                cp -r "$POD/logs" "$keep/" 2>/dev/null
                cp "$POD"/*.log "$keep/" 2>/dev/null
        fi
        turnlib_down
}
turn_pod_up || t_end
t_eq "PID 1 in hangar-driver is the daemon" "hangar-driver serve" \
        "$(in_driver cat /proc/1/cmdline | tr '\0' ' ' | sed 's/ $//')"

# The baseline: what the runtime gives a trial that does nothing.
YAMA=$(in_agent cat /proc/sys/kernel/yama/ptrace_scope 2>/dev/null || echo none)
if [ "$YAMA" != none ] && [ "$YAMA" -ge 1 ]; then BASE_TRUST=isolated BASE='[]'; else BASE_TRUST=best_effort BASE='["pid1-open"]'; fi
echo "  (ptrace_scope in the agent's container: $YAMA; the baseline: $BASE_TRUST $BASE)"

# The hidden tests: a runner that checks the workspace's answer and reports.
mkdir -p tests/data
cat >tests/run.sh <<'SH'
sleep "${GRADE_SLEEP:-1}"
ans=$(cat answer.txt 2>/dev/null)
want=$(cat "$HANGAR_GRADE_TESTS/data/expected")
echo "answer=$ans want=$want"
env | sort | sed 's/^/env: /'
[ -e /tmp/pwned ] && echo "PWNED: $(cat /tmp/pwned)"
if [ "$ans" = "$want" ]; then r=pass; st=0; else r=fail; st=1; fi
printf '{"result": "%s", "answer": "%s"}' "$r" "$ans" >"$HANGAR_GRADE_REPORT"
exit $st
SH
echo 42 >tests/data/expected
RUN='["/bin/sh", "-c", ". \"$HANGAR_GRADE_TESTS/run.sh\""]'

# workspace NAME: a fresh workspace with the right answer.
workspace() { in_agent sh -c "rm -rf /tmp/$1 && mkdir -p /tmp/$1 && echo 42 >/tmp/$1/answer.txt"; }
# grade NAME [SPEC_EXTRA [ARGV_JSON [EXEC_ENV...]]]: begin, hangar-grade in
# hangar's order, finish, show: the sealed grade in NAME.grade, the exec's
# output in NAME.out, its status in NAME.status.
grade() {
        local name=$1 extra=${2:-"{}"} argv=${3:-$RUN} token port
        shift 3 2>/dev/null || shift $#
        grade_spec "$name" tests "${GRADE_CWD:-/tmp/$name}" 20 "$argv" "$extra" >"$name.spec"
        "$PODRUN" exec --dir "$POD" --stdin hangar-driver -- hangar-driver ctl grade begin --spec - \
                <"$name.spec" >"$name.begin" 2>"$name.begin.err" ||
                { t_fail "$name: begin: $(cat "$name.begin.err")"; return 1; }
        token=$(jq -r .token "$name.begin")
        port=$(jq -r .port "$name.begin")
        [ -z "${BEFORE_GRADE:-}" ] || "$BEFORE_GRADE" "$name" "$port"
        : >"$name.out"
        { t_wait_for "grep -q '\"grade\":' '$name.out'" 120 &&
                grep -q '"grade":"ready"' "$name.out" && printf '%s %s\n' "$token" "$port"; } |
                "$PODRUN" exec --dir "$POD" --stdin "${@/#/--env=}" sandbox -- hangar-grade \
                        > >(exec cat >>"$name.out") 2>"$name.err"
        echo $? >"$name.status"
        # hangar reads the pod's spec after the grader's exec ended (a pod's
        # containers only grow: every one that could have run beside the
        # grader is in it); here the pod podrun runs, from its file.
        "$PROBE" spec --pod-file pod.json >"$name.specrep"
        jq -n --arg id "$name" --argjson st "$(cat "$name.status")" --arg out "$(base64 -w0 <"$name.out")" \
                --slurpfile rep "$name.specrep" \
                '{grade: $id, exit_status: $st, output_base64: $out, spec_report: $rep[0]}' >"$name.finish"
        "$PODRUN" exec --dir "$POD" --stdin hangar-driver -- hangar-driver ctl grade finish --spec - \
                <"$name.finish" >"$name.finished" 2>"$name.finish.err" ||
                t_fail "$name: finish: $(cat "$name.finish.err")"
        ctl grade show "$name" | jq .grade >"$name.grade"
}
trust() { jq -c -r '"\(.trust) \(.reasons)"' "$1.grade"; }
report() { jq -c -r .report.result "$1.grade"; }
# left PATTERN: how many of the agent's processes have PATTERN in their
# command line (a space after each, as /proc's NULs read as spaces; a
# zombie's is empty: [name]). One ps in the container, counted here: a loop
# forking tr and cat per process cost minutes beside the fork storm under
# Debian's runsc (ptrace), 11 of that suite's 16 on the loaded machine. The
# matches go to left.log; a failed ps counts as a survivor.
left() {
        local out
        out=$(in_agent ps -o pid,stat,args 2>&1) || { echo "ps: $out" >>"$T_TMP/left.log"; echo 9999; return; }
        awk -v p="$1" 'NR > 1 && index($0 " ", p) { print >"/dev/stderr"; n++ } END { print n + 0 }' \
                <<<"$out" 2>>"$T_TMP/left.log"
}
# behind SCRIPT MARK [COUNT]: a process of the trial's still running at the
# end of the turn (an exec of the agent's that has not ended: a process the
# runtime would otherwise end with its exec, as crun does, could not be left
# behind), there before the grade begins: it waits (120 s at most) until
# COUNT (1) of the agent's processes have MARK in their command line, and
# fails the suite if they never do. An exec asked for is not yet a process:
# under load (kubectl exec on the node) one started after the grade it was
# meant to attack, and the case then graded a trial without its attacker
# (sweep.killed 0), which proves nothing.
behind() {
        local mark=$2 count=${3:-1}
        "$PODRUN" exec --dir "$POD" sandbox -- sh -c "$1" >/dev/null 2>&1 </dev/null &
        t_cleanup_pid $!
        t_wait_for '[ "$(left "$mark")" -ge "$count" ]' 120 ||
                t_fail "the trial's process [$mark] is not running 120 s after its exec (want $count, have $(left "$mark"))"
}

# ---- a clean trial ----
workspace clean
T0=$(date +%s%N)
grade clean
echo "  (a clean grade, begin to show: $((($(date +%s%N) - T0) / 1000000)) ms)"
t_eq "clean trial: $BASE_TRUST $BASE" "$BASE_TRUST $BASE" "$(trust clean)"
t_eq "... the exec's status (0), the grader side's end" "0 0 exited" \
        "$(jq -r '"\(.exit_status) \(.grader_side.value) \(.grader_side.end)"' clean.grade)"
t_eq "... the report" '{"result":"pass","answer":"42"}' "$(jq -c .report clean.grade)"
t_check "... the output hash is the exec's output" \
        test "$(jq -r .output_sha256 clean.grade)" = "$(sha256sum <clean.out | cut -d' ' -f1)"
t_eq "... the tests' hash is begin's" "$(jq -r .tests_sha256 clean.begin)" "$(jq -r .tests_sha256 clean.grade)"
t_check "... the grader ran from the workspace with the tests" grep -q "answer=42 want=42" clean.out
t_check "... the sweep is recorded (rounds >= 1, no survivor)" \
        test "$(jq -r '"\(.sweep.rounds >= 1) \(.sweep.survivors)"' clean.grade)" = "true 0"
t_check "... the tests are gone from hangar-home" in_agent sh -c '! test -e /var/lib/hangar/grades/clean'
t_check "... the record is in hangar-ctl, 0600" \
        test "$(in_driver stat -c %a /var/lib/hangar-ctl/grades/clean/grade.json)" = 600
t_eq "... no container beside the agent's and the driver" "[]" "$(jq -c .other_containers clean.grade)"

# ---- a daemon left behind that rewrites a file the grader reads ----
workspace rewrite
# It waits for the grade (its tests appearing) to rewrite the answer.
behind 'while :; do [ -d /var/lib/hangar/grades/rewrite ] && echo 666 >/tmp/rewrite/answer.txt; sleep 0.01; done' \
        "grades/rewrite ] && echo 666"
echo "  (the rewriter before the grade: $(left "grades/rewrite ] && echo 666") processes)"
grade rewrite
t_eq "rewriter: the grade as a clean one's" "$BASE_TRUST $BASE pass" "$(trust rewrite) $(report rewrite)"
t_eq "... the rewriter is gone" 0 "$(left "grades/rewrite ] && echo 666")"
t_check "... the sweep killed it" test "$(jq -r .sweep.killed rewrite.grade)" -ge 1

# ---- one that waits for the hidden tests and copies them ----
workspace copier
behind 'while :; do cp -r /var/lib/hangar/grades/copier /tmp/stolen 2>/dev/null && exit 0; sleep 0.005; done' \
        "cp -r /var/lib/hangar/grades/copier"
grade copier
t_eq "copier: the grade as a clean one's" "$BASE_TRUST $BASE pass" "$(trust copier) $(report copier)"
t_check "... it copied nothing" in_agent sh -c '! test -e /tmp/stolen'
t_eq "... it is gone" 0 "$(left "cp -r /var/lib/hangar/grades/copier")"

# ---- one that binds the wrapper's port first ----
workspace binder
# Ports taken before begin: the kernel picks the wrapper's elsewhere. Each
# listener listens again after a connection (busybox's nc has no -k: with
# it every nc had refused its options at once, and nothing was bound).
behind 'for p in $(seq 40000 40040); do (while :; do nc -l -p $p >>/tmp/caught 2>/dev/null; done) & done; wait' \
        "nc -l -p 40040"
# binder_ports: how many of 40000-40040 (9C40-9C68) listen in the pod's network namespace.
binder_ports() {
        in_agent cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
                awk '$4 == "0A" { p = $2; sub(/.*:/, "", p); if (p ~ /^9C([45][0-9A-F]|6[0-8])$/ && !seen[p]++) n++ } END { print n + 0 }'
}
t_wait_for '[ "$(binder_ports)" = 41 ]' 30
t_eq "binder: its 41 ports are the trial's (listening)" 41 "$(binder_ports)"
bind_after() { # after begin: the wrapper's own port, from the agent's side
        # busybox's nc fails either way (a port it bound times out after 1 s
        # without a connection): only its bind error says the port was taken.
        in_agent nc -l -p "$2" -w 1 </dev/null >binder.nc 2>&1
        grep -q 'bind: Address already in use' binder.nc || echo bound >binder.bound
}
BEFORE_GRADE=bind_after grade binder
BEFORE_GRADE=
t_check "binder: the wrapper's port cannot be taken after begin (in use: $(tr '\n' ' ' <binder.nc))" test ! -e binder.bound
t_eq "... the grade as a clean one's" "$BASE_TRUST $BASE pass" "$(trust binder) $(report binder)"
t_check "... nothing reached the trial's listeners" in_agent sh -c '! test -s /tmp/caught'

# ---- one that races the report channel ----
workspace racer
cat >race.sh <<'SH'
while :; do printf '\001\001\000\000\000\000\000\041junk' | nc 127.0.0.1 "$1" >/dev/null 2>&1; done
SH
"$PODRUN" exec --dir "$POD" --stdin sandbox -- sh -c 'cat >/tmp/race.sh' <race.sh
race() { # connects to the wrapper's port as fast as it can: junk, half HELLOs
        behind "sh /tmp/race.sh $2 # racer" "race.sh"
        sleep 1
}
BEFORE_GRADE=race grade racer
BEFORE_GRADE=
t_eq "racer: the grade as a clean one's" "$BASE_TRUST $BASE pass" "$(trust racer) $(report racer)"
t_eq "... the report is the grader's" '{"result":"pass","answer":"42"}' "$(jq -c .report racer.grade)"
t_check "... its connections reached the listener and were dropped ($(jq -r .rejected racer.grade))" \
        test "$(jq -r .rejected racer.grade)" -ge 1
t_eq "... the racer is gone" 0 "$(left "race.sh")"

# ---- a fork storm at the end of the turn ----
# Bounded in population, so that a sweep that failed could not take the
# shared machine down (pid_max is the host's under crun, and the agent's PID
# 1 here, sleep, reaps nothing: what it inherits stays a zombie until the
# pod goes): 200 sleepers, and 16 loops that fork and reap as fast as they
# can (a new pid every iteration, each loop's children its own to reap).
workspace storm
behind 'for i in $(seq 200); do sleep 1000 & done; for i in $(seq 16); do sh -c "while :; do /bin/true; sh -c : ; done # storm-loop" & done; wait' \
        "sleep 1000 " 150
echo "  (the storm before the grade: $(left "sleep 1000 ") sleepers, $(left "storm-loop") loops)"
grade storm
STORM=$(trust storm)
echo "  (the storm's grade: $STORM; sweep: $(jq -c '.sweep | {killed, rounds, elapsed_ms, zombies}' storm.grade))"
case "$STORM" in
"$BASE_TRUST $BASE") t_eq "storm: swept (the grade as a clean one's), nothing of it left" "pass 0 0" \
        "$(report storm) $(left "sleep 1000 ") $(left "storm-loop")" ;;
*) t_check "storm: not swept in time: best_effort with trial-running" \
        sh -c "jq -e '.trust == \"best_effort\" and (.reasons | index(\"trial-running\"))' storm.grade >/dev/null" ;;
esac

# ---- planted interpreter hooks ----
workspace hooks
in_agent sh -c 'set -e; cd /tmp/hooks
        echo "open(\"/tmp/pwned\", \"a\").write(\"conftest \")" >conftest.py
        echo "open(\"/tmp/pwned\", \"a\").write(\"sitecustomize(workspace) \")" >sitecustomize.py
        d=/tmp/agent-home/.local/lib/python3.11/site-packages; mkdir -p $d
        echo "open(\"/tmp/pwned\", \"a\").write(\"sitecustomize(user) \")" >$d/sitecustomize.py
        echo "open(\"/tmp/pwned\", \"a\").write(\"usercustomize \")" >$d/usercustomize.py
        echo "export LD_PRELOAD=/tmp/evil.so" >/tmp/agent-home/.profile
        echo "export LD_PRELOAD=/tmp/evil.so" >/tmp/agent-home/.bashrc
        echo "echo env-file >>/tmp/pwned" >/tmp/agent-home/.shrc
        : >/tmp/evil.so; rm -f /tmp/pwned'
mkdir -p tests-py && cp -r tests/. tests-py/
cat >>tests-py/data/check.py <<'PY'
import importlib.util, os, sys
spec = importlib.util.spec_from_file_location("answer_mod", os.path.join(os.getcwd(), "answer.py"))
m = importlib.util.module_from_spec(spec); spec.loader.exec_module(m)
print("python: answer", m.ANSWER, "path0", sys.path[0], "user_site", __import__("site").ENABLE_USER_SITE)
PY
in_agent sh -c 'echo "ANSWER = 42" >/tmp/hooks/answer.py'
HAVE_PY=no
in_agent python3 -I -c 'print(1)' >/dev/null 2>&1 && HAVE_PY=yes
if [ "$HAVE_PY" = yes ]; then
        HOOK_ARGV='["/bin/sh", "-c", "python3 -I \"$HANGAR_GRADE_TESTS/data/check.py\" && . \"$HANGAR_GRADE_TESTS/run.sh\""]'
else
        HOOK_ARGV=$RUN
        echo "  (no python3 in the pod: the hooks case runs the shell grader only)"
fi
SAVED=tests; mv tests tests-sh; mv tests-py tests
grade hooks '{}' "$HOOK_ARGV" LD_PRELOAD=/tmp/evil.so PYTHONPATH=/tmp/hooks PYTHONSTARTUP=/tmp/hooks/conftest.py \
        BASH_ENV=/tmp/agent-home/.shrc ENV=/tmp/agent-home/.shrc
mv tests tests-py; mv tests-sh "$SAVED"
t_eq "hooks: the grade as a clean one's" "$BASE_TRUST $BASE pass" "$(trust hooks) $(report hooks)"
t_check "... no hook ran (no /tmp/pwned, no PWNED in the output)" \
        sh -c "! grep -q PWNED hooks.out && ! '$PODRUN' exec --dir '$POD' sandbox -- test -e /tmp/pwned"
t_check "... LD_PRELOAD, PYTHONPATH, PYTHONSTARTUP, BASH_ENV, ENV did not reach the grader" \
        sh -c "! grep -qE '^env: (LD_PRELOAD|PYTHONPATH|PYTHONSTARTUP|BASH_ENV|ENV)=' hooks.out"
t_check "... HOME is a fresh directory" grep -q '^env: HOME=/tmp/hangar-grade-' hooks.out
t_check "... PATH is root's directories only" grep -qx 'env: PATH=/usr/local/bin:/usr/bin:/bin' hooks.out
if [ "$HAVE_PY" = yes ]; then
        t_check "... python -I imported the workspace's code by path only: neither it nor the tests on sys.path, no user site" \
                grep -q "python: answer 42 path0 /usr/lib/python3[0-9]*.zip user_site False" hooks.out
fi

# ---- a symlink from the workspace into hangar-home ----
workspace links
in_agent sh -c 'cd /tmp/links && ln -s /var/lib/hangar/grades grades && ln -s /var/lib/hangar hh && ln -s /var/lib/hangar/grades/links/tests/data/expected answer2'
behind 'while :; do echo 0 >/tmp/links/grades/links/tests/data/expected 2>/dev/null; sleep 0.01; done' \
        "tests/data/expected 2>/dev/null"
t_check "the agent cannot write hangar-home (read-only)" in_agent sh -c '! mkdir /var/lib/hangar/grades 2>/dev/null && ! touch /var/lib/hangar/x 2>/dev/null'
grade links
t_eq "links: the grade as a clean one's" "$BASE_TRUST $BASE pass" "$(trust links) $(report links)"
t_eq "... the tests' hash is begin's" "$(jq -r .tests_sha256 links.begin)" "$(jq -r .tests_sha256 links.grade)"
t_check "... the grader read the real tests (want=42)" grep -q "want=42" links.out
t_check "... the tree differs from a link-free workspace's (links hashed as links)" \
        test "$(jq -r .tree links.grade)" != "$(jq -r .tree clean.grade)"

# ---- a grader that times out ----
workspace slow
grade slow '{"timeout_s": 2}' '["/bin/sh", "-c", "sleep 60"]'
t_eq "timeout: 124, the grader side's end timeout, the baseline" "124 timeout $BASE_TRUST $BASE" \
        "$(jq -r '"\(.exit_status) \(.grader_side.end)"' slow.grade) $(trust slow)"
t_eq "... the grader's sleep is gone" 0 "$(left "sleep 60")"

# ---- a grade while a turn runs ----
spec tr ask 'sleep 30' >tr.spec
"$PODRUN" exec --dir "$POD" --stdin hangar-driver -- hangar-driver ctl start --spec - <tr.spec >tr.start
grade_spec tr2 tests /tmp/clean 20 "$RUN" >tr2.spec
t_check "a grade is refused while a turn is in flight (turn-running)" \
        sh -c "'$PODRUN' exec --dir '$POD' --stdin hangar-driver -- hangar-driver ctl grade begin --spec - <tr2.spec 2>&1 | grep -q turn-running"

# ---- a container beside the agent's (a pod of its own) ----
# A user's sidecar that runs as the agent's uid, in its own PID namespace
# (no sweep of the agent's container sees it), sharing the workspace's
# volume and reading hangar-home (read-only, as the spec check allows): it
# waits for the hidden tests, copies them and rewrites the answer while the
# grader runs. The split holds (split-active: nothing of the driver is
# reachable), but the grade cannot be isolated: hangar's spec report at
# finish names the container, and the grade is other-containers.
down
POD=$T_TMP/pod2
# shellcheck disable=SC2034 # turn_pod_up's
POD_EDIT='.spec.volumes += [{name: "work", emptyDir: {}}]
| .spec.containers |= map(if .name == "sandbox" then .volumeMounts += [{name: "work", mountPath: "/work"}] else . end)
| .spec.containers += [{name: "helper", image: "debian:12",
    command: ["/bin/sh", "-c", "until [ -e /work/grading ] && [ -e /var/lib/hangar/grades/beside/tests/run.sh ]; do sleep 0.01; done; cp -r /var/lib/hangar/grades/beside/tests /work/stolen.tmp; echo 666 >/work/beside/answer.txt; mv /work/stolen.tmp /work/stolen; exec sleep 100000"],
    securityContext: {runAsUser: 1000, runAsGroup: 1000, allowPrivilegeEscalation: false, capabilities: {drop: ["ALL"]}},
    volumeMounts: [{name: "work", mountPath: "/work"}, {name: "hangar-home", mountPath: "/var/lib/hangar", readOnly: true}]}]'
turn_pod_up || t_end
t_eq "the pod with a helper: the spec passes, and names it beside the agent's" 'pass ["helper"]' \
        "$(jq -c -r '"\(.result) \(.other_containers)"' spec.json)"
in_agent sh -c 'mkdir -p /work/beside && echo 42 >/work/beside/answer.txt'
# The grader says it runs (outside the workspace: the tree hashed before it
# started stays as it was) and waits (bounded) for the helper's copy, so
# that what the helper did is there to see, whatever the machine's load. (A
# helper that rewrites the workspace while the grader side hashes it fails
# the grade instead: "changed while hashing", grader-incomplete.)
WAIT_RUN='["/bin/sh", "-c", ": >/work/grading; i=0; while [ ! -e /work/stolen ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done; . \"$HANGAR_GRADE_TESTS/run.sh\""]'
GRADE_CWD=/work/beside grade beside '{}' "$WAIT_RUN"
t_eq "beside: best_effort, other-containers, the helper named" \
        "best_effort $(jq -c '. + ["other-containers"]' <<<"$BASE") [\"helper\"]" \
        "$(trust beside) $(jq -c .other_containers beside.grade)"
t_eq "... what the sweep could not stop: the helper rewrote the answer the grader read" \
        '{"result":"fail","answer":"666"}' "$(jq -c .report beside.grade)"
t_check "... and copied the hidden tests" in_agent test -e /work/stolen/run.sh
t_check "... and still runs (its own PID namespace)" \
        "$PODRUN" exec --dir "$POD" helper -- sh -c 'for d in /proc/[0-9]*; do tr "\0" " " <$d/cmdline; echo; done 2>/dev/null | grep -q "^sleep 100000"'
t_end
