"""bench/perf/peers.py - one peer of the CPU performance harness as a server.

    python peers.py serve IMPL DATADIR FLUSH_BYTES THREADS
        reads "CASE LOG2" lines on stdin, runs that case once at that size
        (after evicting the caches) and prints the seconds, or "skip";
    python peers.py first IMPL CACHEDIR
        the first call of a fresh process: compiles (where the peer compiles)
        and runs exp(a)*sin(b) + sqrt(a*b) on 1,000 f32 elements, prints the
        seconds of that call; CACHEDIR is the peer's disk cache (empty: cold).

IMPL: numpy, numexpr, numba (@njit(parallel=True) loops), numba_vec
(@vectorize(target='parallel') ufuncs), torch (eager), torch_compile
(torch.compile, Inductor's C++/OpenMP code), jax (jax.jit on XLA's CPU
backend).  Each peer is its own process with THREADS threads (numpy
computes on one): the thread-count knob of its library, and for XLA, which
has none, the process pinned to THREADS CPUs.  The inputs are the driver's
files (the same bytes perf_bench reads), mapped copy-on-write; outputs are
given where the API allows it (out=, z.copy_(f(x)) inside torch.compile,
donated buffers under jax.jit).  Run by run.py with the peers' virtualenv
python (run.sh makes it); nothing here is timed by make check."""
import os
import sys
import time

LOG2S = (16, 20, 25)
SMALL, LAUNCH_CALLS = 1000, 4000
S2PI = 0.7978845608028654


def setup_threads(impl, threads):
    """Before the library is imported: its thread count."""
    for v in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_MAX_THREADS",
              "NUMBA_NUM_THREADS"):
        os.environ[v] = str(threads)
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    if impl == "numpy":
        os.environ["OMP_NUM_THREADS"] = "1"
    if impl == "jax":
        cpus = sorted(os.sched_getaffinity(0))[:threads]
        os.sched_setaffinity(0, cpus)
        os.environ.setdefault("XLA_FLAGS", "--xla_force_host_platform_device_count=1")
        os.environ.setdefault("JAX_PLATFORMS", "cpu")


class Data:
    def __init__(self, np, d):
        n = 1 << 25

        def load(name, dt):
            return np.memmap(os.path.join(d, name), dtype=dt, mode="c", shape=(n,))
        self.x, self.y = load("x.f32", np.float32), load("y.f32", np.float32)
        self.a, self.b = load("a.f32", np.float32), load("b.f32", np.float32)
        self.h = load("h.f16", np.float16)
        self.ia, self.ib, self.ic = load("a.i32", np.int32), load("b.i32", np.int32), load("c.i32", np.int32)
        self.dx, self.dy = load("x.f64", np.float64), load("y.f64", np.float64)
        self.z, self.dz = np.zeros(n, np.float32), np.zeros(n, np.float64)
        self.iz, self.ho = np.zeros(n, np.int32), np.zeros(n, np.float16)
        self.r, self.ri = np.zeros(4096, np.float32), np.zeros(4096, np.int64)


def views(np, D, case, log2):
    """The arrays of one case at one size: inputs, then the output."""
    n, m = 1 << log2, 1 << (log2 // 2)
    if case == "launch":
        return D.x[:SMALL], D.y[:SMALL], D.z[:SMALL]
    if case == "triad":
        return D.x[:n], D.y[:n], D.z[:n]
    if case == "triad_f64":
        return D.dx[:n], D.dy[:n], D.dz[:n]
    if case == "imad":
        return D.ia[:n], D.ib[:n], D.ic[:n], D.iz[:n]
    if case == "fused":
        return D.a[:n], D.b[:n], D.z[:n]
    if case == "gelu":
        return D.x[:n], D.z[:n]
    if case == "gelu_f16":
        return D.h[:n], D.ho[:n]
    if case == "sum":
        return (D.x[:n],)
    mx = D.x[:m * m].reshape(m, m)
    zm = D.z[:m * m].reshape(m, m)
    if case in ("softmax", "layernorm"):
        return mx, zm
    if case in ("colsum", "rowsum", "var"):
        return mx, D.r[:m]
    if case == "argmax":
        return mx, D.ri[:m]
    if case == "bcast":
        return D.x[:m].reshape(m, 1), D.y[:m].reshape(1, m), zm
    if case == "transpose":
        return mx.T, zm
    raise KeyError(case)


# ---- the peers: make(case, arrays) -> a call to time, or None -----------------

def numpy_peer(np, threads):
    s = np.float32(2.5)

    def make(case, v):
        if case in ("triad", "launch", "triad_f64"):
            x, y, z = v
            c = s if case != "triad_f64" else 2.5

            def f():
                np.multiply(x, c, out=z)
                np.add(z, y, out=z)
            if case == "launch":
                return lambda: [f() for _ in range(LAUNCH_CALLS)]
            return f
        if case == "imad":
            a, b, c, z = v
            return lambda: (np.multiply(a, b, out=z), np.add(z, c, out=z))
        if case == "sum":
            return lambda: np.sum(v[0])
        if case == "fused":
            a, b, z = v
            return lambda: np.add(np.exp(a) * np.sin(b), np.sqrt(a * b), out=z)
        if case == "gelu":
            x, z = v
            return lambda: np.multiply(0.5 * x, 1 + np.tanh(np.float32(S2PI) * (x + np.float32(0.044715) * x * x * x)),
                                       out=z)
        if case == "softmax":
            x, z = v

            def f():
                e = np.exp(x - x.max(axis=1, keepdims=True))
                np.divide(e, e.sum(axis=1, keepdims=True), out=z)
            return f
        if case == "layernorm":
            x, z = v

            def f():
                mu = x.mean(axis=1, keepdims=True)
                d = x - mu
                np.divide(d, np.sqrt((d * d).mean(axis=1, keepdims=True) + np.float32(1e-5)), out=z)
            return f
        if case == "colsum":
            return lambda: np.sum(v[0], axis=0, out=v[1])
        if case == "rowsum":
            return lambda: np.sum(v[0], axis=1, out=v[1])
        if case == "var":
            return lambda: np.var(v[0], axis=1, out=v[1])
        if case == "argmax":
            return lambda: np.argmax(v[0], axis=1, out=v[1])
        if case == "bcast":
            return lambda: np.add(v[0], v[1], out=v[2])
        if case == "transpose":
            x, z = v
            return lambda: (np.multiply(x, np.float32(2), out=z), np.add(z, np.float32(1), out=z))
        return None
    return make, lambda: "numpy %s (one thread)" % np.__version__


def numexpr_peer(np, threads):
    import numexpr as ne
    ne.set_num_threads(threads)
    s = np.float32(2.5)

    def make(case, v):
        ev = ne.evaluate
        if case in ("triad", "launch", "triad_f64"):
            x, y, z = v
            c = s if case != "triad_f64" else 2.5
            f = (lambda: ev("c * x + y", local_dict={"c": c, "x": x, "y": y}, out=z))
            if case == "launch":
                return lambda: [f() for _ in range(LAUNCH_CALLS)]
            return f
        if case == "imad":
            a, b, c, z = v
            return lambda: ev("a * b + c", local_dict={"a": a, "b": b, "c": c}, out=z)
        if case == "sum":
            return lambda: ev("sum(x)", local_dict={"x": v[0]})
        if case == "fused":
            a, b, z = v
            return lambda: ev("exp(a) * sin(b) + sqrt(a * b)", local_dict={"a": a, "b": b}, out=z)
        if case == "gelu":
            x, z = v
            return lambda: ev("0.5 * x * (1 + tanh(k * (x + c * x * x * x)))",
                              local_dict={"x": x, "k": np.float32(S2PI), "c": np.float32(0.044715)}, out=z)
        if case == "bcast":
            return lambda: ev("x + y", local_dict={"x": v[0], "y": v[1]}, out=v[2])
        if case == "transpose":
            return lambda: ev("x * 2 + 1", local_dict={"x": v[0]}, out=v[1])
        return None
    return make, lambda: "numexpr %s" % ne.__version__


def numba_peer(np, threads):
    import numba
    from numba import njit, prange
    numba.set_num_threads(threads)
    P = dict(parallel=True, fastmath=False, cache=True)

    @njit(**P)
    def triad(c, x, y, z):
        for i in prange(x.shape[0]):
            z[i] = c * x[i] + y[i]

    @njit(**P)
    def imad(a, b, c, z):
        for i in prange(a.shape[0]):
            z[i] = a[i] * b[i] + c[i]

    @njit(**P)
    def total(x):
        s = np.float32(0)
        for i in prange(x.shape[0]):
            s += x[i]
        return s

    @njit(**P)
    def fused(a, b, z):
        for i in prange(a.shape[0]):
            z[i] = np.exp(a[i]) * np.sin(b[i]) + np.sqrt(a[i] * b[i])

    @njit(**P)
    def gelu(x, z):
        for i in prange(x.shape[0]):
            t = x[i]
            z[i] = np.float32(0.5) * t * (np.float32(1) + np.tanh(np.float32(S2PI) * (t + np.float32(0.044715) * t * t * t)))

    @njit(**P)
    def softmax(x, z):
        for r in prange(x.shape[0]):
            m = x[r, 0]
            for c in range(x.shape[1]):
                m = max(m, x[r, c])
            s = np.float32(0)
            for c in range(x.shape[1]):
                s += np.exp(x[r, c] - m)
            for c in range(x.shape[1]):
                z[r, c] = np.exp(x[r, c] - m) / s

    @njit(**P)
    def layernorm(x, z):
        n = x.shape[1]
        for r in prange(x.shape[0]):
            s = np.float32(0)
            for c in range(n):
                s += x[r, c]
            mu = s / n
            q = np.float32(0)
            for c in range(n):
                q += (x[r, c] - mu) * (x[r, c] - mu)
            d = np.sqrt(q / n + np.float32(1e-5))
            for c in range(n):
                z[r, c] = (x[r, c] - mu) / d

    @njit(**P)
    def rowsum(x, out):
        for r in prange(x.shape[0]):
            s = np.float32(0)
            for c in range(x.shape[1]):
                s += x[r, c]
            out[r] = s

    @njit(**P)
    def colsum(x, out):
        nt = numba.get_num_threads()
        w = (x.shape[1] + nt - 1) // nt
        for t in prange(nt):
            b, e = t * w, min((t + 1) * w, x.shape[1])
            for c in range(b, e):
                out[c] = 0
            for r in range(x.shape[0]):
                for c in range(b, e):
                    out[c] += x[r, c]

    @njit(**P)
    def var(x, out):
        n = x.shape[1]
        for r in prange(x.shape[0]):
            s = np.float32(0)
            for c in range(n):
                s += x[r, c]
            mu = s / n
            q = np.float32(0)
            for c in range(n):
                q += (x[r, c] - mu) * (x[r, c] - mu)
            out[r] = q / n

    @njit(**P)
    def argmax(x, out):
        for r in prange(x.shape[0]):
            out[r] = np.argmax(x[r])

    @njit(**P)
    def bcast(x, y, z):
        for r in prange(z.shape[0]):
            for c in range(z.shape[1]):
                z[r, c] = x[r, 0] + y[0, c]

    @njit(**P)
    def transpose(x, z):
        for r in prange(z.shape[0]):
            for c in range(z.shape[1]):
                z[r, c] = x[r, c] * np.float32(2) + np.float32(1)

    def make(case, v):
        if case in ("triad", "launch", "triad_f64"):
            x, y, z = v
            c = np.float32(2.5) if case != "triad_f64" else 2.5
            if case == "launch":
                return lambda: [triad(c, x, y, z) for _ in range(LAUNCH_CALLS)]
            return lambda: triad(c, x, y, z)
        f = {"imad": imad, "sum": total, "fused": fused, "gelu": gelu, "softmax": softmax, "layernorm": layernorm,
             "rowsum": rowsum, "colsum": colsum, "var": var, "argmax": argmax, "bcast": bcast,
             "transpose": transpose}.get(case)
        return None if f is None else (lambda: f(*v))
    return make, lambda: "numba %s (@njit(parallel=True))" % numba.__version__


def numba_vec_peer(np, threads):
    import numba
    from numba import vectorize
    numba.set_num_threads(threads)
    V = dict(target="parallel")
    triad = vectorize(["float32(float32, float32, float32)", "float64(float64, float64, float64)"], **V)(
        lambda c, x, y: c * x + y)
    imad = vectorize(["int32(int32, int32, int32)"], **V)(lambda a, b, c: a * b + c)
    fused = vectorize(["float32(float32, float32)"], **V)(lambda a, b: np.exp(a) * np.sin(b) + np.sqrt(a * b))
    gelu = vectorize(["float32(float32)"], **V)(
        lambda t: np.float32(0.5) * t * (np.float32(1) + np.tanh(np.float32(S2PI) * (t + np.float32(0.044715) * t * t * t))))
    add = vectorize(["float32(float32, float32)"], **V)(lambda x, y: x + y)
    affine = vectorize(["float32(float32)"], **V)(lambda x: x * np.float32(2) + np.float32(1))

    def make(case, v):
        if case in ("triad", "launch", "triad_f64"):
            x, y, z = v
            c = np.float32(2.5) if case != "triad_f64" else 2.5
            if case == "launch":
                return lambda: [triad(c, x, y, out=z) for _ in range(LAUNCH_CALLS)]
            return lambda: triad(c, x, y, out=z)
        if case == "imad":
            return lambda: imad(*v[:3], out=v[3])
        if case == "fused":
            return lambda: fused(v[0], v[1], out=v[2])
        if case == "gelu":
            return lambda: gelu(v[0], out=v[1])
        if case == "bcast":
            return lambda: add(v[0], v[1], out=v[2])
        if case == "transpose":
            return lambda: affine(v[0], out=v[1])
        return None
    return make, lambda: "numba %s (@vectorize(target='parallel'))" % numba.__version__


def torch_ops(torch):
    """The cases as torch functions; z is the output where there is one."""
    F = torch.nn.functional
    return {
        "triad": lambda x, y, z: z.copy_(2.5 * x + y),
        "triad_f64": lambda x, y, z: z.copy_(2.5 * x + y),
        "imad": lambda a, b, c, z: z.copy_(a * b + c),
        "sum": lambda x: torch.sum(x),
        "fused": lambda a, b, z: z.copy_(torch.exp(a) * torch.sin(b) + torch.sqrt(a * b)),
        "gelu": lambda x, z: z.copy_(F.gelu(x, approximate="tanh")),
        "gelu_f16": lambda x, z: z.copy_(F.gelu(x, approximate="tanh")),
        "softmax": lambda x, z: z.copy_(torch.softmax(x, dim=1)),
        "layernorm": lambda x, z: z.copy_(F.layer_norm(x, (x.shape[1],))),
        "colsum": lambda x, r: r.copy_(torch.sum(x, 0)),
        "rowsum": lambda x, r: r.copy_(torch.sum(x, 1)),
        "var": lambda x, r: r.copy_(torch.var(x, 1, correction=0)),
        "argmax": lambda x, r: r.copy_(torch.argmax(x, 1)),
        "bcast": lambda x, y, z: z.copy_(x + y),
        "transpose": lambda x, z: z.copy_(x * 2 + 1),
    }


def torch_peer(np, threads):
    import torch
    torch.set_num_threads(threads)
    F = torch.nn.functional
    t = torch.from_numpy

    def make(case, v):
        tv = [t(a) for a in v]
        # eager torch with out= where its functions take one
        if case in ("triad", "triad_f64", "launch"):
            x, y, z = tv
            f = (lambda: torch.add(y, x, alpha=2.5, out=z))
            if case == "launch":
                return lambda: [f() for _ in range(LAUNCH_CALLS)]
            return f
        if case == "imad":
            a, b, c, z = tv
            return lambda: torch.add(torch.mul(a, b, out=z), c, out=z)
        if case == "gelu_f16":
            x, z = tv
            return lambda: z.copy_(F.gelu(x, approximate="tanh"))
        if case == "argmax":
            return lambda: torch.argmax(tv[0], 1, out=tv[1])
        if case == "colsum":
            return lambda: torch.sum(tv[0], 0, out=tv[1])
        if case == "rowsum":
            return lambda: torch.sum(tv[0], 1, out=tv[1])
        if case == "var":
            return lambda: torch.var(tv[0], 1, correction=0, out=tv[1])
        if case == "transpose":
            x, z = tv
            return lambda: torch.add(torch.mul(x, 2, out=z), 1, out=z)
        if case == "bcast":
            return lambda: torch.add(tv[0], tv[1], out=tv[2])
        f = torch_ops(torch).get(case)
        return None if f is None else (lambda: f(*tv))
    return make, lambda: "torch %s (eager)" % torch.__version__


def torch_compile_peer(np, threads):
    import torch
    torch.set_num_threads(threads)
    ops = torch_ops(torch)
    compiled = {}

    def make(case, v):
        tv = [torch.from_numpy(a) for a in v]
        key = "triad" if case == "launch" else case
        if key not in ops:
            return None
        if key not in compiled:
            compiled[key] = torch.compile(ops[key], dynamic=False)
        f = compiled[key]
        if case == "launch":
            return lambda: [f(*tv) for _ in range(LAUNCH_CALLS)]
        return lambda: f(*tv)
    return make, lambda: "torch %s (torch.compile, Inductor C++/OpenMP)" % torch.__version__


def jax_peer(np, threads):
    import jax
    import jax.numpy as jnp
    jax.config.update("jax_enable_x64", True)   # the f64 triad in f64
    S = jnp.float32(S2PI)
    fns = {
        "triad": (lambda x, y, z: jnp.float32(2.5) * x + y, True),
        "triad_f64": (lambda x, y, z: 2.5 * x + y, True),
        "imad": (lambda a, b, c, z: a * b + c, True),
        "sum": (lambda x: jnp.sum(x), False),
        "fused": (lambda a, b, z: jnp.exp(a) * jnp.sin(b) + jnp.sqrt(a * b), True),
        "gelu": (lambda x, z: jnp.float32(0.5) * x * (1 + jnp.tanh(S * (x + jnp.float32(0.044715) * x * x * x))), True),
        "gelu_f16": (lambda x, z: (jnp.float16(0.5) * x * (1 + jnp.tanh(jnp.float16(S2PI) * (x + jnp.float16(0.044715) * x * x * x)))), True),
        "softmax": (lambda x, z: jax.nn.softmax(x, axis=1), True),
        "layernorm": (lambda x, z: (x - x.mean(1, keepdims=True)) / jnp.sqrt(x.var(1, keepdims=True) + jnp.float32(1e-5)), True),
        "colsum": (lambda x, r: jnp.sum(x, 0), True),
        "rowsum": (lambda x, r: jnp.sum(x, 1), True),
        "var": (lambda x, r: jnp.var(x, 1), True),
        "argmax": (lambda x, r: jnp.argmax(x, 1), True),
        "bcast": (lambda x, y, z: x + y, True),
        "transpose": (lambda x, z: x.T * jnp.float32(2) + jnp.float32(1), True),
    }
    jitted = {}

    def make(case, v):
        key = "triad" if case == "launch" else case
        if key not in fns:
            return None
        fn, has_out = fns[key]
        if case == "transpose":
            v = (np.ascontiguousarray(v[0].T), v[1])   # x itself; the function takes .T
        if key not in jitted:
            # the output buffer is donated: XLA writes the result into it
            jitted[key] = jax.jit(fn, donate_argnums=(len(v) - 1,) if has_out else ())
        f = jitted[key]
        dv = [jax.device_put(a) for a in v]
        state = {"out": dv[-1]}
        ins = dv[:-1] if has_out else dv

        def call():
            if has_out:
                r = f(*ins, state["out"])
                r.block_until_ready()
                state["out"] = r   # the next call donates it again
            else:
                f(*ins).block_until_ready()
        if case == "launch":
            return lambda: [call() for _ in range(LAUNCH_CALLS)]
        return call
    return make, lambda: "jax %s (jax.jit, XLA CPU)" % jax.__version__


PEERS = {"numpy": numpy_peer, "numexpr": numexpr_peer, "numba": numba_peer, "numba_vec": numba_vec_peer,
         "torch": torch_peer, "torch_compile": torch_compile_peer, "jax": jax_peer}


def serve(impl, datadir, flush_bytes, threads):
    setup_threads(impl, threads)
    import numpy as np
    make, describe = PEERS[impl](np, threads)
    D = Data(np, datadir)
    junk = np.ones(max(flush_bytes // 8, 1), np.float64)
    calls = {}
    out = sys.stdout
    print(describe(), file=out, flush=True)
    for line in sys.stdin:
        w = line.split()
        if not w:
            continue
        if w[0] == "quit":
            break
        case, log2 = w[0], int(w[1])
        key = (case, log2 if case != "launch" else 0)
        if key not in calls:
            try:
                calls[key] = make(case, views(np, D, case, key[1] or 16))
            except Exception as e:   # a peer without the case: say why, once
                print("peers.py: %s %s: %s" % (impl, case, e), file=sys.stderr)
                calls[key] = None
        f = calls[key]
        if f is None:
            print("skip", file=out, flush=True)
            continue
        junk[:] = junk[::-1]   # evict the caches (twice the last-level cache)
        try:
            t0 = time.perf_counter()
            f()
            t = time.perf_counter() - t0
        except Exception as e:
            print("peers.py: %s %s %d: %s" % (impl, case, log2, e), file=sys.stderr)
            calls[key] = None
            print("skip", file=out, flush=True)
            continue
        print("%.9f" % (t / LAUNCH_CALLS if case == "launch" else t), file=out, flush=True)


def first(impl, cachedir):
    """The first call of a fresh process, compile + run, with CACHEDIR as the
    peer's disk cache (an empty one: cold; one an earlier process filled: warm)."""
    setup_threads(impl, 2)
    os.environ["NUMBA_CACHE_DIR"] = os.path.join(cachedir, "numba")
    os.environ["TORCHINDUCTOR_CACHE_DIR"] = os.path.join(cachedir, "inductor")
    os.environ["TRITON_CACHE_DIR"] = os.path.join(cachedir, "triton")
    import numpy as np
    a = (1 + np.arange(SMALL, dtype=np.float32) / SMALL)
    b = np.arange(SMALL, dtype=np.float32) / SMALL
    z = np.zeros(SMALL, np.float32)
    if impl == "jax":
        import jax
        import jax.numpy as jnp
        jax.config.update("jax_compilation_cache_dir", os.path.join(cachedir, "jax"))
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
        jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
        da, db = jax.device_put(a), jax.device_put(b)
        t0 = time.perf_counter()
        jax.jit(lambda a, b: jnp.exp(a) * jnp.sin(b) + jnp.sqrt(a * b))(da, db).block_until_ready()
    elif impl == "torch_compile":
        import torch
        torch.set_num_threads(2)
        ta, tb, tz = torch.from_numpy(a), torch.from_numpy(b), torch.from_numpy(z)
        t0 = time.perf_counter()
        torch.compile(lambda a, b, z: z.copy_(torch.exp(a) * torch.sin(b) + torch.sqrt(a * b)), dynamic=False)(ta, tb, tz)
    elif impl == "numba":
        import numba
        from numba import njit, prange
        t0 = time.perf_counter()

        @njit(parallel=True, cache=True)
        def fused(a, b, z):
            for i in prange(a.shape[0]):
                z[i] = np.exp(a[i]) * np.sin(b[i]) + np.sqrt(a[i] * b[i])
        fused(a, b, z)
    elif impl == "numexpr":
        import numexpr as ne
        t0 = time.perf_counter()
        ne.evaluate("exp(a) * sin(b) + sqrt(a * b)", local_dict={"a": a, "b": b}, out=z)
    else:
        raise SystemExit("peers.py first: no first call for %s" % impl)
    print("%.9f" % (time.perf_counter() - t0))


if __name__ == "__main__":
    if len(sys.argv) == 6 and sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5]))
    elif len(sys.argv) == 4 and sys.argv[1] == "first":
        first(sys.argv[2], sys.argv[3])
    else:
        raise SystemExit(__doc__)
