#!/usr/bin/env python3
"""Timing loops against a real API server for bench/admission.sh (not product code).

One process, one keep-alive HTTPS connection with the admin client cert
(bench/nodeapi.py's), so each figure is the API server's answer: its
admission chain, the webhooks it calls, etcd; not a client's startup.

  admissionapi.py creates SERVER PKI NS N INJECTED   N labelled sandbox pods; each must come
                                                     back injected (yes) or not (no)
  admissionapi.py execs   SERVER PKI NS POD N        N exec requests on POD (never scheduled):
                                                     each passes admission, then fails for want
                                                     of a node (400); a refusal (403) is an error

Prints one line per measurement: MILLISECONDS.
"""
import sys
import time

from nodeapi import Api, create, delete_all, pod


def creates(api, ns, n, injected):
    warm = 10
    for i in range(n + warm):
        ms, obj = create(api, ns, pod(f"ba-{i}", True, "registry.example/agent-env:1", False))
        got = any(c["name"] == "hangar-driver" for c in obj["spec"]["containers"])
        if got != injected:
            sys.exit(f"pod {obj['metadata']['name']}: injected={got}, expected {injected}")
        if i >= warm:
            print(f"{ms:.3f}", flush=True)
    delete_all(api, ns)


def execs(api, ns, name, n):
    warm = 10
    path = f"/api/v1/namespaces/{ns}/pods/{name}/exec?command=true&container=sandbox&stdout=true"
    for i in range(n + warm):
        t0 = time.perf_counter()
        status, out = api.call("POST", path)
        ms = (time.perf_counter() - t0) * 1e3
        # Admitted, then the API server finds no node to send it to.
        if status != 400 or b"host" not in out:
            sys.exit(f"exec {ns}/{name}: HTTP {status}: {out[:300]!r}")
        if i >= warm:
            print(f"{ms:.3f}", flush=True)


def main(argv):
    if len(argv) < 5 or argv[0] not in ("creates", "execs"):
        sys.exit(__doc__)
    api = Api(argv[1], argv[2])
    if argv[0] == "creates":
        if argv[5] not in ("yes", "no"):
            sys.exit(__doc__)
        creates(api, argv[3], int(argv[4]), argv[5] == "yes")
    else:
        execs(api, argv[3], argv[4], int(argv[5]))


if __name__ == "__main__":
    main(sys.argv[1:])
