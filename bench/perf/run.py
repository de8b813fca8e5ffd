"""bench/perf/run.py - the CPU performance harness (docs/performance.md).

Runs every case at 2^16, 2^20 and 2^25 elements (square matrices of 256,
1024 and 4096 rows) with nnk (the runtime's JIT, and the same kernels
compiled ahead of time), hand-written OpenMP C loops (the limit of the
memory-bound cases), numpy, numexpr, numba (@njit(parallel=True) loops and
@vectorize(target='parallel') ufuncs), torch eager, torch.compile and
jax.jit, interleaved in one schedule: after `--warmup` rounds, each of
`--reps` rounds runs every (case, size, implementation) once, the order of
the implementations reversed every other round.  Every implementation is
its own server process (perf_bench for nnk, aot and omp; peers.py for each
Python peer) reading the same input files; before each run it evicts the
caches by touching twice the machine's last-level cache.

Then, unless told not to: the first call of a fresh process (compile + run
of exp(a)*sin(b) + sqrt(a*b) on 1,000 elements; cold = an empty disk cache,
warm = the cache an earlier process filled), and nnk under contention (a
busy loop pinned to one CPU; nnk on 1 thread against nnk on --threads).

Writes the medians and the ratios as JSON and markdown, and optionally the
table into docs/performance.md.  Run it through bench/perf/run.sh
(make bench-perf), which builds perf_bench and the peers' virtualenv.
Ratios are times, other / nnk: above 1, nnk is faster; for the OpenMP
limit, limit / nnk is the fraction of the limit nnk reaches."""
import argparse
import datetime
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
N = 1 << 25
LOG2S = (16, 20, 25)

CASES = [
    # name, description, matrix case (size printed as rows x cols)
    ("triad", "triad z = a*x + y", False),
    ("sum", "sum", False),
    ("fused", "exp(a)*sin(b) + sqrt(a*b)", False),
    ("gelu", "gelu (tanh), f32", False),
    ("gelu_f16", "gelu (tanh), f16 storage", False),
    ("softmax", "softmax over rows", True),
    ("layernorm", "layernorm over rows", True),
    ("colsum", "column sum (axis 0)", True),
    ("rowsum", "row sum (axis 1)", True),
    ("bcast", "broadcast add x[n,1] + y[1,n]", True),
    ("transpose", "x.T * 2 + 1 (transposed view)", True),
    ("argmax", "argmax over rows", True),
    ("var", "variance over rows", True),
    ("triad_f64", "triad, f64", False),
    ("imad", "int32 a*b + c", False),
    ("launch", "kernel call, 1,000 elements", None),
]
# the memory-bound cases: at 2^25, nnk >= 0.9 of the OpenMP limit
MEMORY_BOUND = ("triad", "sum", "colsum", "rowsum", "bcast", "transpose", "triad_f64", "imad")
C_IMPLS = ["nnk", "aot", "omp"]
PEER_IMPLS = ["numpy", "numexpr", "numba", "numba_vec", "torch", "torch_compile", "jax"]
IMPLS = C_IMPLS + PEER_IMPLS
COLUMN = {"nnk": "nnk JIT", "aot": "nnk AOT", "omp": "OpenMP C (limit)", "numpy": "numpy", "numexpr": "numexpr",
          "numba": "numba njit", "numba_vec": "numba vectorize", "torch": "torch eager",
          "torch_compile": "torch.compile", "jax": "jax.jit"}
FIRST_PEERS = ["jax", "torch_compile", "numba", "numexpr"]   # those with a first call to time
COMPILING_PEERS = ("jax", "torch_compile", "numba")
WARM_GOAL_S = 5e-3


class Server:
    """A server process: one request line in, one line out."""

    def __init__(self, argv, env, name):
        self.name = name
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env)
        self.dead = False

    def ask(self, line):
        if self.dead:
            return None
        try:
            self.p.stdin.write(line + "\n")
            self.p.stdin.flush()
            r = self.p.stdout.readline().strip()
        except (BrokenPipeError, OSError):
            r = ""
        if not r:
            print("run.py: %s stopped (see its messages above); left out from here" % self.name, file=sys.stderr)
            self.dead = True
            return None
        return r

    def close(self):
        if not self.dead:
            try:
                self.p.stdin.write("quit\n")
                self.p.stdin.flush()
            except OSError:
                pass
        try:
            self.p.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def as_time(r):
    return None if r is None or r == "skip" else float(r)


# ---- the machine ---------------------------------------------------------------

def llc_bytes():
    """The last-level cache of the machine, all its instances together, from
    sysfs (lscpu's figure as the fallback; 32 MiB if neither answers)."""
    base = "/sys/devices/system/cpu"
    best, seen = {}, set()
    try:
        for cpu in sorted(os.listdir(base)):
            if not re.fullmatch(r"cpu\d+", cpu):
                continue
            d = os.path.join(base, cpu, "cache")
            for idx in os.listdir(d) if os.path.isdir(d) else []:
                p = os.path.join(d, idx)
                try:
                    level = int(open(os.path.join(p, "level")).read())
                    kind = open(os.path.join(p, "type")).read().strip()
                    size = open(os.path.join(p, "size")).read().strip()
                    shared = open(os.path.join(p, "shared_cpu_list")).read().strip()
                except OSError:
                    continue
                if kind == "Instruction":
                    continue
                m = re.fullmatch(r"(\d+)([KMG]?)", size)
                if not m:
                    continue
                b = int(m.group(1)) << {"": 0, "K": 10, "M": 20, "G": 30}[m.group(2)]
                if (level, shared) not in seen:
                    seen.add((level, shared))
                    best[level] = best.get(level, 0) + b
    except OSError:
        pass
    if best:
        return best[max(best)], "sysfs"
    try:
        out = subprocess.run(["lscpu", "-B"], capture_output=True, text=True).stdout
        for k in ("L3 cache", "L2 cache"):
            m = re.search(r"%s:\s*(\d+)" % k, out)
            if m:
                return int(m.group(1)), "lscpu"
    except OSError:
        pass
    return 32 << 20, "default"


def machine(cc):
    cpu, flags = "unknown", ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and cpu == "unknown":
                    cpu = line.split(":", 1)[1].strip()
                if line.startswith("flags") and not flags:
                    fl = line.split(":", 1)[1].split()
                    flags = " ".join(x for x in ("avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512_fp16",
                                                 "avx512_bf16", "amx_tile") if x in fl)
    except OSError:
        pass
    try:
        ccv = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        ccv = cc
    caches = ""
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        caches = ", ".join("%s %s" % (k, re.search(r"%s:\s*(.*)" % k, lscpu).group(1).strip())
                           for k in ("L1d cache", "L2 cache", "L3 cache") if re.search(r"%s:" % k, lscpu))
    except OSError:
        pass
    llc, src = llc_bytes()
    return {"cpu": cpu, "cores": os.cpu_count(), "isa": flags, "caches": caches, "llc_bytes": llc,
            "llc_source": src, "cc": ccv, "os": platform.platform()}


def load():
    try:
        return "%.2f %.2f %.2f" % os.getloadavg()
    except OSError:
        return "?"


# ---- the inputs ------------------------------------------------------------------

def write_inputs(d):
    """The input files every implementation maps (written once; kept)."""
    os.makedirs(d, exist_ok=True)
    stamp = os.path.join(d, "inputs-v1")
    if os.path.exists(stamp):
        return
    rng = np.random.default_rng(1)
    u = rng.random(N, dtype=np.float32)
    v = rng.random(N, dtype=np.float32)
    files = {
        "x.f32": u * 8 - 4,
        "y.f32": v,
        "a.f32": u * 2 + np.float32(2 ** -10),   # (0, 2]: exp(a) and sqrt(a * b) finite
        "b.f32": v * np.float32(6.28),
    }
    files["h.f16"] = files["x.f32"].astype(np.float16)
    files["x.f64"] = rng.random(N) * 8 - 4
    files["y.f64"] = rng.random(N)
    for k in ("a", "b", "c"):
        files[k + ".i32"] = rng.integers(-(1 << 16), 1 << 16, N, dtype=np.int32)
    for name, arr in files.items():
        arr.tofile(os.path.join(d, name))
    open(stamp, "w").close()


# ---- the runs --------------------------------------------------------------------

def peer_env(work, threads):
    env = dict(os.environ)
    env["NUMBA_CACHE_DIR"] = os.path.join(work, "cache", "numba")
    env["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(work, "cache", "inductor")
    env["PYTHONWARNINGS"] = "ignore"
    env["TF_CPP_MIN_LOG_LEVEL"] = "3"
    env["OMP_NUM_THREADS"] = str(threads)
    return env


def start_servers(args, work, flush, want_impls):
    servers, described = {}, {}
    env = dict(os.environ)
    env["NNK_NUM_THREADS"] = str(args.threads)
    c = Server([args.bench, os.path.join(work, "data"), args.nnk, str(flush)], env, "perf_bench")
    for impl in C_IMPLS:
        servers[impl] = c
    for impl in PEER_IMPLS:
        if impl not in want_impls:
            continue
        s = Server([args.python, os.path.join(HERE, "peers.py"), "serve", impl, os.path.join(work, "data"),
                    str(flush), str(args.threads)], peer_env(work, args.threads), impl)
        line = s.p.stdout.readline().strip()
        if not line:
            print("run.py: peer %s did not start (%s); left out" % (impl, args.python), file=sys.stderr)
            s.dead = True
            s.close()
            continue
        described[impl] = line
        servers[impl] = s
    return servers, described


def schedule(args, servers, cases, impls, rounds_total, warmup, label=""):
    samples = {}
    skip = set()
    for rnd in range(rounds_total):
        order = impls if rnd % 2 == 0 else impls[::-1]
        for case, _, _ in cases:
            for log2 in (LOG2S if case != "launch" else (0,)):
                for impl in order:
                    if (case, log2, impl) in skip or impl not in servers:
                        continue
                    time.sleep(0.003)   # the previous run's threads go to sleep
                    s = servers[impl]
                    line = "%s %d %s" % (case, log2, impl) if impl in C_IMPLS or impl.startswith("nnk") \
                        else "%s %d" % (case, log2)
                    t = as_time(s.ask(line))
                    if t is None:
                        skip.add((case, log2, impl))
                    elif rnd >= warmup:
                        samples.setdefault(case, {}).setdefault(str(log2), {}).setdefault(impl, []).append(t)
        print("%sround %d of %d done (load %s)" % (label, rnd + 1, rounds_total, load()), file=sys.stderr)
    return samples


def medians(samples):
    return {c: {l: {i: statistics.median(v) for i, v in d.items() if v} for l, d in ls.items()}
            for c, ls in samples.items()}


def first_calls(args, work, reps):
    """Fresh processes: cold (an empty cache directory) then warm (the same
    directory again), `reps` times, interleaved over the implementations."""
    res = {}
    impls = ["nnk"] + [p for p in FIRST_PEERS if p in args.peer_set]
    for rep in range(reps):
        for impl in impls if rep % 2 == 0 else impls[::-1]:
            d = tempfile.mkdtemp(prefix="first-", dir=os.path.join(work, "cache"))
            for kind in ("cold", "warm"):
                if impl == "nnk":
                    env = dict(os.environ, NNK_CACHE_DIR=d, NNK_NUM_THREADS=str(args.threads))
                    argv = [args.bench, "--first", args.nnk]
                else:
                    env = peer_env(work, args.threads)
                    argv = [args.python, os.path.join(HERE, "peers.py"), "first", impl, d]
                p = subprocess.run(argv, env=env, capture_output=True, text=True)
                try:
                    t = float(p.stdout.strip().splitlines()[-1])
                except (ValueError, IndexError):
                    print("run.py: first call of %s failed: %s" % (impl, p.stderr[-400:]), file=sys.stderr)
                    break
                res.setdefault(impl, {}).setdefault(kind, []).append(t)
            shutil.rmtree(d, ignore_errors=True)
        print("first calls: round %d of %d done (load %s)" % (rep + 1, reps, load()), file=sys.stderr)
    return {i: {k: {"samples": v, "median": statistics.median(v)} for k, v in d.items()} for i, d in res.items()}


def contention(args, work, flush, cases, reps):
    """nnk on 1 thread and on --threads with a busy loop pinned to the last CPU."""
    cpus = sorted(os.sched_getaffinity(0))
    busy = subprocess.Popen([sys.executable, "-c", "import os\nos.sched_setaffinity(0, {%d})\nwhile True: pass"
                             % cpus[-1]])
    servers = {}
    try:
        for n in (1, args.threads):
            env = dict(os.environ, NNK_NUM_THREADS=str(n))
            servers["nnk%d" % n] = Server([args.bench, os.path.join(work, "data"), args.nnk, str(flush)], env,
                                          "perf_bench (%d threads)" % n)
        impls = ["nnk1", "nnk%d" % args.threads]
        samples = schedule(args, {k: _Renamed(v) for k, v in servers.items()}, cases, impls, reps + 1, 1,
                           label="contention: ")
    finally:
        busy.terminate()
        busy.wait()
        for s in servers.values():
            s.close()
    return medians(samples), samples


class _Renamed:
    """A perf_bench server asked for "nnk" under another name."""

    def __init__(self, s):
        self.s = s

    def ask(self, line):
        w = line.split()
        return self.s.ask("%s %s nnk" % (w[0], w[1]))


# ---- the report --------------------------------------------------------------------

def fmt_t(t):
    if t is None:
        return "-"
    if t < 1e-3:
        return "%.2f µs" % (t * 1e6)
    if t < 1:
        return "%.2f ms" % (t * 1e3)
    return "%.2f s" % t


def size_label(case, log2, matrix):
    if case == "launch":
        return "1000"
    if matrix:
        m = 1 << (int(log2) // 2)
        return "%dx%d" % (m, m)
    return "2^%s" % log2


def evaluate(med, first, cont, threads):
    goals = []
    for case, desc, matrix in CASES:
        for log2, d in sorted(med.get(case, {}).items(), key=lambda kv: int(kv[0])):
            if "nnk" not in d:
                continue
            peers = {i: t for i, t in d.items() if i in PEER_IMPLS}
            if peers:
                best = min(peers, key=peers.get)
                r = peers[best] / d["nnk"]
                goals.append({"goal": "%s %s: nnk >= 1.0x the fastest peer (%s)" % (
                    desc, size_label(case, log2, matrix), COLUMN[best]), "ratio": r, "met": r >= 1.0,
                    "measured": "%.2f" % r, "kind": "peer", "case": case, "log2": log2, "peer": best})
            if case in MEMORY_BOUND and log2 == "25" and "omp" in d:
                r = d["omp"] / d["nnk"]
                goals.append({"goal": "%s %s: nnk >= 0.9 of the OpenMP limit" % (desc, size_label(case, log2, matrix)),
                              "ratio": r, "met": r >= 0.9, "measured": "%.2f" % r, "kind": "limit", "case": case,
                              "log2": log2})
    if first and "nnk" in first:
        f = first["nnk"]
        comp = {p: first[p]["cold"]["median"] for p in COMPILING_PEERS if p in first and "cold" in first[p]}
        if comp and "cold" in f:
            best = min(comp, key=comp.get)
            r = comp[best] / f["cold"]["median"]
            goals.append({"goal": "first call, cold: nnk <= the fastest compiling peer (%s)" % COLUMN[best],
                          "ratio": r, "met": r >= 1.0, "measured": "%s vs %s" % (
                              fmt_t(f["cold"]["median"]), fmt_t(comp[best])), "kind": "first"})
        if "warm" in f:
            t = f["warm"]["median"]
            goals.append({"goal": "first call, warm (fresh process): nnk <= 5 ms", "ratio": WARM_GOAL_S / t,
                          "met": t <= WARM_GOAL_S, "measured": fmt_t(t), "kind": "first"})
    if cont:
        worst = None
        for case, ls in cont.items():
            for log2, d in ls.items():
                if "nnk1" in d and "nnk%d" % threads in d:
                    r = d["nnk1"] / d["nnk%d" % threads]
                    if worst is None or r < worst[0]:
                        worst = (r, case, log2)
        if worst:
            goals.append({"goal": "contention: nnk on %d threads never slower than on 1 (worst case: %s %s)" % (
                threads, worst[1], worst[2]), "ratio": worst[0], "met": worst[0] >= 1.0,
                "measured": "%.2f" % worst[0], "kind": "contention"})
    return goals


def table(res, mach, vers, args):
    med = res["median"]
    L = []
    L.append("Machine: %s, %d cores (%s; %s; cache flush %d MiB = twice the last-level cache, from %s); %s; %s." % (
        mach["cpu"], mach["cores"], mach["isa"], mach["caches"], 2 * mach["llc_bytes"] >> 20, mach["llc_source"],
        mach["cc"], mach["os"]))
    L.append("Peers (python %s, the peers' virtualenv from PyPI): %s. Every parallel peer on %d threads "
             "(XLA: its process pinned to %d CPUs), nnk on NNK_NUM_THREADS=%d." % (
                 vers.get("python", "?"), "; ".join(vers[i] for i in PEER_IMPLS if i in vers), args.threads,
                 args.threads, args.threads))
    L.append("Command: `%s`; medians of %d runs after %d warm-up rounds, %s; load average (1, 5, 15 min) %s at "
             "the start, %s at the end; OMP_WAIT_POLICY=%s." % (
                 args.command, res["reps"], res["warmup"], res["date"], res["load_start"], res["load_end"],
                 os.environ.get("OMP_WAIT_POLICY", "(unset)")))
    L.append("")
    L.append("Each cell: median time (ratio = that time / nnk JIT's time; above 1, nnk is faster; for the "
             "OpenMP limit, the fraction of the limit nnk reaches). Best peer: the fastest of the peers "
             "(not nnk AOT or the limit).")
    L.append("")
    shown = [i for i in IMPLS if any(i in d for ls in med.values() for d in ls.values())]
    L.append("| case | size | " + " | ".join(COLUMN[i] for i in shown) + " | best peer | ratio |")
    L.append("|---|---|" + "---:|" * len(shown) + "---|---:|")
    for case, desc, matrix in CASES:
        for log2, d in sorted(med.get(case, {}).items(), key=lambda kv: int(kv[0])):
            base = d.get("nnk")
            cells = []
            for impl in shown:
                t = d.get(impl)
                if t is None:
                    cells.append("-")
                elif impl == "nnk" or not base:
                    cells.append(fmt_t(t))
                else:
                    cells.append("%s (%.2f)" % (fmt_t(t), t / base))
            peers = {i: t for i, t in d.items() if i in PEER_IMPLS}
            if peers and base:
                b = min(peers, key=peers.get)
                r = peers[b] / base
                cells += [COLUMN[b], "%.2f" % r if r >= 1 else "**%.2f**" % r]
            else:
                cells += ["-", "-"]
            L.append("| %s | %s | %s |" % (desc, size_label(case, log2, matrix), " | ".join(cells)))
    if res.get("first"):
        L.append("")
        L.append("First call in a fresh process (compile + run of exp(a)*sin(b) + sqrt(a*b) on 1,000 f32 "
                 "elements, imports not counted; cold: an empty disk cache, warm: the cache an earlier process "
                 "filled; medians of %d):" % res["first_reps"])
        L.append("")
        L.append("| implementation | cold | warm |")
        L.append("|---|---:|---:|")
        for impl, d in res["first"].items():
            L.append("| %s | %s | %s |" % (COLUMN[impl], fmt_t(d.get("cold", {}).get("median")),
                                          fmt_t(d.get("warm", {}).get("median"))))
    if res.get("contention"):
        n = args.threads
        L.append("")
        L.append("Under contention (a busy loop pinned to CPU %d while nnk runs; medians of %d): nnk on 1 thread "
                 "and on %d threads; ratio = 1 thread / %d threads (below 1, the threads made it slower)." % (
                     res["contention_cpu"], res["reps"], n, n))
        L.append("")
        L.append("| case | size | nnk, 1 thread | nnk, %d threads | ratio |" % n)
        L.append("|---|---|---:|---:|---:|")
        for case, desc, matrix in CASES:
            for log2, d in sorted(res["contention"].get(case, {}).items(), key=lambda kv: int(kv[0])):
                a, b = d.get("nnk1"), d.get("nnk%d" % n)
                r = "%.2f" % (a / b) if a and b else "-"
                if a and b and a < b:
                    r = "**%s**" % r
                L.append("| %s | %s | %s | %s | %s |" % (desc, size_label(case, log2, matrix), fmt_t(a), fmt_t(b), r))
    L.append("")
    L.append("| goal (issue #19) | measured | met |")
    L.append("|---|---:|---|")
    for g in res["goals"]:
        L.append("| %s | %s | %s |" % (g["goal"], g["measured"], "yes" if g["met"] else "**no**"))
    met = sum(g["met"] for g in res["goals"])
    L.append("")
    L.append("%d of %d goals met." % (met, len(res["goals"])))
    return "\n".join(L) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True, help="the perf_bench executable")
    ap.add_argument("--nnk", default=os.path.join(HERE, "perf.nnk"))
    ap.add_argument("--python", default=sys.executable, help="the peers' python (the virtualenv's)")
    ap.add_argument("--work", default="", help="the work directory (inputs, caches); default: next to --bench")
    ap.add_argument("--reps", type=int, default=int(os.environ.get("BENCH_REPS", "7")))
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--cases", default="", help="comma-separated subset")
    ap.add_argument("--peers", default=",".join(PEER_IMPLS), help="comma-separated subset of the peers")
    ap.add_argument("--first-reps", type=int, default=3, help="fresh processes per kind; 0: no first calls")
    ap.add_argument("--no-contention", action="store_true")
    ap.add_argument("--only", default="", help="comma-separated parts to run: main, first, contention")
    ap.add_argument("--json", default=os.path.join(HERE, "results.json"))
    ap.add_argument("--md", default=os.path.join(HERE, "results.md"))
    ap.add_argument("--docs", default="", help="docs/performance.md to update between its perf markers")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--command", default="make bench-perf")
    args = ap.parse_args()
    args.bench = os.path.abspath(args.bench)
    args.reps = max(args.reps, 3)
    args.peer_set = set(p for p in args.peers.split(",") if p)
    want = set(args.cases.split(",")) if args.cases else None
    cases = [c for c in CASES if want is None or c[0] in want]
    work = args.work or os.path.dirname(os.path.abspath(args.bench))
    os.makedirs(os.path.join(work, "cache"), exist_ok=True)
    mach = machine(args.cc)
    flush = 2 * mach["llc_bytes"]
    load_start = load()
    write_inputs(os.path.join(work, "data"))

    parts = set(args.only.split(",")) if args.only else {"main", "first", "contention"}
    if args.no_contention or os.cpu_count() < 2:
        parts.discard("contention")
    if args.first_reps <= 0:
        parts.discard("first")
    samples, med, checks, described = {}, {}, [], {}
    if "main" in parts:
        servers, described = start_servers(args, work, flush, args.peer_set)
        # "check" answers with CHECK_LINES lines (perf_bench.c)
        checks = [servers["nnk"].ask("check")] + [servers["nnk"].p.stdout.readline().strip() for _ in range(8)]
        for line in checks:
            print(line, file=sys.stderr)
        impls = [i for i in IMPLS if i in servers]
        samples = schedule(args, servers, cases, impls, args.warmup + args.reps, args.warmup)
        for s in set(servers.values()):
            s.close()
        med = medians(samples)

    first = first_calls(args, work, args.first_reps) if "first" in parts else {}
    cont, cont_samples = contention(args, work, flush, cases, args.reps) if "contention" in parts else ({}, {})
    vers = {"python": subprocess.run([args.python, "-c", "import platform; print(platform.python_version())"],
                                     capture_output=True, text=True).stdout.strip()}
    vers.update(described)
    res = {"date": datetime.date.today().isoformat(), "reps": args.reps, "warmup": args.warmup,
           "threads": args.threads, "load_start": load_start, "load_end": load(), "checks": checks,
           "samples": samples, "median": med, "first": first, "first_reps": args.first_reps,
           "contention": cont, "contention_samples": cont_samples,
           "contention_cpu": sorted(os.sched_getaffinity(0))[-1]}
    res["goals"] = evaluate(med, first, cont, args.threads)
    md = table(res, mach, vers, args)
    with open(args.json, "w") as f:
        json.dump({"machine": mach, "versions": vers, **res}, f, indent=1)
    with open(args.md, "w") as f:
        f.write(md)
    print(md)
    if args.docs:
        with open(args.docs) as f:
            doc = f.read()
        b, e = "<!-- perf:begin (bench/perf/run.py writes this part) -->", "<!-- perf:end -->"
        if b in doc and e in doc:
            doc = doc[:doc.index(b) + len(b)] + "\n" + md + doc[doc.index(e):]
            with open(args.docs, "w") as f:
                f.write(doc)
        else:
            print("run.py: no perf markers in %s; not updated" % args.docs, file=sys.stderr)


if __name__ == "__main__":
    main()
