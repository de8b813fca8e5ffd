#!/bin/sh
# emu-complex.sh: part of tests/cuda/emu-conformance.sh (test_complex.py: c64 and c128), a test of its own
# so that make -j runs the parts side by side.
exec "$(dirname "$0")/emu-conformance.sh" test_complex.py
