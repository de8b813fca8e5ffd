"""bench/perf/run.py - the CPU performance harness (docs/performance.md).

Runs every case of issue #8 with nnk (the runtime's JIT, and the same
kernels compiled ahead of time), hand-written OpenMP C loops (the limit
for triad and sum), numpy, numexpr and torch, interleaved in one schedule:
after `--warmup` rounds, each of `--reps` rounds runs every (case,
implementation) once, the order of the implementations reversed every
other round.  Writes the medians and the ratios as JSON and as a markdown
table, and optionally puts the table into docs/performance.md.

Run it through bench/perf/run.sh (make bench-perf), which builds the C
side (perf_bench) and installs the Python peers from Debian; by hand:
    /usr/bin/python3 bench/perf/run.py --bench BUILD/bench/perf-work/perf_bench
Ratios are times, other / nnk: above 1, nnk is faster; for the OpenMP
limit, limit / nnk is the fraction of the limit nnk reaches."""
import argparse
import datetime
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
N, ROWS, COLS, SMALL, LAUNCH_CALLS = 1 << 25, 4096, 4096, 1000, 4000

try:
    import numexpr as ne
except ImportError:   # the table says "missing"
    ne = None
try:
    import torch
    import torch.nn.functional as F
except ImportError:
    torch = None

CASES = [
    # name, description, size
    ("triad", "triad z = a*x + y", "2^25"),
    ("sum", "sum", "2^25"),
    ("fused", "exp(a)*sin(b) + sqrt(a*b)", "2^25"),
    ("gelu", "gelu (tanh), f32", "2^25"),
    ("gelu_f16", "gelu (tanh), f16 storage", "2^25"),
    ("softmax", "softmax over rows", "4096x4096"),
    ("layernorm", "layernorm over rows", "4096x4096"),
    ("colsum", "column sum (axis 0)", "4096x4096"),
    ("rowsum", "row sum (axis 1)", "4096x4096"),
    ("launch", "kernel call, 1,000 elements", "1000"),
]
IMPLS = ["nnk", "aot", "omp", "numpy", "numexpr", "torch"]
COLUMN = {"nnk": "nnk JIT", "aot": "nnk AOT", "omp": "OpenMP C (limit)", "numpy": "numpy",
          "numexpr": "numexpr", "torch": "torch"}
# goals of issue #8: (case, reference, minimum of reference time / nnk time)
GOALS = [("triad", "omp", 0.9), ("triad", "torch", 1.0), ("sum", "omp", 0.9), ("sum", "torch", 1.0),
         ("fused", "numexpr", 3.0), ("fused", "torch", 4.0), ("softmax", "torch", 1.5),
         ("layernorm", "torch", 1.5), ("colsum", "torch", 1.0)]
LAUNCH_GOAL_S = 2e-6


class CSide:
    """perf_bench as a server: one line in, one time out."""

    def __init__(self, exe, nnk_file):
        self.p = subprocess.Popen([exe, nnk_file], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)

    def ask(self, line):
        self.p.stdin.write(line + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().strip()

    def run(self, case, impl):
        r = self.ask("%s %s" % (case, impl))
        if not r:
            raise SystemExit("perf_bench stopped (see its messages above)")
        return None if r == "skip" else float(r)

    def check(self):
        self.p.stdin.write("check\n")
        self.p.stdin.flush()
        return [self.p.stdout.readline().strip() for _ in range(5)]

    def close(self):
        self.p.stdin.write("quit\n")
        self.p.stdin.flush()
        self.p.wait()


class PySide:
    """numpy, numexpr and torch on the same sizes (their own arrays)."""

    def __init__(self, threads):
        rng = np.random.default_rng(1)
        u = rng.random(N, dtype=np.float32)
        v = rng.random(N, dtype=np.float32)
        self.x = u * 8 - 4
        self.y = v
        self.a = u * 2 + np.float32(2 ** -10)
        self.b = v * np.float32(6.28)
        self.z = np.empty_like(self.x)
        self.h = self.x.astype(np.float16)
        self.m = self.x[:ROWS * COLS].reshape(ROWS, COLS)
        self.sx, self.sy, self.sz = self.x[:SMALL], self.y[:SMALL], self.z[:SMALL]
        self.junk = np.zeros(3 << 22, dtype=np.float64)   # 96 MiB
        if ne is not None:
            ne.set_num_threads(threads)
        if torch is not None:
            torch.set_num_threads(threads)
            t = torch.from_numpy
            self.tx, self.ty, self.tz, self.ta, self.tb = t(self.x), t(self.y), t(self.z), t(self.a), t(self.b)
            self.th, self.tm = t(self.h), t(self.m)
            self.tsx, self.tsy, self.tsz = t(self.sx), t(self.sy), t(self.sz)
            self.gelu16_note = None
            try:
                F.gelu(self.th[:16], approximate="tanh")
            except RuntimeError as e:   # torch 1.13 has no f16 gelu on the CPU
                self.gelu16_note = "torch has no f16 gelu on the CPU (%s): f16 -> f32, gelu, -> f16" % str(e)[:60]

    def fn(self, case, impl):
        """The call to time, or None when the peer has no such case."""
        x, y, z, a, b, m = self.x, self.y, self.z, self.a, self.b, self.m
        s = np.float32(2.5)
        if impl == "numpy":
            return {
                "triad": lambda: (np.multiply(x, s, out=z), np.add(z, y, out=z)),
                "sum": lambda: np.sum(x),
                "fused": lambda: np.exp(a) * np.sin(b) + np.sqrt(a * b),
                "colsum": lambda: np.sum(m, axis=0),
                "rowsum": lambda: np.sum(m, axis=1),
            }.get(case)
        if impl == "numexpr" and ne is not None:
            sx, sy, sz = self.sx, self.sy, self.sz
            return {
                "triad": lambda: ne.evaluate("s * x + y", local_dict={"s": s, "x": x, "y": y}, out=z),
                "sum": lambda: ne.evaluate("sum(x)", local_dict={"x": x}),
                "fused": lambda: ne.evaluate("exp(a) * sin(b) + sqrt(a * b)", local_dict={"a": a, "b": b}, out=z),
                "launch": lambda: [ne.evaluate("s * sx + sy", local_dict={"s": s, "sx": sx, "sy": sy}, out=sz)
                                   for _ in range(LAUNCH_CALLS)],
            }.get(case)
        if impl == "torch" and torch is not None:
            tx, ty, tz, ta, tb, th, tm = self.tx, self.ty, self.tz, self.ta, self.tb, self.th, self.tm
            tsx, tsy, tsz = self.tsx, self.tsy, self.tsz
            g16 = ((lambda: F.gelu(th.float(), approximate="tanh").half()) if self.gelu16_note
                   else (lambda: F.gelu(th, approximate="tanh")))
            return {
                "triad": lambda: torch.add(ty, tx, alpha=2.5, out=tz),
                "sum": lambda: torch.sum(tx),
                "fused": lambda: torch.exp(ta) * torch.sin(tb) + torch.sqrt(ta * tb),
                "gelu": lambda: F.gelu(tx, approximate="tanh"),
                "gelu_f16": g16,
                "softmax": lambda: torch.softmax(tm, dim=1),
                "layernorm": lambda: F.layer_norm(tm, (COLS,)),
                "colsum": lambda: torch.sum(tm, 0),
                "rowsum": lambda: torch.sum(tm, 1),
                "launch": lambda: [torch.add(tsy, tsx, alpha=2.5, out=tsz) for _ in range(LAUNCH_CALLS)],
            }.get(case)
        return None

    def flush(self):
        """Evicts the caches (as perf_bench does before each run)."""
        self.junk[:] = self.junk[::-1]

    def run(self, case, impl):
        f = self.fn(case, impl)
        if f is None:
            return None
        self.flush()
        t0 = time.perf_counter()
        f()
        t = time.perf_counter() - t0
        return t / LAUNCH_CALLS if case == "launch" else t


def versions():
    v = {"numpy": np.__version__, "numexpr": ne.__version__ if ne else "missing",
         "torch": torch.__version__ if torch else "missing", "python": platform.python_version()}
    return v


def machine(cc):
    cpu = "unknown"
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name") and cpu == "unknown":
                    cpu = line.split(":", 1)[1].strip()
                if line.startswith("flags") and not flags:
                    fl = line.split(":", 1)[1].split()
                    flags = " ".join(x for x in ("sse4_2", "avx", "avx2", "fma", "f16c", "avx512f") if x in fl)
    except OSError:
        pass
    try:
        ccv = subprocess.run([cc, "--version"], capture_output=True, text=True).stdout.splitlines()[0]
    except (OSError, IndexError):
        ccv = cc
    try:
        lscpu = subprocess.run(["lscpu"], capture_output=True, text=True).stdout
        caches = ", ".join("%s %s" % (k, re.search(r"%s:\s*(.*)" % k, lscpu).group(1).strip())
                           for k in ("L1d cache", "L2 cache", "L3 cache") if re.search(r"%s:" % k, lscpu))
    except OSError:
        caches = ""
    return {"cpu": cpu, "cores": os.cpu_count(), "isa": flags, "caches": caches, "cc": ccv,
            "os": platform.platform(), "nnk_threads": os.environ.get("NNK_NUM_THREADS", str(os.cpu_count()))}


def fmt_t(t):
    if t is None:
        return "-"
    if t < 1e-3:
        return "%.2f µs" % (t * 1e6)
    return "%.2f ms" % (t * 1e3)


def table(res, mach, vers, cmd):
    med = res["median"]
    lines = []
    lines.append("Machine: %s, %d cores (%s; %s); %s; %s." % (
        mach["cpu"], mach["cores"], mach["isa"], mach["caches"], mach["cc"], mach["os"]))
    lines.append("Peers: numpy %s, numexpr %s, torch %s (Debian packages, python %s); numexpr and torch "
                 "on %s threads, nnk on NNK_NUM_THREADS=%s." % (
                     vers["numpy"], vers["numexpr"], vers["torch"], vers["python"], res["threads"],
                     mach["nnk_threads"]))
    lines.append("Command: `%s`; medians of %d runs after %d warm-up rounds, %s; OMP_WAIT_POLICY=%s." % (
        cmd, res["reps"], res["warmup"], res["date"], os.environ.get("OMP_WAIT_POLICY", "(unset)")))
    lines.append("")
    lines.append("Each cell: median time (ratio = that time / nnk JIT's time; above 1, nnk is faster; "
                 "for the OpenMP limit, the fraction of the limit nnk reaches).")
    lines.append("")
    lines.append("| case | size | " + " | ".join(COLUMN[i] for i in IMPLS) + " |")
    lines.append("|---|---|" + "---:|" * len(IMPLS))
    for case, desc, size in CASES:
        base = med.get(case, {}).get("nnk")
        cells = []
        for impl in IMPLS:
            t = med.get(case, {}).get(impl)
            if t is None:
                cells.append("-")
            elif impl == "nnk" or not base:
                cells.append(fmt_t(t))
            else:
                cells.append("%s (%.2f)" % (fmt_t(t), t / base))
        lines.append("| %s | %s | %s |" % (desc, size, " | ".join(cells)))
    lines.append("")
    lines.append("| goal (issue #8) | measured | met |")
    lines.append("|---|---:|---|")
    for g in res["goals"]:
        lines.append("| %s | %s | %s |" % (g["goal"], g["measured"], "yes" if g["met"] else "**no**"))
    if res.get("notes"):
        lines.append("")
        for n in res["notes"]:
            lines.append("- " + n)
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", required=True, help="the perf_bench executable")
    ap.add_argument("--nnk", default=os.path.join(HERE, "perf.nnk"))
    ap.add_argument("--reps", type=int, default=int(os.environ.get("BENCH_REPS", "7")))
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--threads", type=int, default=os.cpu_count())
    ap.add_argument("--cases", default="", help="comma-separated subset")
    ap.add_argument("--json", default=os.path.join(HERE, "results.json"))
    ap.add_argument("--md", default=os.path.join(HERE, "results.md"))
    ap.add_argument("--docs", default="", help="docs/performance.md to update between its perf markers")
    ap.add_argument("--cc", default=os.environ.get("CC", "cc"))
    ap.add_argument("--command", default="make bench-perf")
    args = ap.parse_args()
    args.reps = max(args.reps, 5)
    want = set(args.cases.split(",")) if args.cases else None
    cases = [c for c in CASES if want is None or c[0] in want]

    c = CSide(args.bench, args.nnk)
    for line in c.check():
        print(line, file=sys.stderr)
    py = PySide(args.threads)
    samples = {case: {i: [] for i in IMPLS} for case, _, _ in cases}
    skip = set()
    for rnd in range(args.warmup + args.reps):
        order = IMPLS if rnd % 2 == 0 else IMPLS[::-1]
        for case, _, _ in cases:
            for impl in order:
                if (case, impl) in skip:
                    continue
                time.sleep(0.005)   # let the previous run's threads go to sleep
                t = c.run(case, impl) if impl in ("nnk", "aot", "omp") else py.run(case, impl)
                if t is None:
                    skip.add((case, impl))
                elif rnd >= args.warmup:
                    samples[case][impl].append(t)
        print("round %d of %d done" % (rnd + 1, args.warmup + args.reps), file=sys.stderr)
    c.close()

    med = {case: {i: statistics.median(v) for i, v in d.items() if v} for case, d in samples.items()}
    goals = []
    for case, ref, need in GOALS:
        if case not in med or ref not in med[case] or "nnk" not in med[case]:
            continue
        r = med[case][ref] / med[case]["nnk"]
        label = ("%s: nnk >= %.1f of the OpenMP limit" % (case, need) if ref == "omp"
                 else "%s: nnk >= %.1fx %s" % (case, need, ref))
        goals.append({"case": case, "reference": ref, "need": need, "ratio": r, "met": r >= need,
                      "goal": label, "measured": "%.2f" % r})
    if "launch" in med and "nnk" in med["launch"]:
        t = med["launch"]["nnk"]
        goals.append({"case": "launch", "reference": None, "need": LAUNCH_GOAL_S, "ratio": t, "met": t <= LAUNCH_GOAL_S,
                      "goal": "launch: nnk <= 2 µs per call", "measured": fmt_t(t)})
    notes = []
    if torch is not None and py.gelu16_note:
        notes.append(py.gelu16_note + ".")
    res = {"date": datetime.date.today().isoformat(), "reps": args.reps, "warmup": args.warmup,
           "threads": args.threads, "samples": samples, "median": med, "goals": goals, "notes": notes}
    mach, vers = machine(args.cc), versions()
    md = table(res, mach, vers, args.command)
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
