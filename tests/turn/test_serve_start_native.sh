#!/usr/bin/env bash
# hangar-driver serve's start on the host, as uid 1001: a daemon that cannot
# run says why on stderr and in its termination message (the file the
# kubelet reads, HANGAR_TERMINATION_LOG here), so a pod built wrong shows the
# reason on hangar-driver's container status: hangar-ctl missing, hangar-home
# not a directory, a volume the driver's uid cannot write, a configuration
# refused. A daemon that starts leaves the message empty, and no termination
# file is made where there is none (outside a pod). Quick.
# usage: test_serve_start_native.sh DRIVER RELAY
DRIVER=$(realpath "$1")
RELAY=$(realpath "$2")
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/hostlib.sh"
host_unshared "$0" "$DRIVER" "$RELAY"
. "$HERE/../lib/testlib.sh"
t_begin "the driver's start on the host: why serve cannot run, in its termination message"
host_turn_up "$DRIVER" "$RELAY"

# serve_fails NAME ENV...: serve as uid 1001 with ENV, a fresh termination
# file the driver may write; its exit status, stderr and message in NAME.*.
serve_fails() {
	local name=$1
	shift
	install -m 0666 /dev/null "$name.term"
	env HANGAR_TERMINATION_LOG="$T_TMP/$name.term" "$@" timeout 20 \
		setpriv --reuid 1001 --regid 1001 --clear-groups -- "$DRIVER" serve >"$name.out" 2>"$name.err"
	echo $? >"$name.rc"
}
said() { # NAME TEXT: in the termination message and on stderr
	grep -qF -- "$2" "$1.term" && grep -qF -- "$2" "$1.err"
}

serve_fails noctl HANGAR_CTL_PATH="$T_TMP/nowhere"
t_eq "hangar-ctl missing: serve exits 1" 1 "$(cat noctl.rc)"
t_check "... the message names it and why" \
	said noctl "hangar-driver serve: hangar-ctl ($T_TMP/nowhere): No such file or directory: is the volume mounted into hangar-driver?"
t_eq "... one line" 1 "$(wc -l <noctl.term)"

touch notadir
serve_fails homefile HANGAR_HOME_PATH="$T_TMP/notadir"
t_eq "hangar-home a file: serve exits 1" 1 "$(cat homefile.rc)"
t_check "... the message says it is not a directory" said homefile "hangar-home ($T_TMP/notadir) is not a directory"

mkdir -m 0755 rootdir
serve_fails wronguid HANGAR_HOME_PATH="$T_TMP/rootdir"
t_eq "hangar-home not writable by the driver's uid: serve exits 1" 1 "$(cat wronguid.rc)"
t_check "... the message gives the uid, the owner and the mode" \
	said wronguid "hangar-home ($T_TMP/rootdir) is not writable by uid 1001 gid 1001 (it is 0:0, mode 755)"

serve_fails badcfg HANGAR_DRIVER_CLONE_SAFETY=maybe
t_eq "a configuration refused: serve exits 2" 2 "$(cat badcfg.rc)"
t_check "... the message is the configuration's error" said badcfg "auto or required"

# Outside a pod: no termination file, none made.
env HANGAR_TERMINATION_LOG="$T_TMP/absent.term" HANGAR_CTL_PATH="$T_TMP/nowhere" \
	setpriv --reuid 1001 --regid 1001 --clear-groups -- "$DRIVER" serve >absent.out 2>absent.err
t_check "no termination file: none is created, stderr still says why" \
	sh -c "[ ! -e absent.term ] && grep -q 'hangar-ctl' absent.err"

# A daemon that starts leaves the message empty.
install -m 0666 /dev/null ok.term
host_serve ok HANGAR_TERMINATION_LOG="$T_TMP/ok.term"
t_eq "a daemon that starts answers ping" true "$(jq -r .ok ok.ping 2>/dev/null)"
t_eq "... and writes no termination message" 0 "$(stat -c %s ok.term)"
t_end
