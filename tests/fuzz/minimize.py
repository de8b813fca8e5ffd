"""minimize - delta reduction of a failing program (nnkfuzz.py --minimize).

Greedy: tries, biggest first, to keep one instance, drop an output, inline
or drop a let, replace an expression by one of its operands or by a
literal, and drop unused consts, funcs and parameters; keeps a change when
the program still fails with the same kind of failure, and starts over
from it, until no change is kept or the time is up.
"""
import copy
import time

import gen

LITS = [("lit", 0, 0), ("lit", 1, 0), ("lit", 1.5, 0), ("bool", True)]


def _all_exprs(p):
    """[(where, expr)]: ('stmt', i), ('func', name), ('const', name)."""
    out = [(("stmt", i), s.expr) for i, s in enumerate(p.kernel.body)]
    out += [(("func", n), f.body) for n, f in p.funcs.items()]
    out += [(("const", n), c.expr) for n, c in p.consts.items()]
    return out


def _set_expr(p, where, e):
    q = copy.deepcopy(p)
    if where[0] == "stmt":
        q.kernel.body[where[1]].expr = e
    elif where[0] == "func":
        q.funcs[where[1]].body = e
    else:
        q.consts[where[1]].expr = e
    return q


def _subst(e, kind, name, new):
    if e[0] == "name" and e[1] == kind and e[2] == name:
        return new
    for step, c in gen.children(e):
        e = gen.replace_child(e, step, _subst(c, kind, name, new))
    return e


def _used(p, kind, name):
    return any(gen.refs(e, kind, name) for _, e in _all_exprs(p))


def _calls(p, fname):
    return any(n[0] == "fcall" and n[1] == fname for _, e in _all_exprs(p) for _, n in gen.nodes(e))


def candidates(p):
    k = p.kernel
    for n in list(p.consts):
        if not _used(p, "const", n):
            q = copy.deepcopy(p)
            del q.consts[n]
            yield q
    for n in list(p.funcs):
        if not _calls(p, n):
            q = copy.deepcopy(p)
            del q.funcs[n]
            yield q
    ntensors = sum(1 for x in k.params if x.tensor)
    for x in k.params:
        if _used(p, "param", x.name) or (x.tensor and ntensors < 2):
            continue
        q = copy.deepcopy(p)
        q.kernel.params = [y for y in q.kernel.params if y.name != x.name]
        yield q
    if len(p.bindings) > 1:
        for b in p.bindings:
            q = copy.deepcopy(p)
            q.bindings = [b]
            q.inst_lines = [b] if p.inst_lines else []
            yield q
    if len(k.outs) > 1:
        for o in k.outs:
            if _used(p, "out", o.name):
                continue
            q = copy.deepcopy(p)
            q.kernel.outs = [x for x in q.kernel.outs if x.name != o.name]
            q.kernel.body = [s for s in q.kernel.body if not (s.kind == "out" and s.name == o.name)]
            yield q
    for i, s in enumerate(k.body):
        if s.kind != "let":
            continue
        for repl in ([s.expr if s.ty is None else ("cast", s.ty, s.expr)] + LITS[:2]):
            q = copy.deepcopy(p)
            del q.kernel.body[i]
            q.kernel.body = [gen.Stmt(t.kind, t.name, _subst(t.expr, "let", s.name, repl), t.ty)
                             for t in q.kernel.body]
            yield q
    for where, e in _all_exprs(p):
        for path, node in gen.nodes(e):
            for _, c in gen.children(node):
                yield _set_expr(p, where, gen.at_path(e, path, c))
            if node[0] not in ("lit", "bool"):
                for lit in LITS:
                    yield _set_expr(p, where, gen.at_path(e, path, lit))
    for x in k.params:
        if x.default is not None:
            q = copy.deepcopy(p)
            next(y for y in q.kernel.params if y.name == x.name).default = None
            yield q


def size(p):
    k = p.kernel
    return sum(sum(1 for _ in gen.nodes(e)) for _, e in _all_exprs(p)) + 3 * len(k.body) + len(k.params) + \
        2 * len(p.consts) + 2 * len(p.funcs) + len(p.bindings) + sum(1 for x in k.params if x.default)


def minimize(p, fails, budget=300.0, log=None):
    """fails(program) -> True while it still fails the same way."""
    t0 = time.time()
    tries = 0
    progress = True
    while progress and time.time() - t0 < budget:
        progress = False
        for q in candidates(p):
            if time.time() - t0 >= budget:
                break
            if size(q) >= size(p):
                continue
            tries += 1
            try:
                ok = fails(q)
            except Exception:  # noqa: BLE001 - a candidate the harness cannot take is no reduction
                ok = False
            if ok:
                p = q
                progress = True
                if log:
                    log("# minimize: size %d after %d tries, %.0fs" % (size(p), tries, time.time() - t0))
                break
    return p, tries
