#!/usr/bin/env python3
"""Writes a push for bench/gitgate_scan_bench.c with git fast-import.

    gitgate_bench.py REPO MODE MB

MODE: add (every commit adds new files), append (commits grow existing
files at their end), edit (commits insert lines inside existing files:
the line-diff path).  Leaves refs/heads/main at the base commit, the
pushed commits unreferenced, and prints "OLD NEW" for the bench.

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
import random
import subprocess
import sys

def as_pushed(src, dst, old, new):
    """dst: the base commit fetched from src, then the pushed commits as a
    thin pack piped into index-pack --fix-thin, as receive-pack stores a
    push (refs/heads/main the base; the pushed commits unreferenced)"""
    subprocess.run(["git", "init", "-q", "--bare", dst], check=True)
    subprocess.run(["git", "-C", dst, "-c", "fetch.unpackLimit=1", "fetch",
                    "-q", os.path.abspath(src),
                    "%s:refs/heads/main" % old], check=True)
    # a client's new commits are loose objects: no delta of fast-import's
    # to reuse, pack-objects finds its own
    pack = subprocess.Popen(["git", "-C", src, "pack-objects", "--revs",
                             "--thin", "--no-reuse-delta", "--stdout", "-q"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    index = subprocess.Popen(["git", "-C", dst, "index-pack", "--fix-thin",
                              "--stdin"], stdin=pack.stdout,
                             stdout=subprocess.DEVNULL)
    pack.stdout.close()
    pack.stdin.write(("%s\n^%s\n" % (new, old)).encode())
    pack.stdin.close()
    if index.wait() != 0 or pack.wait() != 0:
        sys.exit("gitgate_bench: the push's pack was not written")


if sys.argv[1] == "--push":
    src, dst, old, new = sys.argv[2:6]
    as_pushed(src, dst, old, new)
    print(old, new)
    sys.exit(0)

repo, mode, mb = sys.argv[1], sys.argv[2], int(sys.argv[3])
push = mode.startswith("push-")
if push:
    mode = mode[len("push-"):]
    final, repo = repo, repo + ".fi"
rng = random.Random(7)
WORDS = ("int char return static const void struct size_t if else for "
         "while buf len err data value config token name path line self "
         "def import from class None True False the of and to in is").split()


def text(nbytes):
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


NFILES, FILE = 20, 1_000_000
# new files: 1.25 MB unless GITGATE_BENCH_FILE says (bytes)
ADD_FILE = int(os.environ.get("GITGATE_BENCH_FILE", "1250000"))
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


base_text = [text(FILE) for _ in range(NFILES)]
base = commit("refs/heads/main", "base",
              [("src/f%02d.c" % i, blob(t)) for i, t in enumerate(base_text)])

total, prev, k = 0, base, 0
cur = list(base_text)
while total < mb * 1_000_000:
    k += 1
    files = []
    if mode == "add":
        for j in range(4):
            t = text(ADD_FILE)
            total += len(t)
            files.append(("new/c%03d_%d.txt" % (k, j), blob(t)))
    else:
        for i in range(NFILES):
            add = text(250_000)
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
if push:
    as_pushed(repo, final, old.decode(), new.decode())
    subprocess.run(["rm", "-rf", repo], check=True)
else:
    subprocess.run(["git", "-C", repo, "update-ref", "-d",
                    "refs/heads/pushed"], check=True)
print(old.decode(), new.decode())
