"""The supervise rows of `make bench` (issue 15), on the control plane's
harness (bench/scale.py): a Redis, the bench's upstream at 127.0.0.2, and
gateways from the shipped nginx-conf/ with `bottle_policy redis://...` and
`bottle_supervise` on the same store.

- decisions: two gateways; an egress-allow proposal is approved with
  `bottlectl approve`, and both gateways are probed until every worker of
  each serves the new route; then an egress-block, until every worker
  refuses it.  From the start of `bottlectl approve` to the last worker:
  p50 and p99 over the samples.
- held requests: one gateway; M requests carrying a token shape on a
  supervise route are held at once (each one connection, its proposal
  queued); the workers' RSS before and after, per held request, and what
  the shared zone's held counter says.
"""

import base64
import json
import os
import re
import socket
import statistics
import subprocess
import time

import scale

TOKEN = "bt_supervise_bench_token_0123456789abcdef"
GHP = "ghp_" + "Zq81mNa0Lp3kRt7vWx2Yb5Cd9Ef4Gh6Ij8Kl"


class Supervise(scale.Scale):
    def __init__(self, R, d):
        self.R = R
        self.d = os.path.join(d, "supervise")
        os.makedirs(self.d)
        self.ctl = os.path.join(R.TOP, "build", "bottlectl")
        self.seq = 0
        self.res = {}

    def log(self, msg):
        self.R.log(f"supervise: {msg}")

    def write_gateway_conf(self, name):
        g, port = super().write_gateway_conf(name)
        conf = os.path.join(g, "conf", "nginx.conf")
        with open(conf) as f:
            s = f.read()
        s, k = re.subn(r"(?m)^(bottle_policy\b[^\n]*;)$",
                       r"\1\nbottle_supervise  " + self.store + ";\n"
                       "bottle_supervise_held  100000;\n"
                       "bottle_supervise_held_body  1024m;", s)
        if not k:
            raise RuntimeError("nginx-conf/nginx.conf: no bottle_policy")
        with open(conf, "w") as f:
            f.write(s)
        return g, port

    def ctl_run(self, *args):
        r = subprocess.run([self.ctl, "--store", self.store] + list(args),
                           capture_output=True, text=True, timeout=30)
        if r.returncode:
            raise RuntimeError(f"bottlectl {args[0]}: {r.stderr.strip()}")
        return r.stdout.strip()

    def put_bottle(self, routes):
        doc = {"bottles": [{
            "id": "sv", "token_sha256": scale.hashlib.sha256(
                TOKEN.encode()).hexdigest(), "routes": routes}]}
        p = subprocess.run([self.ctl, "--store", self.store, "policy", "put",
                            "-"], input=json.dumps(doc), text=True,
                           capture_output=True, timeout=30)
        if p.returncode:
            raise RuntimeError("bottlectl policy put: " + p.stderr.strip())

    # decisions

    def applied(self, gws, want_ok, deadline):
        """Probes every gateway until all workers of each answer as
        wanted; returns the time, or None."""
        done = {id(g): set() for g in gws}
        while time.monotonic() < deadline:
            for gw in gws:
                self.probe(gw, TOKEN, "127.0.0.2", "/probe/")
                for _, (pid, st) in self.probe_log(gw).items():
                    if (st == 200) == want_ok:
                        done[id(gw)].add(pid)
                    else:
                        done[id(gw)].discard(pid)
            if all(done[id(g)] >= set(g["workers"]) for g in gws):
                return time.monotonic()
        return None

    def decisions(self, samples):
        gws = [self.start_gateway(f"gw{i}", 1) for i in (1, 2)]
        route = {"host": "127.0.0.2", "port": self.up_port,
                 "methods": ["GET"], "allow": [{"path": "/probe/*"}]}
        rows = {"allow": [], "block": []}
        for i in range(samples):
            for kind, args, ok in (("egress-allow", route, True),
                                   ("egress-block", {"host": "127.0.0.2"},
                                    False)):
                pid = self.ctl_run("propose", "sv", kind, json.dumps(args),
                                   "--justification", "bench")
                t0 = time.monotonic()
                self.ctl_run("approve", pid, "--note", "bench")
                t_ctl = time.monotonic()
                t1 = self.applied(gws, ok, t0 + 10)
                rows["allow" if ok else "block"].append({
                    "ms": (t1 - t0) * 1e3 if t1 else None,
                    "bottlectl_ms": (t_ctl - t0) * 1e3})
        for gw in gws:
            self.stop_gateway(gw)
        return rows

    # held requests

    def held(self, m):
        gw = self.start_gateway("held", 1)
        body = json.dumps({"note": f"deploy with {GHP} please"}).encode()
        auth = base64.b64encode(f"agent:{TOKEN}".encode()).decode()
        req = (f"POST http://127.0.0.2:{self.up_port}/v1/held HTTP/1.1\r\n"
               f"Host: 127.0.0.2:{self.up_port}\r\n"
               f"Proxy-Authorization: Basic {auth}\r\n"
               "Content-Type: application/json\r\n"
               f"Content-Length: {len(body)}\r\n\r\n").encode() + body
        # warm both workers (pools, scanners) before the first reading
        for _ in range(20):
            self.probe(gw, TOKEN, "127.0.0.2", "/v1/warm/")
        time.sleep(0.3)
        before = self.worker_mem(gw)
        r = scale.Redis(self.rport)
        pending0 = int(r.cmd("ZCARD", "bottle:proposals:pending"))
        socks = []
        for _ in range(m):
            s = socket.create_connection(("127.0.0.1", gw["port"]), 10)
            s.sendall(req)
            socks.append(s)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            n = int(r.cmd("ZCARD", "bottle:proposals:pending")) - pending0
            if n >= m:
                break
            time.sleep(0.05)
        time.sleep(0.5)
        after = self.worker_mem(gw)
        grew = sum(after[p][0] - before[p][0] for p in after)
        answered = 0
        for s in socks:
            s.setblocking(False)
            try:
                answered += bool(s.recv(1))
            except BlockingIOError:
                pass
            except OSError:
                answered += 1
            s.close()
        r.close()
        self.stop_gateway(gw)
        return {"held": m, "queued": n, "answered_early": answered,
                "kib_per_held": grew / m,
                "worker_rss_kib_before": [before[p][0] for p in before],
                "worker_rss_kib_after": [after[p][0] for p in after]}

    def run(self, samples, m):
        self.start_redis()
        self.start_upstream()
        self.put_bottle([{"host": "127.0.0.2", "port": self.up_port,
                          "methods": ["GET", "POST"],
                          "allow": [{"path": "/v1/*"}]}])
        self.log(f"{m} requests held at once")
        self.res["held"] = self.held(m)
        self.put_bottle([])
        self.log(f"decisions: {samples} approvals of each kind, "
                 "two gateways")
        self.res["decisions"] = self.decisions(samples)
        return self.res


def pct(vals, q):
    vals = sorted(vals)
    if not vals:
        return None
    k = min(len(vals) - 1, max(0, int(round(q / 100 * len(vals) + 0.5)) - 1))
    return vals[k]


def supervise(R, d):
    samples = 5 if R.QUICK else 25
    m = 200 if R.QUICK else 1000
    cpus = os.sched_getaffinity(0)
    os.sched_setaffinity(0, set(range(os.cpu_count())))
    try:
        return Supervise(R, d).run(samples, m)
    finally:
        os.sched_setaffinity(0, cpus)


def report_lines(res):
    out = []
    w = out.append
    if not res:
        return out
    w("## Supervise")
    w("")
    if res.get("error"):
        w(f"Not measured: {res['error']}")
        return out
    w("bench/supervise.py: a Redis of its own, gateways from the shipped "
      "nginx-conf/ with `bottle_policy` and `bottle_supervise` on it, 2 "
      "workers each.")
    w("")
    w("| metric | p50 | p99 | max | samples |")
    w("|---|---:|---:|---:|---:|")
    for kind, label in (("allow", "egress-allow approved → served on both "
                                  "gateways (every worker)"),
                        ("block", "egress-block approved → refused on both "
                                  "gateways (every worker)")):
        rows = res["decisions"][kind]
        ms = [r["ms"] for r in rows if r["ms"] is not None]
        miss = len(rows) - len(ms)
        w(f"| {label} | {scale.fmt_ms(pct(ms, 50))} ms | "
          f"{scale.fmt_ms(pct(ms, 99))} ms | "
          f"{scale.fmt_ms(max(ms) if ms else None)} ms | {len(ms)}"
          + (f" ({miss} never applied)" if miss else "") + " |")
    ctl = [r["bottlectl_ms"] for k in ("allow", "block")
           for r in res["decisions"][k]]
    w(f"| of which `bottlectl approve` itself | "
      f"{scale.fmt_ms(pct(ctl, 50))} ms | {scale.fmt_ms(pct(ctl, 99))} ms |"
      f" {scale.fmt_ms(max(ctl))} ms | {len(ctl)} |")
    h = res["held"]
    w("")
    w(f"Held requests: {h['held']:,} at once on one gateway "
      f"({h['queued']:,} proposals queued, {h['answered_early']} answered "
      f"before release): **{h['kib_per_held']:.1f} KiB of worker RSS per "
      f"held request** (RSS per worker before "
      f"{', '.join(str(x) for x in h['worker_rss_kib_before'])} KiB, "
      f"after {', '.join(str(x) for x in h['worker_rss_kib_after'])} KiB).")
    w("")
    return out
