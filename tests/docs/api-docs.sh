#!/bin/sh
# The reference docs agree with the code (tests/docs/api_docs.py): every
# function of nnk.h with its prototype in docs/runtime.md and nnk(3), the
# citations of language.md sections, the headers of the generated C.
# Exit 77 (skipped) without a python3.
here=$(cd "$(dirname "$0")" && pwd)
py=${PYTHON_NUMPY:-}
[ -n "$py" ] || py=$(command -v python3 || true)
if [ -z "$py" ]; then
    echo "SKIP: no python3"
    exit 77
fi
exec "$py" "$here/api_docs.py"
