"""The firehose's rows of `make bench` (issue 17; bench/README.md,
"Firehose").  Called by bench/run.py after its scenarios, on the gateway
target it measured.

It starts a Redis of its own (loopback, a free port, no persistence),
points the running gateway's journal at it (`bottle_audit`, the firehose's
transport) with the bench bottles at `audit.firehose: "full"`, reloads
it, and measures the gateway's CPU per request for GET 1 KiB and POST
256 KiB (c=16, keep-alive, as the scenarios) with no consumer and with one
(`bottlectl firehose`, its output thrown away), alternating, in rounds
(`BENCH_FIREHOSE_ROUNDS`, by default bench/run.py's).
The ratio is the issue's figure: at most 1.10.  The gateway's own counters
(its metrics socket) say how many requests were snapshotted, published
and dropped in each phase, so a row that measured nothing shows.

`R` is bench/run.py's module (processes, ports, measuring, logging).
"""

import json
import os
import re
import socket
import statistics
import subprocess
import time

TARGET_RATIO = 1.10
SCENARIOS = [("get16", "GET 1 KiB, keep-alive, c=16",
              dict(c=16, path="/1k")),
             ("post256", "POST 256 KiB JSON, keep-alive, c=16",
              dict(c=16, path="/sink", post=True))]
COUNTERS = ("bottle_firehose_snapshots_total",
            "bottle_firehose_published_total",
            "bottle_firehose_dropped_total")


def metrics(sock_path):
    """The gateway's firehose counters, from its metrics socket."""
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(sock_path)
    s.sendall(b"GET /metrics HTTP/1.0\r\nHost: local\r\n\r\n")
    data = b""
    while True:
        chunk = s.recv(65536)
        if not chunk:
            break
        data += chunk
    s.close()
    text = data.decode("utf-8", "replace")
    out = {}
    for name in COUNTERS + ("bottle_firehose_attached",):
        m = re.search(r"^%s (\d+)$" % name, text, re.M)
        out[name] = int(m.group(1)) if m else None
    return out


def wait_attached(sock_path, want, timeout=5.0):
    end = time.time() + timeout
    while time.time() < end:
        if (metrics(sock_path)["bottle_firehose_attached"] or 0) == want:
            return True
        time.sleep(0.1)
    return False


def run(R, d, target, policy, body):
    """The rows: {scenario: {none: [...], consumer: [...]}, counters}."""
    gw = os.path.join(d, "gateway")
    conf = os.path.join(gw, "conf", "nginx.conf")
    launcher = os.path.join(R.TOP, "scripts", "bottle-gateway")
    bottlectl = os.path.join(R.TOP, "build", "bottlectl")
    sock = os.path.join(gw, "run", "metrics.sock")

    port = R.free_port()
    rdir = os.path.join(d, "firehose-redis")
    os.makedirs(rdir)
    log = open(os.path.join(rdir, "redis.log"), "w")
    p = R.PROCS.popen("firehose-redis", R.pin(R.LOAD_CORE) + [
        "redis-server", "--port", str(port), "--bind", "127.0.0.1",
        "--save", "", "--appendonly", "no", "--dir", rdir],
        stdout=log, stderr=log)
    R.wait_port(port, p, what="redis-server")
    url = f"redis://127.0.0.1:{port}/0"

    with open(policy) as f:
        doc = json.load(f)
    for b in doc["bottles"]:
        b["audit"] = {"firehose": "full"}
    fpolicy = os.path.join(d, "policy-firehose.json")
    with open(fpolicy, "w") as f:
        json.dump(doc, f)

    # bottle_policy is in one of the configuration's pieces (bottle-main.conf)
    confdir = os.path.dirname(conf)
    for name in sorted(os.listdir(confdir)):
        piece = os.path.join(confdir, name)
        if not name.endswith(".conf"):
            continue
        with open(piece) as f:
            s = f.read()
        s, n = re.subn(r"^bottle_policy\s+\S+", f"bottle_audit {url};\n"
                       f"bottle_policy     {fpolicy}", s, count=1,
                       flags=re.M)
        if n == 1:
            with open(piece, "w") as f:
                f.write(s)
            break
    else:
        raise RuntimeError("firehose: no bottle_policy line in " + confdir)
    r = R.run([launcher, "reload", "--dir", gw], timeout=30)
    if r.returncode:
        raise RuntimeError("firehose: reload failed: " + r.stderr[-300:])
    time.sleep(2.0)                     # the old worker gone, the new up

    # rounds of their own: on a busy machine a round's ratio moves by tens
    # of percent, and only many rounds give a median to read
    rounds = int(os.environ.get("BENCH_FIREHOSE_ROUNDS", R.ROUNDS))
    res = {"rounds": rounds, "scenarios": {}, "counters": {}}
    for key, label, spec in SCENARIOS:
        res["scenarios"][key] = {"label": label, "none": [], "consumer": []}

    def phase(name):
        before = metrics(sock)
        for key, _, spec in SCENARIOS:
            R.settle([target])
            m = R.measure(target, spec, body, R.LOAD_CORE)
            res["scenarios"][key][name].append(m)
            R.log(f"firehose {name:8} {key:8} cpu/req "
                  f"{R.fmt(m['cpu_ms'], 3)} ms req/s {R.fmt(m['rps'], 0)} "
                  f"failed {m['bad']}")
        after = metrics(sock)
        c = res["counters"].setdefault(name, {k: 0 for k in COUNTERS})
        for k in COUNTERS:
            c[k] += (after[k] or 0) - (before[k] or 0)

    for rnd in range(rounds):
        if not wait_attached(sock, 0):
            raise RuntimeError("firehose: a consumer still seen attached")
        phase("none")
        consumer = subprocess.Popen(
            [bottlectl, "--store", url, "firehose"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            if not wait_attached(sock, 1):
                raise RuntimeError("firehose: the consumer never attached")
            phase("consumer")
        finally:
            consumer.terminate()
            consumer.wait(timeout=10)
    return res


def report_lines(res):
    """The "Firehose" section of the report."""
    out = []
    w = out.append
    if not res:
        return out
    w("## Firehose")
    w("")
    if res.get("error"):
        w(f"Not measured: {res['error']}")
        return out
    w("The gateway's CPU per request with no firehose consumer and with "
      "one attached (`bottlectl firehose`, output discarded), the bench "
      "bottles at `audit.firehose: \"full\"` (bench/firehose.py); medians "
      f"of {res['rounds']} alternating round(s).")
    w("")
    w("| scenario | CPU/req, no consumer | CPU/req, consumer | ratio | "
      f"target | met? |")
    w("|---|---:|---:|---:|---|---|")
    for key, sc in res["scenarios"].items():
        a = [m["cpu_ms"] for m in sc["none"] if m["cpu_ms"]]
        b = [m["cpu_ms"] for m in sc["consumer"] if m["cpu_ms"]]
        if not a or not b:
            w(f"| {sc['label']} | — | — | — | ≤ {TARGET_RATIO:.2f}× | — |")
            continue
        ma, mb = statistics.median(a), statistics.median(b)
        ratio = mb / ma
        met = "yes" if ratio <= TARGET_RATIO else "**no**"
        w(f"| {sc['label']} | {ma:.3f} ms | {mb:.3f} ms | {ratio:.2f}× | "
          f"≤ {TARGET_RATIO:.2f}× | {met} |")
    w("")
    # each round's two phases ran back to back: their ratio is less moved
    # by the machine's load drifting over the run than the medians' ratio
    for key, sc in res["scenarios"].items():
        pairs = [b["cpu_ms"] / a["cpu_ms"]
                 for a, b in zip(sc["none"], sc["consumer"])
                 if a["cpu_ms"] and b["cpu_ms"]]
        if pairs:
            w(f"- {sc['label']}: each round's ratio "
              f"{', '.join(f'{x:.2f}' for x in pairs)} (median "
              f"{statistics.median(pairs):.2f})")
    for name in ("none", "consumer"):
        c = res["counters"].get(name, {})
        w(f"- {name}: snapshots {c.get(COUNTERS[0], 0)}, published "
          f"{c.get(COUNTERS[1], 0)}, dropped {c.get(COUNTERS[2], 0)}")
    return out
