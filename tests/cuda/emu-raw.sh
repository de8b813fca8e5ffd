#!/bin/sh
# emu-raw.sh: part of tests/cuda/emu-conformance.sh (test_raw.py: raw parameters and index(d)), a test of
# its own: every NAME_strided call also runs the generated CUDA on the emulation layer, and an index out
# of range must raise the device-side range flag exactly when the C code returns NNK_PLAN_ERANGE.
exec "$(dirname "$0")/emu-conformance.sh" test_raw.py
