#!/bin/sh
# emu-tuple.sh: tests/conformance/test_tuple.py with every call also run by the
# generated CUDA on the emulation layer (tests/cuda/emu-conformance.sh).
exec "$(dirname "$0")/emu-conformance.sh" test_tuple.py
