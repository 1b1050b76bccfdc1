#!/usr/bin/env python3
"""load_peer.py: the servers t/bench_load.t runs bench/load.c (bottle-load)
against.  Python 3, standard library only.

    load_peer.py --cert FILE --key FILE [--proxy-auth USER:PASS]
                 [--lifetime SECONDS]

On 127.0.0.1, on ports the system picks, it starts:

  tls      an HTTP/1.1 server over TLS (the certificate given), keep-alive
  plain    the same server without TLS
  proxy    a CONNECT proxy: records each CONNECT line and its
           Proxy-Authorization, answers 407 when --proxy-auth is given and
           the credentials differ, else 200, then tunnels the bytes
  control  one command per connection, a line: "stats" answers the
           counters as one line of JSON, "reset" zeroes them

and prints their ports and its process id as one line of JSON on stdout,
e.g. {"tls": 41001, "plain": 41002, "proxy": 41003, "control": 41004,
"pid": 1234}.

The HTTP servers count connections and requests and record each request's
head, body length, path and connection (and the TLS server name the client
sent).  They serve:

  /cl           200, a 1 KiB body with Content-Length
  /chunked      200, a chunked body (an extension, a trailer), written a
                few bytes at a time so the client sees every split
  /close        200 with "Connection: close", then closes
  /eof          200 without a length, the body written in pieces, ended by
                closing the connection
  /status/NNN   status NNN, a 3-byte body
  /hang         no answer until the client goes away (for timeouts)

A request with "Connection: close" gets its answer and the connection is
closed.  The process exits after --lifetime seconds (default 300) in case
the test that started it could not stop it.
"""

import argparse
import base64
import json
import os
import socket
import ssl
import threading
import time

BODY_1K = b"x" * 1024


class State:
    """What the servers saw; "stats" reports it, "reset" zeroes it."""

    def __init__(self):
        self.lock = threading.Lock()
        self.reset()

    def reset(self):
        with self.lock:
            self.conns = {"tls": 0, "plain": 0}
            self.sni = []           # the server name per TLS connection
            self.requests = []      # one dict per request
            self.connects = []      # one dict per CONNECT
            self.next_conn = 0

    def new_conn(self, kind):
        with self.lock:
            self.conns[kind] += 1
            self.next_conn += 1
            return self.next_conn

    def add(self, what, item):
        with self.lock:
            getattr(self, what).append(item)

    def stats(self):
        with self.lock:
            lens = {}
            for r in self.requests:
                k = str(r["body_len"])
                lens[k] = lens.get(k, 0) + 1
            return {"connections": dict(self.conns),
                    "requests": len(self.requests),
                    "sni": list(self.sni),
                    "body_lengths": lens,
                    "conns_used": len({r["conn"] for r in self.requests}),
                    # the heads: the first ones, they are all alike
                    "first": self.requests[:20],
                    "connects": list(self.connects)}


STATE = State()


def listener():
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    return s


def accept_loop(sock, handler, *args):
    while True:
        c, _ = sock.accept()
        c.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        threading.Thread(target=guarded, args=(handler, c) + args,
                         daemon=True).start()


def guarded(handler, c, *args):
    try:
        handler(c, *args)
    except (OSError, ValueError):
        pass                # the client went away: its own business
    finally:
        try:
            c.close()
        except OSError:
            pass


###############################################################################
# the HTTP/1.1 server (tls and plain)

def read_head(f):
    """The request head as bytes up to and with the empty line, or None at
    the end of the connection."""
    lines = []
    while True:
        line = f.readline(65536)
        if not line:
            return None
        lines.append(line)
        if line in (b"\r\n", b"\n"):
            return b"".join(lines)


def send_pieces(c, data, size):
    for i in range(0, len(data), size):
        c.sendall(data[i:i + size])


def respond(c, f, path):
    """Answer one request; False when the connection is to end."""
    if path == "/cl":
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n"
                  b"Content-Length: 1024\r\n\r\n" + BODY_1K)
    elif path == "/chunked":
        send_pieces(c, b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n"
                       b"\r\n5;ext=\"a b\"\r\nhello\r\n1a\r\n"
                       + b"abcdefghijklmnopqrstuvwxyz" + b"\r\n0\r\n"
                       b"X-Trailer: yes\r\n\r\n", 3)
    elif path == "/close":
        c.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n"
                  b"Connection: close\r\n\r\nclose")
        return False
    elif path == "/eof":
        send_pieces(c, b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n"
                    + BODY_1K, 200)
        return False
    elif path.startswith("/status/") and path[8:].isdigit():
        c.sendall(b"HTTP/1.1 %s Status\r\nContent-Length: 3\r\n\r\nabc"
                  % path[8:].encode())
    elif path == "/hang":
        f.read(1)               # until the client closes
        return False
    else:
        c.sendall(b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
    return True


def serve_http(c, kind, ctx):
    if ctx:
        c = ctx.wrap_socket(c, server_side=True)
        STATE.add("sni", getattr(c, "sni_name", None))
    conn = STATE.new_conn(kind)
    f = c.makefile("rb")
    while True:
        head = read_head(f)
        if head is None:
            return
        text = head.decode("latin-1")
        method, path = text.split(" ", 2)[:2]
        hdrs = {}
        for line in text.split("\r\n")[1:]:
            if ":" in line:
                k, v = line.split(":", 1)
                hdrs[k.strip().lower()] = v.strip()
        n = int(hdrs.get("content-length", "0"))
        body = f.read(n) if n else b""
        STATE.add("requests", {"conn": conn, "kind": kind, "method": method,
                               "path": path, "head": text,
                               "body_len": len(body)})
        keep = respond(c, f, path)
        if not keep or "close" in hdrs.get("connection", "").lower():
            return


def tls_context(cert, key):
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)

    def sni(sock, name, _ctx):
        # called with the SSLSocket during its handshake; not at all when
        # the client sent no server name
        sock.sni_name = name
    ctx.sni_callback = sni
    return ctx


###############################################################################
# the CONNECT proxy

def read_connect_head(c):
    """The CONNECT head and whatever came after it."""
    buf = b""
    while b"\r\n\r\n" not in buf:
        data = c.recv(4096)
        if not data:
            return None, b""
        buf += data
    head, rest = buf.split(b"\r\n\r\n", 1)
    return head.decode("latin-1"), rest


def pipe(src, dst):
    try:
        while True:
            data = src.recv(65536)
            if not data:
                break
            dst.sendall(data)
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        pass


def serve_proxy(c, want_auth):
    head, rest = read_connect_head(c)
    if head is None:
        return
    lines = head.split("\r\n")
    auth = None
    for line in lines[1:]:
        k, _, v = line.partition(":")
        if k.strip().lower() == "proxy-authorization":
            auth = v.strip()
    STATE.add("connects", {"line": lines[0], "auth": auth})
    if want_auth and auth != want_auth:
        c.sendall(b"HTTP/1.1 407 Proxy Authentication Required\r\n"
                  b"Proxy-Authenticate: Basic realm=\"load\"\r\n"
                  b"Content-Length: 0\r\nConnection: close\r\n\r\n")
        return
    method, target = lines[0].split(" ")[:2]
    host, _, port = target.rpartition(":")
    up = socket.create_connection((host.strip("[]"), int(port)), 5)
    up.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    if rest:
        up.sendall(rest)
    t = threading.Thread(target=pipe, args=(up, c), daemon=True)
    t.start()
    pipe(c, up)
    t.join()
    up.close()


###############################################################################
# control and main

def serve_control(c):
    cmd = c.makefile("rb").readline().strip()
    if cmd == b"reset":
        STATE.reset()
        c.sendall(b"ok\n")
    elif cmd == b"stats":
        c.sendall(json.dumps(STATE.stats()).encode() + b"\n")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cert", required=True)
    ap.add_argument("--key", required=True)
    ap.add_argument("--proxy-auth")
    ap.add_argument("--lifetime", type=float, default=300)
    a = ap.parse_args()

    want_auth = None
    if a.proxy_auth:
        want_auth = "Basic " + base64.b64encode(a.proxy_auth.encode()).decode()
    socks = {k: listener() for k in ("tls", "plain", "proxy", "control")}
    serve = {"tls": (serve_http, "tls", tls_context(a.cert, a.key)),
             "plain": (serve_http, "plain", None),
             "proxy": (serve_proxy, want_auth),
             "control": (serve_control,)}
    for k, s in socks.items():
        threading.Thread(target=accept_loop, args=(s,) + serve[k],
                         daemon=True).start()
    ports = {k: s.getsockname()[1] for k, s in socks.items()}
    ports["pid"] = os.getpid()     # python3 may be a wrapper's child
    print(json.dumps(ports), flush=True)
    time.sleep(a.lifetime)
    os._exit(0)


if __name__ == "__main__":
    main()
