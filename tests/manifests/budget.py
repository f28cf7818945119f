"""Prints ok when the patched pod's pod-level resources (spec.resources) are
the pod's own plus the driver's (config-default's 50m/64Mi requests, no
limits: its requests count against the pod's limits), and for a pod that
was not injected, unchanged; else what differs, on one line.
usage: budget.py POD PATCHED DECISION [POD PATCHED DECISION...]: a line for
each (one python3 for the whole corpus)."""
import json
import re
import sys

SUFFIX = {"": 1, "m": 1e-3, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12,
          "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40}
DRIVER = {"cpu": 0.05, "memory": 64 * 2**20}


def value(q):
    if isinstance(q, (int, float)):
        return float(q)
    m = re.fullmatch(r"([0-9.]+(?:[eE][0-9]+)?)([a-zA-Z]*)", q)
    if not m or m.group(2) not in SUFFIX:
        raise ValueError("not a quantity: %r" % q)
    return float(m.group(1)) * SUFFIX[m.group(2)]


def check(pod_file, patched_file, decision):
    pod, patched = (json.load(open(f)) for f in (pod_file, patched_file))
    injected = decision == "injected"
    before = (pod.get("spec") or {}).get("resources") or {}
    after = (patched.get("spec") or {}).get("resources") or {}
    bad = []
    for kind in set(before) | set(after):
        b, a = before.get(kind) or {}, after.get(kind) or {}
        for res in set(b) | set(a):
            if res not in b or res not in a:
                bad.append("%s.%s appeared or went" % (kind, res))
                continue
            want = value(b[res]) + (DRIVER.get(res, 0) if injected else 0)
            if abs(value(a[res]) - want) > 1e-9 * max(1, want):
                bad.append("%s.%s is %s, expected %g" % (kind, res, a[res], want))
    return "ok" if not bad else "; ".join(bad)


args = sys.argv[1:]
if not args or len(args) % 3:
    sys.exit("usage: budget.py POD PATCHED DECISION [POD PATCHED DECISION...]")
for i in range(0, len(args), 3):
    try:
        print(check(*args[i:i + 3]), flush=True)
    except Exception as e:  # this pod's line says why; the others go on
        print("%s: %s" % (type(e).__name__, e), flush=True)
