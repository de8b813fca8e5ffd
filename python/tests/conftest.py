"""Shared kernels of the nnk Python suite.  Each distinct dtype signature is
a JIT compile (about a second), so the tests share these few functions."""
import os

import numpy as np
import pytest

import nnk

ADD = """
elementwise add<T: float>(x: T[], y: T[], alpha: T = 1) -> (z: T[]) {
    z = x + alpha * y;
}"""

TWO = """
elementwise two(x: f32[]) -> (a: f32[], b: f32[]) {
    a = x + 1;
    b = x * 2;
}"""

NORMS = """
reduction softmax<T: float>(x: T[]) -> (y: T[]) {
    let m = max(x);
    y = exp(x - m) / sum(exp(x - m));
}
reduction l2norm<T: float>(x: T[]) -> (r: T) { r = sqrt(sum(x * x)); }
"""

SANITIZED = bool(os.environ.get("NNK_PY_SANITIZED"))


@pytest.fixture(scope="session")
def add():
    return nnk.jiterator._create_jit_fn(ADD)


@pytest.fixture(scope="session")
def two():
    return nnk.jiterator._create_multi_output_jit_fn(TWO, num_outputs=2)


@pytest.fixture(scope="session")
def norms():
    return nnk.compile(NORMS, name="norms.nnk")


@pytest.fixture
def x32():
    return np.linspace(-2, 2, 24, dtype=np.float32).reshape(2, 3, 4)
