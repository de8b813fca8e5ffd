#!/bin/sh
# emu-inout.sh: the in-out parameter conformance (tests/conformance/test_inout.py) with every
# NAME_strided call also run by the generated CUDA on the emulation layer (emu-conformance.sh).
exec "$(dirname "$0")/emu-conformance.sh" test_inout.py
