#!/usr/bin/env python3
"""Writes a push for bench/gitgate_scan_bench.c with git fast-import.

    gitgate_bench.py REPO MODE MB [SHAPE]

SHAPE, the text's (issue 34): mixed (the default: words of code and
numbers, the bench's text before), words (random lowercase words, as an
outside tester writes them), code (C-like source), json (minified JSON:
a file is one line), long (lines of 10-100 KB of words), base64 (blobs of
random bytes, half the files wrapped at 76 columns, half in lines of
10-100 KB).

MODE: add (every commit adds new files), append (commits grow existing
files at their end), again (append, after an earlier push that appended
to the same files: the bench scans that one first, unmeasured, as the
gate did), edit (commits insert lines inside existing files: the
line-diff path).  Leaves refs/heads/main at the base commit (again: at
the earlier push's), the pushed commits unreferenced, and prints "OLD
NEW" for the bench (again: "OLD NEW BASE", BASE the commit before the
earlier push).

The pushed objects are in fast-import's pack, which deltas each blob
against the blob written before it.  push-add, push-append, push-edit
store them as a real push leaves them instead: the repository holds the
base commit as a fetch packs it, and the pushed commits arrive as the
thin pack `git pack-objects --revs --thin` sends, fixed by `git
index-pack --fix-thin --stdin` as receive-pack does (deltas by path and
size, an older version often stored on a newer one).

    gitgate_bench.py --push SRC DST OLD NEW
        the same conversion of a repository this script wrote (SRC kept;
        OLD NEW: what it printed)
"""

import os
import base64
import random
import subprocess
import sys

def as_pushed(src, dst, old, new):
    """dst: the base commit fetched from src, then the pushed commits as a
    thin pack piped into index-pack --fix-thin, as receive-pack stores a
    push, in a quarantine directory (refs/heads/main the base; the pushed
    commits unreferenced)"""
    subprocess.run(["git", "init", "-q", "--bare", dst], check=True)
    subprocess.run(["git", "-C", dst, "-c", "fetch.unpackLimit=1", "fetch",
                    "-q", os.path.abspath(src),
                    "%s:refs/heads/main" % old], check=True)
    # a client's new commits are loose objects: no delta of fast-import's
    # to reuse, pack-objects finds its own
    pack = subprocess.Popen(["git", "-C", src, "pack-objects", "--revs",
                             "--thin", "--no-reuse-delta", "--stdout", "-q"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    # into a quarantine, objects/incoming-bench/pack, where receive-pack
    # keeps a push's pack while its hook runs (the bench passes it on as
    # GIT_QUARANTINE_PATH)
    q = os.path.join(dst, "objects", "incoming-bench", "pack")
    os.makedirs(q)
    tmp = os.path.join(q, "tmp.pack")
    # (the bases --fix-thin appends stored, not compressed: the gate's
    # receive-pack runs with core.compression=0, gitgate-cgi.c)
    index = subprocess.Popen(["git", "-C", dst, "-c", "core.compression=0",
                              "index-pack", "--fix-thin",
                              "--stdin", os.path.abspath(tmp)],
                             stdin=pack.stdout, stdout=subprocess.PIPE)
    pack.stdout.close()
    pack.stdin.write(("%s\n^%s\n" % (new, old)).encode())
    pack.stdin.close()
    # "pack\t<hash>"
    name = index.stdout.read().decode().split()[-1:]
    if index.wait() != 0 or pack.wait() != 0 or len(name) != 1:
        sys.exit("gitgate_bench: the push's pack was not written")
    for ext in ("pack", "idx"):
        os.rename(os.path.join(q, "tmp." + ext),
                  os.path.join(q, "pack-%s.%s" % (name[0], ext)))


if sys.argv[1] == "--push":
    src, dst, old, new = sys.argv[2:6]
    as_pushed(src, dst, old, new)
    print(old, new)
    sys.exit(0)

repo, mode, mb = sys.argv[1], sys.argv[2], float(sys.argv[3])
shape = sys.argv[4] if len(sys.argv) > 4 else "mixed"
push = mode.startswith("push-")
if push:
    mode = mode[len("push-"):]
    final, repo = repo, repo + ".fi"
rng = random.Random(7)
WORDS = ("int char return static const void struct size_t if else for "
         "while buf len err data value config token name path line self "
         "def import from class None True False the of and to in is").split()


def text_mixed(nbytes, i):
    """Lines of words and numbers, each line new: files that share lines
    would be stored as deltas of each other, which a push of new work
    mostly is not (and libgit2 resolves a chain of deltas of a blob over
    1 MB from its base every time: see bench/README.md)."""
    out, n = [], 0
    words = rng.choices(WORDS, k=nbytes // 4)
    nums = rng.choices(range(10**9), k=nbytes // 40)
    w = 0
    while n < nbytes:
        k = 3 + (w % 11)
        s = " ".join(words[w:w + k]) + " = %d;\n" % nums[(w // 8) % len(nums)]
        w += k
        if w + 14 > len(words):
            w = 0
            rng.shuffle(words)
        out.append(s)
        n += len(s)
    return "".join(out)


LOWER = "abcdefghijklmnopqrstuvwxyz"
# their own generator: mixed's text as before
vrng = random.Random(11)
VOCAB = ["".join(vrng.choices(LOWER, k=vrng.randint(2, 10)))
         for _ in range(20000)]
IDENT = ["_".join(vrng.choices(VOCAB[:3000], k=vrng.randint(1, 3)))
         for _ in range(5000)]


def words_of(nbytes, short, long_):
    """lines of VOCAB words, each line between short and long_ bytes"""
    out, n = [], 0
    words = rng.choices(VOCAB, k=nbytes // 6 + 16)
    w = 0
    while n < nbytes:
        want = rng.randint(short, long_)
        k = max(1, want // 7)
        if w + k > len(words):
            w = 0
            rng.shuffle(words)
            k = min(k, len(words))
        s = " ".join(words[w:w + k]) + "\n"
        w += k
        out.append(s)
        n += len(s)
    return "".join(out)


def text_words(nbytes, i):
    return words_of(nbytes, 20, 120)


def text_long(nbytes, i):
    return words_of(nbytes, 10_000, 100_000)


CODE = [
    "{i}static int\n{a}({b} *{c}, size_t {d})\n{{\n",
    "{i}if ({a} > {n} && {b} != NULL) {{\n",
    "{i}    return {a}({b}, {c} + {n});\n",
    "{i}}}\n",
    "{i}for ({a} = 0; {a} < {b}->{c}; {a}++) {{\n",
    "{i}{a}->{b} = {c}[{n}] ^ 0x{h:x};\n",
    "{i}/* {w} */\n",
    "{i}snprintf({a}, sizeof({a}), \"{w} %d\\n\", {b});\n",
    "\n",
    "{i}{a} = {b}({c}, \"{w}\", {n});\n",
    "#include \"{a}.h\"\n",
    "{i}}} else if ({a} == {n}) {{\n",
    "{i}    {a} += {b} * {n};\n",
]


def text_code(nbytes, i):
    out, n = [], 0
    while n < nbytes:
        ids = rng.choices(IDENT, k=4)
        s = rng.choice(CODE).format(
            i="    " * rng.randint(0, 3), a=ids[0], b=ids[1], c=ids[2],
            d=ids[3], n=rng.randint(0, 99999), h=rng.getrandbits(24),
            w=" ".join(rng.choices(VOCAB, k=rng.randint(2, 8))))
        out.append(s)
        n += len(s)
    return "".join(out)


def text_json(nbytes, i):
    """minified: the whole text one line, its newline at the end"""
    out, n = [], 0
    while n < nbytes:
        ws = rng.choices(VOCAB, k=6)
        s = ('{"id":%d,"name":"%s %s","tags":["%s","%s"],"score":%d.%03d,'
             '"active":%s,"owner":{"login":"%s","n":%d},"text":"%s"},' % (
                 rng.getrandbits(30), ws[0], ws[1], ws[2], ws[3],
                 rng.randint(0, 999), rng.randint(0, 999),
                 "true" if rng.getrandbits(1) else "false", ws[4],
                 rng.randint(0, 9999),
                 " ".join(rng.choices(VOCAB, k=rng.randint(3, 12)))))
        out.append(s)
        n += len(s)
    return "[" + "".join(out)[:-1] + "]\n"


def text_base64(nbytes, i):
    raw = base64.b64encode(rng.randbytes(nbytes * 3 // 4)).decode()
    if i % 2 == 0:
        width = [76]
    else:
        width = [rng.randint(10_000, 100_000) for _ in range(64)]
    out, at, k = [], 0, 0
    while at < len(raw):
        w = width[k % len(width)]
        out.append(raw[at:at + w] + "\n")
        at += w
        k += 1
    return "".join(out)


SHAPES = {"mixed": text_mixed, "words": text_words, "code": text_code,
          "json": text_json, "long": text_long, "base64": text_base64}
if shape not in SHAPES:
    sys.exit("gitgate_bench: SHAPE is one of " + " ".join(SHAPES))


def text(nbytes, i=0):
    return SHAPES[shape](nbytes, i)


NFILES, FILE = 20, 1_000_000
# new files: 1.25 MB unless GITGATE_BENCH_FILE says (bytes)
ADD_FILE = int(os.environ.get("GITGATE_BENCH_FILE", "1250000"))
# a push smaller than one commit's: smaller files and appends (MB 1)
ADD_FILE = min(ADD_FILE, int(mb * 1_000_000 / 4))
APPEND = min(250_000, int(mb * 1_000_000 / NFILES))
out = []
mark = [0]


def blob(s):
    b = s.encode()
    mark[0] += 1
    out.append(b"blob\nmark :%d\ndata %d\n" % (mark[0], len(b)) + b + b"\n")
    return mark[0]


def commit(ref, msg, files, parent=None):
    mark[0] += 1
    m = mark[0]
    head = b"commit %s\nmark :%d\ncommitter B <b@x> 1700000000 +0000\n" % (
        ref.encode(), m)
    head += b"data %d\n%s\n" % (len(msg), msg.encode())
    if parent:
        head += b"from :%d\n" % parent
    for path, bm in files:
        head += b"M 100644 :%d %s\n" % (bm, path.encode())
    out.append(head + b"\n")
    return m


base_text = [text(FILE, i) for i in range(NFILES)]
base = commit("refs/heads/main", "base",
              [("src/f%02d.c" % i, blob(t)) for i, t in enumerate(base_text)])

total, prev, k = 0, base, 0
cur = list(base_text)
# again: an earlier push appended to every file first (its commit on
# refs/heads/mid, the receiving repository's main when this push comes);
# then this push appends again
mid = None
if mode == "again":
    for i in range(NFILES):
        cur[i] += text(APPEND, i)
    mid = commit("refs/heads/mid", "earlier push",
                 [("src/f%02d.c" % i, blob(t)) for i, t in enumerate(cur)],
                 base)
    prev, mode = mid, "append"
while total < mb * 1_000_000:
    k += 1
    files = []
    if mode == "add":
        for j in range(4):
            t = text(ADD_FILE, j)
            total += len(t)
            files.append(("new/c%03d_%d.txt" % (k, j), blob(t)))
    else:
        for i in range(NFILES):
            add = text(APPEND, i)
            total += len(add)
            if mode == "append":
                cur[i] += add
            else:
                lines = cur[i].splitlines(True)
                chunk = add.splitlines(True)
                step = max(1, len(lines) // len(chunk))
                merged = []
                for n, ln in enumerate(lines):
                    merged.append(ln)
                    if n % step == 0 and chunk:
                        merged.append(chunk.pop())
                merged.extend(chunk)
                cur[i] = "".join(merged)
            files.append(("src/f%02d.c" % i, blob(cur[i])))
    prev = commit("refs/heads/pushed", "commit %d" % k, files, prev)

out.append(b"done\n")
subprocess.run(["git", "init", "-q", "--bare", repo], check=True)
subprocess.run(["git", "-C", repo, "-c", "fastimport.unpackLimit=0",
                "fast-import", "--quiet", "--done"],
               input=b"".join(out), check=True)
old = subprocess.check_output(["git", "-C", repo, "rev-parse", "main"]).split()[0]
new = subprocess.check_output(["git", "-C", repo, "rev-parse", "pushed"]).split()[0]
first = b""
if mid:
    first = old
    old = subprocess.check_output(["git", "-C", repo, "rev-parse",
                                   "mid"]).split()[0]
if push:
    as_pushed(repo, final, old.decode(), new.decode())
    subprocess.run(["rm", "-rf", repo], check=True)
else:
    subprocess.run(["git", "-C", repo, "update-ref", "-d",
                    "refs/heads/pushed"], check=True)
print(old.decode(), new.decode(), first.decode())
