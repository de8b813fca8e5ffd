#!/bin/sh
# emu-elementwise.sh: part of tests/cuda/emu-conformance.sh (test_elementwise.py), a test of its own
# so that make -j runs the parts side by side.
exec "$(dirname "$0")/emu-conformance.sh" test_elementwise.py
