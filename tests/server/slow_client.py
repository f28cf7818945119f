#!/usr/bin/env python3
"""Hostile slow clients for the webhook's server (test tooling only).

usage: slow_client.py PORT stall|trickle|huge|silent
       slow_client.py PORT idle REVIEW_FILE SECONDS
  stall:   send headers promising 100 bytes, send one, then go silent.
  trickle: send headers promising 100 bytes, then one byte every 0.5 s.
  huge:    send headers promising 1 GB, then wait for the answer.
  silent:  connect (TLS) and send nothing.
  idle:    send the review, read the answer, stay idle SECONDS on the kept-alive
           connection, then send it again: prints "again CODE" if the second
           was answered, "closed" if the server had hung up.
Prints "closed AFTER_SECONDS" if the server hung up without an answer,
"status CODE AFTER_SECONDS" if it answered, or "open" if it did neither
within 12 s.
"""
import socket
import ssl
import sys
import time

port, mode = int(sys.argv[1]), sys.argv[2]
ctx = ssl.create_default_context()
ctx.check_hostname = False
ctx.verify_mode = ssl.CERT_NONE
sock = ctx.wrap_socket(socket.create_connection(("127.0.0.1", port)))


def answer_status(review):
    """Sends one POST of review and reads its whole answer: the status, or None."""
    sock.sendall(b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                 b"Content-Length: " + str(len(review)).encode() + b"\r\n\r\n" + review)
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        data += chunk
    head, body = data.split(b"\r\n\r\n", 1)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            return None
        body += chunk
    return head.split()[1].decode()


if mode == "idle":
    review = open(sys.argv[3], "rb").read()
    first = answer_status(review)
    time.sleep(float(sys.argv[4]))
    try:
        again = answer_status(review)
    except (ConnectionError, ssl.SSLError):
        again = None
    print(f"first {first} " + (f"again {again}" if again else "closed"))
    sys.exit(0)
if mode == "silent":
    start = time.time()
    sock.settimeout(12)
    try:
        data = sock.recv(4096)
        print(f"closed {time.time() - start:.1f}" if not data else "data")
    except socket.timeout:
        print("open")
    except (ConnectionError, ssl.SSLError):
        print(f"closed {time.time() - start:.1f}")
    sys.exit(0)
length = b"1000000000" if mode == "huge" else b"100"
sock.sendall(b"POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
             b"Content-Length: " + length + b"\r\n\r\n{")
start = time.time()
sock.settimeout(0.5)
while time.time() - start < 12:
    try:
        data = sock.recv(4096)
        elapsed = time.time() - start
        if not data:
            print(f"closed {elapsed:.1f}")
        else:
            print(f"status {data.split()[1].decode()} {elapsed:.1f}")
        sys.exit(0)
    except socket.timeout:
        pass
    except (ConnectionError, ssl.SSLError):
        print(f"closed {time.time() - start:.1f}")
        sys.exit(0)
    if mode == "trickle":
        try:
            sock.send(b" ")
        except (ConnectionError, ssl.SSLError):
            print(f"closed {time.time() - start:.1f}")
            sys.exit(0)
print("open")
