#!/usr/bin/env bash
# images_run: each image unpacked (umoci unpack) and run. In a chroot as the
# image's user: every binary runs and finds all its libraries; the webhook
# image has no shell or package manager; the sandbox has the tools, users and
# package it promises. Under crun with the bundle umoci made (the image's
# config: user, entrypoint, env): pause holds until SIGTERM and exits 0, the
# sandbox starts a tmux session, the webhook answers `version`. pause, as a
# pid namespace's init, reaps an orphan.
# shellcheck disable=SC2016 # single-quoted bash -c scripts take their arguments positionally
OUT=$2
# shellcheck source=tests/lib/testlib.sh
. "$(dirname "$0")/../lib/testlib.sh"
# shellcheck source=tests/images/imagelib.sh
. "$(dirname "$0")/imagelib.sh"
im_need umoci jq crun unshare nsenter
im_inputs

webhook_ref=$WEBHOOK_REF_PREFIX:$VERSION
for ref in "$webhook_ref" "$SANDBOX_REF" "$PAUSE_REF"; do
        name=${ref##*/}
        name=${name%%:*}
        archive=$(im_archive "$OUT/a" "$ref")
        [ -n "$archive" ] || { echo "no archive for $ref in $OUT/a/images.list"; exit 1; }
        im_unpack "$archive" "$ref" "$T_TMP/$name" || { echo "umoci unpack $archive failed"; exit 1; }
done
W=$T_TMP/hangar-webhook/rootfs S=$T_TMP/hangar-sandbox/rootfs P=$T_TMP/pause/rootfs

# no_missing_libs ROOT BINARY: the rootfs's own dynamic loader resolves every
# library the binary needs.
# shellcheck disable=SC2317 # called through t_check
no_missing_libs() {
        local out
        out=$(chroot "$1" /lib64/ld-linux-x86-64.so.2 --list "$2" 2>&1) || { echo "$out"; return 1; }
        ! grep -q 'not found' <<<"$out" || { echo "$out" | grep 'not found'; return 1; }
}

t_begin images_run

echo "-- webhook"
t_eq "hangar-webhook version as 65532" "hangar-webhook $VERSION" \
        "$(chroot --userspec=65532:65532 "$W" /usr/bin/hangar-webhook version 2>&1)"
t_check "hangar-webhook config (defaults) as 65532" \
        im_quiet chroot --userspec=65532:65532 "$W" /usr/bin/hangar-webhook config
t_check "hangar-webhook finds all its libraries" no_missing_libs "$W" /usr/bin/hangar-webhook
for f in /bin/sh /usr/bin/sh /bin/bash /usr/bin/apt-get /usr/bin/dpkg /sbin/ldconfig; do
        t_check "no $f in the webhook image" test ! -e "$W$f" -a ! -L "$W$f"
done
t_check "nonroot user 65532 in /etc/passwd" grep -q '^nonroot:x:65532:65532:' "$W/etc/passwd"
size=$(du -sm "$W" | cut -f1)
t_check "webhook rootfs is small (${size} MiB < 40)" test "$size" -lt 40
t_check "every library package has its status.d entry" \
        test "$(find "$W/var/lib/dpkg/status.d" -type f | wc -l)" -eq "$(wc -l <"$OUT/a/hangar-webhook.packages")"
t_eq "under crun: the image's user runs the entrypoint" "hangar-webhook $VERSION uid=65532" \
        "$(in_crun "$T_TMP/hangar-webhook" /usr/bin/hangar-webhook version 2>&1 | tr '\n' ' ')uid=$(jq -r .process.user.uid "$T_TMP/hangar-webhook/config.json")"

echo "-- sandbox"
as_agent() { chroot --userspec=1000:1000 "$S" /usr/bin/env -i HOME=/home/agent PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin TERM=xterm "$@"; }
# No /dev/null in a bare chroot: the output is discarded outside it.
# shellcheck disable=SC2317 # called through t_check
on_path() { as_agent /bin/sh -c "command -v $1" >/dev/null; }
for b in hangar-probe hangar-driver hangar-relay hangar-grade bash busybox python3 tmux sh ls; do
        t_check "$b on the agent's PATH" on_path "$b"
done
t_eq "hangar-probe version" "hangar-probe $VERSION" "$(as_agent hangar-probe version 2>&1)"
t_eq "hangar-driver version" "hangar-driver $VERSION" "$(as_agent hangar-driver version 2>&1)"
t_check "hangar-relay --help" im_quiet as_agent hangar-relay --help
for b in hangar-probe hangar-driver hangar-relay hangar-grade; do
        t_check "$b finds all its libraries" no_missing_libs "$S" "/usr/bin/$b"
done
t_check "python3 with curses and a terminfo entry" \
        as_agent python3 -c 'import curses; curses.setupterm("xterm", 1)'
t_check "tmux runs" as_agent tmux -V
t_check "busybox runs" as_agent busybox true
t_eq "uid 1000 is agent" agent "$(as_agent id -un)"
t_eq "uid 1001 is hangar-driver" hangar-driver "$(awk -F: '$3 == 1001 { print $1 }' "$S/etc/passwd")"
t_eq "agent's home is its own" "1000:1000" "$(stat -c %u:%g "$S/home/agent")"
t_eq "hangar-sidecar installed by dpkg" "install ok installed $VERSION" \
        "$(chroot "$S" dpkg-query -W -f='${Status} ${Version}' hangar-sidecar 2>&1)"
out=$(in_crun "$T_TMP/hangar-sandbox" bash -c \
        'tmux -S /tmp/t new-session -d -s probe "sleep 5" && tmux -S /tmp/t list-sessions -F "#{session_name}" && tmux -S /tmp/t kill-server && id -u && hangar-probe version' 2>&1)
t_eq "under crun as the image's user: tmux session, hangar-probe" "probe 1000 hangar-probe $VERSION" "$(tr '\n' ' ' <<<"$out" | sed 's/ $//')"
# The same under gVisor (the sandbox pods' runtime), when runsc is here.
if command -v runsc >/dev/null 2>&1; then
        id=hangar-img-runsc-$$
        out=$(timeout 120 runsc --root "$T_TMP/runsc" --network=none --platform=ptrace run \
                --bundle "$T_TMP/hangar-sandbox" "$id" </dev/null 2>&1)
        t_eq "under runsc as the image's user: tmux session, hangar-probe" "probe 1000 hangar-probe $VERSION" \
                "$(tr '\n' ' ' <<<"$out" | sed 's/ $//')"
        runsc --root "$T_TMP/runsc" delete -force "$id" >/dev/null 2>&1
else
        echo "  (runsc not installed: the sandbox under gVisor not checked)"
fi

echo "-- pause"
t_check "pause is static" bash -c '! file "$1" | grep -q dynamic' _ "$P/pause"
t_check "pause -v" chroot "$P" /pause -v
# As the init of a new pid namespace: an orphan reparented to it is reaped.
unshare --pid --fork chroot "$P" /pause &
ush=$!
t_cleanup_pid "$ush"
t_wait_for "pgrep -P $ush -x pause >/dev/null" 10
ppid=$(pgrep -P "$ush" -x pause)
if [ -n "$ppid" ]; then
        # The shell exits at once; its sleep is orphaned to pause (pid 1 there).
        nsenter --target "$ppid" --pid -- /bin/sh -c 'sleep 1 & exit 0'
        sleep 0.3
        t_check "the orphan is pause's child" im_quiet pgrep -P "$ppid" -x sleep
        sleep 2
        t_eq "no zombie under pause after the orphan exits" "" \
                "$(ps -o stat= --ppid "$ppid" | sed -n '/Z/p')"
        kill -TERM "$ppid"
        wait "$ush"
        t_eq "pause exits 0 on SIGTERM as pid 1" 0 "$?"
else
        t_fail "pause did not start in its pid namespace"
fi
# Under crun, from the image's own config (entrypoint /pause, user 65535).
bundle=$T_TMP/pause
jq '.process.terminal = false | .root.readonly = true' <"$bundle/config.json" >"$bundle/c.json" && mv "$bundle/c.json" "$bundle/config.json"
id=hangar-img-pause-$$
crun_ run --bundle "$bundle" "$id" </dev/null &
run=$!
t_cleanup_pid "$run"
t_check "pause container running" t_wait_for "[ \"\$(crun_ state $id 2>/dev/null | jq -r .status)\" = running ]" 10
t_eq "pause runs as 65535" 65535 "$(stat -c %u "/proc/$(crun_ state "$id" | jq -r .pid)" 2>/dev/null)"
crun_ kill "$id" TERM
wait "$run"
t_eq "pause container exits 0 on SIGTERM" 0 "$?"
crun_ delete -f "$id" >/dev/null 2>&1
t_end
