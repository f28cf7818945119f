#!/usr/bin/env bash
# A corpus of real-world pod shapes (cases/*.yaml: Pods, and the pod
# templates of Deployments, StatefulSets, Jobs and CronJobs as their
# controllers create them) through the webhook's own answer and a real
# kube-apiserver. Each case file says in comments at its top what a cluster
# admin expects:
#   # expect: injected | skipped REASON | denied REASON MESSAGE-PART
#   # config: NAME       (config-NAME.yaml here; default: config-default.yaml)
#   # probe: pass | fail CODE   (`hangar-probe spec` of the injected pod; default pass)
# For every case, both as written (YAML read as is: [] and null kept) and as
# the API server hands it to admission (its own decoding and defaulting, from
# a server-side dry run without the webhook):
#   1. `hangar-webhook review` answers a CREATE of it (namespace only in the
#      review) and the decision and reason must be the expected ones;
#   2. the patch is applied with `kubectl patch --local --type=json` (the API
#      server's JSON Patch library);
#   3. the API server must accept the patched pod (`create --dry-run=server`,
#      in a namespace enforcing the restricted Pod Security level when the
#      case's own pod meets it);
#   4. the pod minus exactly what the webhook adds must be the pod as it came,
#      and the sidecar must be where and as docs/webhook.md says;
#   5. `hangar-probe spec` of the injected pod gives the expected result;
#   6. reviewing the patched pod again (the reinvocation) changes nothing;
#   7. `hangar-webhook inject -f` of the manifest prints the same pod (or
#      template), and fails with one line for a deny.
# The API server's answers for many pods come from one kubectl (stored_in:
# a kubectl start-up is about 0.12 s of CPU), a refused pod asked again
# alone for its message; the facts of an answer or a patched pod from one
# jq each (docs/ci.md, session 12: 127 CPU-s before, about 50 after).
# Then the webhook is registered with the API server (URL mode) and every
# injected case is created through it in namespaces with the policies
# cluster admins set (LimitRanges with defaults, maximums, ratios and
# ephemeral-storage, ResourceQuotas on limits; LimitRanger adds its defaults
# to hangar-driver on the API server's second round, as AlwaysPullImages
# sets its imagePullPolicy), wherever the case's own pod is admitted without
# the webhook: stored injected, and passing the spec check.
#   # admitted-in: NAME...   (those namespaces must admit the case's own pod)
#   # qos: CLASS             (the QoS class of the pod stored injected)
# usage: run_manifests.sh HANGAR_WEBHOOK HANGAR_PROBE TOOLS_BIN
WEBHOOK=$(realpath "$1")
PROBE=$(realpath "$2")
TOOLS_BIN=${3:-}
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
. "$HERE/../lib/testlib.sh"
t_begin "real-world pod shapes through the webhook and a real API server"
if [ -z "$TOOLS_BIN" ] || [ ! -x "$TOOLS_BIN/kubectl" ]; then
        t_fail "kubectl not found in '$TOOLS_BIN': configure with -DHANGAR_TOOLS_BIN"
        t_end
fi
TOOLS_BIN=$(realpath "$TOOLS_BIN")
cd "$T_TMP" || exit 1
export PATH=$TOOLS_BIN:$PATH

# AlwaysPullImages on, as multi-tenant clusters run it: on the API server's
# second round it sets every container's imagePullPolicy, hangar-driver's too.
"$ROOT/scripts/control-plane.sh" start "$T_TMP/cp" --apiserver-arg --enable-admission-plugins=AlwaysPullImages \
        >cp.log 2>&1 || { cat cp.log; exit 1; }
trap 't_main_shell || exit; "$ROOT/scripts/control-plane.sh" stop "$T_TMP/cp" >>cp.log 2>&1; t_cleanup' EXIT
export KUBECONFIG=$T_TMP/cp/kubeconfig
kubectl create namespace zoo >/dev/null
kubectl create namespace strict >/dev/null
kubectl label namespace strict pod-security.kubernetes.io/enforce=restricted >/dev/null
# gVisor's RuntimeClass with a pod overhead, as GKE Sandbox's has: the
# RuntimeClass plugin sets spec.overhead before the webhook and checks it on
# the second round; ResourceQuota charges it.
printf 'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: %s}\nhandler: %s\noverhead: {podFixed: {cpu: 100m, memory: 64Mi}}\n' gvisor runsc |
        kubectl create -f - >/dev/null
printf 'apiVersion: node.k8s.io/v1\nkind: RuntimeClass\nmetadata: {name: %s}\nhandler: %s\n' kata kata |
        kubectl create -f - >/dev/null

# Every case's header directives, read once (the first "# KEY: VALUE" of
# each KEY, as `sed -n "s/^# KEY: *//p" | head -n 1` would give it).
declare -A DIRECTIVES
awk 'FNR == 1 { n = FILENAME; sub(/.*\//, "", n); sub(/\.yaml$/, "", n) }
     /^# [^:]+:/ { k = substr($0, 3); i = index(k, ":"); v = substr(k, i + 1); k = substr(k, 1, i - 1)
                   sub(/^ */, "", v); if (!((n, k) in seen)) { seen[n, k] = 1; print n "\t" k "\t" v } }' \
        "$HERE"/cases/*.yaml >directives.tsv || { t_fail "reading the cases' directives"; t_end; }
while IFS=$'\t' read -r n k v; do DIRECTIVES[$n/$k]=$v; done <directives.tsv
# The header directive $2 of case file $1 (empty if absent).
directive() {
        local n=${1##*/}
        printf '%s\n' "${DIRECTIVES[${n%.yaml}/$2]:-}"
}

# stored_in NS FILE...: a server-side dry-run create of each FILE's pod (or
# workload) in NS, one kubectl for them all (a kubectl start-up is about
# 0.12 s of CPU: a kubectl per pod was most of this suite's CPU). Each one
# the API server stored is written to FILE.NS.stored; a refused one leaves
# none, and the caller asks for it alone to show the API server's message.
# The answers are told apart by name (generateName for a template's pod);
# a name twice in the batch, or answers that do not add up (stored plus
# refused), and those pods are sent one at a time.
stored_in() {
        local ns=$1 f id i n_err
        shift
        [ $# -gt 0 ] || return 0
        local -A file_of count
        local ids one=() batch=()
        rm -f "${@/%/.$ns.stored}"
        ids=$(jq -r '.metadata.generateName // .metadata.name // ""' "$@" 2>/dev/null) || ids=""
        mapfile -t ids <<<"$ids"
        if [ "${#ids[@]}" != $# ]; then
                one=("$@")
        else
                for id in "${ids[@]}"; do count[$id]=$((${count[$id]:-0} + 1)); done
                i=0
                for f in "$@"; do
                        id=${ids[i]}
                        i=$((i + 1))
                        if [ -n "$id" ] && [ "${count[$id]}" = 1 ]; then
                                file_of[$id]=$f
                                batch+=("$f")
                        else
                                one+=("$f")
                        fi
                done
        fi
        if [ "${#batch[@]}" -gt 0 ]; then
                jq -s '{apiVersion: "v1", kind: "List", items: .}' "${batch[@]}" >"stored.$ns.json"
                kubectl create -n "$ns" --dry-run=server -o json -f "stored.$ns.json" >"stored.$ns.out" 2>"stored.$ns.err"
                n_err=$(grep -c '^Error from server' "stored.$ns.err")
                if jq -r '(if .kind == "List" then .items[] else . end) | (.metadata.generateName // .metadata.name), tojson' \
                        "stored.$ns.out" >"stored.$ns.lines" 2>/dev/null; then
                        while IFS= read -r id && IFS= read -r pod; do
                                [ -n "${file_of[$id]:-}" ] || continue
                                printf '%s\n' "$pod" >"${file_of[$id]}.$ns.stored"
                                unset "file_of[$id]"
                        done <"stored.$ns.lines"
                fi
                # Every pod not stored must have been refused, one error each.
                if [ "${#file_of[@]}" != "$n_err" ]; then
                        for f in "${file_of[@]}"; do one+=("$f"); done
                fi
        fi
        for f in "${one[@]+"${one[@]}"}"; do
                kubectl create -n "$ns" --dry-run=server -o json -f "$f" >"$f.$ns.stored" 2>/dev/null || rm -f "$f.$ns.stored"
        done
}

review_of() { # POD_JSON UID
        jq -c --arg uid "$2" '{apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview",
                request: {uid: $uid, kind: {group: "", version: "v1", kind: "Pod"},
                          resource: {group: "", version: "v1", resource: "pods"},
                          operation: "CREATE", namespace: "zoo", dryRun: false, object: .}}' "$1"
}

# The pod a manifest stands for: a Pod as it is; a workload's template as its
# controller creates it (the template's metadata and spec, a generateName,
# no namespace: the review carries it).
# shellcheck disable=SC2016 # jq's variables, not the shell's
TEMPLATE_OF='
        def tmpl: if .kind == "CronJob" then .spec.jobTemplate.spec.template else .spec.template end;
        if .kind == "Pod" then .
        else (tmpl) as $t | {apiVersion: "v1", kind: "Pod",
                metadata: (($t.metadata // {}) + {generateName: (.metadata.name + "-")}),
                spec: $t.spec}
        end'

# What the webhook adds, taken away again, and the emptiness the API server
# does not tell from absence ([], {}, null) made absence.
# shellcheck disable=SC2016 # jq's variables, not the shell's
STRIP='
        def token: .mountPath == "/var/run/secrets/kubernetes.io/serviceaccount"
                or (.mountPath | startswith("/var/run/secrets/kubernetes.io/serviceaccount/"))
                or (.name | startswith("kube-api-access-"));
        def prune: with_entries(select(.value != null and .value != [] and .value != {}));
        .metadata.annotations |= ((. // {}) | with_entries(select(.key
                | (startswith("hangar.dev/driver-sidecar") or startswith("dev.gvisor.spec.mount.hangar-")) | not)))
        # the default container for kubectl, which the webhook sets to the agent
        # where the pod names none: dropped on both sides when it names the agent
        | (.metadata.annotations["hangar.dev/agent-container"] // "sandbox") as $agent
        | .metadata.annotations |= with_entries(select(.key != "kubectl.kubernetes.io/default-container"
                or .value != $agent))
        | .metadata |= prune
        | .spec.containers |= map(select(.name != "hangar-driver")
                | .volumeMounts |= ((. // []) | map(select(.name != "hangar-home")))
                | if $remove and .name == "sandbox" then .volumeMounts |= map(select(token | not)) else . end
                | prune)
        | .spec.initContainers |= ((. // []) | map(select(.name != "hangar-driver")))
        | .spec.volumes |= ((. // []) | map(select(.name != "hangar-home" and .name != "hangar-ctl")))
        | del(.spec.shareProcessNamespace, .spec.resources)
        | .spec |= prune'

# `hangar-probe spec`'s report as "pass" or "fail CODE,CODE" (the failed checks).
PROBE_RESULT='if .result == "pass" then "pass"
        else "fail " + ([.checks[]? | select(.status != "pass") | .code] | unique | join(",")) end'

# docs/webhook.md: both volumes inside the sandbox, shared at pod level,
# hangar-ctl a tmpfs of volumes.ctl.sizeLimit (64Mi).
GVISOR_WANT=$(jq -cS -n '{
        "dev.gvisor.spec.mount.hangar-home.share": "pod", "dev.gvisor.spec.mount.hangar-home.type": "bind",
        "dev.gvisor.spec.mount.hangar-home.options": "rw,rprivate",
        "dev.gvisor.spec.mount.hangar-ctl.share": "pod", "dev.gvisor.spec.mount.hangar-ctl.type": "tmpfs",
        "dev.gvisor.spec.mount.hangar-ctl.options": "rw,rprivate,size=67108864"}')

# What each configuration turns on (a grep per variant before).
declare -A REMOVES NATIVE
for c in "$HERE"/config-*.yaml; do
        REMOVES[$c]=false
        NATIVE[$c]=containers
        grep -q 'agentServiceAccountToken: remove' "$c" && REMOVES[$c]=true
        grep -q 'nativeSidecar: true' "$c" && NATIVE[$c]=initContainers
done

# The review's answer as shell assignments: got_decision, got_reason,
# allowed, message (as `jq -r` prints them) and patch (decoded; empty if none).
# shellcheck disable=SC2016 # jq's program
ANSWER_FIELDS='def raw: if type == "string" then . else tojson end;
        @sh "got_decision=\(.response.auditAnnotations.decision // "none" | raw)",
        @sh "got_reason=\(.response.auditAnnotations.reason // "none" | raw)",
        @sh "allowed=\(.response.allowed | raw)",
        @sh "message=\(.response.status.message | raw)",
        @sh "patch=\(.response.patch // "" | @base64d)"'

# prepare_variant NAME VARIANT POD_JSON CONFIG EXPECT: the work of a case's
# variant that needs the webhook and kubectl's JSON Patch, before the API
# server's batches: the review ($w.review.rc), its answer ($w.fields) and,
# where check_variant goes on to the patch, the patched pod ($w.patch.rc).
prepare_variant() {
        local name=$1 variant=$2 pod=$3 config=$4 expect=$5
        local w="$T_TMP/$name.$variant" want_reason want_decision want_text rc=0
        local got_decision got_reason allowed message patch
        read -r want_decision want_reason want_text <<<"$expect"
        [ -n "$want_reason" ] || want_reason=$want_decision
        review_of "$pod" "$name-$variant" >"$w.review.json"
        "$WEBHOOK" review --config "$config" <"$w.review.json" >"$w.answer.json" 2>"$w.err" || rc=$?
        echo "$rc" >"$w.review.rc"
        [ "$rc" = 0 ] || return 0
        jq -r "$ANSWER_FIELDS" "$w.answer.json" >"$w.fields" 2>/dev/null || : >"$w.fields"
        # shellcheck disable=SC1090 # the answer's fields, just written
        . "$w.fields"
        [ "$want_decision" != denied ] && [ "${got_decision:-}" = "$want_decision" ] || return 0
        case $want_reason in not-selected | already-injected) return 0 ;; esac
        [ -n "${patch:-}" ] || return 0
        rc=0
        kubectl patch --local -f "$pod" --type=json -p "$patch" -o json >"$w.patched.json" 2>"$w.patch.err" || rc=$?
        echo "$rc" >"$w.patch.rc"
        [ "$rc" = 0 ] && PATCHED+=("$w.patched.json") && VARIANT_PODS+=("$pod")
        return 0
}

# The patched pod's facts check_variant compares, as shell assignments (one
# jq instead of one per fact): strip_same (the pod minus what the webhook
# adds is the pod as it came: STRIP below, both sides), annotated,
# sandbox_image, driver_image (the last of $list), last_mount and gvisor
# (compact, keys sorted, as `jq -cS` prints them), share, gvisor_count and
# runtime (the case's own pod's runtimeClassName). A fact jq cannot compute
# is empty, as its own jq's output was.
# shellcheck disable=SC2016 # jq's variables, not the shell's
FACTS='def raw: if type == "string" then . else tojson end;
        def sorted: walk(if type == "object" then to_entries | sort_by(.key) | from_entries else . end);
        def fact(f): try ([f | raw] | join("\n")) catch "";
        def strip: STRIP;
        ($pod[0]) as $p |
        @sh "strip_same=\(fact(($p | strip) == strip))",
        @sh "annotated=\(fact(.metadata.annotations["hangar.dev/driver-sidecar-reason"]))",
        @sh "sandbox_image=\(fact(.spec.containers[] | select(.name == "sandbox") | .image))",
        @sh "driver_image=\(fact(.spec[$l][-1] | select(.name == "hangar-driver") | .image))",
        @sh "last_mount=\(fact(.spec.containers[] | select(.name == "sandbox") | .volumeMounts[-1] | sorted | tojson))",
        @sh "share=\(fact(.spec.shareProcessNamespace))",
        @sh "gvisor_count=\(fact([.metadata.annotations | keys[] | select(startswith("dev.gvisor.spec.mount.hangar-"))] | length))",
        @sh "gvisor=\(fact(.metadata.annotations | with_entries(select(.key | startswith("dev.gvisor.spec.mount.hangar-"))) | sorted | tojson))",
        @sh "runtime=\(fact($p.spec.runtimeClassName // ""))"'

# check_variant NAME VARIANT POD_JSON CONFIG EXPECT PROBE_EXPECT (after
# prepare_variant and the batches)
check_variant() {
        local name=$1 variant=$2 pod=$3 config=$4 expect=$5 probe_want=$6
        local tag="$name ($variant)" w="$T_TMP/$name.$variant" want_reason want_decision want_text
        read -r want_decision want_reason want_text <<<"$expect"
        [ -n "$want_reason" ] || want_reason=$want_decision # "injected" is its own reason
        local remove=${REMOVES[$config]:-false}
        if [ "$(<"$w.review.rc")" != 0 ]; then
                t_fail "$tag: review failed: $(head -c 300 "$w.err")"
                return
        fi
        local got_reason=none got_decision=none allowed="" message="" patch=""
        # shellcheck disable=SC1090 # prepare_variant's answer fields
        . "$w.fields"
        t_eq "$tag: decision $want_decision ($want_reason)" "$want_decision $want_reason" "$got_decision $got_reason"
        if [ "$want_decision" = denied ]; then
                t_eq "$tag: not allowed" false "$allowed"
                t_check "$tag: the deny says why (${message:0:200})" \
                        grep -qF -- "$want_text" <<<"$message"
                t_eq "$tag: no patch with a deny" none "${patch:-none}"
                return
        fi
        [ "$got_decision" = "$want_decision" ] || return
        case $want_reason in
        not-selected | already-injected)
                # Nothing to do, not even an annotation (a reinvocation's no-op).
                t_eq "$tag: no patch" "" "$patch"
                if [ "$want_reason" = already-injected ]; then
                        "$PROBE" spec --config "$config" --pod-file "$pod" >"$w.spec.json" 2>"$w.err"
                        t_eq "$tag: hangar-probe spec" "$probe_want" \
                                "$(jq -r "$PROBE_RESULT" "$w.spec.json" 2>/dev/null)"
                fi
                return
                ;;
        esac
        if [ -z "$patch" ]; then
                t_fail "$tag: no patch (a selected pod is at least annotated)"
                return
        fi
        if [ "$(<"$w.patch.rc")" != 0 ]; then
                t_fail "$tag: kubectl cannot apply the patch: $(head -c 300 "$w.patch.err")"
                return
        fi
        # The API server's validation (and Pod Security, where the pod meets
        # restricted): stored in the batches, or asked alone for its message.
        local ns=zoo
        [ -f "$pod.strict.stored" ] && ns=strict
        if [ -f "$w.patched.json.$ns.stored" ] ||
                kubectl create -n "$ns" --dry-run=server -o name -f "$w.patched.json" >/dev/null 2>"$w.create.err"; then
                t_check "$tag: the API server accepts the patched pod (namespace $ns)" true
        else
                t_check "$tag: the API server accepts the patched pod (namespace $ns)" false
                sed 's/^/       /' "$w.create.err" | head -n 12
        fi
        local list=${NATIVE[$config]:-containers}
        local strip_same="" annotated="" sandbox_image="" driver_image="" last_mount="" share="" gvisor_count="" gvisor="" runtime=""
        jq -r --slurpfile pod "$pod" --argjson remove "$remove" --arg l "$list" "${FACTS/STRIP/"$STRIP"}" \
                "$w.patched.json" >"$w.facts" 2>/dev/null
        # shellcheck disable=SC1090 # the facts, just written
        . "$w.facts"
        if [ "$strip_same" = true ]; then
                t_check "$tag: everything but the sidecar is the pod as it came" true
        else
                t_check "$tag: everything but the sidecar is the pod as it came" \
                        diff -u <(jq -S --argjson remove "$remove" "$STRIP" "$pod") \
                        <(jq -S --argjson remove "$remove" "$STRIP" "$w.patched.json")
        fi
        t_eq "$tag: pod-level resources are the pod's plus the driver's" ok \
                "$(<"$w.budget")"
        t_eq "$tag: annotated $got_reason" "$got_reason" "$annotated"
        if [ "$want_decision" = skipped ]; then
                t_eq "$tag: a skip only annotates" '["add"]' \
                        "$(jq -c '[.[] | select(.path | startswith("/metadata/annotations") | not) | .op] + ["add"] | unique' <<<"$patch")"
        else
                t_eq "$tag: hangar-driver is the last of $list, in the agent's image" "$sandbox_image" "$driver_image"
                t_eq "$tag: the agent mounts hangar-home read-only, last" \
                        '{"mountPath":"/var/lib/hangar","name":"hangar-home","readOnly":true}' "$last_mount"
                t_eq "$tag: shareProcessNamespace false" false "$share"
                local want_gvisor=0
                [ "$runtime" = gvisor ] && want_gvisor=6
                t_eq "$tag: gVisor's mount annotations only under gVisor" "$want_gvisor" "$gvisor_count"
                if [ "$want_gvisor" != 0 ]; then
                        t_eq "$tag: gVisor's mount annotations are the webhook's, whatever the pod had" \
                                "$GVISOR_WANT" "$gvisor"
                fi
                "$PROBE" spec --config "$config" --pod-file "$w.patched.json" >"$w.spec.json" 2>"$w.err"
                local got_probe
                got_probe=$(jq -r "$PROBE_RESULT" "$w.spec.json" 2>/dev/null)
                t_eq "$tag: hangar-probe spec" "$probe_want" "$got_probe"
        fi
        review_of "$w.patched.json" "$name-$variant-again" >"$w.review2.json"
        "$WEBHOOK" review --config "$config" <"$w.review2.json" >"$w.answer2.json" 2>"$w.err"
        t_eq "$tag: the reinvocation changes nothing" "true none" \
                "$(jq -r '"\(.response.allowed) \(.response.patch // "none")"' "$w.answer2.json")"
}

# ---- each case, as written and as the API server decodes it ----------------
# First what needs a process of its own (the YAML, the review, kubectl's
# JSON Patch), the API server's answers in batches (stored_in), the budget
# in one python3; then every case is checked in turn, as before.
CASES=()
for m in "$HERE"/cases/*.yaml; do
        m=${m##*/}
        CASES+=("${m%.yaml}")
done
# Every case's YAML, read by one python3 (a case that is not YAML gets no
# NAME.manifest.json, and fails below).
python3 - "$HERE"/cases/*.yaml <<'EOF'
import json, os, sys, yaml
for path in sys.argv[1:]:
    name = os.path.basename(path)[:-len(".yaml")]
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except Exception as e:
        print(f"{name}: {e}", file=sys.stderr)
        continue
    with open(name + ".manifest.json", "w") as f:
        json.dump(doc, f)
EOF
# The pods, one jq for all (a case it cannot make one of is made alone,
# and fails as it did).
raws=()
for name in "${CASES[@]}"; do [ ! -f "$name.manifest.json" ] || raws+=("$name.manifest.json"); done
if [ "${#raws[@]}" -gt 0 ]; then
        jq -r "(input_filename | rtrimstr(\".manifest.json\")) + \"\\t\" + (($TEMPLATE_OF) | tojson)" "${raws[@]}" >raw.lines 2>/dev/null
        while IFS=$'\t' read -r name pod; do printf '%s\n' "$pod" >"$name.raw.json"; done <raw.lines
fi
raws=()
for name in "${CASES[@]}"; do
        [ -f "$name.manifest.json" ] || continue
        [ -f "$name.raw.json" ] || jq "$TEMPLATE_OF" "$name.manifest.json" >"$name.raw.json"
        raws+=("$name.raw.json")
done
# As the API server hands them to admission: decoded, defaulted, before
# anything of the create itself (uid, timestamps, status).
stored_in zoo "${raws[@]+"${raws[@]}"}"
defaulted=()
for r in "${raws[@]+"${raws[@]}"}"; do [ ! -f "$r.zoo.stored" ] || defaulted+=("$r.zoo.stored"); done
if [ "${#defaulted[@]}" -gt 0 ]; then
        jq -r '(input_filename | rtrimstr(".raw.json.zoo.stored")) + "\t" +
                (del(.status, .metadata.uid, .metadata.creationTimestamp, .metadata.namespace) | tojson)' \
                "${defaulted[@]}" >defaulted.lines
        while IFS=$'\t' read -r name pod; do printf '%s\n' "$pod" >"$name.defaulted.json"; done <defaulted.lines
fi
# The reviews and the patches.
PATCHED=() VARIANT_PODS=()
for name in "${CASES[@]}"; do
        m=$HERE/cases/$name.yaml
        expect=$(directive "$m" expect)
        if [ -z "$expect" ] || [ ! -f "$name.defaulted.json" ]; then continue; fi
        config=$HERE/config-$(directive "$m" config).yaml
        [ -n "$(directive "$m" config)" ] || config=$HERE/config-default.yaml
        prepare_variant "$name" raw "$T_TMP/$name.raw.json" "$config" "$expect"
        prepare_variant "$name" defaulted "$T_TMP/$name.defaulted.json" "$config" "$expect"
done
# Which pods meet the restricted level on their own (their patched pods go
# to namespace strict), then the patched pods in theirs; a variant a batch
# each (a case's two variants share a name).
for variant in raw defaulted; do
        pods=() zoo_pods=() strict_pods=()
        for pod in "${VARIANT_PODS[@]+"${VARIANT_PODS[@]}"}"; do
                [[ $pod != *".$variant.json" ]] || pods+=("$pod")
        done
        stored_in strict "${pods[@]+"${pods[@]}"}"
        for pod in "${pods[@]+"${pods[@]}"}"; do
                if [ -f "$pod.strict.stored" ]; then
                        strict_pods+=("${pod%.json}.patched.json")
                else
                        zoo_pods+=("${pod%.json}.patched.json")
                fi
        done
        stored_in zoo "${zoo_pods[@]+"${zoo_pods[@]}"}"
        stored_in strict "${strict_pods[@]+"${strict_pods[@]}"}"
done
# Pod-level resources, every patched pod in one python3: NAME.VARIANT.budget.
budget_args=()
for patched in "${PATCHED[@]+"${PATCHED[@]}"}"; do
        name=${patched##*/}
        name=${name%.*.patched.json}
        read -r want_decision _ <<<"$(directive "$HERE/cases/$name.yaml" expect)"
        budget_args+=("${patched%.patched.json}.json" "$patched" "$want_decision")
done
if [ "${#budget_args[@]}" -gt 0 ]; then
        python3 "$HERE/budget.py" "${budget_args[@]}" >budget.lines 2>&1
        i=0
        while IFS= read -r line; do
                patched=${PATCHED[i]:-}
                [ -n "$patched" ] && printf '%s\n' "$line" >"${patched%.patched.json}.budget"
                i=$((i + 1))
        done <budget.lines
fi

for name in "${CASES[@]}"; do
        m=$HERE/cases/$name.yaml
        expect=$(directive "$m" expect)
        [ -n "$expect" ] || { t_fail "$name: no '# expect:' line"; continue; }
        config=$HERE/config-$(directive "$m" config).yaml
        [ -n "$(directive "$m" config)" ] || config=$HERE/config-default.yaml
        probe_want=$(directive "$m" probe)
        probe_want=${probe_want:-pass}
        [ -f "$name.manifest.json" ] || { t_fail "$name: not YAML"; continue; }
        if [ ! -f "$name.defaulted.json" ]; then
                kubectl create -n zoo --dry-run=server -o json -f "$name.raw.json" >"$name.server.json" 2>"$name.err"
                t_fail "$name: the API server refuses the case's own pod: $(head -c 300 "$name.err")"
                continue
        fi
        check_variant "$name" raw "$T_TMP/$name.raw.json" "$config" "$expect" "$probe_want"
        check_variant "$name" defaulted "$T_TMP/$name.defaulted.json" "$config" "$expect" "$probe_want"

        # inject -f of the manifest itself: the same pod, or a one-line refusal.
        read -r want_decision _ <<<"$expect"
        if [ "$want_decision" = denied ]; then
                if "$WEBHOOK" inject -f "$m" --config "$config" >/dev/null 2>"$name.inject.err"; then
                        t_fail "$name: inject accepted what the webhook denies"
                else
                        t_eq "$name: inject refuses in one line" 1 "$(wc -l <"$name.inject.err")"
                fi
        elif [ -f "$name.raw.patched.json" ]; then
                if "$WEBHOOK" inject -f "$m" --config "$config" 2>"$name.inject.err" >"$name.inject.json"; then
                        # One jq to compare; on a difference the diff, as before.
                        if [ "$(jq -n --slurpfile p "$name.raw.patched.json" --slurpfile i "$name.inject.json" \
                                "\$p[0] == (\$i[0] | $TEMPLATE_OF)" 2>/dev/null)" = true ]; then
                                t_check "$name: inject prints the pod the review's patch makes" true
                        else
                                jq "$TEMPLATE_OF" "$name.inject.json" >"$name.inject.pod.json"
                                t_check "$name: inject prints the pod the review's patch makes" \
                                        diff -u <(jq -S . "$name.raw.patched.json") <(jq -S . "$name.inject.pod.json")
                        fi
                else
                        t_fail "$name: inject failed: $(head -c 300 "$name.inject.err")"
                fi
        fi
done

# ---- through the API server, the webhook registered -----------------------
"$WEBHOOK" certs --out-dir pki --ip 127.0.0.1 >/dev/null
PORT=$(t_free_port)
{
        cat "$HERE/config-default.yaml"
        echo "server: {address: 127.0.0.1, port: $PORT, certFile: $T_TMP/pki/tls.crt, keyFile: $T_TMP/pki/tls.key}"
} >live.yaml
"$WEBHOOK" serve --config live.yaml 2>webhook.log &
t_cleanup_pid $!
t_wait_for "curl -sf --cacert pki/ca.crt https://127.0.0.1:$PORT/readyz >/dev/null" 10 || { cat webhook.log; exit 1; }
# Namespaces with the policies cluster admins set, each with a twin without
# the webhook (NAME-off): a pod its namespace's policies admit on its own
# must be admitted injected too.
#   live     none
#   limited  a LimitRange's defaults (LimitRanger gives them to hangar-driver
#            on the API server's second round, where the shape sets nothing)
#   quota    a ResourceQuota on requests and limits, no LimitRange (every
#            container must then set limits.cpu and limits.memory)
#   ratio    a LimitRange with defaults, maximums and maxLimitRequestRatio
#   storage  ephemeral-storage defaults and maximum, and a quota on it
#   minimum  a LimitRange minimum above the driver's request (refused: below)
POLICIES=(live limited quota ratio storage)
policy_objects() { # NAME: the policy's objects, as YAML
        case $1 in
        limited)
                echo 'apiVersion: v1
kind: LimitRange
metadata: {name: defaults}
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 512Mi}
    defaultRequest: {cpu: 100m, memory: 128Mi}'
                ;;
        quota)
                echo 'apiVersion: v1
kind: ResourceQuota
metadata: {name: compute}
spec:
  hard: {requests.cpu: "100", requests.memory: 100Gi, limits.cpu: "100", limits.memory: 100Gi}'
                ;;
        ratio)
                echo 'apiVersion: v1
kind: LimitRange
metadata: {name: ratio}
spec:
  limits:
  - type: Container
    default: {cpu: 500m, memory: 512Mi}
    defaultRequest: {cpu: 250m, memory: 256Mi}
    max: {cpu: "2", memory: 4Gi}
    maxLimitRequestRatio: {cpu: "4", memory: "4"}'
                ;;
        storage)
                echo 'apiVersion: v1
kind: LimitRange
metadata: {name: storage}
spec:
  limits:
  - type: Container
    default: {ephemeral-storage: 1Gi}
    defaultRequest: {ephemeral-storage: 100Mi}
    max: {ephemeral-storage: 2Gi}
---
apiVersion: v1
kind: ResourceQuota
metadata: {name: storage}
spec:
  hard: {requests.ephemeral-storage: 100Gi, limits.ephemeral-storage: 100Gi}'
                ;;
        minimum)
                echo 'apiVersion: v1
kind: LimitRange
metadata: {name: minimum}
spec:
  limits:
  - type: Container
    min: {cpu: 100m}'
                ;;
        *) ;;
        esac
}
# No quota controller runs here: a quota's status (hard, used) is written by
# hand, as the controller would, or its admission refuses every pod.
quota_status() { # NAMESPACE
        local q
        for q in $(kubectl get resourcequota -n "$1" -o name); do
                kubectl patch -n "$1" "$q" --subresource=status --type=merge -p "$(kubectl get -n "$1" "$q" -o json |
                        jq -c '{status: {hard: .spec.hard, used: (.spec.hard | map_values("0"))}}')" >/dev/null
        done
}
# Every namespace (the webhook's labelled) and its policy's objects in one
# kubectl (one each was 48 kubectl start-ups), then the quotas' status.
namespaces=""
for policy in "${POLICIES[@]}" minimum; do
        for ns in "$policy" "$policy-off"; do
                label=""
                [ "$ns" != "$policy" ] || label=', labels: {hangar.dev/webhook: "on"}'
                namespaces+=$(printf -- '---\napiVersion: v1\nkind: Namespace\nmetadata: {name: %s%s}\n' "$ns" "$label")$'\n'
                objects=$(policy_objects "$policy")
                [ -z "$objects" ] || namespaces+="---"$'\n'"${objects//metadata: \{name:/metadata: \{namespace: $ns, name:}"$'\n'
        done
done
kubectl create -f - >/dev/null <<<"$namespaces" || { t_fail "the policies' namespaces not created"; t_end; }
for policy in "${POLICIES[@]}" minimum; do
        case $(policy_objects "$policy") in
        *ResourceQuota*) quota_status "$policy" && quota_status "$policy-off" ;;
        esac
done
kubectl create -f - >/dev/null <<EOF
apiVersion: admissionregistration.k8s.io/v1
kind: MutatingWebhookConfiguration
metadata: {name: hangar-manifests}
webhooks:
- name: sidecar.hangar.dev
  clientConfig: {url: "https://127.0.0.1:$PORT/mutate", caBundle: "$(base64 -w0 pki/ca.crt)"}
  rules: [{operations: [CREATE], apiGroups: [""], apiVersions: [v1], resources: [pods]}]
  namespaceSelector: {matchLabels: {hangar.dev/webhook: "on"}}
  objectSelector: {matchLabels: {hangar.dev/sandbox: "true"}}
  admissionReviewVersions: [v1]
  sideEffects: None
  failurePolicy: Fail
  reinvocationPolicy: IfNeeded
  timeoutSeconds: 10
EOF
probe_pod='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"probe","labels":{"hangar.dev/sandbox":"true"}},"spec":{"containers":[{"name":"sandbox","image":"i:1"}]}}'
t_check "webhook registered and answering" t_wait_for \
        "echo '$probe_pod' | kubectl create -n live --dry-run=server -o json -f - 2>/dev/null | jq -e '.spec.containers | length == 2' >/dev/null" 30
# Each injected case (default configuration) in every policy's namespace
# where its own pod is admitted without the webhook; a case's
# "# admitted-in: NAME..." says where that must be so (it is checked, not
# skipped). Quota admission reads the status above through an informer: the
# quota namespaces wait until it refuses an unlimited pod.
unlimited='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"unlimited"},"spec":{"containers":[{"name":"c","image":"i:1"}]}}'
limited=$(jq -c '.spec.containers[0].resources = {limits: {cpu: "1", memory: "1Gi"}}' <<<"$unlimited")
for ns in quota-off storage-off; do
        t_check "namespace $ns: its quota's status is read (a pod with limits admitted)" t_wait_for \
                "echo '$limited' | kubectl create -n $ns --dry-run=server -o name -f - >/dev/null 2>&1" 30
done
echo "$unlimited" | kubectl create -n quota-off --dry-run=server -o name -f - >/dev/null 2>quota.err
t_check "namespace quota-off: its quota wants limits on every container ($(head -c 200 quota.err))" \
        grep -q "must specify limits.cpu for: c; limits.memory for: c" quota.err
# The cases go through the API server in batches, one List per namespace
# (a kubectl per case and namespace took minutes), each pod labelled with
# its case so the answers can be told apart.
CASE_LABEL=manifests.hangar.dev/case
live_cases=()
for m in "$HERE"/cases/*.yaml; do
        name=$(basename "$m" .yaml)
        if [ "$(directive "$m" expect)" != injected ] || [ -n "$(directive "$m" config)" ]; then
                continue
        fi
        [ -f "$name.raw.json" ] || continue
        live_cases+=("$name")
        jq --arg l "$CASE_LABEL" --arg n "$name" '.metadata.labels[$l] = $n' "$name.raw.json" >"$name.case.json"
done
# batch NS CASE...: creates the cases in NS (a dry run), writes each stored
# pod to CASE.NS.json and prints the names of the cases stored.
batch() {
        local ns=$1 n pod files=()
        shift
        [ $# -gt 0 ] || return 0
        for n in "$@"; do files+=("$n.case.json"); done
        jq -s '{apiVersion: "v1", kind: "List", items: .}' "${files[@]}" >"batch.$ns.json"
        kubectl create -n "$ns" --dry-run=server -o json -f "batch.$ns.json" >"batch.$ns.out.json" 2>"batch.$ns.err"
        jq -r --arg l "$CASE_LABEL" '(.items // [.])[] | .metadata.labels[$l], tojson' "batch.$ns.out.json" 2>/dev/null |
                while read -r n && read -r pod; do
                        printf '%s\n' "$pod" >"$n.$ns.json"
                        echo "$n"
                done
}
declare -A ran stored
for ns in "${POLICIES[@]}"; do
        alone=()
        for n in $(batch "$ns-off" "${live_cases[@]}"); do
                stored[$ns-off/$n]=1
                alone+=("$n")
        done
        for n in $(batch "$ns" "${alone[@]}"); do stored[$ns/$n]=1; done
done
for name in "${live_cases[@]}"; do
        m=$HERE/cases/$name.yaml
        must=" $(directive "$m" admitted-in) "
        for ns in "${POLICIES[@]}"; do
                tag="$name (through the API server, namespace $ns)"
                if [ -z "${stored[$ns-off/$name]:-}" ]; then
                        case $must in
                        *" $ns "*)
                                kubectl create -n "$ns-off" --dry-run=server -o name -f "$name.raw.json" >/dev/null 2>"$name.$ns-off.err"
                                t_fail "$tag: the namespace refuses the pod on its own: $(head -c 300 "$name.$ns-off.err")"
                                ;;
                        esac
                        continue
                fi
                ran[$ns]=$((${ran[$ns]:-0} + 1))
                if [ -z "${stored[$ns/$name]:-}" ]; then
                        kubectl create -n "$ns" --dry-run=server -o name -f "$name.raw.json" >/dev/null 2>"$name.$ns.err"
                        t_fail "$tag: admitted without the webhook, refused with it: $(head -c 400 "$name.$ns.err")"
                        continue
                fi
                t_eq "$tag: stored injected" injected \
                        "$(jq -r '.metadata.annotations["hangar.dev/driver-sidecar-reason"]' "$name.$ns.json")"
                if [ -n "$(directive "$m" qos)" ]; then
                        t_eq "$tag: QoS class" "$(directive "$m" qos)" "$(jq -r .status.qosClass "$name.$ns.json")"
                fi
                "$PROBE" spec --config "$HERE/config-default.yaml" --pod-file "$name.$ns.json" >"$name.$ns.spec.json" 2>&1
                want=$(directive "$m" probe)
                t_eq "$tag: hangar-probe spec" "${want:-pass}" "$(jq -r "$PROBE_RESULT" "$name.$ns.spec.json" 2>/dev/null)"
        done
        # A workload injected by `inject -f`, stored (the API server defaults
        # its template), then a pod made from the stored template, as its
        # controller makes it: the webhook finds it injected and leaves it so,
        # the plugins' second round (LimitRange, AlwaysPullImages) included.
        [ "$(jq -r .kind "$name.manifest.json")" = Pod ] && continue
        tag="$name (inject -f, stored, its pod through the API server)"
        if ! "$WEBHOOK" inject -f "$m" --config "$HERE/config-default.yaml" >"$name.injected.json" 2>"$name.err" ||
                ! kubectl create -n limited --dry-run=server -o json -f "$name.injected.json" >"$name.stored.json" 2>"$name.err"; then
                t_fail "$tag: the injected workload is not stored: $(head -c 300 "$name.err")"
                continue
        fi
        jq "$TEMPLATE_OF" "$name.stored.json" >"$name.from-template.json"
        if ! kubectl create -n limited --dry-run=server -o json -f "$name.from-template.json" >"$name.made.json" 2>"$name.err"; then
                t_fail "$tag: refused: $(head -c 400 "$name.err")"
                continue
        fi
        t_eq "$tag: one hangar-driver, still marked injected" "1 injected" \
                "$(jq -r '"\([.spec.containers[] | select(.name == "hangar-driver")] | length) \(.metadata.annotations["hangar.dev/driver-sidecar"])"' "$name.made.json")"
        "$PROBE" spec --config "$HERE/config-default.yaml" --pod-file "$name.made.json" >"$name.made.spec.json" 2>&1
        want=$(directive "$m" probe)
        t_eq "$tag: hangar-probe spec" "${want:-pass}" "$(jq -r "$PROBE_RESULT" "$name.made.spec.json" 2>/dev/null)"
done
# Every policy's namespace took most cases: a setup that refused them all
# would otherwise pass by skipping.
for ns in "${POLICIES[@]}"; do
        least=10
        [ "$ns" = quota ] && least=5 # only pods that limit every container
        t_check "namespace $ns admitted at least $least cases on their own (${ran[$ns]:-0})" [ "${ran[$ns]:-0}" -ge "$least" ]
done
# A LimitRange minimum above the driver's request: nothing the webhook can
# fit; refused by the API server, saying which minimum (docs/webhook.md:
# raise driver.resources.requests).
t_check "namespace minimum admits the basic pod without the webhook" \
        kubectl create -n minimum-off --dry-run=server -o name -f containers-only.raw.json
if kubectl create -n minimum --dry-run=server -o name -f containers-only.raw.json >/dev/null 2>minimum.err; then
        t_fail "namespace minimum: a driver below the LimitRange's minimum was admitted"
else
        t_check "namespace minimum: refused, naming the minimum and the driver's request ($(head -c 200 minimum.err))" \
                grep -q "minimum cpu usage per Container is 100m, but request is 50m" minimum.err
fi
t_end
