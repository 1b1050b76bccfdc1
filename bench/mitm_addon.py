"""mitmproxy addon: the gateway's policy work, done the way a mitmproxy-based
gateway does it, so that `make bench` compares like with like.

Per CONNECT: the bottle from the Proxy-Authorization password (407 without
one), the target host and port against the bottle's routes (403 otherwise).
Per request inside the tunnel: the agent's credential headers stripped, a
regex scan of URL, headers and body for the canary, the bottle's egress
tokens and vendor token shapes (403 on a match), then the route's credential
injected.  Server-sent events stream through.

Configuration comes from the environment (bench/run.py sets it):
  BENCH_POLICY   the policy JSON file the gateway runs with (docs/policy.md)
  BENCH_ADDRS    host=address,...: what the names resolve to (the gateway
                 asks its own resolver, dnsmasq, for the same answers)
"""

import base64
import json
import os
import re
import socket
import weakref

from mitmproxy import http

# the headers docs/policy.md says an inspected route strips
STRIP = ("authorization", "x-api-key", "api-key", "x-goog-api-key",
         "private-token", "x-auth-token", "x-access-token", "x-gitea-token",
         "x-vault-token", "x-amz-security-token",
         "ocp-apim-subscription-key", "cookie", "proxy-authorization",
         "proxy-connection")

# vendor token shapes (the usual secret-scanner rules)
VENDOR = [
    rb"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b",                     # AWS access key
    rb"\bgh[pousr]_[A-Za-z0-9]{36}\b",                     # GitHub
    rb"\bgithub_pat_[A-Za-z0-9_]{82}\b",                   # GitHub fine-grained
    rb"\bglpat-[A-Za-z0-9_-]{20}\b",                       # GitLab
    rb"\bxox[abposr]-[A-Za-z0-9-]{10,}",                   # Slack
    rb"hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]+",
    rb"\b[rs]k_live_[A-Za-z0-9]{24,}",                     # Stripe
    rb"\bsk-ant-[A-Za-z0-9_-]{32,}",                       # Anthropic
    rb"\bsk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}",    # OpenAI
    rb"\bAIza[0-9A-Za-z_-]{35}\b",                         # Google API key
    rb"\bnpm_[A-Za-z0-9]{36}\b",                           # npm
    rb"\bpypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",          # PyPI
    rb"\bhf_[A-Za-z0-9]{34}\b",                            # Hugging Face
    rb"\bSG\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]{43}\b",      # SendGrid
    rb"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
    rb"-----BEGIN (?:RSA |EC |DSA |OPENSSH |PGP )?PRIVATE KEY",
]


def refuse(flow, status, rule, extra=None):
    headers = {"Content-Type": "text/plain", "X-Bottle-Rule": rule}
    headers.update(extra or {})
    flow.response = http.Response.make(
        status, f"refused by the gateway: {rule}\n".encode(), headers)


class Bottle:
    def __init__(self, doc):
        self.id = doc["id"]
        secrets = doc.get("egress_tokens", {})
        self.routes = {}
        for r in doc["routes"]:
            ports = r.get("ports") or [r.get("port", 443)]
            auth = r.get("auth")
            inject = None
            if auth:
                name = re.sub(r"^secret:\$?\{?([^}]*)\}?$", r"\1",
                              auth["value"])
                value = secrets[name]
                if auth["type"] == "header":
                    inject = (auth["name"], value)
                elif auth["type"] == "token":
                    inject = ("Authorization", "token " + value)
                else:
                    inject = ("Authorization", "Bearer " + value)
            methods = {m.upper() for m in r.get("methods", ["GET", "HEAD"])}
            self.routes[r["host"].lower()] = (set(ports), methods, inject)
        known = [re.escape(v.encode()) for v in secrets.values()]
        if doc.get("canary"):
            known.append(re.escape(doc["canary"].encode()))
        self.scan = re.compile(b"|".join(known + VENDOR))


class Policy:
    def __init__(self):
        with open(os.environ["BENCH_POLICY"]) as f:
            doc = json.load(f)
        self.by_token = {b["token"]: Bottle(b) for b in doc["bottles"]}
        addrs = dict(kv.split("=", 1) for kv in
                     os.environ.get("BENCH_ADDRS", "").split(",") if kv)
        resolve = socket.getaddrinfo

        # the names resolve as the gateway's own resolver answers them;
        # mitmproxy keeps dialling the name, so its connection reuse and
        # SNI are what they would be
        def getaddrinfo(host, *args, **kwargs):
            if isinstance(host, bytes):
                host = host.decode()
            return resolve(addrs.get(host, host), *args, **kwargs)
        socket.getaddrinfo = getaddrinfo
        # client connection -> (bottle, host, port) of its CONNECT
        self.tunnels = weakref.WeakKeyDictionary()

    def identify(self, flow):
        v = flow.request.headers.get("proxy-authorization", "")
        scheme, _, cred = v.partition(" ")
        if scheme.lower() != "basic":
            return None
        try:
            _, _, token = base64.b64decode(cred).decode().partition(":")
        except ValueError:
            return None
        return self.by_token.get(token)

    def http_connect(self, flow):
        bottle = self.identify(flow)
        if bottle is None:
            refuse(flow, 407, "identity", {
                "Proxy-Authenticate": 'Basic realm="bottle gateway"'})
            return
        host, port = flow.request.host.lower(), flow.request.port
        route = bottle.routes.get(host)
        if route is None or port not in route[0]:
            refuse(flow, 403, "host")
            return
        self.tunnels[flow.client_conn] = (bottle, host, port)

    def request(self, flow):
        tunnel = self.tunnels.get(flow.client_conn)
        if tunnel is None:                  # plain HTTP proxy request
            bottle = self.identify(flow)
            if bottle is None:
                refuse(flow, 407, "identity", {
                    "Proxy-Authenticate": 'Basic realm="bottle gateway"'})
                return
            tunnel = (bottle, flow.request.host.lower(), flow.request.port)
        bottle, host, port = tunnel
        req = flow.request
        if req.host.lower() != host or req.port != port or \
                req.host_header.split(":")[0].lower() != host:
            refuse(flow, 403, "host")
            return
        ports, methods, inject = bottle.routes[host]
        if req.method not in methods and "*" not in methods:
            refuse(flow, 403, "method")
            return
        for h in STRIP:
            if h in req.headers:
                del req.headers[h]
        head = b"\n".join(k + b": " + v for k, v in req.headers.fields)
        if bottle.scan.search(req.url.encode()) or bottle.scan.search(head) \
                or bottle.scan.search(req.raw_content or b""):
            refuse(flow, 403, "dlp")
            return
        if inject:
            req.headers[inject[0]] = inject[1]

    def responseheaders(self, flow):
        ctype = flow.response.headers.get("content-type", "")
        if ctype.startswith("text/event-stream"):
            flow.response.stream = True


addons = [Policy()]
