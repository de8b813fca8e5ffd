"""The GIL is released while a kernel runs; threads launch at once."""
import threading

import numpy as np

import nnk


def test_concurrent_calls(add):
    xs = [np.full(200_000, i, np.float32) for i in range(4)]
    results = [None] * 4
    errors = []

    def work(i):
        try:
            for _ in range(20):
                results[i] = add(xs[i], xs[i], alpha=float(i))
        except Exception as e:   # pragma: no cover - reported below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors
    for i in range(4):
        np.testing.assert_array_equal(results[i], xs[i] * (1 + i))


def test_gil_released_during_launch():
    slow = nnk.jiterator._create_jit_fn("""
elementwise slow(x: f32[]) -> (y: f32[]) {
    y = tanh(tanh(tanh(tanh(tanh(tanh(tanh(tanh(x))))))));
}""")
    x = np.ones(4_000_000, np.float32)
    slow(x[:10])                                # compiled before timing
    state = {"in": False, "done": False}

    def run():
        state["in"] = True
        slow(x)
        state["done"] = True

    t = threading.Thread(target=run)
    t.start()
    while not state["in"]:
        pass
    ticks = 0
    while not state["done"]:
        ticks += 1
    t.join()
    # holding the GIL, the call would leave this thread a tick or two
    assert ticks > 1000, ticks
