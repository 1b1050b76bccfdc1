#!/usr/bin/env python3
"""CPU per request of an MCP tools/call through a route with "mcp" (the
JSON-RPC body read and gated, the call journalled, the JSON response read
and filtered) against the same request on a plain route, on loopback.

    python3 bench/mcp_bench.py [--requests N] [--rounds R]

Starts a gateway (build/ngx_bottle_module.so, a policy file, plain HTTP
proxy requests over one keep-alive connection) and a small upstream that
answers every POST with a tools/call result; measures the nginx workers'
CPU time (utime + stime from /proc) over N requests to each route, in
alternating rounds, and prints microseconds per request (bench/README.md).
"""

import argparse
import base64
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NGINX = os.environ.get("TEST_NGINX_BINARY", "/usr/sbin/nginx")
MODULE = os.path.join(REPO, "build", "ngx_bottle_module.so")
STREAM = "/usr/lib/nginx/modules/ngx_stream_module.so"
TOKEN = "bench-token-0123456789"

CALL = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                   "params": {"name": "echo",
                              "arguments": {"text": "hello " * 20}}})
RESULT = json.dumps({"jsonrpc": "2.0", "id": 1,
                     "result": {"content": [{"type": "text",
                                             "text": "hello " * 20}]}})


class Upstream(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        n = int(self.headers.get("Content-Length", "0"))
        self.rfile.read(n)
        body = RESULT.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    p = s.getsockname()[1]
    s.close()
    return p


def workers(master):
    out = subprocess.run(["pgrep", "-P", str(master)], capture_output=True,
                         text=True).stdout
    return [int(x) for x in out.split()]


def cpu(pids):
    t = 0
    for p in pids:
        with open("/proc/%d/stat" % p) as f:
            fields = f.read().rsplit(")", 1)[1].split()
        t += int(fields[11]) + int(fields[12])
    return t / os.sysconf("SC_CLK_TCK")


def read_response(f):
    line = f.readline()
    status = int(line.split()[1])
    length = None
    while True:
        h = f.readline()
        if h in (b"\r\n", b""):
            break
        k, _, v = h.decode().partition(":")
        if k.lower() == "content-length":
            length = int(v)
        if k.lower() == "transfer-encoding" and "chunked" in v:
            length = -1
    if length == -1:
        body = b""
        while True:
            n = int(f.readline().strip(), 16)
            chunk = f.read(n + 2)
            if n == 0:
                break
            body += chunk[:-2]
        return status, body
    return status, f.read(length or 0)


def run(front, host, port, n):
    auth = base64.b64encode(("agent:" + TOKEN).encode()).decode()
    req = ("POST http://%s:%d/mcp HTTP/1.1\r\nHost: %s:%d\r\n"
           "Proxy-Authorization: Basic %s\r\n"
           "Content-Type: application/json\r\n"
           "Accept: application/json, text/event-stream\r\n"
           "Content-Length: %d\r\n\r\n%s"
           % (host, port, host, port, auth, len(CALL), CALL)).encode()
    s = None
    for i in range(n):
        if i % 500 == 0:                # below keepalive_requests
            if s:
                s.close()
            s = socket.create_connection(("127.0.0.1", front))
            f = s.makefile("rb")
        s.sendall(req)
        status, body = read_response(f)
        if status != 200 or b"hello" not in body:
            sys.exit("bench: %s answered %d: %r" % (host, status, body[:200]))
    s.close()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--requests", type=int, default=5000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()

    d = tempfile.mkdtemp(prefix="mcp-bench-")
    up = free_port()
    front = free_port()

    srv = http.server.ThreadingHTTPServer(("0.0.0.0", up), Upstream)
    threading.Thread(target=srv.serve_forever, daemon=True).start()

    route = {"port": up, "methods": ["POST"], "dlp": {"on_match": "block"}}
    policy = {"bottles": [{"id": "bench", "token": TOKEN, "routes": [
        dict(route, host="127.0.0.1",
             mcp={"tools": {"allow": ["echo"], "deny": ["admin_*"]}}),
        dict(route, host="127.0.0.2")]}]}
    with open(os.path.join(d, "policy.json"), "w") as f:
        json.dump(policy, f)

    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write("""
load_module %(stream)s;
load_module %(module)s;
pid %(d)s/nginx.pid;
error_log %(d)s/error.log warn;
daemon off;
worker_processes 1;
bottle_policy %(d)s/policy.json;
events {}
stream {
    server {
        listen 127.0.0.1:%(front)d;
        bottle_front on;
        bottle_plain_pass unix:%(d)s/plain.sock;
        proxy_pass $bottle_upstream;
    }
}
http {
    access_log off;
    client_body_temp_path %(d)s;
    proxy_temp_path %(d)s;
    fastcgi_temp_path %(d)s;
    uwsgi_temp_path %(d)s;
    scgi_temp_path %(d)s;
    upstream bottle_plain { bottle_upstream; }
    server {
        listen unix:%(d)s/plain.sock proxy_protocol;
        bottle on;
        location / {
            proxy_pass http://bottle_plain$bottle_uri;
            proxy_set_header Host $bottle_host_header;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
        }
    }
}
""" % {"stream": STREAM, "module": MODULE, "d": d, "front": front})

    ng = subprocess.Popen([NGINX, "-p", d, "-c", os.path.join(d,
                                                              "nginx.conf")])
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", front)).close()
                break
            except OSError:
                time.sleep(0.1)
        time.sleep(0.5)
        pids = workers(ng.pid)

        run(front, "127.0.0.1", up, 200)         # warm up both
        run(front, "127.0.0.2", up, 200)

        res = {"mcp": [], "plain": []}
        for r in range(a.rounds):
            for name, host in (("plain", "127.0.0.2"), ("mcp", "127.0.0.1")):
                c0 = cpu(pids)
                run(front, host, up, a.requests)
                us = (cpu(pids) - c0) / a.requests * 1e6
                res[name].append(us)
                print("round %d %-5s %7.1f us of worker CPU per request"
                      % (r + 1, name, us))
        bm, bp = min(res["mcp"]), min(res["plain"])
        print("best: mcp %.1f us, plain %.1f us, mcp costs %.1f us more "
              "(%.0f%%)" % (bm, bp, bm - bp, (bm / bp - 1) * 100))
    finally:
        ng.send_signal(signal.SIGTERM)
        ng.wait()
        srv.shutdown()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
