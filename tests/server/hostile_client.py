#!/usr/bin/env python3
"""Hostile clients, and a stand-in API server, for the webhook's connection
limits (test tooling only; tests/server/test_wedge.sh).

usage: hostile_client.py PORT MODE [ARGS]   (every hostile mode takes BIND,
       the local address to connect from: each is one "source")
  standin REVIEW DIR          the API server: a review every 100 ms on a
                              kept-alive connection, one on a new connection
                              every second, each with ?timeout=10s, until
                              DIR/stop exists; appends a line per answered
                              review to DIR/ok and per failed one (error,
                              non-200, no answer in 10 s) to DIR/failures.
  keepalive BIND N REVIEW HOLD  open N TLS connections, then send a review on
                              each, then hold them idle HOLD seconds.
  silent BIND N WAIT          N TCP connections that never send a ClientHello.
  hello BIND N WAIT           N TCP connections trickling a ClientHello, a byte
                              every 0.5 s.
  headers BIND N WAIT         N TLS connections trickling a request's headers.
  body BIND N WAIT            N TLS connections trickling a request's body.
  unread BIND N REVIEW WAIT   N TLS connections pipelining reviews and never
                              reading an answer (a tiny receive buffer).
  flood BIND N                N TCP connects as fast as it can, each closed.
  kept BIND N REVIEW          N reviews on one connection, reconnecting when
                              asked to close: prints "asked to close C of N".
The modes that wait print "closed C of N": how many connections the server
closed within WAIT seconds (the rest were still open).
"""
import os
import select
import socket
import ssl
import struct
import sys
import threading
import time

PORT = int(sys.argv[1])
MODE = sys.argv[2]
CTX = ssl.create_default_context()
CTX.check_hostname = False
CTX.verify_mode = ssl.CERT_NONE


def tcp(bind, rcvbuf=None):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if rcvbuf:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, rcvbuf)
    s.bind((bind, 0))
    s.settimeout(10)
    s.connect(("127.0.0.1", PORT))
    return s


def tls(bind, rcvbuf=None):
    return CTX.wrap_socket(tcp(bind, rcvbuf))


def request(review, query=""):
    return (b"POST /mutate" + query.encode() + b" HTTP/1.1\r\nHost: x\r\n"
            b"Content-Type: application/json\r\nContent-Length: " +
            str(len(review)).encode() + b"\r\n\r\n" + review)


def read_answer(sock):
    """One answer: (status, closes) where closes is its Connection: close."""
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed before an answer")
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length, closes = 0, False
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        name = name.strip().lower()
        if name == b"content-length":
            length = int(value)
        elif name == b"connection" and value.strip().lower() == b"close":
            closes = True
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            raise ConnectionError("closed in an answer")
        body += chunk
    return int(head.split()[1]), closes


def standin(review, out):
    """The API server's client: it never sends on a connection the server
    asked to close, and a review that fails is a failure (it does not
    resend a POST)."""
    lock = threading.Lock()

    def note(name, text):
        with lock:
            with open(os.path.join(out, name), "a") as f:
                f.write(text + "\n")

    def review_on(sock, what):
        start = time.time()
        try:
            sock.sendall(request(review, "?timeout=10s"))
            status, closes = read_answer(sock)
        except (OSError, ssl.SSLError, ValueError) as e:
            note("failures", f"{what}: {e!r} after {time.time() - start:.1f} s")
            return False
        if status != 200:
            note("failures", f"{what}: status {status}")
            return False
        note("ok", f"{what} {time.time() - start:.3f}")
        return not closes

    def keepalive_loop():
        sock = None
        while not os.path.exists(os.path.join(out, "stop")):
            try:
                if sock is None:
                    sock = tls("127.0.0.1")
            except (OSError, ssl.SSLError) as e:
                note("failures", f"connect: {e!r}")
                time.sleep(0.1)
                continue
            if not review_on(sock, "kept"):
                sock.close()
                sock = None
            time.sleep(0.1)

    def new_connection_loop():
        while not os.path.exists(os.path.join(out, "stop")):
            try:
                sock = tls("127.0.0.1")
            except (OSError, ssl.SSLError) as e:
                note("failures", f"connect: {e!r}")
            else:
                review_on(sock, "new")
                sock.close()
            time.sleep(1)

    threads = [threading.Thread(target=keepalive_loop), threading.Thread(target=new_connection_loop)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def closed_by_server(sock):
    """True once the server has closed or reset the connection (not read)."""
    info = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_INFO, 8)
    return info[0] != 1  # TCP_ESTABLISHED


def watch(socks, wait, trickle=None):
    """Waits until the server closed every socket, or wait seconds; every
    0.5 s sends each open one its next byte (trickle(i) -> bytes or None).
    Prints how many were closed."""
    end = time.time() + wait
    open_ = dict(enumerate(socks))
    while open_ and time.time() < end:
        for i, s in list(open_.items()):
            if closed_by_server(s):
                del open_[i]
                continue
            data = trickle(i) if trickle else None
            if data:
                try:
                    s.send(data)
                except (OSError, ssl.SSLError):
                    del open_[i]
        time.sleep(0.5)
    print(f"closed {len(socks) - len(open_)} of {len(socks)}")


def connect_many(n, make):
    socks = []
    for _ in range(n):
        try:
            socks.append(make())
        except (OSError, ssl.SSLError):
            pass  # refused: the table said no
    return socks


def main():
    if MODE == "standin":
        standin(open(sys.argv[3], "rb").read(), sys.argv[4])
        return
    bind = sys.argv[3]
    if MODE == "flood":
        refused = 0
        for _ in range(int(sys.argv[4])):
            s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            s.bind((bind, 0))
            try:
                s.connect(("127.0.0.1", PORT))
            except OSError:
                refused += 1
            s.close()
        print(f"flooded, {refused} connects failed")
        return
    n = int(sys.argv[4])
    if MODE == "kept":
        review, sock, closes = open(sys.argv[5], "rb").read(), None, 0
        for _ in range(n):
            sock = sock or tls(bind)
            sock.sendall(request(review))
            if read_answer(sock)[1]:
                closes += 1
                sock.close()
                sock = None
        print(f"asked to close {closes} of {n}")
        return
    if MODE == "keepalive":
        review, hold = open(sys.argv[5], "rb").read(), float(sys.argv[6])
        socks = connect_many(n, lambda: tls(bind))
        answered = closes = 0
        for s in socks:
            try:
                s.sendall(request(review))
                _, c = read_answer(s)
                answered += 1
                closes += c
            except (OSError, ssl.SSLError, ValueError):
                pass
        print(f"connected {len(socks)} of {n}, answered {answered}, asked to close {closes}")
        sys.stdout.flush()
        time.sleep(hold)
        return
    wait = float(sys.argv[-1])
    if MODE == "silent":
        watch(connect_many(n, lambda: tcp(bind)), wait)
    elif MODE == "hello":
        incoming, outgoing = ssl.MemoryBIO(), ssl.MemoryBIO()
        obj = CTX.wrap_bio(incoming, outgoing)
        try:
            obj.do_handshake()
        except ssl.SSLWantReadError:
            pass
        hello = outgoing.read()
        socks = connect_many(n, lambda: tcp(bind))
        sent = [0] * len(socks)

        def next_byte(i):
            if sent[i] >= len(hello) - 1:  # never the last one
                return None
            sent[i] += 1
            return hello[sent[i] - 1:sent[i]]
        watch(socks, wait, next_byte)
    elif MODE in ("headers", "body"):
        head = b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
        if MODE == "body":
            head += b"Content-Length: 100000\r\n\r\n"
        socks = connect_many(n, lambda: tls(bind))
        for s in socks:
            s.sendall(head)
        # One more byte of a header line (never ended), or of the body.
        watch(socks, wait, lambda i: b"X" if MODE == "headers" else b" ")
    elif MODE == "unread":
        review = open(sys.argv[5], "rb").read()
        socks = connect_many(n, lambda: tls(bind, rcvbuf=2048))
        for s in socks:
            s.settimeout(0.3)
            # Until the server stops reading: past its send buffer, which
            # grows to a few MB on loopback (answers are ~1.5 KB).
            try:
                for _ in range(8000):
                    s.sendall(request(review))
            except (OSError, ssl.SSLError):
                pass  # the server stopped reading: it cannot write
        watch(socks, wait)
    else:
        sys.exit(f"unknown mode {MODE}")


if __name__ == "__main__":
    main()
