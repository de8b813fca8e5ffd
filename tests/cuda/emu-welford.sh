#!/bin/sh
# emu-welford.sh: tests/conformance/test_welford.py with every call also run by the
# generated CUDA on the emulation layer (tests/cuda/emu-conformance.sh).
exec "$(dirname "$0")/emu-conformance.sh" test_welford.py
