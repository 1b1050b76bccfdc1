#!/usr/bin/env python3
"""`make bench`: the gateway side by side with a direct connection, plain
nginx and mitmproxy, on loopback, in one run (bench/README.md).

Starts a fake TLS upstream (nginx), a DNS server for the gateway (dnsmasq),
the ceiling (nginx reverse proxy), the peer (mitmdump with
bench/mitm_addon.py) and the gateway (scripts/bottle-gateway), checks that
each does what it should, measures every scenario against every target in
rounds, prints a markdown table and saves it (and the raw figures as JSON)
under bench/results/.  Stops everything it started.

Environment: BENCH_QUICK=1 (one short round), BENCH_ROUNDS, BENCH_WINDOW,
BENCH_WARMUP (seconds), BENCH_MODULE (default build/ngx_bottle_module.so),
BENCH_KEEP=1 (keep the run directory), BENCH_RESULTS (output directory),
BENCH_SCALE_BOTTLES (the control plane's bottles: 10000, quick 1000).
Python 3 standard library only.
"""

import base64
import datetime
import hashlib
import json
import os
import platform
import random
import re
import shutil
import signal
import socket
import ssl
import statistics
import subprocess
import sys
import tempfile
import threading
import time

import firehose
import scale
import supervise

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(TOP, "bench")


def env_num(name, default):
    v = os.environ.get(name, "")
    return type(default)(v) if v else default


QUICK = os.environ.get("BENCH_QUICK", "") not in ("", "0")
# 5 rounds: on a shared VM a burst of other work can inflate a window's CPU
# time by half, and a median of 5 stands two such windows
ROUNDS = env_num("BENCH_ROUNDS", 1 if QUICK else 5)
WARMUP = env_num("BENCH_WARMUP", 1.0)
WINDOW = env_num("BENCH_WINDOW", 2.0 if QUICK else 3.0)
FIRST_WARMUP = 2.0 if QUICK else 3.0      # per target, before round 1
SSE_CLIENTS = 4 if QUICK else 8           # concurrent SSE streams
SSE_PER_CLIENT = 2 if QUICK else 3        # measured streams per client
MODULE = os.environ.get("BENCH_MODULE",
                        os.path.join(TOP, "build", "ngx_bottle_module.so"))
RESULTS = os.environ.get("BENCH_RESULTS", os.path.join(BENCH, "results"))
NGINX = os.environ.get("TEST_NGINX_BINARY", "/usr/sbin/nginx")
# the load generator: ours (bench/load.c), or Debian's hey to compare with
LOADGEN = os.environ.get("BENCH_LOAD", "bottle-load")
LOAD_EXE = None                           # bottle-load, once built
# the control plane's scale rows (bench/scale.py, issue 14)
SCALE_BOTTLES = env_num("BENCH_SCALE_BOTTLES", 1000 if QUICK else 10000)

HOST = "api.bench.test"
TOKEN = "bench-agent-token-0123456789"
CANARY = "canary-bench-5f1c0e9a77"
ROUTE_TOKEN = "route-token-the-gateway-injects-0123"
AGENT_HEADERS = ["Authorization: Bearer agent-own-credential-0123",
                 "X-Api-Key: agent-own-key-0123"]
# a GitHub-shaped token: what the DLP check sends
TOKEN_SHAPED = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
CLK_TCK = os.sysconf("SC_CLK_TCK")

# the targets (issue 6, "Done when")
GOALS = {"mitm_x": 10.0, "ceiling_x": 0.8, "get16_cpu": 0.06,
         "post_cpu": 0.8, "newconn_cpu": 0.7}

TARGETS = [("direct", "direct"),
           ("ceiling", "nginx reverse proxy (ceiling)"),
           ("mitmproxy", "mitmproxy + addon"),
           ("gateway", "ngx_bottle gateway")]

# nginx workers of the ceiling and of the gateway: the proxy under test is
# pinned to one core, and one worker per core is nginx's own advice (1.22's
# "auto" counts every CPU of the machine, not the ones it may run on)
PROXY_WORKERS = 1

SCENARIOS = [
    # key, label, load (concurrency, path, POST, a new connection each)
    ("get1", "GET 1 KiB, keep-alive, c=1", dict(c=1, path="/1k")),
    ("get16", "GET 1 KiB, keep-alive, c=16", dict(c=16, path="/1k")),
    ("get64", "GET 1 KiB, keep-alive, c=64", dict(c=64, path="/1k")),
    ("post256", "POST 256 KiB JSON, keep-alive, c=16",
     dict(c=16, path="/sink", post=True)),
    ("newconn", "GET 1 KiB, new connection per request, c=16",
     dict(c=16, path="/1k", new_conn=True)),
    ("sse", "SSE: time to first event", None),
    # the gateway only: a bystander bottle's latency, quiet and while
    # another bottle sends gzip bombs (issue 11, item 5)
    ("bombs", "GET 1 KiB, c=1, bystander while another bottle sends bombs",
     dict(c=1, path="/1k", bombs=True, gateway_only=True)),
]

# the second bottle, which sends the bombs
BOMB_TOKEN = "bench-bomber-token-0123456789"
# 63 MiB of zeros, gzip of gzip: a few hundred bytes (made when needed)
BOMB = []


def log(msg):
    print(f"bench: {msg}", file=sys.stderr, flush=True)


###############################################################################
# processes: everything started is registered and stopped at the end

class Processes:
    def __init__(self):
        self.stops = []

    def popen(self, name, cmd, **kw):
        p = subprocess.Popen(cmd, stdin=subprocess.DEVNULL,
                             start_new_session=True, **kw)

        def stop():
            if p.poll() is None:
                p.terminate()
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()
        self.stops.append((name, stop))
        return p

    def at_stop(self, name, fn):
        self.stops.append((name, fn))

    def stop_all(self):
        while self.stops:
            name, stop = self.stops.pop()
            try:
                stop()
            except Exception as e:          # keep stopping the others
                log(f"stopping {name}: {e}")


PROCS = Processes()


def on_signal(signum, frame):
    raise SystemExit(f"signal {signum}")


def pin(core):
    return ["taskset", "-c", str(core)] if core is not None else []


def free_port():
    # a port free for TCP and UDP (dnsmasq needs both)
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        try:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as u:
                u.bind(("127.0.0.1", port))
            return port
        except OSError:
            continue


def wait_port(port, proc=None, timeout=30.0, what="server",
              addr="127.0.0.1"):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            socket.create_connection((addr, port), 0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"{what} does not listen on {addr}:{port}")


def upstream_address():
    """A loopback address with port 443 free.  The upstream listens on 443
    because hey sends "name:port" as the TLS server name when the URL has
    a port, which the gateway refuses (no such host name)."""
    rnd = random.Random()
    for _ in range(100):
        addr = "127.%d.%d.%d" % (rnd.randint(1, 254), rnd.randint(0, 255),
                                 rnd.randint(1, 254))
        try:
            with socket.socket() as s:
                s.bind((addr, 443))
            return addr
        except PermissionError:
            sys.exit("bench: cannot bind port 443 (the fake upstream's): "
                     "run as root, or set the sysctl "
                     "net.ipv4.ip_unprivileged_port_start=443")
        except OSError:
            continue
    sys.exit("bench: no loopback address with port 443 free")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


###############################################################################
# /proc: CPU time and peak RSS of a process tree

def proc_tree(root):
    children = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def cpu_seconds(pids):
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
            total += int(fields[11]) + int(fields[12])   # utime, stime
        except (OSError, IndexError, ValueError):
            pass
    return total / CLK_TCK


def reset_peak_rss(pids):
    for pid in pids:
        try:
            with open(f"/proc/{pid}/clear_refs", "w") as f:
                f.write("5")
        except OSError:
            pass


def peak_rss_mib(pids):
    kib = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                m = re.search(r"^VmHWM:\s+(\d+)", f.read(), re.M)
            kib += int(m.group(1)) if m else 0
        except OSError:
            pass
    return kib / 1024


###############################################################################
# fixtures: certificates, payloads, policy

def make_certs(d):
    os.makedirs(d)
    cnf = os.path.join(d, "ext.cnf")
    with open(cnf, "w") as f:
        f.write("[req]\ndistinguished_name=dn\n[dn]\n"
                "[ca]\nbasicConstraints=critical,CA:TRUE\n"
                "keyUsage=critical,keyCertSign,cRLSign\n"
                "subjectKeyIdentifier=hash\n"
                f"[leaf]\nsubjectAltName=DNS:{HOST}\n"
                "basicConstraints=critical,CA:FALSE\n"
                "keyUsage=critical,digitalSignature\n"
                "extendedKeyUsage=serverAuth\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    steps = [
        ["openssl", "req", "-x509", *ec, "-keyout", f"{d}/upca.key",
         "-out", f"{d}/upca.crt", "-subj", "/CN=bench upstream CA",
         "-days", "2", "-config", cnf, "-extensions", "ca"],
        ["openssl", "req", *ec, "-keyout", f"{d}/up.key",
         "-out", f"{d}/up.csr", "-subj", f"/CN={HOST}", "-config", cnf],
        ["openssl", "x509", "-req", "-in", f"{d}/up.csr",
         "-CA", f"{d}/upca.crt", "-CAkey", f"{d}/upca.key",
         "-CAcreateserial", "-out", f"{d}/up.crt", "-days", "2",
         "-extfile", cnf, "-extensions", "leaf"],
    ]
    for cmd in steps:
        r = run(cmd)
        if r.returncode:
            raise RuntimeError(f"{' '.join(cmd[:3])}: {r.stderr.strip()}")


def json_body(size):
    """A chat-like JSON document of exactly size bytes, with no token
    shapes in it (lowercase words and numbers)."""
    rnd = random.Random(6)
    words = ("the of and to in is that for it as was with be by on not "
             "he this are or his from at which but have an they you were "
             "her she there been one all we their has would when if so no "
             "model agent tool result file line build test patch review "
             "function return value error request response stream token "
             "budget context window summary").split()
    msgs, size_now = [], 60
    while size_now < size:
        text = " ".join(rnd.choice(words) for _ in range(150))
        msgs.append({"role": rnd.choice(["user", "assistant"]),
                     "content": text})
        size_now += len(text) + 40
    doc = {"model": "bench-model", "max_tokens": 1024, "messages": msgs}
    s = json.dumps(doc, separators=(",", ":"))
    while len(s) > size:                  # trim the last message to fit
        last = msgs[-1]["content"]
        cut = len(s) - size
        if cut >= len(last):
            msgs.pop()
        else:
            msgs[-1]["content"] = last[:len(last) - cut]
        s = json.dumps(doc, separators=(",", ":"))
    s = s[:-1] + " " * (size - len(s)) + s[-1]
    assert len(s) == size
    return s.encode()


def sse_body():
    events = ['data: {"event":1,"text":"first"}\n\n']
    for i in range(2, 14):
        events.append('data: {"event":%d,"text":"%s"}\n\n' % (i, "x" * 40))
    return "".join(events).encode()


def write_payloads(d):
    www = os.path.join(d, "www")
    os.makedirs(www)
    with open(os.path.join(www, "1k"), "wb") as f:
        f.write(b"x" * 1023 + b"\n")
    with open(os.path.join(www, "sse"), "wb") as f:
        f.write(sse_body())
    with open(os.path.join(d, "body.json"), "wb") as f:
        f.write(json_body(256 * 1024))
    with open(os.path.join(d, "leak.json"), "w") as f:
        f.write('{"note":"a token shape: %s"}' % TOKEN_SHAPED)


def write_policy(path):
    def bottle(bid, token, canary):
        return {
            "id": bid,
            "token": token,
            "canary": canary,
            "egress_tokens": {"API": ROUTE_TOKEN},
            "routes": [{
                "host": HOST, "internal": True,
                "methods": ["GET", "POST"],
                "auth": {"type": "bearer", "value": "secret:API"},
                "dlp": {"outbound": ["token_patterns", "known_secrets"],
                        "on_match": "block"},
            }],
        }
    policy = {"bottles": [bottle("bench", TOKEN, CANARY),
                          bottle("bomber", BOMB_TOKEN, CANARY + "-b")]}
    with open(path, "w") as f:
        json.dump(policy, f, indent=2)


def fill(template, out, values):
    with open(os.path.join(BENCH, "conf", template)) as f:
        s = f.read()
    for k, v in values.items():
        s = s.replace(f"@{k}@", str(v))
    with open(out, "w") as f:
        f.write(s)


###############################################################################
# the targets

class Target:
    """Where the client connects (addr, port): the upstream itself, the
    reverse proxy, or a proxy it asks to CONNECT to HOST:443."""

    def __init__(self, key, label, addr, port, proxy=None, ca=None,
                 root=None):
        self.key, self.label, self.addr, self.port = key, label, addr, port
        self.proxy = proxy          # http://agent:TOKEN@127.0.0.1:P or None
        self.ca = ca                # verifies what the client is shown
        self.root = root            # pid of the proxy (tree), None: direct

    def url(self, path):
        if self.proxy:
            return f"https://{HOST}{path}"
        return f"https://{self.addr}:{self.port}{path}"

    def pids(self):
        return proc_tree(self.root) if self.root else []


def start_dns(d, port, up_addr, core):
    hosts = os.path.join(d, "dns-hosts")
    with open(hosts, "w") as f:
        f.write(f"{up_addr} {HOST}\n")
    cmd = pin(core) + [
        "dnsmasq", "--keep-in-foreground", "--conf-file=/dev/null",
        "--no-resolv", "--no-hosts", "--no-poll", "--local=/#/",
        "--bind-interfaces", "--listen-address=127.0.0.1",
        f"--port={port}", f"--addn-hosts={hosts}", "--local-ttl=300",
        f"--pid-file={d}/dnsmasq.pid"]
    if os.geteuid() == 0:
        cmd.append("--user=root")       # "nobody" could not read the hosts
    err = open(os.path.join(d, "dnsmasq.log"), "w")
    p = PROCS.popen("dnsmasq", cmd, stdout=err, stderr=err)
    wait_port(port, p, what="dnsmasq")


# what the module's ngx_bottle_init_process() sets with mallopt(), for the
# ceiling: a freed body buffer is reused, not unmapped
MALLOC_TUNABLES = ("glibc.malloc.mmap_threshold=4194304:"
                   "glibc.malloc.trim_threshold=33554432")


def start_nginx(name, d, template, values, core, env=None):
    os.makedirs(os.path.join(d, name))
    conf = os.path.join(d, name, "nginx.conf")
    fill(template, conf, values)
    err = open(os.path.join(d, name, "stderr.log"), "w")
    p = PROCS.popen(name, pin(core) + [NGINX, "-p", os.path.join(d, name),
                                       "-c", conf, "-e",
                                       os.path.join(d, name, "error.log")],
                    stdout=err, stderr=err,
                    env=dict(os.environ, **env) if env else None)
    return p


def start_mitm(d, port, up_addr, policy, core):
    conf = os.path.join(d, "mitm")
    os.makedirs(conf)
    env = dict(os.environ, BENCH_POLICY=policy,
               BENCH_ADDRS=f"{HOST}={up_addr}")
    out = open(os.path.join(conf, "flows.log"), "w")   # its access log
    p = PROCS.popen("mitmdump", pin(core) + [
        "mitmdump", "--listen-host", "127.0.0.1", "--listen-port", str(port),
        "--set", f"confdir={conf}",
        "--set", f"ssl_verify_upstream_trusted_ca={d}/certs/upca.crt",
        "-s", os.path.join(BENCH, "mitm_addon.py")],
        stdout=out, stderr=subprocess.STDOUT, env=env)
    wait_port(port, p, timeout=60, what="mitmdump")
    return p, os.path.join(conf, "mitmproxy-ca-cert.pem")


def start_gateway(d, port, dns_port, policy, core):
    gw = os.path.join(d, "gateway")
    launcher = os.path.join(TOP, "scripts", "bottle-gateway")
    cmd = pin(core) + [
        launcher, "start", "--dir", gw, "--policy", policy,
        "--listen", f"127.0.0.1:{port}",
        "--resolver", f"127.0.0.1:{dns_port}",
        "--trust", os.path.join(d, "certs", "upca.crt"),
        "--module", MODULE, "--nginx", NGINX,
        "--workers", str(PROXY_WORKERS)]

    def stop():
        run([launcher, "stop", "--dir", gw], timeout=30)
        if pid and os.path.exists(f"/proc/{pid}"):
            os.kill(pid, signal.SIGTERM)

    pid = None
    PROCS.at_stop("gateway", stop)
    r = run(cmd, timeout=60)
    if r.returncode:
        raise RuntimeError("bottle-gateway start failed:\n" + r.stdout +
                           r.stderr)
    info = dict(line.split(": ", 1) for line in r.stdout.splitlines()
                if ": " in line)
    pid = int(info["pid"])
    wait_port(port, what="gateway")
    return pid, info["ca"]


###############################################################################
# load: bottle-load (or hey) for the request scenarios, our client for SSE

def build_load(d):
    """bench/load.c, the load generator, built into the run directory."""
    exe = os.path.join(d, "bottle-load")
    r = run(["cc", "-std=gnu99", "-O2", "-Wall", "-Wextra", "-Werror", "-o",
             exe, os.path.join(BENCH, "load.c"), "-lssl", "-lcrypto"])
    if r.returncode:
        raise RuntimeError("bench/load.c did not build: " +
                           r.stderr.strip()[-500:])
    return exe


def request_args(target, spec, body, no_keepalive):
    """What bottle-load and hey both take: the scenario's request."""
    args = [no_keepalive] if spec.get("new_conn") else []
    if spec.get("post"):
        args += ["-m", "POST", "-D", body, "-T", "application/json"]
    for h in AGENT_HEADERS:
        args += ["-H", h]
    if target.proxy:
        args += ["-x", target.proxy]
    return args + [target.url(spec["path"])]


def load_cmd(target, spec, core, body, warmup, window):
    return pin(core) + [LOAD_EXE, "-c", str(spec["c"]), "-t", "30",
                        "-w", f"{warmup}", "-z", f"{window}"] \
        + request_args(target, spec, body, "--no-keepalive")


def load_run(target, spec, warmup, window, core, body, at_window=None,
             at_end=None):
    """One bottle-load process: warm-up, then the window, on the same
    connections; at_window() and at_end() run when it says the window
    starts and ends.  Its figures, as parse_hey() gives hey's."""
    cmd = load_cmd(target, spec, core, body, warmup, window)
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    timer = threading.Timer(warmup + window + 120, p.kill)
    timer.start()
    res, marks = None, {}
    try:
        for line in p.stdout:
            line = line.strip()
            if line == "window":
                marks["window"] = at_window() if at_window else None
            elif line == "end":
                marks["end"] = at_end() if at_end else None
            elif line.startswith("{"):
                res = json.loads(line)
        err = p.stderr.read()
        p.wait()
    finally:
        timer.cancel()
    if res is None:
        raise RuntimeError(f"bottle-load exited {p.returncode}: "
                           f"{err.strip()[-300:]}")
    status = {int(k): v for k, v in res["status"].items()}
    return {"total_s": res["seconds"], "rps": res["rps"],
            "lat": {50: res["p50_ms"], 99: res["p99_ms"]},
            "status": status, "errors": res["errors"],
            "error_lines": [f"{k}: {v}" for k, v in
                            res["error_kinds"].items()],
            "conns": res["connections"], "marks": marks}


def hey(target, spec, seconds, core, body):
    cmd = pin(core) + ["hey", "-cpus", "1", "-z", f"{seconds}s",
                       "-c", str(spec["c"]), "-t", "30"] \
        + request_args(target, spec, body, "-disable-keepalive")
    r = run(cmd, timeout=seconds + 120)
    return parse_hey(r.stdout + r.stderr)


def parse_hey(out):
    res = {"total_s": None, "rps": None, "lat": {}, "status": {},
           "errors": 0, "error_lines": []}
    m = re.search(r"Total:\s+([\d.]+) secs", out)
    if m:
        res["total_s"] = float(m.group(1))
    m = re.search(r"Requests/sec:\s+([\d.]+)", out)
    if m:
        res["rps"] = float(m.group(1))
    for p, v in re.findall(r"(\d+)%% in ([\d.]+) secs".replace("%%", "%"),
                           out):
        res["lat"][int(p)] = float(v) * 1000
    m = re.search(r"Slowest:\s+([\d.]+) secs", out)
    if m and 99 not in res["lat"]:
        # hey leaves out a percentile it has fewer than 100 samples for
        res["lat"][99] = float(m.group(1)) * 1000
    section = None
    for line in out.splitlines():
        if line.startswith("Status code distribution"):
            section = "status"
        elif line.startswith("Error distribution"):
            section = "error"
        m = re.match(r"\s+\[(\d+)\]\s+(.*)", line)
        if m and section == "status":
            res["status"][int(m.group(1))] = int(m.group(2).split()[0])
        elif m and section == "error":
            res["errors"] += int(m.group(1))
            res["error_lines"].append(m.group(2)[:200])
    return res


class Conn:
    """One client connection: through the proxy's CONNECT tunnel or
    straight to the server, TLS verified against the target's CA."""

    def __init__(self, target, timeout=30):
        s = socket.create_connection((target.addr, target.port), timeout)
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if target.proxy:
            cred = base64.b64encode(f"agent:{TOKEN}".encode()).decode()
            s.sendall((f"CONNECT {HOST}:443 HTTP/1.1\r\n"
                       f"Host: {HOST}:443\r\n"
                       f"Proxy-Authorization: Basic {cred}\r\n\r\n").encode())
            head = b""
            while b"\r\n\r\n" not in head:
                chunk = s.recv(4096)
                if not chunk:
                    raise RuntimeError("proxy closed the CONNECT")
                head += chunk
            if not re.match(rb"HTTP/1\.[01] 200", head):
                raise RuntimeError(f"CONNECT: {head.splitlines()[0]!r}")
        ctx = ssl.create_default_context(cafile=target.ca)
        ctx.set_alpn_protocols(["http/1.1"])
        self.s = ctx.wrap_socket(s, server_hostname=HOST)
        self.buf = b""
        self.hostport = HOST if target.proxy else \
            f"{HOST}:{target.port}"

    def _more(self):
        chunk = self.s.recv(65536)
        if not chunk:
            raise RuntimeError("connection closed")
        self.buf += chunk

    def _take(self, n):
        while len(self.buf) < n:
            self._more()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out

    def _line(self):
        while b"\r\n" not in self.buf:
            self._more()
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def sse(self):
        """GET /sse: seconds to the first complete event, then the rest of
        the response read so that the connection is reused."""
        req = (f"GET /sse HTTP/1.1\r\nHost: {self.hostport}\r\n"
               "Accept: text/event-stream\r\n" +
               "".join(h + "\r\n" for h in AGENT_HEADERS) + "\r\n").encode()
        t0 = time.perf_counter()
        self.s.sendall(req)
        while b"\r\n\r\n" not in self.buf:
            self._more()
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        if not head.startswith(b"HTTP/1.1 200"):
            raise RuntimeError(f"SSE: {head.splitlines()[0]!r}")
        first = None
        m = re.search(rb"content-length:\s*(\d+)", head, re.I)
        if m:
            left = int(m.group(1))
            got = b""
            while left:
                if not self.buf:
                    self._more()
                part = self.buf[:left]
                self.buf = self.buf[len(part):]
                left -= len(part)
                got += part
                if first is None and b"\n\n" in got:
                    first = time.perf_counter() - t0
        else:                               # chunked
            got = b""
            while True:
                size = int(self._line().split(b";")[0], 16)
                if size == 0:
                    while self._line():
                        pass
                    break
                got += self._take(size)
                self._take(2)
                if first is None and b"\n\n" in got:
                    first = time.perf_counter() - t0
        if first is None or not got.startswith(b"data:"):
            raise RuntimeError("SSE: no event in the response")
        return first

    def close(self):
        try:
            self.s.close()
        except OSError:
            pass


def sse_round(target):
    """SSE_CLIENTS clients, each on its own keep-alive connection: one
    stream to warm it, then SSE_PER_CLIENT measured ones."""
    samples, errors, lock = [], [], threading.Lock()

    def client():
        try:
            c = Conn(target)
            c.sse()
            for _ in range(SSE_PER_CLIENT):
                t = c.sse()
                with lock:
                    samples.append(t * 1000)
            c.close()
        except Exception as e:
            with lock:
                errors.append(str(e))

    threads = [threading.Thread(target=client) for _ in range(SSE_CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return samples, errors


def pct(values, p):
    v = sorted(values)
    if not v:
        return None
    k = max(0, min(len(v) - 1, int(round(p / 100 * len(v) + 0.5)) - 1))
    return v[k]


def settle(targets, limit=15.0):
    """Wait until no proxy is still working off the previous scenario (a
    proxy behind on queued connections would steal the next one's core)."""
    pids = [p for t in targets for p in t.pids()]
    last, deadline = cpu_seconds(pids), time.time() + limit
    while time.time() < deadline:
        time.sleep(0.25)
        now = cpu_seconds(pids)
        if now - last <= 0.02:
            return
        last = now


class Bomber:
    """Another bottle, looping: a new CONNECT and TLS per request, a POST
    of the gzip, gzip bomb, the answer read to the end; statuses and the
    time each took."""

    def __init__(self, target):
        import gzip
        if not BOMB:
            BOMB.append(gzip.compress(gzip.compress(b"\0" * (63 << 20), 9),
                                      9))
        self.target, self.stop = target, threading.Event()
        self.status, self.took = {}, []
        self.thread = threading.Thread(target=self.loop, daemon=True)

    def one(self):
        t0 = time.time()
        auth = base64.b64encode(f"bomber:{BOMB_TOKEN}".encode()).decode()
        s = socket.create_connection(("127.0.0.1", self.target.port), 30)
        try:
            s.sendall(f"CONNECT {HOST}:443 HTTP/1.1\r\nHost: {HOST}:443\r\n"
                      f"Proxy-Authorization: Basic {auth}\r\n\r\n"
                      .encode())
            head = b""
            while b"\r\n\r\n" not in head:
                more = s.recv(4096)
                if not more:
                    return "connect closed"
                head += more
            if b" 200 " not in head.split(b"\r\n", 1)[0]:
                return "connect " + head.split(b"\r\n", 1)[0].decode()
            ctx = ssl.create_default_context(cafile=self.target.ca)
            t = ctx.wrap_socket(s, server_hostname=HOST)
            t.sendall((f"POST /sink HTTP/1.1\r\nHost: {HOST}\r\n"
                       "Content-Type: application/json\r\n"
                       "Content-Encoding: gzip, gzip\r\n"
                       f"Content-Length: {len(BOMB[0])}\r\n"
                       "Connection: close\r\n\r\n").encode() + BOMB[0])
            reply = b""
            while True:
                more = t.recv(65536)
                if not more:
                    break
                reply += more
            t.close()
            return reply.split(b" ", 2)[1].decode() if reply else "empty"
        except (OSError, ssl.SSLError) as e:
            return type(e).__name__
        finally:
            s.close()
            self.took.append(time.time() - t0)

    def loop(self):
        while not self.stop.is_set():
            st = self.one()
            self.status[st] = self.status.get(st, 0) + 1

    def __enter__(self):
        self.thread.start()
        time.sleep(0.5)                 # the first bombs are in
        return self

    def __exit__(self, *exc):
        self.stop.set()
        self.thread.join(60)


def measure(target, spec, body, load_core):
    """One measurement: warm-up, then a window with CPU and peak RSS."""
    if spec is not None and spec.get("bombs"):
        # the same load quiet, then with the bomber: paired in the round
        quiet = measure(target, dict(spec, bombs=False), body, load_core)
        with Bomber(target) as b:
            r = measure(target, dict(spec, bombs=False), body, load_core)
        r["quiet_p50"], r["quiet_p99"] = quiet["p50"], quiet["p99"]
        r["bombs"] = dict(b.status)
        r["bomb_ms"] = pct([x * 1000 for x in b.took], 50)
        return r
    if spec is None:                        # SSE: latency only
        samples, errors = sse_round(target)
        return {"rps": None, "p50": pct(samples, 50), "p99": pct(samples, 99),
                "cpu_ms": None, "core": None, "rss": None,
                "bad": len(errors), "n": len(samples), "notes": errors[:3]}

    def start():
        pids = target.pids()
        reset_peak_rss(pids)
        return cpu_seconds(pids), time.time()

    def end():
        return cpu_seconds(target.pids()), time.time()

    if LOADGEN == "hey":
        hey(target, spec, WARMUP, load_core, body)
        c0, t0 = start()
        r = hey(target, spec, WINDOW, load_core, body)
        c1, t1 = end()
    else:
        # the same connections through warm-up and window: the proxy's CPU
        # is read when bottle-load says the window starts and ends
        r = load_run(target, spec, WARMUP, WINDOW, load_core, body,
                     start, end)
        (c0, t0), (c1, t1) = r["marks"]["window"], r["marks"]["end"]
    cpu, wall = c1 - c0, t1 - t0
    pids = target.pids()
    n = sum(r["status"].values())
    ok = r["status"].get(200, 0)
    notes = [f"{k}: {v}" for k, v in r["status"].items() if k != 200]
    notes += r["error_lines"][:3]
    return {"rps": ok / r["total_s"] if r["total_s"] else 0.0,
            "p50": r["lat"].get(50), "p99": r["lat"].get(99),
            "cpu_ms": cpu / n * 1000 if target.root and n else None,
            "core": cpu / wall * 100 if target.root else None,
            "rss": peak_rss_mib(pids) if target.root else None,
            "conns": r.get("conns"),
            "bad": (n - ok) + r["errors"], "n": n, "notes": notes}


###############################################################################
# checks: each target does its work, and the gateway's chain verifies

def curl(target, path, extra=(), proxy=None):
    cmd = ["curl", "-sS", "--max-time", "10", "-o", "-", "-w",
           "\n%{http_connect} %{http_code}", "--cacert", target.ca]
    if target.proxy:
        cmd += ["-x", proxy or target.proxy]
    else:
        cmd += ["--resolve", f"{HOST}:{target.port}:{target.addr}"]
    cmd += list(extra)
    url = f"https://{HOST}" if target.proxy else \
        f"https://{HOST}:{target.port}"
    r = run(cmd + [url + path])
    body, _, codes = r.stdout.rpartition("\n")
    connect, _, code = codes.partition(" ")
    return {"connect": connect, "code": code, "body": body,
            "err": r.stderr.strip()}


def checks(targets, d):
    rows = {}
    agent = []
    for h in AGENT_HEADERS:
        agent += ["-H", h]
    want_auth = f"authorization=Bearer {ROUTE_TOKEN} x-api-key="
    for t in targets:
        c = {}
        r = curl(t, "/1k")
        c["chain"] = "verified" if r["code"] == "200" else \
            f"FAILED ({r['code']} {r['err'][:80]})"
        r = curl(t, "/auth", agent)
        c["creds"] = "replaced" if r["body"].strip() == want_auth else \
            ("passed through" if "agent-own" in r["body"] else
             f"? {r['code']} {r['body'][:60]!r}")
        if t.proxy:
            noauth = t.proxy.replace(f"agent:{TOKEN}@", "")
            r = curl(t, "/1k", proxy=noauth)
            c["no token"] = r["connect"] if r["connect"] != "000" \
                else r["code"]
            r = run(["curl", "-sS", "-o", "/dev/null", "-w",
                     "%{http_connect}", "-x", t.proxy, "--max-time", "10",
                     "https://other.bench.test/"])
            c["other host"] = r.stdout.strip()
            r = curl(t, f"/1k?q={CANARY}")
            c["canary in URL"] = r["code"]
            r = curl(t, "/sink", ["-X", "POST", "-H",
                                  "Content-Type: application/json",
                                  "--data-binary", f"@{d}/leak.json"])
            c["token shape in body"] = r["code"]
        else:
            for k in ("no token", "other host", "canary in URL",
                      "token shape in body"):
                c[k] = "n/a"
        rows[t.key] = c
    return rows


###############################################################################
# the scanner benchmark (bench/scan_bench.c, when there is one)

def scanner(d):
    """bench/scan_bench.c, built as bench/README.md's Scanner section says,
    run on the load core: its output (a markdown table of MB/s)."""
    src = os.path.join(BENCH, "scan_bench.c")
    if not os.path.exists(src):
        return None, "bench/scan_bench.c is not in this tree"
    exe = os.path.join(d, "scan_bench")
    lib = os.path.join(TOP, "lib")
    scan = sorted(os.path.join(lib, f) for f in os.listdir(lib)
                  if f.startswith("bottle_scan") and f.endswith(".c"))
    r = run(["cc", "-std=c99", "-O2", "-I", lib, "-o", exe, src, *scan,
             "-lhs", "-lpcre2-8", "-lm"])
    if r.returncode:
        return None, "it did not build: " + r.stderr.strip()[-300:]
    r = run(pin(LOAD_CORE) + [exe, "0.1" if QUICK else "0.5"], timeout=600)
    if r.returncode or "MB/s" not in r.stdout:
        return None, f"it exited {r.returncode}: " + \
            (r.stdout + r.stderr).strip()[-300:]
    return r.stdout.strip().splitlines(), None


###############################################################################
# the report

def fmt(v, digits=2):
    if v is None:
        return "—"
    if digits == 0:
        return f"{v:,.0f}"
    return f"{v:.{digits}f}"


def median(rounds, field):
    vals = [r[field] for r in rounds if r.get(field) is not None]
    return statistics.median(vals) if vals else None


def ratio(a, b):
    return a / b if a is not None and b else None


def paired(results, key, a, b, field):
    """The median over the rounds of a/b within each round: the two were
    measured minutes apart at most, so what else ran on the machine
    weighs less than in the ratio of the two medians."""
    if key not in results:
        return None
    rs = [ratio(x[field], y[field])
          for x, y in zip(results[key][a], results[key][b])]
    rs = [r for r in rs if r is not None]
    return statistics.median(rs) if rs else None


def build_info():
    def git(*a):
        r = run(["git", "-C", TOP, *a])
        return r.stdout.strip()
    head = git("rev-parse", "--short", "HEAD")
    dirty = git("status", "--porcelain", "--", "ngx_bottle_module", "lib",
                "config")
    with open(MODULE, "rb") as f:
        digest = hashlib.sha256(f.read()).hexdigest()[:12]
    built = datetime.datetime.fromtimestamp(
        os.path.getmtime(MODULE)).strftime("%Y-%m-%d %H:%M:%S")
    return {"head": head, "dirty_src": len(dirty.splitlines()),
            "module_sha256": digest, "module_built": built}


def versions():
    def first(cmd):
        try:
            r = run(cmd, timeout=20)
            return (r.stdout + r.stderr).strip().splitlines()[0]
        except Exception:
            return "?"
    return {"nginx": first([NGINX, "-v"]).replace("nginx version: ", ""),
            "mitmproxy": first(["mitmdump", "--version"]),
            "openssl": first(["openssl", "version"]),
            "hey": first(["dpkg-query", "-W", "-f=${Version}", "hey"]),
            "python": platform.python_version()}


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            m = re.search(r"^model name\s*:\s*(.*)$", f.read(), re.M)
        return m.group(1) if m else "?"
    except OSError:
        return "?"


def report(meta, targets, results, chk, scan, scan_err, cplane=None,
           fh=None):
    lines = []
    w = lines.append
    b = meta["build"]
    w(f"# ngx_bottle benchmark, {meta['date']}{' (BENCH_QUICK)' if QUICK else ''}")
    w("")
    dirty = f", {b['dirty_src']} uncommitted source file(s)" \
        if b["dirty_src"] else ""
    w(f"- build measured: `{b['head']}`{dirty}; module "
      f"`{os.path.relpath(MODULE, TOP)}` built {b['module_built']}, "
      f"sha256 {b['module_sha256']}…")
    w(f"- DLP in the gateway: {meta['dlp']}")
    w(f"- machine: {meta['cpu']}, {meta['ncpu']} CPUs, Linux "
      f"{platform.release()}; proxy under test pinned to core "
      f"{meta['proxy_core']}, load generator, upstream and DNS to core "
      f"{meta['load_core']}")
    v = meta["versions"]
    load = meta.get("load", "hey")
    w(f"- nginx {v['nginx']}, {v['mitmproxy']}, "
      + (f"hey {v['hey']}" if load == "hey" else
         "load from bottle-load (bench/load.c)")
      + f", {v['openssl']}")
    pr = meta["processes"]
    w(f"- processes: ceiling {pr['ceiling']} (master and workers), "
      f"mitmproxy {pr['mitmproxy']}, gateway {pr['gateway']}; 1-minute "
      f"load average {meta['loadavg_start']:.2f} at the start, "
      f"{meta['loadavg_end']:.2f} at the end ({meta['elapsed_s']} s)")
    w(f"- method: {ROUNDS} round(s), targets in alternating order; per "
      f"scenario and target {WARMUP:g} s warm-up then a {WINDOW:g} s "
      "window; medians over the rounds (peak RSS: the largest). Proxy CPU "
      "is utime+stime of all the proxy's processes over the window per "
      "request (ms per request = CPU seconds per 1000 requests); peak RSS "
      "is the sum of VmHWM of its processes, reset before each window. "
      "Access logs on for every target (nginx's buffered, 64 KiB or 1 s, "
      "as the shipped configuration has them; mitmdump's flow lines to a "
      "file); one nginx worker for the ceiling and for the gateway, on the "
      "one core they are pinned to. "
      + ("Load from hey: a fresh hey for the warm-up and another for the "
         "window, and hey opens new connections now and then while kept "
         "alive." if load == "hey" else
         "Load from bottle-load: one process for warm-up and window, each "
         "of its N connections kept alive across both (a kept-alive "
         "scenario opens no connection in the window; see the conns "
         "column)."))
    w("")
    w("| scenario | target | req/s | p50 ms | p99 ms | proxy CPU ms/req "
      "| proxy core % | peak RSS MiB | conns | failed |")
    w("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for key, label, spec in SCENARIOS:
        for t in targets:
            rs = results[key][t.key]
            if not rs:
                continue
            rss = [r["rss"] for r in rs if r["rss"] is not None]
            bad = sum(r["bad"] for r in rs)
            w(f"| {label} | {t.label} | {fmt(median(rs, 'rps'), 0)} "
              f"| {fmt(median(rs, 'p50'))} | {fmt(median(rs, 'p99'))} "
              f"| {fmt(median(rs, 'cpu_ms'), 3)} "
              f"| {fmt(median(rs, 'core'), 0)} "
              f"| {fmt(max(rss) if rss else None, 1)} "
              f"| {fmt(median(rs, 'conns'), 0)} | {bad} |")
    w("")
    w(f"The SSE rows give the time to the first event in the p50/p99 "
      f"columns: {SSE_CLIENTS} clients at once, each on its own kept-alive "
      f"connection, {SSE_PER_CLIENT} streams each after one to warm it; "
      "the upstream sends the first event at once and the rest over about "
      "a second. The conns column: connections the load generator opened "
      "in the window (median)"
      + ("; hey reports latency to 0.1 ms." if load == "hey" else "."))
    bombs = results.get("bombs", {}).get("gateway", [])
    if bombs:
        w("")
        w("## A bystander bottle while another sends bombs")
        w("")
        w("| gateway, GET 1 KiB c=1 (bottle `bench`) | p50 ms | p99 ms |")
        w("|---|---:|---:|")
        w(f"| quiet | {fmt(median(bombs, 'quiet_p50'))} "
          f"| {fmt(median(bombs, 'quiet_p99'))} |")
        w(f"| bottle `bomber` looping gzip, gzip bombs "
          f"| {fmt(median(bombs, 'p50'))} | {fmt(median(bombs, 'p99'))} |")
        sent = {}
        for r in bombs:
            for k, v in r["bombs"].items():
                sent[k] = sent.get(k, 0) + v
        w("")
        w(f"The bomb: {len(BOMB[0]) if BOMB else 'a few hundred'} bytes of "
          "`Content-Encoding: gzip, gzip` decoding to 63 MiB, POSTed by "
          "another bottle in a loop (a new CONNECT and TLS each, on the "
          "load core) during the second of two windows of the same load; "
          "answers over all rounds: "
          + ", ".join(f"{k}: {v}" for k, v in sorted(sent.items()))
          + f"; a bomb's round trip (median of the rounds' medians) "
          f"{fmt(median(bombs, 'bomb_ms'))} ms.")
    w("")
    w("## Ratios")
    w("")
    w("| scenario | gateway/ceiling req/s | gateway/mitmproxy req/s "
      "| gateway/ceiling CPU per req | gateway/mitmproxy CPU per req "
      "| gateway/ceiling p50 | gateway/mitmproxy p50 |")
    w("|---|---:|---:|---:|---:|---:|---:|")
    none = {"rps": None, "p50": None, "cpu_ms": None}
    m = {key: {t: {f: median(results[key][t], f) for f in none}
               for t in results[key]}
         for key in results}
    for key in ("get16", "post256", "newconn"):     # left out by --scenarios
        m.setdefault(key, {t.key: none for t in targets})
    for key, label, spec in SCENARIOS:
        if spec and spec.get("gateway_only"):
            continue

        def pr(other, field, digits=2):
            return fmt(paired(results, key, "gateway", other, field), digits)
        w(f"| {label} | {pr('ceiling', 'rps')} | {pr('mitmproxy', 'rps', 1)} "
          f"| {pr('ceiling', 'cpu_ms')} | {pr('mitmproxy', 'cpu_ms', 3)} "
          f"| {pr('ceiling', 'p50')} | {pr('mitmproxy', 'p50', 3)} |")
    w("")
    w("Each ratio is the median over the rounds of the ratio within a "
      "round, so it can differ from the ratio of the medians above.")
    w("")
    w("## Issue 6 targets")
    w("")
    w("| target | measured | met |")
    w("|---|---|---|")
    g16, c16, p16 = (m["get16"][k] for k in ("gateway", "ceiling",
                                               "mitmproxy"))

    def row(text, value, shown, ok):
        w(f"| {text} | {shown} | "
          f"{'—' if value is None else ('yes' if ok else '**no**')} |")
    x = paired(results, "get16", "gateway", "mitmproxy", "rps")
    cheaper = paired(results, "get16", "mitmproxy", "gateway", "cpu_ms")
    row(f"GET c=16: ≥ {GOALS['mitm_x']:g}× mitmproxy's req/s", x,
        f"{fmt(x)}× (medians {fmt(g16['rps'], 0)} vs "
        f"{fmt(p16['rps'], 0)}; CPU per request {fmt(cheaper, 1)}× less)",
        x is not None and x >= GOALS["mitm_x"])
    x = paired(results, "get16", "gateway", "ceiling", "rps")
    row(f"GET c=16: ≥ {GOALS['ceiling_x']:g}× the ceiling's req/s", x,
        f"{fmt(x)}× (medians {fmt(g16['rps'], 0)} vs {fmt(c16['rps'], 0)})",
        x is not None and x >= GOALS["ceiling_x"])
    for key, goal, text in (("get16", "get16_cpu", "GET c=16"),
                            ("post256", "post_cpu", "POST 256 KiB c=16"),
                            ("newconn", "newconn_cpu",
                             "new CONNECT + TLS per request c=16")):
        v = m[key]["gateway"]["cpu_ms"]
        each = [r["cpu_ms"] for r in results.get(key, {}).get("gateway", [])
                if r.get("cpu_ms") is not None]
        spread = (f"; rounds {', '.join(fmt(x, 3) for x in each)}"
                  if len(each) > 1 else "")
        row(f"{text}: ≤ {GOALS[goal]:g} ms proxy CPU per request", v,
            f"{fmt(v, 3)} ms (ceiling {fmt(m[key]['ceiling']['cpu_ms'], 3)},"
            f" mitmproxy {fmt(m[key]['mitmproxy']['cpu_ms'], 3)}{spread})",
            v is not None and v <= GOALS[goal])
    w("")
    w("## Checks (once, before measuring)")
    w("")
    keys = list(next(iter(chk.values())).keys())
    w("| target | " + " | ".join(keys) + " |")
    w("|---|" + "---|" * len(keys))
    for t in targets:
        w(f"| {t.label} | " + " | ".join(str(chk[t.key][k]) for k in keys)
          + " |")
    w("")
    w("chain: curl verifies what the client is shown against the target's "
      "CA (hey does not verify); creds: the agent's Authorization and "
      "X-Api-Key as the upstream saw them; the other columns are the status "
      "of a CONNECT without a token, a CONNECT to a host with no route, the "
      "canary in the query, and a GitHub-shaped token in a POST body.")
    w("")
    w("## Scanner")
    w("")
    if scan:
        w("`bench/scan_bench` (the secret scanner alone, one thread on the "
          f"load core, {'0.1' if QUICK else '0.5'} s per cell; "
          "bench/README.md, Scanner):")
        w("")
        for line in scan:
            w(line)
    else:
        w(f"No figures: {scan_err}.")
    failed = [(key, t.key, r["notes"]) for key, _, _ in SCENARIOS
              for t in targets for r in results[key][t.key] if r["bad"]]
    if failed:
        w("")
        w("## Failed requests")
        w("")
        for key, t, notes in failed[:20]:
            w(f"- {key} / {t}: {'; '.join(notes)[:300]}")
    if fh:
        w("")
        lines.extend(firehose.report_lines(fh))
    if cplane:
        w("")
        lines.extend(scale.report_lines(cplane))
        lines.extend(supervise.report_lines(cplane.get("supervise")))
    return "\n".join(lines) + "\n"


def run_firehose(d, target, policy, body):
    """The firehose's rows; a failure is reported, not fatal."""
    log("firehose: no consumer against one")
    try:
        return firehose.run(sys.modules[__name__], d, target, policy, body)
    except (RuntimeError, OSError, subprocess.SubprocessError,
            ValueError, KeyError) as e:
        log(f"firehose: failed: {e}")
        return {"error": str(e)}


def scale_report(meta, cplane):
    """The report of `--scale-only`: the control plane alone."""
    b = meta["build"]
    lines = [f"# ngx_bottle benchmark, control plane only, {meta['date']}"
             f"{' (BENCH_QUICK)' if QUICK else ''}", "",
             f"- build measured: `{b['head']}`"
             + (f", {b['dirty_src']} uncommitted source file(s)"
                if b["dirty_src"] else "")
             + f"; module `{os.path.relpath(MODULE, TOP)}` built "
             f"{b['module_built']}, sha256 {b['module_sha256']}…",
             f"- machine: {meta['cpu']}, {meta['ncpu']} CPUs, Linux "
             f"{platform.release()}; nginx {meta['versions']['nginx']}", ""]
    lines.extend(scale.report_lines(cplane))
    lines.extend(supervise.report_lines(cplane.get("supervise")))
    return "\n".join(lines) + "\n"


def run_scale(d):
    """The control plane's rows; a failure is reported, not fatal."""
    log(f"control plane: {SCALE_BOTTLES} bottles")
    la = os.getloadavg()[0]
    try:
        cp = scale.control_plane(sys.modules[__name__], d, SCALE_BOTTLES)
    except (RuntimeError, OSError, subprocess.SubprocessError,
            ValueError, KeyError) as e:
        log(f"control plane: failed: {e}")
        cp = {"error": str(e)}
    cp["loadavg_start"] = la
    log("supervise: decisions on two gateways, held requests")
    try:
        cp["supervise"] = supervise.supervise(sys.modules[__name__], d)
    except (RuntimeError, OSError, subprocess.SubprocessError,
            ValueError, KeyError) as e:
        log(f"supervise: failed: {e}")
        cp["supervise"] = {"error": str(e)}
    return cp


def save(meta, text, data, suffix=""):
    os.makedirs(RESULTS, exist_ok=True)
    stamp = datetime.datetime.now(datetime.timezone.utc) \
        .strftime("%Y%m%d-%H%M")
    name = f"{stamp}-{meta['build']['head']}{'-quick' if QUICK else ''}" \
        + suffix
    base, n = name, 2
    while os.path.exists(os.path.join(RESULTS, name + ".md")):
        name, n = f"{base}-{n}", n + 1        # two runs in one minute
    with open(os.path.join(RESULTS, name + ".md"), "w") as f:
        f.write(text)
    with open(os.path.join(RESULTS, name + ".json"), "w") as f:
        json.dump(data, f, indent=1)
    return name


###############################################################################

def rerender(path):
    with open(path) as f:
        saved = json.load(f)
    if "results" not in saved:              # --scale-only
        text = scale_report(saved["meta"], saved["control_plane"])
        with open(re.sub(r"\.json$", "", path) + ".md", "w") as f:
            f.write(text)
        print(text)
        return
    targets = [Target(k, label, None, None) for k, label in TARGETS]
    SCENARIOS[:] = [sc for sc in SCENARIOS if sc[0] in saved["results"]]
    scan = saved.get("scanner")
    text = report(saved["meta"], targets, saved["results"], saved["checks"],
                  scan, None if scan else "none in this run",
                  saved.get("control_plane"), saved.get("firehose"))
    with open(re.sub(r"\.json$", "", path) + ".md", "w") as f:
        f.write(text)
    print(text)


def cores():
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        log("one CPU only: nothing is pinned, figures will be noisy")
        return None, None
    return cpus[0], cpus[1]


PROXY_CORE, LOAD_CORE = cores()


def main():
    global LOAD_EXE
    import argparse
    ap = argparse.ArgumentParser(description="make bench (bench/README.md)")
    ap.add_argument("--serve", action="store_true",
                    help="start and check the targets, print how to reach "
                    "them, and wait for ^C (for profiling by hand)")
    ap.add_argument("--scenarios", default=",".join(k for k, _, _ in
                                                     SCENARIOS),
                    help="comma-separated subset of: %(default)s")
    ap.add_argument("--report", metavar="RESULTS.json",
                    help="write the report of a saved run again (after a "
                    "change to the report's format) and print it")
    ap.add_argument("--no-scale", action="store_true",
                    help="leave out the control plane's scale rows")
    ap.add_argument("--no-firehose", action="store_true",
                    help="leave out the firehose's rows (bench/firehose.py)")
    ap.add_argument("--scale-only", action="store_true",
                    help="only the control plane's scale rows "
                    "(bench/scale.py)")
    args = ap.parse_args()
    if args.report:
        rerender(args.report)
        return
    wanted = args.scenarios.split(",")
    for k in wanted:
        if k not in [key for key, _, _ in SCENARIOS]:
            ap.error(f"unknown scenario '{k}'")
    SCENARIOS[:] = [s for s in SCENARIOS if s[0] in wanted]

    if LOADGEN not in ("bottle-load", "hey"):
        sys.exit("bench: BENCH_LOAD is bottle-load or hey")
    tools = ["redis-server"] if args.scale_only else [
        ("cc" if LOADGEN == "bottle-load" else "hey"), "mitmdump",
        "dnsmasq", "curl", "openssl"]
    if not (args.no_scale and args.no_firehose or args.scale_only):
        tools.append("redis-server")
    for tool in tools + [NGINX]:
        if not shutil.which(tool):
            sys.exit(f"bench: cannot find {tool} (bench/README.md: install)")
    if not os.path.exists(MODULE):
        sys.exit(f"bench: cannot find {MODULE} (make module)")
    if not (args.no_scale and args.no_firehose) and not os.path.exists(
            os.path.join(TOP, "build", "bottlectl")):
        sys.exit("bench: cannot find build/bottlectl (make ctl)")
    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGHUP, on_signal)
    if LOAD_CORE is not None:
        os.sched_setaffinity(0, {LOAD_CORE})

    d = tempfile.mkdtemp(prefix="ngx-bottle-bench.")
    os.chmod(d, 0o755)          # nginx workers run as nobody when root
    started = time.time()
    ok = False
    try:
        meta = {"date": datetime.datetime.now(datetime.timezone.utc)
                .strftime("%Y-%m-%d %H:%M UTC"),
                "build": build_info(), "versions": versions(),
                "cpu": cpu_model(), "ncpu": os.cpu_count(),
                "proxy_core": PROXY_CORE, "load_core": LOAD_CORE,
                "quick": QUICK, "rounds": ROUNDS, "warmup": WARMUP,
                "window": WINDOW, "loadavg_start": os.getloadavg()[0]}
        log(f"run directory {d}")
        if args.scale_only:
            cp = run_scale(d)
            meta["loadavg_end"] = os.getloadavg()[0]
            meta["elapsed_s"] = round(time.time() - started)
            text = scale_report(meta, cp)
            print(text)
            name = save(meta, text, {"meta": meta, "control_plane": cp},
                        "-scale")
            log(f"saved {os.path.relpath(RESULTS, TOP)}/{name}.md and .json "
                f"({meta['elapsed_s']} s)")
            ok = "error" not in cp
            return
        if LOADGEN == "bottle-load":
            LOAD_EXE = build_load(d)
        meta["load"] = LOADGEN
        make_certs(os.path.join(d, "certs"))
        write_payloads(d)
        up_addr = upstream_address()
        ceil_port, mitm_port, gw_port, dns_port = \
            (free_port() for _ in range(4))
        policy = os.path.join(d, "policy.json")
        write_policy(policy)
        values = {"DIR": d, "UP_ADDR": up_addr, "CEILING_PORT": ceil_port,
                  "WORKERS": PROXY_WORKERS,
                  "HOST": HOST, "ROUTE_TOKEN": ROUTE_TOKEN}

        log("starting the upstream, dnsmasq, the ceiling, mitmproxy and "
            "the gateway")
        up = start_nginx("upstream", d, "upstream.conf", values, LOAD_CORE)
        wait_port(443, up, what="upstream nginx", addr=up_addr)
        start_dns(d, dns_port, up_addr, LOAD_CORE)
        ceil = start_nginx("ceiling", d, "ceiling.conf", values, PROXY_CORE,
                           {"GLIBC_TUNABLES": MALLOC_TUNABLES})
        wait_port(ceil_port, ceil, what="ceiling nginx")
        mitm, mitm_ca = start_mitm(d, mitm_port, up_addr, policy,
                                   PROXY_CORE)
        gw_pid, gw_ca = start_gateway(d, gw_port, dns_port, policy,
                                      PROXY_CORE)

        upca = os.path.join(d, "certs", "upca.crt")
        auth = f"http://agent:{TOKEN}@127.0.0.1"
        label = dict(TARGETS)
        targets = [
            Target("direct", label["direct"], up_addr, 443, ca=upca),
            Target("ceiling", label["ceiling"], "127.0.0.1", ceil_port,
                   ca=upca, root=ceil.pid),
            Target("mitmproxy", label["mitmproxy"], "127.0.0.1", mitm_port,
                   proxy=f"{auth}:{mitm_port}", ca=mitm_ca, root=mitm.pid),
            Target("gateway", label["gateway"], "127.0.0.1", gw_port,
                   proxy=f"{auth}:{gw_port}", ca=gw_ca, root=gw_pid),
        ]

        meta["processes"] = {t.key: len(t.pids()) for t in targets}
        log("checking what each target does")
        chk = checks(targets, d)
        for t in targets:
            log(f"  {t.key}: {chk[t.key]}")
        for t in targets:
            if chk[t.key]["chain"] != "verified":
                raise RuntimeError(f"{t.key}: {chk[t.key]['chain']}")
        if args.serve:
            for t in targets:
                how = f"-x {t.proxy} https://{HOST}/1k" if t.proxy else \
                    f"https://{t.addr}:{t.port}/1k"
                print(f"{t.key}: {how} (CA {t.ca}; pids "
                      f"{' '.join(map(str, t.pids())) or '-'})", flush=True)
            print("serving until ^C", flush=True)
            ok = True
            while True:
                signal.pause()
        meta["dlp"] = ("on: a token-shaped body is refused (403)"
                       if chk["gateway"]["token shape in body"] == "403" else
                       "not in this build: the route's dlp fields are set "
                       "(token_patterns, known_secrets, block) but a "
                       "token-shaped body went through (" +
                       chk["gateway"]["token shape in body"] + ")")

        body = os.path.join(d, "body.json")
        log("warming up")
        for t in targets:
            if LOADGEN == "hey":
                hey(t, {"c": 16, "path": "/1k"}, FIRST_WARMUP, LOAD_CORE,
                    body)
            else:
                load_run(t, {"c": 16, "path": "/1k"}, 0, FIRST_WARMUP,
                         LOAD_CORE, body)

        results = {key: {t.key: [] for t in targets}
                   for key, _, _ in SCENARIOS}
        for rnd in range(ROUNDS):
            order = targets if rnd % 2 == 0 else targets[::-1]
            for key, label, spec in SCENARIOS:
                for t in order:
                    if spec and spec.get("gateway_only") \
                            and t.key != "gateway":
                        continue
                    settle(targets)
                    r = measure(t, spec, body, LOAD_CORE)
                    results[key][t.key].append(r)
                    log(f"round {rnd + 1}/{ROUNDS} {key:8} {t.key:9} "
                        f"req/s {fmt(r['rps'], 0):>7} p50 {fmt(r['p50'])} "
                        f"p99 {fmt(r['p99'])} cpu/req "
                        f"{fmt(r['cpu_ms'], 3)} ms core "
                        f"{fmt(r['core'], 0)}% rss {fmt(r['rss'], 1)} "
                        f"conns {fmt(r.get('conns'), 0)} failed {r['bad']}")

        # after every scenario: it reloads the gateway with a journal
        fh = None if args.no_firehose else \
            run_firehose(d, targets[-1], policy, body)
        log("scanner benchmark")
        scan, scan_err = scanner(d)
        cp = None if args.no_scale else run_scale(d)
        meta["elapsed_s"] = round(time.time() - started)
        meta["loadavg_end"] = os.getloadavg()[0]
        text = report(meta, targets, results, chk, scan, scan_err, cp, fh)
        print(text)
        data = {"meta": meta, "checks": chk, "scanner": scan,
                "results": results}
        if fh is not None:
            data["firehose"] = fh
        if cp is not None:
            data["control_plane"] = cp
        name = save(meta, text, data)
        log(f"saved {os.path.relpath(RESULTS, TOP)}/{name}.md and .json "
            f"({meta['elapsed_s']} s)")
        ok = True
    finally:
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(sig, signal.SIG_IGN)      # stop everything first
        PROCS.stop_all()
        if ok and not os.environ.get("BENCH_KEEP"):
            shutil.rmtree(d, ignore_errors=True)
        else:
            log(f"run directory kept: {d}")


if __name__ == "__main__":
    try:
        main()
    except RuntimeError as e:
        sys.exit(f"bench: {e}")
