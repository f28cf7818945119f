#!/usr/bin/env python3
"""Fills the webhook's connection table, for bench/webhook-memory.sh.

usage: webhook_memory.py PORT MODE SOURCES PER_SOURCE HOLD [REVIEW]
  idle    each connection finishes its TLS handshake, sends REVIEW once,
          reads the answer, then stays open (kept alive) HOLD seconds;
  bodies  each connection sends the headers of a /validate with a body of
          server.maxBodyBytes (3 MiB, the chart's) and all of it but the
          last byte, then holds it HOLD seconds: the most memory a client
          can make the webhook buffer per connection;
  reviews each connection sends REVIEW with an annotation that brings it
          to just under 3 MiB, to /mutate, and reads the answer: the
          memory the decisions themselves take (the parsed pod, the
          arena of each worker thread).
Sources are 127.0.0.2 onwards, PER_SOURCE connections each (the chart's
maxConnectionsPerClient is 128). Prints "open N" once every connection is
made (N: those the webhook did not close), then holds.
"""
import socket
import ssl
import sys
import threading
import time

PORT, MODE = int(sys.argv[1]), sys.argv[2]
SOURCES, PER_SOURCE, HOLD = int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
REVIEW = open(sys.argv[6], "rb").read() if len(sys.argv) > 6 else b""
BODY = 3145728


def big_review():
    import json
    r = json.loads(REVIEW)
    pod = r["request"]["object"]
    pod.setdefault("metadata", {}).setdefault("annotations", {})["bench/padding"] = ""
    room = BODY - len(json.dumps(r).encode()) - 64
    pod["metadata"]["annotations"]["bench/padding"] = "x" * room
    return json.dumps(r).encode()


BIG = big_review() if REVIEW else b""
CTX = ssl.create_default_context()
CTX.check_hostname = False
CTX.verify_mode = ssl.CERT_NONE
socks, lock = [], threading.Lock()


def one(bind):
    s = socket.socket()
    s.bind((bind, 0))
    s.settimeout(30)
    s.connect(("127.0.0.1", PORT))
    t = CTX.wrap_socket(s)
    if MODE in ("idle", "reviews"):
        # A whole review, its answer's headers read: the connection then
        # idles (kept alive) holding what the answer left behind.
        path, body = (b"/validate", REVIEW) if MODE == "idle" else (b"/mutate", BIG)
        t.sendall(b"POST " + path + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = t.recv(65536)
            if not chunk:
                return
            data += chunk
    else:
        t.sendall(b"POST /validate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                  b"Content-Length: " + str(BODY).encode() + b"\r\n\r\n")
        chunk = b"x" * 65536
        left = BODY - 1
        while left > 0:
            n = min(left, len(chunk))
            t.sendall(chunk[:n])
            left -= n
    with lock:
        socks.append(t)


def source(i):
    bind = "127.0.0.%d" % (2 + i)
    for _ in range(PER_SOURCE):
        try:
            one(bind)
        except (OSError, ssl.SSLError):
            pass
        time.sleep(0.002)


threads = [threading.Thread(target=source, args=(i,)) for i in range(SOURCES)]
for th in threads:
    th.start()
for th in threads:
    th.join()
print("open", len(socks), flush=True)
time.sleep(HOLD)
