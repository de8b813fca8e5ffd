#!/bin/sh
# tests/gpu/run.sh - nnk on a real GPU, in one script of under 8 minutes:
# the environment, a build, the cuda extension's smoke test, a fat object
# on the GPU (when nvcc is there), the conformance suite through the cuda
# extension (reductions, f16/bf16, strided device views, every dispatch
# path, cuDNN's reductions, then elementwise), and the GPU benchmark
# against PyTorch and CuPy (bench/gpu/gpu_bench.py).  docs/cuda-backend.md,
# "The GPU script".
#
#     tests/gpu/run.sh [nnk-X.tar.gz]     from the source tree (or anywhere)
#
# The source (tests/gpu/build.sh): the release tarball given, else a
# configured tree (./configure present), else a tarball nnk-*.tar.gz next
# to this tree's top (make dist; carry it to the GPU machine), else
# ./bootstrap of the working tree, installing autoconf, automake, libtool,
# re2c and lemon first when they are missing and apt-get can (root or
# sudo, a reachable mirror).  A failed build says so ("BUILD FAILED"), not
# "no GPU".  Every step has a time limit; the limits add up to the budget
# (470 s of the 8 minutes), and a step the budget has no time left for is
# NOT RUN, which fails the run as a failed step does (never a pass).  A
# step that fails or times out is reported and the others still run (those
# that need the build or a GPU are skipped without one).  Exit 0 only when
# every step ran and passed.
#
# Environment: NNK_GPU_BUILD (build directory, default $TMPDIR/nnk-gpu-build),
# NNK_GPU_BUDGET (seconds, default 470), NNK_GPU_BUILD_LIMIT (the build step's, default
# 105: a slow machine's dry run may need more), OUT (where logs go, if set: the
# device machine's result folder), CUDA_HOME, NNK_NVRTC (libnvrtc's path),
# PYTHON (a python3 with numpy; default: the first of python3,
# /usr/bin/python3, ... that has numpy, preferring one with torch), JOBS
# (make -j, default: CPUs), NNK_GPU_EXT=cpu (a dry run of the python steps
# on the cpu extension, small sizes: checks this script without a GPU).
set -eu

START=$(date +%s)
BUDGET=${NNK_GPU_BUDGET:-470}
TARBALL=${1:-}
[ -z "$TARBALL" ] || TARBALL=$(cd "$(dirname "$TARBALL")" && pwd)/$(basename "$TARBALL")
SRC=$(cd "$(dirname "$0")/../.." && pwd)
BUILD=${NNK_GPU_BUILD:-${TMPDIR:-/tmp}/nnk-gpu-build}
LOGS=${OUT:-$BUILD}/gpu-logs
# a python3 with numpy, one with PyTorch and CuPy too if there is one
PY=""
for p in ${PYTHON:-} python3 /usr/bin/python3 /usr/local/bin/python3 /opt/conda/bin/python3; do
	command -v "$p" >/dev/null 2>&1 || continue
	if timeout 120 "$p" -c 'import numpy, torch' >/dev/null 2>&1; then PY=$p; break; fi
	if [ -z "$PY" ] && timeout 60 "$p" -c 'import numpy' >/dev/null 2>&1; then PY=$p; fi
done
[ -n "$PY" ] || PY=${PYTHON:-python3}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 4)}
mkdir -p "$BUILD" "$LOGS"
SUMMARY=$LOGS/summary.txt
: >"$SUMMARY"
FAILED=0
NOTRUN=0
SKIPPED=0
BUILT=0

say() { echo "gpu: $*"; }
elapsed() { echo $(( $(date +%s) - START )); }
remaining() { echo $(( BUDGET - $(elapsed) )); }

# step NAME LIMIT COMMAND...: runs COMMAND with a time limit (at most what
# the budget has left), output in $LOGS/NAME.log; prints and records
# PASS / FAIL / TIMEOUT / SKIP.  Returns 0 on PASS.
step() {
	name=$1 limit=$2
	shift 2
	left=$(( $(remaining) - 5 ))
	if [ "$left" -lt 10 ]; then
		say "NOT RUN $name (out of time: $(elapsed)s of ${BUDGET}s used)"
		echo "NOT RUN $name (out of time)" >>"$SUMMARY"
		NOTRUN=$((NOTRUN + 1))
		return 1
	fi
	[ "$limit" -gt "$left" ] && limit=$left
	say "----    $name (limit ${limit}s)"
	t0=$(date +%s)
	set +e
	timeout -k 10 "$limit" "$@" >"$LOGS/$name.log" 2>&1
	rc=$?
	set -e
	dt=$(( $(date +%s) - t0 ))
	if [ $rc -eq 0 ]; then
		res=PASS
	elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		res=TIMEOUT
		FAILED=1
	elif [ $rc -eq 77 ]; then
		res=SKIP
	else
		res=FAIL
		FAILED=1
	fi
	say "$res    $name (${dt}s; log $LOGS/$name.log)"
	if [ $res = PASS ]; then
		grep -E '^(bench|# |PASS|FAIL|SKIP|ok|note)' "$LOGS/$name.log" | grep -v '^PASS:' | tail -60 | sed 's/^/    /' || true
	else
		tail -40 "$LOGS/$name.log" | sed 's/^/    /'
	fi
	printf '%-7s %s (%ss)\n' "$res" "$name" "$dt" >>"$SUMMARY"
	[ $res = PASS ]
}

# a step that cannot run here: not a pass (but expected in a dry run)
skip() {
	say "SKIP    $1 ($2)"
	echo "SKIP    $1 ($2)" >>"$SUMMARY"
	[ "${NNK_GPU_EXT:-cuda}" = cpu ] || SKIPPED=$((SKIPPED + 1))
}

# ---- 1. the environment ----------------------------------------------------------
env_report() {
	echo "host: $(uname -a)"
	echo "cpus: $(nproc 2>/dev/null)"
	if command -v nvidia-smi >/dev/null 2>&1; then
		timeout 20 nvidia-smi || echo "nvidia-smi failed"
		timeout 20 nvidia-smi --query-gpu=name,driver_version,compute_cap,memory.total,clocks.max.sm,clocks.max.mem --format=csv || true
	else
		echo "no nvidia-smi"
	fi
	for d in "${CUDA_HOME:-}" /usr/local/cuda; do
		if [ -n "$d" ] && [ -x "$d/bin/nvcc" ]; then "$d/bin/nvcc" --version | tail -2; break; fi
	done
	if command -v nvcc >/dev/null 2>&1; then nvcc --version | tail -1; fi
	(ldconfig -p 2>/dev/null | grep -E 'libcuda\.so\.1|libnvrtc\.so|libcudnn\.so' || true) | sed 's/^/ld: /'
	echo "cc: $(${CC:-cc} --version 2>/dev/null | head -1)"
	"$PY" --version 2>&1 || echo "no $PY"
	timeout 60 "$PY" - <<'EOF' || true
import importlib
for m in ("numpy", "torch", "cupy"):
    try:
        mod = importlib.import_module(m)
        extra = ""
        if m == "torch":
            extra = " cuda=%s available=%s" % (mod.version.cuda, mod.cuda.is_available())
        print("%s %s%s" % (m, mod.__version__, extra))
    except Exception as e:
        print("%s: not available (%s)" % (m, str(e).splitlines()[0][:120] if str(e) else type(e).__name__))
EOF
}
say "nnk GPU tests: source $SRC, build $BUILD, logs $LOGS, budget ${BUDGET}s"
env_report 2>&1 | tee "$LOGS/environment.log" | sed 's/^/    /'

# ---- 2. the build --------------------------------------------------------------------
cuda_home=${CUDA_HOME:-}
if [ -z "$cuda_home" ]; then
	for d in /usr/local/cuda /usr/local/cuda-*; do
		if [ -x "$d/bin/nvcc" ]; then cuda_home=$d; break; fi
	done
fi
export SRC BUILD JOBS cuda_home TARBALL
step build "${NNK_GPU_BUILD_LIMIT:-105}" sh "$SRC/tests/gpu/build.sh" || true
OBJ=$BUILD/obj
[ -x "$OBJ/nnkc" ] && [ -f "$OBJ/.libs/libnnk_ext_cuda.so" ] && BUILT=1
[ $BUILT = 1 ] || say "BUILD FAILED: nothing below can run (log $LOGS/build.log)"

export top_builddir="$OBJ" top_srcdir="$SRC" NNK_EXTENSION_PATH="$OBJ/.libs" NNK_CACHE_DIR="$BUILD/cache"
export NNKCONF_WORK="$BUILD/conformance-work" NNK_LIBNNK="$OBJ/.libs/libnnk.so.0"
[ -n "$cuda_home" ] && export NNK_CUDA_HOME="$cuda_home"

# NVRTC without a toolkit: a libnvrtc from the system or a python wheel
if [ -z "${NNK_NVRTC:-}" ] && [ -z "$cuda_home" ]; then
	cand=$( (ldconfig -p 2>/dev/null | sed -n 's/.*libnvrtc\.so\.[0-9.]* .*=> //p' | head -1) || true)
	if [ -z "$cand" ]; then
		cand=$(timeout 20 "$PY" -c 'import nvidia.cuda_nvrtc, os, glob; d = os.path.dirname(nvidia.cuda_nvrtc.__file__); print(sorted(glob.glob(os.path.join(d, "lib", "libnvrtc.so*")))[-1])' 2>/dev/null || true)
	fi
	[ -n "$cand" ] && export NNK_NVRTC="$cand" && say "NVRTC: $cand"
fi

have_numpy=0
timeout 60 "$PY" -c 'import numpy' >/dev/null 2>&1 && have_numpy=1
[ $have_numpy = 1 ] || say "note: no python3 with numpy ($PY): the python steps are skipped"

# the GPU as the cuda extension sees it: without one, nothing else can run
EXT=${NNK_GPU_EXT:-cuda}
export EXT
GPU=0
if [ $BUILT = 1 ]; then
	if step gpu 15 "$PY" -c '
import os, sys
sys.path.insert(0, os.path.join(os.environ["top_srcdir"], "tests", "gpu"))
import nnkrt
rt = nnkrt.Runtime(os.environ["NNK_LIBNNK"])
e = rt.extension(os.environ["EXT"])
n = rt.device_count(e)
print("%s: %d device(s): %s" % (os.environ["EXT"], n, rt.status(e)))
sys.exit(0 if n > 0 else "no GPU for the cuda extension: " + rt.status(e))'; then
		GPU=1
	fi
fi
if [ $GPU = 0 ]; then
	if [ $BUILT = 0 ]; then
		say "the build failed: the GPU steps are not run"
	else
		say "no usable GPU (the build is fine): the GPU steps are skipped (see above)"
	fi
	BUILT=0
	FAILED=1
fi

# ---- 3. the cuda extension --------------------------------------------------------------
if [ $BUILT = 1 ] && [ $have_numpy = 1 ] && [ "$EXT" != cpu ]; then
	step smoke 25 "$PY" "$SRC/tests/gpu/smoke.py" || true
	# over 2^31 elements, unaligned/offset/negative-stride/broadcast views,
	# several threads, the PTX JIT fallback, cuDNN actually running
	step extra 40 "$PY" "$SRC/tests/gpu/gpu_extra.py" || true
	# rows on each side of rd_row's registers, rd_srow's 48 KB and the
	# opt-in shared memory; opt_level 0 and 2 compiled at once; the status
	# from threads
	step rows 15 "$PY" "$SRC/tests/gpu/gpu_extra.py" rows levels || true
	# compute-sanitizer over the smoke kernels: memcheck, then racecheck
	san=""
	for d in "$cuda_home" /usr/local/cuda; do
		[ -n "$d" ] && [ -x "$d/bin/compute-sanitizer" ] && { san=$d/bin/compute-sanitizer; break; }
	done
	[ -n "$san" ] || san=$(command -v compute-sanitizer || true)
	if [ -n "$san" ]; then
		step memcheck 15 "$san" --tool memcheck --error-exitcode 1 "$PY" "$SRC/tests/gpu/smoke.py" || true
		step racecheck 15 "$san" --tool racecheck --error-exitcode 1 "$PY" "$SRC/tests/gpu/smoke.py" || true
	else
		skip memcheck "no compute-sanitizer"
	fi
else
	skip smoke "needs a GPU, the build and python3 with numpy"
fi

# ---- 4. a fat object on the GPU ------------------------------------------------------------
nvcc_bin=""
[ -n "$cuda_home" ] && [ -x "$cuda_home/bin/nvcc" ] && nvcc_bin=$cuda_home/bin/nvcc
if [ $BUILT = 1 ] && [ -n "$nvcc_bin" ] && [ "$EXT" != cpu ]; then
	arch=$(timeout 20 nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .' || true)
	[ -n "$arch" ] || arch=80
	step fatobj 45 sh -c "cd '$BUILD' && NNK_NVCC='$nvcc_bin' '$OBJ/nnkc' -c '$SRC/tests/cuda/kernels/fat.nnk' \
		--cuda-arch=sm_$arch -o fat.o -H fat.h && \
		${CC:-cc} -std=c11 -O2 -I. -I'$SRC/runtime/include' '$SRC/tests/gpu/fatgpu.c' fat.o -o fatgpu \
		-L'$OBJ/.libs' -lnnk -Wl,-rpath,'$OBJ/.libs' -lm -ldl && ./fatgpu" || true
else
	skip fatobj "needs a GPU, the build and nvcc"
fi

# ---- 5. conformance through the cuda extension -------------------------------------------
if [ $BUILT = 1 ] && [ $have_numpy = 1 ]; then
	step conformance-views 10 "$PY" "$SRC/tests/gpu/gpu_conformance.py" --ext "$EXT" --views || true
	step conformance-views-64 6 env NNK_CUDA_FORCE=1 "$PY" "$SRC/tests/gpu/gpu_conformance.py" --ext "$EXT" --views || true
	step conformance-reduction 40 "$PY" "$SRC/tests/gpu/gpu_conformance.py" --ext "$EXT" test_reduction.py || true
	step conformance-half 10 "$PY" "$SRC/tests/gpu/gpu_conformance.py" --ext "$EXT" test_half.py || true
	# every dispatch path and knob (per process: the extension reads them at load)
	# (4: a warp per position; PARTS=700: rd_fin's tree over more parts than
	# threads; elementwise FORCE=1: 64-bit strided offsets)
	for knobs in "NNK_CUDA_FORCE=1 NNK_CUDA_BLOCK=64" "NNK_CUDA_FORCE=2 NNK_CUDA_MAX_GRID=3" \
		"NNK_CUDA_FORCE=3 NNK_CUDA_BLOCK=32 NNK_CUDA_MAX_GRID=1" "NNK_CUDA_FORCE=4 NNK_CUDA_BLOCK=128" \
		"NNK_CUDA_FORCE=3 NNK_CUDA_PARTS=700 NNK_CUDA_BLOCK=64"; do
		tag=$(echo "$knobs" | sed 's/NNK_CUDA_//g; s/=//g; s/ /-/g' | tr '[:upper:]' '[:lower:]')
		# shellcheck disable=SC2086 # the knobs are words
		step "paths-$tag" 8 env $knobs "$PY" "$SRC/tests/gpu/gpu_conformance.py" --ext "$EXT" test_reduction.py \
			-k _all_layouts || true
	done
	if [ "$EXT" != cpu ]; then
		step conformance-cudnn 10 "$PY" "$SRC/tests/gpu/gpu_conformance.py" --ext cudnn test_reduction.py \
			-k test_sum_float_all_layouts || true
	fi
else
	skip conformance "needs a GPU, the build and python3 with numpy"
fi

# ---- 6. the benchmark -------------------------------------------------------------------------
if [ $BUILT = 1 ] && [ $have_numpy = 1 ]; then
	if [ "$EXT" = cpu ]; then scale="--scale 0.002 --quick"; else scale=""; fi
	# (65 s: the rows of softmax and layer norm run once more in two
	# children, on the per-phase twins of rd_row)
	# shellcheck disable=SC2086 # the options are words
	step benchmark 65 "$PY" "$SRC/bench/gpu/gpu_bench.py" --ext "$EXT" $scale || true
else
	skip benchmark "needs a GPU, the build and python3 with numpy"
fi

# ---- 7. elementwise conformance with the time left ----------------------------------------------
if [ $BUILT = 1 ] && [ $have_numpy = 1 ]; then
	step conformance-elementwise 14 env NNK_GPU_SKIP=test_constant_folding_matches_runtime \
		"$PY" "$SRC/tests/gpu/gpu_conformance.py" --ext "$EXT" test_elementwise.py || true
fi

say "summary ($(elapsed)s of ${BUDGET}s):"
sed 's/^/gpu:   /' "$SUMMARY"
if [ $FAILED = 0 ] && [ $NOTRUN = 0 ] && [ $SKIPPED = 0 ]; then
	say "every step ran and passed"
	exit 0
fi
[ $NOTRUN = 0 ] || say "INCOMPLETE: $NOTRUN step(s) not run for lack of time (not passed)"
[ $SKIPPED = 0 ] || say "INCOMPLETE: $SKIPPED step(s) skipped: what they need is missing (not passed)"
[ $FAILED = 0 ] || say "FAILED: see the logs in $LOGS"
exit 1
