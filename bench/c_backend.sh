#!/bin/sh
# c_backend.sh [BUILDDIR] - the C back end's figures (docs/performance.md,
# "C back end, single thread"): the generated C of bench/c_backend.nnk
# against hand-written C loops compiled with the same flags, and against
# numpy (one thread); then the compile time of `nnkc -S` for the samples.
#
#   make bench                       (from a build directory), or
#   bench/c_backend.sh BUILDDIR
#
# Environment: CC (default cc), BENCH_CFLAGS (default -O3 -fno-math-errno,
# the flags of both the generated and the hand-written C), BENCH_REPS
# (best of, default 5), PYTHON_NUMPY (default python3; numpy is skipped
# when it is missing).  Ratios are times: hand / nnk and numpy / nnk, so
# above 1 means the generated code is faster.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=$(cd "$here/.." && pwd)
builddir=$(cd "${1:-.}" && pwd)
NNKC=$builddir/nnkc
[ -x "$NNKC" ] || { echo "c_backend.sh: no nnkc in $builddir (build first)" >&2; exit 1; }
CC=${CC:-cc}
CFLAGS=${BENCH_CFLAGS:--O3 -fno-math-errno}
work=$builddir/bench/c_backend-work
mkdir -p "$work"

"$NNKC" -S --target=c "$here/c_backend.nnk" -o "$work/c_backend.c"
"$NNKC" --emit-header "$here/c_backend.nnk" -o "$work/c_backend.h"
for f in "$work/c_backend.c" "$here/c_backend_hand.c" "$here/c_backend_main.c"; do
    $CC -std=c11 $CFLAGS -I"$work" -I"$here" -c "$f" -o "$work/$(basename "$f" .c).o"
done
$CC $CFLAGS "$work/c_backend.o" "$work/c_backend_hand.o" "$work/c_backend_main.o" -o "$work/c_backend" -lm
OMP_NUM_THREADS=1 "$work/c_backend" > "$work/c.tsv"

PY=${PYTHON_NUMPY:-}
if [ -z "$PY" ]; then
    for p in python3 /usr/bin/python3; do
        if "$p" -c 'import numpy' >/dev/null 2>&1; then PY=$p; break; fi
    done
fi
if [ -n "$PY" ] && "$PY" -c 'import numpy' >/dev/null 2>&1; then
    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1 "$PY" "$here/c_backend_numpy.py" > "$work/numpy.tsv"
    npv=$("$PY" -c 'import numpy; print(numpy.__version__)')
else
    : > "$work/numpy.tsv"
    npv=none
fi

# compile time of nnkc -S (best of 5, milliseconds)
: > "$work/compile.tsv"
for f in "$top_srcdir"/samples/saxpy/saxpy.nnk "$top_srcdir"/samples/activations.nnk "$top_srcdir"/samples/norms.nnk \
         "$here/c_backend.nnk" "$top_srcdir/tests/conformance/kernels/reductions.nnk"; do
    [ -f "$f" ] || continue
    best=
    for i in 1 2 3 4 5; do
        t0=$(date +%s%N)
        "$NNKC" -S --target=c "$f" -o "$work/compile.c"
        t1=$(date +%s%N)
        t=$(( (t1 - t0) / 1000 ))
        if [ -z "$best" ] || [ "$t" -lt "$best" ]; then best=$t; fi
    done
    lines=$(wc -l < "$work/compile.c")
    printf '%s\t%s\t%s\n' "${f#$top_srcdir/}" "$best" "$lines" >> "$work/compile.tsv"
done

cpu=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo 2>/dev/null | head -1)
ccv=$($CC --version | head -1)
echo "machine: ${cpu:-unknown}, $(nproc 2>/dev/null || echo ?) cores; $ccv; numpy $npv"
echo "flags: $CC -std=c11 $CFLAGS (generated and hand-written C); one thread; best of ${BENCH_REPS:-5}"
echo
echo "| kernel | size | nnk (ms) | hand C (ms) | hand / nnk | numpy (ms) | numpy / nnk |"
echo "|---|---|---:|---:|---:|---:|---:|"
awk -F '\t' -v np="$work/numpy.tsv" '
    BEGIN { while ((getline line < np) > 0) { split(line, f, "\t"); t[f[1]] = f[2] } }
    {
        hand = $4; note = ""
        if (NF >= 5) { hand = $5; note = " (8 accumulators; one: " sprintf("%.2f", $4 * 1000) " ms)" }
        nump = ($1 in t) ? sprintf("%.2f", t[$1] * 1000) : "-"
        rn = ($1 in t) ? sprintf("%.2f", t[$1] / $3) : "-"
        printf "| %s | %s | %.2f | %.2f%s | %.2f | %s | %s |\n", $1, $2, $3 * 1000, hand * 1000, note, hand / $3, nump, rn
    }' "$work/c.tsv"
echo
echo "| nnkc -S of | time (ms) | lines of C |"
echo "|---|---:|---:|"
awk -F '\t' '{ printf "| %s | %.1f | %d |\n", $1, $2 / 1000, $3 }' "$work/compile.tsv"
