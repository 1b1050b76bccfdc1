"""The control plane's scale rows of `make bench` (issue 14; bench/README.md,
"Control plane").  Called by bench/run.py after its scenarios (or alone:
`python3 bench/run.py --scale-only`).

It starts a Redis of its own (loopback, a free port, no persistence), a
small nginx upstream (plain HTTP on 127.0.0.1 and 127.0.0.2, one port) and
gateways from the shipped nginx-conf/ with `bottle_policy redis://...` and
two workers, and measures:

- the put: N bottles of 10 routes each (a generated, realistic team
  document) written by one `bottlectl policy put`, and Redis's
  used_memory per bottle;
- the load: from starting nginx to both workers having logged
  "policy store ... read: N bottles";
- the memory: worker RSS (and PSS) with an empty store against N bottles,
  per bottle; and once a bottle's secret scanner is compiled;
- a change: a route added to one bottle with bottlectl, from the change's
  publication (as a subscriber of bottle:changes sees it) to a request for
  the new route being served by each worker; the route removed again, to
  a request being refused by each worker.  For bottles whose scanner each
  worker had compiled, and bottles never used.

Which worker served a probe comes from an access log of the bench's own
(`$pid $status $uri`, unbuffered) added to the shipped http configuration;
nothing else in the configuration changes but paths, the listen port, the
policy line and worker_processes 2.

`R` is bench/run.py's module (processes, ports, logging).
"""

import base64
import hashlib
import json
import os
import random
import re
import select
import socket
import statistics
import subprocess
import time

# issue 14's targets
LOAD_TARGET_S = 2.0
CHANGE_TARGET_MS = 50.0
ROUTES_PER_BOTTLE = 10

# public API hosts a bottle's routes pick from: (host, kind)
HOSTS = [
    ("api.github.com", "github_api"), ("github.com", "git"),
    ("codeload.github.com", "get"), ("objects.githubusercontent.com", "get"),
    ("api.anthropic.com", "provider"), ("api.openai.com", "openai"),
    ("registry.npmjs.org", "passthrough"), ("pypi.org", "get"),
    ("files.pythonhosted.org", "passthrough"), ("proxy.golang.org", "get"),
    ("crates.io", "get"), ("static.crates.io", "passthrough"),
    ("gitlab.com", "gitlab"), ("huggingface.co", "get"),
    ("storage.googleapis.com", "get"), ("hooks.slack.com", "slack"),
    ("api.stripe.com", "stripe"), ("sentry.io", "post"),
    ("dl.google.com", "passthrough"), ("deb.debian.org", "get"),
]


def _alnum(rnd, n):
    a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789"
    return "".join(rnd.choice(a) for _ in range(n))


def make_bottles(n, up_port, seed=14):
    """n bottles of ROUTES_PER_BOTTLE routes each: nine public hosts of
    several kinds (allow entries with globs, methods, auth from the egress
    tokens, passthrough, git fetch, dlp settings) and one internal service
    at 127.0.0.1:up_port (the bench's upstream, what the probes use).
    Returns (bottles as put, tokens by id)."""
    rnd = random.Random(seed)
    bottles, tokens = [], {}
    for i in range(n):
        bid = f"team{i // 100:03d}-agent{i:05d}"
        org = f"org-{i // 25:04d}"
        token = f"bt_{_alnum(rnd, 40)}"
        tokens[bid] = token
        egress = {"GITHUB_TOKEN": "ghp_" + _alnum(rnd, 36),
                  "SERVICE_KEY": "sk-svc-" + _alnum(rnd, 40)}
        routes = []
        for host, kind in rnd.sample(HOSTS, ROUTES_PER_BOTTLE - 1):
            r = {"host": host}
            if kind == "github_api":
                r.update(methods=["GET", "POST", "PATCH"],
                         allow=[{"path": f"/repos/{org}/*"},
                                {"path": "/user", "methods": ["GET"]},
                                {"path": f"/orgs/{org}/repos",
                                 "methods": ["GET"]}],
                         auth={"type": "bearer",
                               "value": "secret:GITHUB_TOKEN"},
                         dlp={"outbound": ["token_patterns",
                                           "known_secrets"],
                              "on_match": "block"})
            elif kind == "git":
                r.update(git={"fetch": True},
                         allow=[{"path": f"/{org}/*"}],
                         auth={"type": "token",
                               "value": "secret:GITHUB_TOKEN"})
            elif kind == "provider":
                r.update(agent_provider=True, methods=["*"],
                         auth={"type": "header", "name": "x-api-key",
                               "value": "secret:${SERVICE_KEY}"})
            elif kind == "openai":
                r.update(methods=["POST", "GET"],
                         allow=[{"path": "/v1/chat/completions",
                                 "methods": ["POST"]},
                                {"path": "/v1/models*"}],
                         auth={"type": "bearer",
                               "value": "secret:SERVICE_KEY"},
                         dlp={"outbound": ["token_patterns",
                                           "known_secrets", "entropy"],
                              "on_match": "redact"})
            elif kind == "passthrough":
                r.update(passthrough=True)
            elif kind == "gitlab":
                r.update(methods=["GET", "POST"],
                         allow=[{"path": f"/api/v4/projects/{org}%2F*"},
                                {"path": f"/{org}/*", "methods": ["GET"]}],
                         auth={"type": "header", "name": "private-token",
                               "value": "secret:GITHUB_TOKEN"})
            elif kind == "slack":
                r.update(methods=["POST"],
                         allow=[{"path": f"/services/T{i:07d}/*"}],
                         dlp={"outbound": ["token_patterns",
                                           "known_secrets"],
                              "on_match": "block"})
            elif kind == "stripe":
                r.update(methods=["GET"],
                         allow=[{"path": "/v1/charges*"},
                                {"path": "/v1/customers/*"}],
                         auth={"type": "bearer",
                               "value": "secret:SERVICE_KEY"})
            elif kind == "post":
                r.update(methods=["POST"],
                         allow=[{"path": "/api/*/envelope/",
                                 "headers": {"content-type":
                                             "application/x-sentry-*"}}])
            else:                               # read-only
                r.update(allow=[{"path": "/*"}])
            routes.append(r)
        routes.append({"host": "127.0.0.1", "port": up_port,
                       "methods": ["GET", "POST"],
                       "allow": [{"path": "/v1/*"},
                                 {"path": "/probe/*", "methods": ["GET"]},
                                 {"path": "/health", "methods": ["GET"]}],
                       "auth": {"type": "bearer",
                                "value": "secret:SERVICE_KEY"},
                       "dlp": {"outbound": ["token_patterns",
                                            "known_secrets"],
                               "on_match": "block"}})
        rnd.shuffle(routes)
        bottles.append({
            "id": bid, "slug": bid,
            "token_sha256": hashlib.sha256(token.encode()).hexdigest(),
            "canary": f"CANARY-{_alnum(rnd, 16)}",
            "egress_tokens": egress,
            "routes": routes,
        })
    return bottles, tokens


###############################################################################
# a small Redis client (RESP), standard library only

class Redis:
    def __init__(self, port, timeout=10):
        self.s = socket.create_connection(("127.0.0.1", port), timeout)
        self.buf = b""

    def send(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.s.sendall(b"".join(out))

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.s.recv(65536)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def reply(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t in (b"+", b":"):
            return int(rest) if t == b":" else rest.decode()
        if t == b"-":
            raise RuntimeError("redis: " + rest.decode())
        if t == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                chunk = self.s.recv(65536)
                if not chunk:
                    raise ConnectionError("redis closed the connection")
                self.buf += chunk
            data, self.buf = self.buf[:n], self.buf[n + 2:]
            return data
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise RuntimeError(f"redis: unexpected reply {line[:40]!r}")

    def cmd(self, *args):
        self.send(*args)
        return self.reply()

    def pending(self):
        """A complete message may be waiting (no blocking)."""
        if self.buf:
            return True
        r, _, _ = select.select([self.s], [], [], 0)
        return bool(r)

    def close(self):
        self.s.close()


def used_memory(port):
    r = Redis(port)
    try:
        info = r.cmd("INFO", "memory").decode()
    finally:
        r.close()
    return int(re.search(r"^used_memory:(\d+)", info, re.M).group(1))


###############################################################################
# processes

def worker_pids(master):
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(rest[1]) == master:
            try:
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    cmd = f.read()
            except OSError:
                continue
            if b"worker process" in cmd:
                out.append(int(d))
    return sorted(out)


def mem_kib(pid):
    """VmRSS and Pss (smaps_rollup) of a process, KiB."""
    rss = pss = None
    with open(f"/proc/{pid}/status") as f:
        m = re.search(r"^VmRSS:\s+(\d+)", f.read(), re.M)
        rss = int(m.group(1)) if m else None
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            m = re.search(r"^Pss:\s+(\d+)", f.read(), re.M)
            pss = int(m.group(1)) if m else None
    except OSError:
        pass
    return rss, pss


class Scale:
    def __init__(self, R, d, n):
        self.R, self.n = R, n
        self.d = os.path.join(d, "scale")
        os.makedirs(self.d)
        self.ctl = os.path.join(R.TOP, "build", "bottlectl")
        self.seq = 0
        self.res = {"bottles": n, "routes_per_bottle": ROUTES_PER_BOTTLE}

    def log(self, msg):
        self.R.log(f"control plane: {msg}")

    # Redis, the upstream, the gateway

    def start_redis(self):
        self.rport = self.R.free_port()
        p = self.R.PROCS.popen("redis-server", [
            "redis-server", "--port", str(self.rport), "--bind", "127.0.0.1",
            "--save", "", "--appendonly", "no", "--dir", self.d,
            "--logfile", os.path.join(self.d, "redis.log"),
            "--daemonize", "no", "--protected-mode", "no"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.R.wait_port(self.rport, p, what="redis-server")
        self.store = f"redis://127.0.0.1:{self.rport}"

    def start_upstream(self):
        while True:
            port = self.R.free_port()
            try:
                with socket.socket() as s:
                    s.bind(("127.0.0.2", port))
                break
            except OSError:
                continue
        self.up_port = port
        u = os.path.join(self.d, "upstream")
        os.makedirs(u)
        with open(os.path.join(u, "nginx.conf"), "w") as f:
            f.write(f"""daemon off;
worker_processes 1;
pid {u}/nginx.pid;
error_log {u}/error.log;
events {{ }}
http {{
    access_log off;
    keepalive_requests 100000;
    server {{
        listen 127.0.0.1:{port};
        listen 127.0.0.2:{port};
        location / {{ return 200 "ok\\n"; }}
    }}
}}
""")
        p = self.R.PROCS.popen("scale upstream", [
            self.R.NGINX, "-p", u, "-c", os.path.join(u, "nginx.conf"),
            "-e", os.path.join(u, "error.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.R.wait_port(port, p, what="scale upstream")

    def write_gateway_conf(self, name):
        """nginx-conf/ as scripts/bottle-gateway writes it, with the store
        as the policy, two workers and the probe log."""
        g = os.path.join(self.d, name)
        for sub in ("conf", "run", "logs"):
            os.makedirs(os.path.join(g, sub))
        ca = os.path.join(self.d, "ca")
        if not os.path.exists(ca):
            r = self.R.run([os.path.join(self.R.TOP, "scripts", "bottle-ca"),
                            "create", ca])
            if r.returncode:
                raise RuntimeError("bottle-ca create: " + r.stderr.strip())
        port = self.R.free_port()
        subs = [
            ("/usr/lib/nginx/modules/ngx_bottle_module.so", self.R.MODULE),
            ("/run/ngx-bottle", os.path.join(g, "run")),
            ("/var/log/ngx-bottle", os.path.join(g, "logs")),
            ("/etc/ngx-bottle/ca/ca.crt", os.path.join(ca, "ca.crt")),
            ("/etc/ngx-bottle/ca/ca.key", os.path.join(ca, "ca.key")),
            ("127.0.0.1:9099", f"127.0.0.1:{port}"),
        ]
        src = os.path.join(self.R.TOP, "nginx-conf")
        for fn in sorted(os.listdir(src)):
            if not fn.endswith(".conf"):
                continue
            with open(os.path.join(src, fn)) as f:
                s = f.read()
            for a, b in subs:
                s = s.replace(a, b)
            if fn == "bottle-main.conf":
                s, k = re.subn(r"(?m)^bottle_policy\s+\S+",
                               f"bottle_policy     {self.store}", s)
                if not k:
                    raise RuntimeError("nginx-conf/bottle-main.conf: no "
                                       "bottle_policy")
            if fn == "nginx.conf":
                s, k = re.subn(r"(?m)^worker_processes\s+\S+;",
                               "worker_processes  2;", s)
                if not k:
                    raise RuntimeError("nginx-conf/nginx.conf: no "
                                       "worker_processes")
            if fn == "bottle-http.conf":
                # the format at http level, the log in every server
                s = ("# the bench's: which worker served each probe\n"
                     "log_format  bench_probe  '$pid $status $uri';\n\n"
                     + s)
            if fn == "bottle-server.conf":
                s, k = re.subn(
                    r"(?m)^(access_log\s+.*ngx_bottle buffer=64k flush=1s;)$",
                    r"\1\n"
                    "access_log  " + os.path.join(g, "logs", "probe.log")
                    + " bench_probe;", s)
                if not k:
                    raise RuntimeError("nginx-conf/bottle-server.conf: no "
                                       "access_log to add the probe log to")
            with open(os.path.join(g, "conf", fn), "w") as f:
                f.write(s)
        return g, port

    def start_gateway(self, name, expect):
        """Starts nginx; returns once both workers logged "read: expect
        bottles" (or raises), with the times."""
        g, port = self.write_gateway_conf(name)
        conf = os.path.join(g, "conf", "nginx.conf")
        err = os.path.join(g, "logs", "error.log")
        r = self.R.run([self.R.NGINX, "-t", "-q", "-p", g, "-c", conf,
                        "-e", err])
        if r.returncode:
            raise RuntimeError("scale gateway: nginx -t: " + r.stderr.strip())
        open(err, "a").close()
        pat = re.compile(rb"(\d+)#\d+: .*policy store \S+ read: (\d+) "
                         rb"bottles")
        # the master's read, at configuration (when the module does it)
        mpat = re.compile(rb"bottle_policy: store \S+ read: (\d+) bottles")
        master_s = None
        out = open(os.path.join(g, "logs", "stderr.log"), "w")
        t0 = time.monotonic()
        p = self.R.PROCS.popen(f"scale gateway {name}", [
            self.R.NGINX, "-p", g, "-c", conf, "-e", err,
            "-g", "daemon off;"], stdout=out, stderr=out)
        seen, pos, buf = {}, 0, b""
        deadline = t0 + 120
        with open(err, "rb") as f:
            while len(seen) < 2:
                now = time.monotonic()
                if now > deadline:
                    raise RuntimeError(f"scale gateway {name}: workers read "
                                       f"{seen} of {expect} bottles in 120 s"
                                       f" (see {err})")
                if p.poll() is not None:
                    raise RuntimeError(f"scale gateway {name} exited "
                                       f"({p.returncode}): see {err}")
                chunk = f.read()
                if chunk:
                    buf += chunk
                    lines = buf.split(b"\n")
                    buf = lines.pop()
                    for line in lines:
                        if master_s is None and mpat.search(line):
                            master_s = now - t0
                        m = pat.search(line)
                        if m and int(m.group(2)) == expect:
                            seen.setdefault(int(m.group(1)), now - t0)
                else:
                    time.sleep(0.002)
        workers = worker_pids(p.pid)
        cpu = [self.R.cpu_seconds([w]) for w in workers]
        gw = {"proc": p, "dir": g, "port": port, "workers": workers,
              "load_s": max(seen.values()),
              "per_worker_s": sorted(seen.values()),
              "cpu_s": cpu, "master_s": master_s,
              "master_cpu_s": self.R.cpu_seconds([p.pid]),
              "probe_log": os.path.join(g, "logs", "probe.log"),
              "probe_pos": 0}
        self.wait_listen(port, p)
        return gw

    def wait_listen(self, port, p):
        self.R.wait_port(port, p, what="scale gateway")

    def stop_gateway(self, gw):
        p = gw["proc"]
        if p.poll() is None:
            p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()

    def worker_mem(self, gw):
        return {pid: mem_kib(pid) for pid in gw["workers"]}

    def gateway_pss(self, gw):
        """PSS of the master and the workers, KiB: what the gateway takes,
        pages shared after fork counted once."""
        return sum(mem_kib(pid)[1] or 0
                   for pid in [gw["proc"].pid] + gw["workers"])

    # bottlectl

    def put(self, doc_path=None, data=None):
        cmd = [self.ctl, "--store", self.store, "policy", "put",
               doc_path or "-"]
        t0 = time.monotonic()
        r = subprocess.run(cmd, input=data, capture_output=True,
                           text=True, timeout=300)
        dt = time.monotonic() - t0
        if r.returncode:
            raise RuntimeError("bottlectl policy put: " + r.stderr.strip())
        return dt

    # probes: one plain HTTP proxy request each, Connection: close

    def probe(self, gw, token, host, path, timeout=5):
        self.seq += 1
        uri = f"{path}{self.seq}"
        auth = base64.b64encode(f"agent:{token}".encode()).decode()
        req = (f"GET http://{host}:{self.up_port}{uri} HTTP/1.1\r\n"
               f"Host: {host}:{self.up_port}\r\n"
               f"Proxy-Authorization: Basic {auth}\r\n"
               "Connection: close\r\n\r\n").encode()
        t0 = time.monotonic()
        status = 0
        try:
            with socket.create_connection(("127.0.0.1", gw["port"]),
                                          timeout) as s:
                s.sendall(req)
                data = b""
                while b"\r\n" not in data:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    data += chunk
                m = re.match(rb"HTTP/1\.[01] (\d{3})", data)
                status = int(m.group(1)) if m else 0
                while s.recv(65536):
                    pass
        except OSError:
            status = -1
        return uri, status, t0, time.monotonic()

    def probe_log(self, gw):
        """New lines of the probe log: uri -> (pid, status)."""
        out = {}
        try:
            with open(gw["probe_log"], "rb") as f:
                f.seek(gw["probe_pos"])
                data = f.read()
        except FileNotFoundError:
            return out
        end = data.rfind(b"\n") + 1
        gw["probe_pos"] += end
        for line in data[:end].decode(errors="replace").splitlines():
            parts = line.split()
            if len(parts) == 3:
                out[parts[2]] = (int(parts[0]), int(parts[1]))
        return out

    def warm(self, gw, bid, tokens, max_tries=60):
        """Requests for bid's internal route until every worker served one
        (each has compiled the bottle's scanner); returns the workers."""
        served = set()
        for _ in range(max_tries):
            uri, st, _, _ = self.probe(gw, tokens[bid], "127.0.0.1",
                                       "/v1/warm/")
            if st != 200:
                raise RuntimeError(f"warm-up request of {bid}: {st}")
            time.sleep(0.002)
            for u, (pid, s) in self.probe_log(gw).items():
                if s == 200:
                    served.add(pid)
            if served >= set(gw["workers"]):
                break
        return served

    def change(self, gw, bottle, token, add):
        """Puts bottle with (add) or without the route to 127.0.0.2 and
        probes that route until every worker gives the expected answer.
        Returns per-worker latency (ms) from the change's publication."""
        b = json.loads(json.dumps(bottle))
        if add:
            b["routes"].append({"host": "127.0.0.2", "port": self.up_port,
                                "methods": ["GET"],
                                "allow": [{"path": "/probe/*"}]})
        data = json.dumps(b)
        sub = Redis(self.rport)
        sub.cmd("SUBSCRIBE", "bottle:changes")
        t_start = time.monotonic()
        ctl = subprocess.Popen([self.ctl, "--store", self.store, "policy",
                                "put", "-"], stdin=subprocess.PIPE,
                               stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
        ctl.stdin.write(data)
        ctl.stdin.close()
        t_pub = t_exit = None
        # the publication happened after the last look that found nothing:
        # counting from there makes the figure an upper bound
        last_empty = time.monotonic()
        probes = []             # (uri, status, start, end)
        want_ok = 200 if add else None
        workers = set(gw["workers"])
        got = {}                # uri -> (pid, status)
        deadline = t_start + 5
        done_at = None
        while time.monotonic() < deadline:
            probes.append(self.probe(gw, token, "127.0.0.2", "/probe/"))
            while t_pub is None and sub.pending():
                msg = sub.reply()
                if (isinstance(msg, list) and msg[0] == b"message"
                        and msg[2].split()[0] == bottle["id"].encode()):
                    t_pub = last_empty
            if t_pub is None:
                last_empty = time.monotonic()
            if t_exit is None and ctl.poll() is not None:
                t_exit = time.monotonic()
                if ctl.returncode:
                    raise RuntimeError("bottlectl policy put: "
                                       + ctl.stderr.read().strip())
            got.update(self.probe_log(gw))
            if t_pub is None:
                continue
            ok = self._settled(probes, got, workers, t_pub, add)
            if ok and done_at is None:
                done_at = time.monotonic()
            if done_at and time.monotonic() - done_at > 0.1:
                break
        ctl.wait()
        sub.close()
        time.sleep(0.05)
        got.update(self.probe_log(gw))
        lat = self._latency(probes, got, workers, t_pub, add)
        low = self._latency(probes, got, workers, t_pub, add, lower=True)
        # the timeline, for a look at a figure that surprises (BENCH_KEEP)
        with open(os.path.join(self.d, "changes.jsonl"), "a") as f:
            z = t_pub or t_start
            f.write(json.dumps({
                "bottle": bottle["id"], "add": add,
                "bottlectl_start_ms": (t_start - z) * 1e3,
                "bottlectl_exit_ms": (t_exit - z) * 1e3 if t_exit else None,
                "probes": [(u, st, got.get(u, (None,))[0],
                            round((s - z) * 1e3, 2), round((e - z) * 1e3, 2))
                           for u, st, s, e in probes]}) + "\n")
        return {"per_worker_ms": list(lat.values()),
                "per_worker_low_ms": list(low.values()),
                "low_ms": max(low.values()) if low and None not in
                low.values() else None,
                "ms": max(lat.values()) if lat and None not in
                lat.values() else None,
                "bottlectl_ms": (t_exit - t_start) * 1e3 if t_exit else None,
                "from_start_ms": (max(lat.values()) + (t_pub - t_start) * 1e3)
                if lat and None not in lat.values() and t_pub else None,
                "probes": len(probes),
                "probe_ms": statistics.median(
                    (e - s) * 1e3 for _, _, s, e in probes)}

    @staticmethod
    def _ok(status, add):
        return status == 200 if add else status in (403, 407)

    def _latency(self, probes, got, workers, t_pub, add, lower=False):
        """Per worker: the end of its first probe after which all its
        probes got the new answer, from t_pub; None if never.  With lower:
        the start of the probe before it on that worker (the change had
        not applied then, or not long before), from t_pub."""
        lat = {}
        for w in workers:
            first = prev = last_old = None
            for uri, st, s, e in probes:
                pid, logged = got.get(uri, (None, st))
                if pid != w:
                    continue
                if self._ok(logged, add):
                    if first is None:
                        first, prev = e, last_old
                else:
                    first, last_old = None, s
            if first is None or t_pub is None:
                lat[w] = None
            elif lower:
                lat[w] = max(0.0, (prev - t_pub) * 1e3) if prev else 0.0
            else:
                lat[w] = max(0.0, (first - t_pub) * 1e3)
        return lat

    def _settled(self, probes, got, workers, t_pub, add):
        lat = self._latency(probes, got, workers, t_pub, add)
        return all(v is not None for v in lat.values())

    # the whole section

    def run(self):
        R, res = self.R, self.res
        n = self.n
        self.start_redis()
        self.start_upstream()
        bottles, tokens = make_bottles(n, self.up_port)
        by_id = {b["id"]: b for b in bottles}
        doc = os.path.join(self.d, "bottles.json")
        with open(doc, "w") as f:
            json.dump({"bottles": bottles}, f)
        res["document_bytes"] = os.path.getsize(doc)

        self.log("a gateway on an empty store")
        gw = self.start_gateway("empty", 0)
        res["empty_load_s"] = gw["load_s"]
        time.sleep(0.5)
        before = self.worker_mem(gw)
        pss0 = self.gateway_pss(gw)
        self.stop_gateway(gw)

        mem0 = used_memory(self.rport)
        self.log(f"bottlectl policy put: {n} bottles "
                 f"({res['document_bytes'] / 1e6:.1f} MB)")
        res["put_s"] = self.put(doc)
        res["redis_bytes_per_bottle"] = (used_memory(self.rport) - mem0) / n

        self.log("a gateway loading them")
        gw = self.start_gateway("loaded", n)
        res["load_s"] = gw["load_s"]
        res["load_per_worker_s"] = gw["per_worker_s"]
        res["load_worker_cpu_s"] = gw["cpu_s"]
        res["load_master_s"] = gw["master_s"]
        res["load_master_cpu_s"] = gw["master_cpu_s"]
        self.log(f"loaded in {gw['load_s']:.3f} s (workers "
                 + ", ".join(f"{x:.3f}" for x in gw["per_worker_s"]) + ")")
        time.sleep(0.5)
        after = self.worker_mem(gw)
        res["gateway_pss_kib_per_bottle"] = (self.gateway_pss(gw) - pss0) / n
        rss = [(after[a][0] - before[b][0]) / n
               for a, b in zip(sorted(after), sorted(before))]
        pss = [(after[a][1] - before[b][1]) / n
               for a, b in zip(sorted(after), sorted(before))
               if after[a][1] is not None and before[b][1] is not None]
        res["worker_rss_kib_empty"] = [before[k][0] for k in sorted(before)]
        res["worker_rss_kib_loaded"] = [after[k][0] for k in sorted(after)]
        res["kib_per_bottle"] = statistics.mean(rss)
        res["pss_kib_per_bottle"] = statistics.mean(pss) if pss else None

        ids = [b["id"] for b in bottles]
        rnd = random.Random(1)
        rnd.shuffle(ids)
        samples = 3 if R.QUICK else 7
        scan_n = min(200 if R.QUICK else 500, n // 2)
        spare = ids[:2 * samples + 4]
        scan_ids = ids[2 * samples + 4:2 * samples + 4 + scan_n]

        # the scanner's memory: warm the connection pools first
        self.log(f"the scanner's memory: one request for each of {scan_n} "
                 "bottles")
        for bid in spare[-4:]:
            self.warm(gw, bid, tokens)
        time.sleep(0.3)
        self.probe_log(gw)
        m0 = self.worker_mem(gw)
        bad = 0
        for bid in scan_ids:
            _, st, _, _ = self.probe(gw, tokens[bid], "127.0.0.1", "/v1/x/")
            bad += st != 200
        time.sleep(0.5)
        per = {}
        for u, (pid, s) in self.probe_log(gw).items():
            per[pid] = per.get(pid, 0) + 1
        m1 = self.worker_mem(gw)
        grew = sum(m1[p][0] - m0[p][0] for p in m1)
        grew_pss = sum(m1[p][1] - m0[p][1] for p in m1
                       if m1[p][1] is not None and m0[p][1] is not None)
        res["scanner_kib_per_bottle"] = grew / scan_n
        res["scanner_pss_kib_per_bottle"] = grew_pss / scan_n
        res["scanner_bottles"] = scan_n
        res["scanner_requests_per_worker"] = sorted(per.values())
        res["scanner_failed"] = bad
        res["worker_rss_kib_scanners"] = [m1[k][0] for k in sorted(m1)]

        # changes
        kinds = {"compiled": spare[:samples],
                 "uncompiled": spare[samples:2 * samples]}
        res["change"] = {}
        for kind, bids in kinds.items():
            self.log(f"changes: {len(bids)} bottles whose scanner "
                     f"{'every worker compiled' if kind == 'compiled' else 'no worker compiled'}")
            rows = {"add": [], "remove": []}
            for bid in bids:
                if kind == "compiled":
                    self.warm(gw, bid, tokens)
                a = self.change(gw, by_id[bid], tokens[bid], True)
                rows["add"].append(a)
                time.sleep(0.1)
                r = self.change(gw, by_id[bid], tokens[bid], False)
                rows["remove"].append(r)
                self.log(f"  {bid}: added {fmt_ms(a['ms'])} ms, removed "
                         f"{fmt_ms(r['ms'])} ms (bottlectl "
                         f"{fmt_ms(a['bottlectl_ms'])} ms, probe "
                         f"{fmt_ms(a['probe_ms'])} ms)")
                time.sleep(0.1)
            res["change"][kind] = rows
        res["workers"] = len(gw["workers"])
        res["gateway_error_log_lines"] = count_lines(
            os.path.join(gw["dir"], "logs", "error.log"))
        self.stop_gateway(gw)
        return res


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return None


def fmt_ms(v, digits=1):
    return "—" if v is None else f"{v:.{digits}f}"


def summary(rows, field="ms"):
    vals = [r[field] for r in rows if r.get(field) is not None]
    missing = len(rows) - len(vals)
    if not vals:
        return None, None, missing
    return statistics.median(vals), max(vals), missing


def control_plane(R, d, n):
    """Runs the section; returns its figures (json-able)."""
    cpus = os.sched_getaffinity(0)
    # the gateway's two workers, Redis and the probes run on every core
    os.sched_setaffinity(0, set(range(os.cpu_count())))
    try:
        res = Scale(R, d, n).run()
    finally:
        os.sched_setaffinity(0, cpus)
    res["loadavg_end"] = os.getloadavg()[0]
    return res


def report_lines(res):
    """The "Control plane" section of the report."""
    out = []
    w = out.append
    if not res:
        return out
    w("## Control plane")
    w("")
    if res.get("error"):
        w(f"Not measured: {res['error']}")
        return out
    n = res["bottles"]
    w(f"{n:,} bottles of {res['routes_per_bottle']} routes each in a Redis "
      "of the bench's own (bench/scale.py); a gateway from the shipped "
      "nginx-conf/ with `bottle_policy redis://...` and 2 workers, "
      "unpinned; 1-minute load average "
      f"{res.get('loadavg_start', 0):.2f} before this section, "
      f"{res.get('loadavg_end', 0):.2f} after.")
    w("")
    w("| metric | value | target | met? |")
    w("|---|---:|---|---|")

    def row(metric, value, target, ok):
        met = "—" if ok is None else ("yes" if ok else "**no**")
        w(f"| {metric} | {value} | {target} | {met} |")
    load = res["load_s"]
    row(f"load at start: nginx start to both workers \"read: {n} bottles\"",
        f"{load:.3f} s (workers "
        + ", ".join(f"{x:.3f}" for x in res["load_per_worker_s"])
        + f"; empty store {res['empty_load_s']:.3f} s"
        + ("; CPU " + " and ".join(f"{x:.2f}" for x in
                                   res["load_worker_cpu_s"]) + " s"
           if res.get("load_worker_cpu_s") else "")
        + (f"; the master read them at configuration in "
           f"{res['load_master_s']:.3f} s, CPU {res['load_master_cpu_s']:.2f} s"
           if res.get("load_master_s") is not None else "") + ")",
        f"≤ {LOAD_TARGET_S:g} s", load <= LOAD_TARGET_S)
    for kind, text in (("compiled", "scanner compiled on every worker"),
                       ("uncompiled", "scanner never compiled")):
        rows = res["change"][kind]
        med, mx, miss = summary(rows["add"])
        gone = f", {miss} never applied" if miss else ""
        row(f"change: route added, served on both workers ({text})",
            f"median {fmt_ms(med)} ms, max {fmt_ms(mx)} ms "
            f"({len(rows['add'])} changes{gone})",
            f"≤ {CHANGE_TARGET_MS:g} ms",
            None if med is None else (mx <= CHANGE_TARGET_MS and not miss))
        med, mx, miss = summary(rows["remove"])
        gone = f", {miss} never applied" if miss else ""
        row(f"change: route removed, refused on both workers ({text})",
            f"median {fmt_ms(med)} ms, max {fmt_ms(mx)} ms "
            f"({len(rows['remove'])} changes{gone})",
            f"≤ {CHANGE_TARGET_MS:g} ms",
            None if med is None else (mx <= CHANGE_TARGET_MS and not miss))
    allrows = [r for k in res["change"].values() for v in k.values()
               for r in v]
    each = sorted(x for r in allrows for x in r.get("per_worker_ms", [])
                  if x is not None)
    low = sorted(x for r in allrows for x in r.get("per_worker_low_ms", [])
                 if x is not None)
    if each:
        row("change, each worker on its own (all the changes above)",
            f"median {fmt_ms(statistics.median(each))} ms, max "
            f"{fmt_ms(each[-1])} ms; its last old answer: median "
            f"{fmt_ms(statistics.median(low))} ms, max {fmt_ms(low[-1])} ms",
            f"≤ {CHANGE_TARGET_MS:g} ms", each[-1] <= CHANGE_TARGET_MS)
    med, mx, _ = summary(allrows, "from_start_ms")
    row("change, counted from starting bottlectl instead", f"median "
        f"{fmt_ms(med)} ms, max {fmt_ms(mx)} ms", "", None)
    med, mx, _ = summary(allrows, "bottlectl_ms")
    pm, px, _ = summary(allrows, "probe_ms")
    row("one-bottle `bottlectl policy put` (process start to exit)",
        f"median {fmt_ms(med)} ms, max {fmt_ms(mx)} ms", "", None)
    row("memory per bottle, loaded (worker VmRSS, each worker)",
        f"{res['kib_per_bottle']:.1f} KiB (PSS "
        f"{fmt_ms(res['pss_kib_per_bottle'])} KiB; workers "
        + " → ".join(
            "+".join(f"{k / 1024:.0f}" for k in res[f])
            for f in ("worker_rss_kib_empty", "worker_rss_kib_loaded"))
        + " MiB)", "reported", None)
    if res.get("gateway_pss_kib_per_bottle") is not None:
        row("memory per bottle, loaded: the gateway (PSS of master and "
            "workers)", f"{res['gateway_pss_kib_per_bottle']:.1f} KiB",
            "reported", None)
    row("memory per bottle once its scanner is compiled (extra)",
        f"{res['scanner_kib_per_bottle']:.1f} KiB (PSS "
        f"{fmt_ms(res['scanner_pss_kib_per_bottle'])} KiB; "
        f"{res['scanner_bottles']} bottles, requests per worker "
        + "/".join(map(str, res["scanner_requests_per_worker"]))
        + (f", {res['scanner_failed']} failed" if res["scanner_failed"]
           else "") + ")", "reported", None)
    row("Redis used_memory per bottle",
        f"{res['redis_bytes_per_bottle'] / 1024:.1f} KiB", "reported", None)
    row(f"`bottlectl policy put` of all {n:,} bottles (one document, "
        f"{res['document_bytes'] / 1e6:.1f} MB)", f"{res['put_s']:.2f} s",
        "reported", None)
    w("")
    w("Load: from starting nginx (master, `daemon off`) to the last worker's "
      "notice in the error log, polled every 2 ms; CPU: each worker's "
      "utime+stime (its thread pool's included) then, and the master's "
      "(its read of the store at configuration, if any). A change: one "
      "`bottlectl policy put -` of the bottle with a route to "
      "127.0.0.2 added (or removed again); the time runs from its "
      "publication on `bottle:changes` (as a subscriber of the bench sees "
      "it, counted from the bench's last look before it) to the end of "
      "the first probe on each worker after which every probe on that "
      "worker got the new answer (200, or 403 once removed): an upper "
      "bound. The rows per change give the later of the two workers; "
      "the kernel hands new connections to one worker in runs of several, "
      "so that one is often the worker no probe reached for a while. "
      "\"Its last old answer\": the start of the last probe on that worker "
      "that still got the old answer, a lower bound. Probes: plain HTTP "
      "proxy requests with `Connection: close`, one after another "
      f"(median {fmt_ms(pm, 2)} ms each), attributed to a worker by an "
      "unbuffered `$pid $status $uri` access log. \"Compiled\": every "
      "worker served the bottle before the change, so the new policy is "
      "swapped in with its scanner compiled in the thread pool; "
      "\"never compiled\": the first request on the new route compiles "
      "it. Memory: VmRSS of each worker after \"read: N bottles\" against "
      "a gateway of the same configuration on an empty store, over N "
      "(pages a worker shares with the master count in full in each); "
      "the gateway's: the PSS of the master and the workers summed, "
      "shared pages counted once; "
      "the scanner's: the workers' RSS growth over one request each for "
      "bottles not used before, over their number.")
    return out
