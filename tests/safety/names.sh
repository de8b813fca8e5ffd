#!/bin/sh
# Names generated code cannot carry (names.py): rejected with a location,
# or compiled and run.
exec "${PYTHON_NUMPY:-/usr/bin/python3}" "$(dirname "$0")/names.py"
