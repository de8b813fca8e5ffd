"""emu_extra - the generated CUDA at odd sizes on the emulation layer, every
call under every dispatch knob (block 32/64/256 x grid cap 1/3/none x, for
reductions, the chosen path, block per output, thread per output, split),
compared with the C back end by emu_conformance's wrapper; a few results
are also checked against numpy.  Kernels: tests/cuda/kernels/emu_extra.nnk.
Sizes: around the block and vector widths (1, 3, 31, 33, 255, 257, 1023,
4097), unaligned and strided views, long slices that the split path cuts
(2 x 100003), many short ones (700 x 3), column reductions; short rows
(the warp-per-row kernel), the rows kept on chip (bit for bit against
the kernels that read them per phase) and the split's tree merge of many
parts."""
import os
import sys

import numpy as np

os.environ["NNK_EMU_FULL"] = "1"
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import emu_conformance as E  # noqa: E402
C = E.C
E.install()

rng = np.random.default_rng(7)
K = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernels", "emu_extra.nnk")
SIZES = [1, 3, 31, 33, 255, 257, 1023, 4097]


def M():
    return C.load(K)


def test_elementwise_sizes_and_layouts():
    for n in SIZES:
        x = rng.standard_normal(n + 3).astype(np.float32)
        for name, view in (("aligned", x[:n]), ("unaligned", x[1:n + 1]), ("strided", x[::2][: (n + 1) // 2])):
            y = M().axpb_f32(1.5, view)
            C.close(y, (np.float32(1.5) * view + np.float32(1)).astype(np.float32), "f32", what="axpb %s %d" % (name, n))
        xi = rng.integers(-1000, 1000, n).astype(np.int32)
        C.equal(M().axpb_i32(-3, xi, 7), (-3 * xi + 7).astype(np.int32), "axpb_i32 %d" % n)
        xh = rng.standard_normal(n).astype(np.float16)
        M().axpb_f16(0.25, xh)
    # broadcasting and two outputs
    a = rng.standard_normal((33, 1)).astype(np.float16)
    b = rng.integers(-9, 9, (1, 257)).astype(np.int32)
    y, z = M().mixed(a, b)
    C.check(y.shape == (33, 257) and z.shape == (33, 257), "mixed shapes")


def test_reductions_sizes_and_paths():
    for shape, axes in (((1,), None), ((31,), None), ((4097,), None), ((3, 257), 1), ((257, 3), 0), ((7, 33, 5), (0, 2)),
                        ((2, 100003), 1), ((700, 3), 1), ((3, 700), 0), ((1, 1, 1), (0, 1, 2))):
        x = rng.standard_normal(shape).astype(np.float32)
        r = M().total_f32(x, axes=axes)
        want = x.astype(np.float64).sum(axis=axes)
        C.close(r, want.astype(np.float32), "f32", ulp=1 << 20, what="total_f32 %s %s" % (shape, axes))
        xi = rng.integers(-1 << 40, 1 << 40, shape).astype(np.int64)
        C.equal(M().total_i64(xi, axes=axes), xi.sum(axis=axes), "total_i64 %s %s" % (shape, axes))
        lo, hi, at, mu = M().stats(x, axes=axes)
        C.equal(lo, x.min(axis=axes), "min %s" % (shape,))
        C.equal(hi, x.max(axis=axes), "max %s" % (shape,))
        if axes is None or isinstance(axes, int):
            C.equal(at, np.argmax(x, axis=axes) if axes is not None else np.int64(np.argmax(x)), "argmax %s" % (shape,))
        M().total_f16(x.astype(np.float16), axes=axes)


def test_epilogues():
    for shape, axes in (((3, 257), 1), ((257, 3), 0), ((2, 4099), 1), ((1, 1), 1), ((6, 33), -1)):
        x = rng.uniform(-4, 4, shape).astype(np.float32)
        y = M().softmax_f32(x, axes=axes)
        e = C.libm("exp")(x.astype(np.float64) - x.max(axis=axes, keepdims=True))
        C.close(y, (e / e.sum(axis=axes, keepdims=True)).astype(np.float32), "f32", ulp=64, atol=1e-6,
                what="softmax %s" % (shape,))
        M().softmax_bf16(C.bf16(x), axes=axes)
        M().layernorm(x, axes=axes)
    M().absmax(rng.standard_normal((5, 1001)), axes=1)


def test_short_rows():
    """Slices of up to 1024 elements over many positions take a warp each
    (rd_warp, chosen at 4 emulated SMs from 16 positions); 1025 does not.
    Multi-phase kernels (softmax, layernorm) run every phase in the warp."""
    every = E.RD_COMBOS
    E.RD_COMBOS = [c for c in every if c[2] in (0, 4)]  # chosen and warp: the others run above
    try:
        short_rows()
    finally:
        E.RD_COMBOS = every


def short_rows():
    for shape in ((40, 64), (17, 1000), (33, 1024), (16, 1025), (100, 3), (19, 33)):
        x = rng.standard_normal(shape).astype(np.float32)
        want = x.astype(np.float64).sum(axis=1)
        C.close(M().total_f32(x, axes=1), want.astype(np.float32), "f32", ulp=1 << 20, what="total_f32 %s" % (shape,))
        xi = rng.integers(-1 << 40, 1 << 40, shape).astype(np.int64)
        C.equal(M().total_i64(xi, axes=1), xi.sum(axis=1), "total_i64 %s" % (shape,))
        lo, hi, at, mu = M().stats(x, axes=1)
        C.equal(at, np.argmax(x, axis=1), "argmax %s" % (shape,))
        M().softmax_f32(x, axes=1)
        M().layernorm(x, axes=1)


def test_row_on_chip():
    """The row kept on chip (rd_row, a warp or a block per row) gives the bits
    of rd_warp and rd_block (emu_conformance.row_twins, every call) at the
    slot-count edges of its 16 slots (8 for centre_f64): rows of 1 to 16
    slots a lane (n up to 512), the NNK_ILP groups whole and not (n = 128,
    129, 160, 161), rows only the block holds (1024; 4096 at 256 threads)
    and none holds (4097); contiguous and strided rows, the outer axis of
    (33, 20) (one dimension at a pitch), (4, 9, 40) over axes 0 and 2 (two
    dimensions: rd_row refuses them); two inputs kept (centre)."""
    before = E.Stats.row_twins
    every = E.RD_COMBOS
    E.RD_COMBOS = [c for c in every if c[2] in E.ROW_TWIN or c[2] in E.ROW_TWIN.values()]  # the twins
    try:
        for shape, axes in (((20, 1), 1), ((20, 31), 1), ((17, 128), 1), ((17, 129), 1), ((16, 160), 1),
                            ((16, 161), 1), ((16, 512), 1), ((16, 1024), 1), ((3, 4096), 1), ((2, 4097), 1),
                            ((33, 20), 0), ((4, 9, 40), (0, 2))):
            x = rng.standard_normal(shape).astype(np.float32)
            w = rng.standard_normal(shape).astype(np.float32)
            M().softmax_f32(x, axes=axes)
            M().layernorm(x, axes=axes)
            M().centre_f32(x, w, axes=axes)
            if shape[-1] in (1, 129, 161, 4097):
                M().softmax_bf16(C.bf16(x), axes=axes)
                M().centre_f64(x.astype(np.float64), w.astype(np.float64), axes=axes)
        xs = rng.standard_normal((24, 300)).astype(np.float32)
        M().softmax_f32(xs[:, ::2], axes=1)  # strided rows
    finally:
        E.RD_COMBOS = every
    C.check(E.Stats.row_twins > before, "no row-kernel result was compared with its twin")


def test_row_in_shared():
    """Rows past rd_row's registers kept in shared memory (rd_srow, NNK_CUDA_FORCE 7) give
    rd_block's bits (emu_conformance.row_twins) at the edges of the emulated 48 KB (4 bytes an
    element and 16 an input: 12284 f32 elements of one input, 6140 of two; a row longer is
    refused and rd_block runs alone), bf16 kept as floats, strided rows, and a launcher of
    more shared memory (NNK_EMU_SHARED, the opt-in) or none (0: always refused)."""
    before, skipped = E.Stats.row_twins, E.Stats.row_skipped
    every = E.RD_COMBOS
    E.RD_COMBOS = [c for c in every if c[2] in (1, 7) and c[1] != 3]  # rd_srow and its twin
    try:
        for n in (4097, 12284, 12285):
            x = rng.standard_normal((2, n)).astype(np.float32)
            M().softmax_f32(x, axes=1)
            M().layernorm(x, axes=1)
        M().softmax_bf16(C.bf16(rng.standard_normal((2, 12284)).astype(np.float32)), axes=1)
        for n in (6140, 6141):
            x = rng.standard_normal((2, n)).astype(np.float32)
            w = rng.standard_normal((2, n)).astype(np.float32)
            M().centre_f32(x, w, axes=1)
        M().centre_f64(rng.standard_normal((2, 3000)), rng.standard_normal((2, 3000)), axes=1)
        xs = rng.standard_normal((2, 2 * 5000)).astype(np.float32)
        M().softmax_f32(xs[:, ::2], axes=1)  # strided rows
        C.check(E.Stats.row_twins > before, "no rd_srow result was compared with rd_block's")
        C.check(E.Stats.row_skipped > skipped, "the rows past 48 KB were not refused")
        os.environ["NNK_EMU_SHARED"] = str(4 * 20000 + 16)
        twins = E.Stats.row_twins
        M().softmax_f32(rng.standard_normal((2, 20000)).astype(np.float32), axes=1)
        C.check(E.Stats.row_twins > twins, "a row of 20000 with 80 KB of shared memory (the opt-in)")
        os.environ["NNK_EMU_SHARED"] = "0"
        skipped = E.Stats.row_skipped
        M().softmax_f32(rng.standard_normal((2, 4097)).astype(np.float32), axes=1)
        C.check(E.Stats.row_skipped > skipped, "rd_srow without shared memory was not refused")
    finally:
        os.environ.pop("NNK_EMU_SHARED", None)
        E.RD_COMBOS = every


def test_split_tree_merge():
    """The split's parts merged by rd_fin's tree: NNK_EMU_PARTS forces more
    parts than a block has threads (each thread then folds several), one
    part, and a count that leaves parts empty; integer sums are exact."""
    every = E.RD_COMBOS
    E.RD_COMBOS = [c for c in every if c[2] in (0, 3)]  # the split (chosen at 2 x 5003)
    x = rng.standard_normal((2, 5003)).astype(np.float32)
    xi = rng.integers(-1 << 40, 1 << 40, (2, 5003)).astype(np.int64)
    try:
        for parts in ("1", "600"):
            os.environ["NNK_EMU_PARTS"] = parts
            C.equal(M().total_i64(xi, axes=1), xi.sum(axis=1), "total_i64 parts %s" % parts)
            C.close(M().total_f32(x, axes=1), x.astype(np.float64).sum(axis=1).astype(np.float32), "f32", ulp=1 << 20,
                    what="total_f32 parts %s" % parts)
            lo, hi, at, mu = M().stats(x, axes=1)
            C.equal(at, np.argmax(x, axis=1), "argmax parts %s" % parts)
            M().softmax_f32(x, axes=1)
    finally:
        del os.environ["NNK_EMU_PARTS"]
        E.RD_COMBOS = every


if __name__ == "__main__":
    rc = C.main(globals())
    print("# emu_extra: %d calls, %d emulated launches over %d knob combinations, %.1fs emulating; "
          "%d row-on-chip results equal to their twins' bits, %d row launches refused" % (
              E.Stats.calls, E.Stats.launches, len(E.Stats.combos), E.Stats.seconds, E.Stats.row_twins,
              E.Stats.row_skipped))
    sys.exit(rc)
