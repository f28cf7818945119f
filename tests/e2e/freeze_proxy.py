#!/usr/bin/env python3
"""A TCP forwarder to put in front of the API server, to freeze it at will.

usage: freeze_proxy.py TARGET_HOST TARGET_PORT PORT_FILE

Listens on a free loopback port (written to PORT_FILE once listening) and
copies bytes both ways to TARGET. SIGUSR1 freezes every exchange through
it, new connections included (bytes are read and held, nothing answers):
an API server that hangs, as a slow or wedged one looks to its clients.
SIGUSR2 thaws it (what was held goes on). SIGTERM ends it, frozen or not.
"""
import os
import signal
import socket
import sys
import threading

THAWED = threading.Event()
THAWED.set()


def pump(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            THAWED.wait()
            dst.sendall(data)
    except OSError:
        pass
    finally:
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


def serve(client, target):
    try:
        upstream = socket.create_connection(target)
    except OSError:
        client.close()
        return
    threading.Thread(target=pump, args=(client, upstream), daemon=True).start()
    threading.Thread(target=pump, args=(upstream, client), daemon=True).start()


def main():
    host, port, port_file = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    signal.signal(signal.SIGUSR1, lambda *_: THAWED.clear())
    signal.signal(signal.SIGUSR2, lambda *_: THAWED.set())
    listener = socket.socket()
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("127.0.0.1", 0))
    listener.listen(256)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(listener.getsockname()[1]))
    os.rename(port_file + ".tmp", port_file)
    while True:
        client, _ = listener.accept()
        serve(client, (host, port))


if __name__ == "__main__":
    main()
