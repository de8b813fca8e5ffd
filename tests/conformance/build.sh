#!/bin/sh
# Conformance of the C back end: build (see test_build.py).
exec "$(dirname "$0")/run.sh" test_build.py
