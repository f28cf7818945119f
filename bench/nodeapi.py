#!/usr/bin/env python3
"""Timing loops against a real API server for bench/node.sh (not product code).

One process, one keep-alive HTTPS connection with the admin client cert, so
each figure is the API server's answer (admission, webhooks, etcd), not a
client's startup or TLS handshake.

  nodeapi.py creates  SERVER PKI NS N          pod creates, labelled and not, alternating
  nodeapi.py running  SERVER PKI NS N IMAGE    sandbox pods to Running, with and without the sidecar

Prints one line per measurement: KIND MILLISECONDS.
"""
import http.client
import json
import ssl
import sys
import time
import urllib.parse

LABEL = "hangar.dev/sandbox"


def connect(server, pki):
    url = urllib.parse.urlparse(server)
    ctx = ssl.create_default_context(cafile=pki + "/ca.crt")
    ctx.load_cert_chain(pki + "/admin.crt", pki + "/admin.key")
    return http.client.HTTPSConnection(url.hostname, url.port or 443, context=ctx, timeout=120)


class Api:
    def __init__(self, server, pki):
        self.server, self.pki = server, pki
        self.conn = connect(server, pki)

    def call(self, method, path, body=None):
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data else {}
        for attempt in range(2):
            try:
                self.conn.request(method, path, body=data, headers=headers)
                resp = self.conn.getresponse()
                return resp.status, resp.read()
            except (http.client.HTTPException, OSError):
                if attempt:
                    raise
                self.conn.close()
                self.conn = connect(self.server, self.pki)
        raise RuntimeError("unreachable")


def pod(name, labelled, image, runnable):
    labels = {LABEL: "true" if labelled else "no", "hangar.dev/bench": "node"}
    spec = {
        "runtimeClassName": "gvisor",
        "securityContext": {"runAsUser": 1000, "runAsGroup": 1000, "fsGroup": 1000},
        "terminationGracePeriodSeconds": 1,
        "containers": [{
            "name": "sandbox", "image": image, "imagePullPolicy": "Never",
            "command": ["sleep", "infinity"],
            "securityContext": {"allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}},
        }],
    }
    if not runnable:
        # Stored (admission, webhook, etcd) but never scheduled: nothing runs.
        spec["schedulerName"] = "hangar-bench-none"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}, "spec": spec}


def create(api, ns, body):
    t0 = time.perf_counter()
    status, out = api.call("POST", f"/api/v1/namespaces/{ns}/pods", body)
    ms = (time.perf_counter() - t0) * 1e3
    if status != 201:
        sys.exit(f"create {body['metadata']['name']}: HTTP {status}: {out[:300]!r}")
    return ms, json.loads(out)


def delete_all(api, ns):
    api.call("DELETE", f"/api/v1/namespaces/{ns}/pods?labelSelector=hangar.dev%2Fbench%3Dnode&gracePeriodSeconds=0")


def creates(api, ns, n):
    warm = 10
    for i in range(n + warm):
        for kind, labelled in (("webhook", True), ("plain", False)):
            ms, obj = create(api, ns, pod(f"bc-{kind[0]}-{i}", labelled, "localhost/hangar-sandbox:dev", False))
            injected = any(c["name"] == "hangar-driver" for c in obj["spec"]["containers"])
            if injected != labelled:
                sys.exit(f"pod {obj['metadata']['name']}: injected={injected}, expected {labelled}")
            if i >= warm:
                print(kind, f"{ms:.3f}", flush=True)
    delete_all(api, ns)


def running(api, ns, n, image):
    for i in range(n):
        for kind, labelled in (("sidecar", True), ("plain", False)):
            name = f"br-{kind[0]}-{i}"
            t0 = time.perf_counter()
            _, obj = create(api, ns, pod(name, labelled, image, True))
            path = f"/api/v1/namespaces/{ns}/pods/{name}"
            phase = ""
            while phase != "Running":
                if time.perf_counter() - t0 > 300:
                    sys.exit(f"pod {name}: not Running after 300 s (phase {phase!r})")
                time.sleep(0.02)
                status, out = api.call("GET", path)
                phase = json.loads(out).get("status", {}).get("phase", "") if status == 200 else ""
                if phase in ("Failed", "Succeeded"):
                    sys.exit(f"pod {name}: {phase}")
            print(kind, f"{(time.perf_counter() - t0) * 1e3:.1f}", flush=True)
            # Gone before the next one starts, so teardown never overlaps a start.
            # With the pod's 1 s grace, the object stays until the kubelet has
            # stopped it: nothing of it runs once the GET says 404.
            api.call("DELETE", path)
            t1 = time.perf_counter()
            while api.call("GET", path)[0] != 404:
                if time.perf_counter() - t1 > 120:
                    sys.exit(f"pod {name}: still there 120 s after its delete")
                time.sleep(0.05)


def main(argv):
    if len(argv) < 5 or argv[0] not in ("creates", "running"):
        sys.exit(__doc__)
    api = Api(argv[1], argv[2])
    if argv[0] == "creates":
        creates(api, argv[3], int(argv[4]))
    else:
        running(api, argv[3], int(argv[4]), argv[5])


if __name__ == "__main__":
    main(sys.argv[1:])
