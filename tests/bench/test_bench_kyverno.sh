#!/usr/bin/env bash
# bench/kyverno.sh in its short mode (2 s per point instead of 10): the webhook
# against Kyverno with the policy that gives a sandbox pod the webhook's
# shape, and nginx (the ceiling), on a control plane of the bench's own.
# Its correctness checks must pass: the pod stored through each server and
# each server's patch applied to the benchmark's review give the same pod
# (no "DIFFERENT"), Kyverno's answer allowed. Then every row's figures
# numbers (req/s, p50, p99, CPU per request of all three), the ratios
# computed, peak RSS. Nothing about speed is asserted.
# usage: test_bench_kyverno.sh HANGAR_WEBHOOK K8S_BIN KYVERNO_BIN
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
. "$HERE/benchlib.sh"
t_begin "bench/kyverno.sh, short: the webhook, Kyverno and nginx measured on the same pod, every figure there"
WEBHOOK=${1:-} K8S_BIN=${2:-} KYVERNO_BIN=${3:-}
for f in "$WEBHOOK" "$K8S_BIN/kube-apiserver" "$K8S_BIN/kubectl" "$KYVERNO_BIN/kyverno"; do
	[ -x "$f" ] || { t_fail "missing ${f:-(a binary)} (tests/bench/CMakeLists.txt: HANGAR_TOOLS_BIN, HANGAR_KYVERNO_BIN)"; t_end; }
done
F=$BENCH_F
HANGAR_K8S_BIN=$K8S_BIN HANGAR_KYVERNO_BIN=$KYVERNO_BIN bench_run kyverno bash "$ROOT/bench/kyverno.sh" "$WEBHOOK" 2
bench_row "the pods stored through the API server: the same" "^stored pods \(through the API server\): same pod otherwise$"
bench_row "the benchmark's answers applied: the same pod" \
	"^the benchmark's answers \(patches applied with kubectl\): same pod otherwise$"
bench_absent "no difference reported between the two servers' pods" "DIFFERENT"
bench_row "both patches" "^patches: hangar-webhook $F operations, Kyverno $F \(at /[^ ]+\)$"
bench_row "Kyverno's answer: allowed, a JSONPatch" '^Kyverno.s answer otherwise: \{.*"allowed":true.*\}$'
t_check "Kyverno's answer: a JSONPatch" grep -qE '^Kyverno.s answer otherwise: .*"patchType":"JSONPatch"' "$BENCH_OUT"
bench_row "the header" "^hangar-webhook .* vs Kyverno [^ ]* ?vs nginx, HTTPS keep-alive, 2s per run, $F CPUs, load $F $F $F, body $F B, answers $F B \(hangar, nginx\) / $F B \(Kyverno\)$"
for c in 1 8 32; do
	bench_row "c=$c: req/s, p50, p99, CPU per request of the three, and ratios" \
		"^$c $F $F $F $F $F $F $F $F $F $F $F $F $F $F $F $F $F$" || continue
	r=("${ROW[@]}")
	bench_ratio "c=$c req/s hangar/nginx" "${r[0]}" "${r[2]}" "${r[3]}"
	bench_ratio "c=$c req/s Kyverno/hangar" "${r[1]}" "${r[0]}" "${r[4]}"
	bench_ratio "c=$c p50 Kyverno/hangar" "${r[6]}" "${r[5]}" "${r[8]}"
	bench_ratio "c=$c p99 Kyverno/hangar" "${r[10]}" "${r[9]}" "${r[12]}"
	bench_ratio "c=$c CPU Kyverno/hangar" "${r[14]}" "${r[13]}" "${r[16]}"
done
bench_row "the CPU column's unit" "^\(cpu: the server's user\+system CPU per answered request, us; $F ticks/s\)$"
bench_row "peak RSS of the three" \
	"^peak RSS: hangar-webhook $F MiB \($F KiB\), Kyverno $F MiB \($F KiB; $F MiB before the timed runs\), nginx \(all processes\) $F MiB \($F KiB\); Kyverno/hangar $F$" &&
	bench_ratio "RSS Kyverno/hangar" "${ROW[3]}" "${ROW[1]}" "${ROW[7]}"
bench_row "Kyverno's log" "^Kyverno log: $F lines, $F error lines$"
t_end
