#!/bin/sh
# fatobj-check.sh: nnkc -c fat objects.  For kernels/fat.nnk: the arch
# list inside the object (cuobjdump --list-elf/--list-ptx when configure
# found it, else tests/cuda/fatbin_list), the configured default archs,
# deterministic output, one cicc run's PTX against nvcc's for the newest
# arch, -j, a failing or hanging nvcc and the temporary files, --no-cuda
# and a missing nvcc (CPU-only objects),
# a bad --cuda-arch, the header in C and C++; then an application linked
# with libnnk and one linked without it, both run on the CPU fallback
# (fatapp.c).  Every test and sample kernel file (tests/diagnostics/valid,
# samples) is also built into a fat object for one arch, and the PTX nvcc
# made of it passes the PTX lint (tests/cuda/ptx_lint).
# Exit 77 (skipped) only when nvcc is absent; the CPU-only parts still run.
set -u
: "${top_srcdir:?}" "${top_builddir:?}"
nnkc=$top_builddir/nnkc
lister=$top_builddir/tests/cuda/fatbin_list
cc=${CC:-cc}
nvcc=${NVCC:-no}
[ -n "$nvcc" ] || nvcc=no
cuobjdump=${CUOBJDUMP:-no}
default_archs=${NNK_CUDA_ARCHS:-sm_75,sm_80,sm_90}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/nnk-fatobj.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM
fail=0
ok() { echo "fatobj-check: ok   $*"; }
bad() { echo "fatobj-check: FAIL $*"; fail=1; }
k=$top_srcdir/tests/cuda/kernels/fat.nnk

# "elf sm_75 ... ptx sm_90", sorted, from an object
archs_of() {
	if [ "$cuobjdump" != no ]; then
		{ "$cuobjdump" --list-elf "$1" 2>/dev/null | sed -n 's/.*\.\(sm_[0-9a-z]*\)\.cubin.*/elf \1/p'
		  "$cuobjdump" --list-ptx "$1" 2>/dev/null | sed -n 's/.*\.\(sm_[0-9a-z]*\)\.ptx.*/ptx \1/p'; } | sort | tr '\n' ' '
	else
		"$lister" "$1" 2>/dev/null | sort | tr '\n' ' '
	fi
}
expect_archs() { # object, space-separated entries
	got=$(archs_of "$1")
	# shellcheck disable=SC2086 # split the list into words
	want=$(printf '%s\n' $2 | paste -d' ' - - | sort | tr '\n' ' ')
	if [ "$got" = "$want" ]; then ok "$3: $got"; else bad "$3: got '$got', expected '$want'"; fi
}

# ---- CPU-only objects (no toolkit needed) ----
if NNK_NVCC=no "$nnkc" -c "$k" -o "$tmp/cpu.o" -H "$tmp/cpu.h" 2>"$tmp/note"; then
	if grep -q "note: no nvcc" "$tmp/note"; then ok "without nvcc: a CPU-only object, with a note"; else bad "no note without nvcc"; fi
else
	bad "nnkc -c without nvcc failed"; cat "$tmp/note"
fi
"$nnkc" -c --no-cuda "$k" -o "$tmp/nocuda.o" -H "$tmp/nocuda.h" 2>"$tmp/note" || bad "nnkc -c --no-cuda failed"
[ -s "$tmp/note" ] && bad "--no-cuda should be quiet: $(cat "$tmp/note")"
if "$lister" "$tmp/nocuda.o" >/dev/null 2>&1; then bad "--no-cuda object has a fatbin"; else ok "--no-cuda: no fatbin"; fi
cmp -s "$tmp/cpu.o" "$tmp/nocuda.o" && ok "--no-cuda and no nvcc give the same object" || bad "--no-cuda and no nvcc objects differ"
"$nnkc" -c --cuda-arch=sm_75,bogus "$k" -o "$tmp/x.o" 2>"$tmp/err"
[ $? -eq 2 ] && grep -q "bad --cuda-arch entry 'bogus'" "$tmp/err" && ok "a bad --cuda-arch is a usage error" || bad "bad --cuda-arch: $(cat "$tmp/err")"

build_app() { # header dir, object, output, mode
	inc="-I$1 -I$top_srcdir/runtime/include"
	if [ "$4" = nnk ]; then
		# a sanitized libnnk wants a sanitized program (ASan first in the link)
		$cc ${SAN_FLAGS:-} -std=c11 -Wall -Wextra -Werror $inc -DWITH_NNK "$top_srcdir/tests/cuda/fatapp.c" "$2" -o "$3" \
			-L"$top_builddir/.libs" -lnnk -Wl,-rpath,"$top_builddir/.libs" -lm
	else
		$cc -std=c11 -Wall -Wextra -Werror $inc "$top_srcdir/tests/cuda/fatapp.c" "$2" -o "$3" -lm
	fi
}
run_app() { # app, expectation, what
	if NNK_EXTENSION_PATH=$top_builddir/.libs NNK_CACHE_DIR=$tmp/cache "$1" "$2" >"$tmp/app.log" 2>&1; then
		ok "$3"
	else
		bad "$3:"; cat "$tmp/app.log"
	fi
}
mkdir -p "$tmp/cpuhdr" && cp "$tmp/nocuda.h" "$tmp/cpuhdr/fat.h"
build_app "$tmp/cpuhdr" "$tmp/nocuda.o" "$tmp/app_cpu" nnk && run_app "$tmp/app_cpu" nocuda "CPU-only object, app with libnnk" \
	|| bad "cannot build the app of the CPU-only object"

if [ "$nvcc" = no ]; then
	echo "fatobj-check: SKIP: nvcc not found (configure --with-cuda): fat objects with GPU code not tested"
	[ $fail -eq 0 ] && exit 77
	exit 1
fi
export NNK_NVCC=$nvcc

# ---- fat objects ----
start=$(date +%s)
"$nnkc" -c "$k" -o "$tmp/fat.o" -H "$tmp/fat.h" --cuda-arch=sm_90,sm_75,sm_80 || bad "nnkc -c --cuda-arch=sm_90,sm_75,sm_80 failed"
expect_archs "$tmp/fat.o" "elf sm_75 elf sm_80 elf sm_90 ptx sm_90" "--cuda-arch=sm_90,sm_75,sm_80"
"$nnkc" -c "$k" -o "$tmp/dflt.o" || bad "nnkc -c with the default archs failed"
want=""
for a in $(echo "$default_archs" | tr ',' ' '); do want="$want elf $a"; done
last=$(echo "$default_archs" | tr ',' '\n' | grep -v '[af]$' | sed 's/^sm_//' | sort -n | tail -1)
expect_archs "$tmp/dflt.o" "$want ptx sm_$last" "default archs ($default_archs)"
if [ "$default_archs" = sm_75,sm_80,sm_90 ]; then
	cmp -s "$tmp/fat.o" "$tmp/dflt.o" && ok "deterministic (whatever the order of --cuda-arch)" || bad "two builds differ"
else
	"$nnkc" -c "$k" -o "$tmp/fat2.o" --cuda-arch=sm_80,sm_90,sm_75 || bad "second build failed"
	cmp -s "$tmp/fat.o" "$tmp/fat2.o" && ok "deterministic (whatever the order of --cuda-arch)" || bad "two builds differ"
fi
"$nnkc" -c "$k" -o "$tmp/one.o" --cuda-arch=86 || bad "--cuda-arch=86 failed"
expect_archs "$tmp/one.o" "elf sm_86 ptx sm_86" "--cuda-arch=86"
# SASS once per family: sm_80's runs on 8.6 and 8.9; the PTX is the newest's
"$nnkc" -c "$k" -o "$tmp/fam.o" --cuda-arch=sm_89,sm_80,sm_86 || bad "--cuda-arch=sm_89,sm_80,sm_86 failed"
expect_archs "$tmp/fam.o" "elf sm_80 ptx sm_89" "--cuda-arch=sm_89,sm_80,sm_86"
echo "fatobj-check: fat objects built in $(( $(date +%s) - start ))s"

# One cicc run for every arch (compiler/fatobj.c): the PTX of the oldest
# virtual arch, with the newest in its .target, must be what nvcc makes
# for the newest (the generated CUDA has no __CUDA_ARCH__-dependent code;
# f16 and complex values included, samples/norms.nnk and fat.nnk)
for f in "$k" "$top_srcdir/samples/norms.nnk"; do
	b=$(basename "$f" .nnk)
	rm -rf "$tmp/one" && mkdir -p "$tmp/one"
	if NNKC_CUDA_KEEP="$tmp/one" "$nnkc" -c --cuda-arch=sm_75,sm_90 "$f" -o "$tmp/one.o" &&
		"$nnkc" -S --target=cuda "$f" -o "$tmp/one/$b.cu" &&
		"$nvcc" -ptx -std=c++17 -fmad=false -arch=compute_90 "$tmp/one/$b.cu" -o "$tmp/one/nvcc90.ptx"; then
		sed 's/^\.target sm_75$/.target sm_90/' "$tmp/one/kernels.compute_75.ptx" >"$tmp/one/re90.ptx"
		if cmp -s "$tmp/one/re90.ptx" "$tmp/one/nvcc90.ptx"; then
			ok "$b: the compute_75 PTX retargeted is nvcc's compute_90 PTX (one cicc run serves every arch)"
		else
			bad "$b: NVVM's PTX depends on the arch: $(diff "$tmp/one/re90.ptx" "$tmp/one/nvcc90.ptx" | head -5)"
		fi
	else
		bad "$b: cannot make the PTX to compare"
	fi
done

# the job count, and the temporary files: none left after a build, a
# failed nvcc or a timeout; a failed step is reported with its output
mkdir -p "$tmp/t"
TMPDIR=$tmp/t "$nnkc" -c -j 1 --cuda-arch=sm_80 "$k" -o "$tmp/j1.o" || bad "nnkc -c -j 1 failed"
# a TMPDIR with a quote, which fatbinary cannot take, is not used
mkdir -p "$tmp/q\"x"
TMPDIR=$tmp/q\"x "$nnkc" -c -j 3 --cuda-arch=sm_80 "$k" -o "$tmp/j3.o" || bad "nnkc -c -j 3 (TMPDIR with a quote) failed"
[ -z "$(ls -A "$tmp/q\"x")" ] || bad "files in the TMPDIR with a quote"
cmp -s "$tmp/j1.o" "$tmp/j3.o" && ok "-j 1 and -j 3 give the same object" || bad "-j 1 and -j 3 objects differ"
"$nnkc" -c -j 0 "$k" -o "$tmp/x.o" 2>/dev/null; [ $? -eq 2 ] && ok "-j 0 is a usage error" || bad "-j 0 accepted"
# stand-ins for nvcc, with the real ptxas and fatbinary next to them
mkdir -p "$tmp/fake"
nvcc_dir=$(dirname "$(command -v "$nvcc")")
ln -s "$nvcc_dir/ptxas" "$nvcc_dir/fatbinary" "$tmp/fake/"
printf '#!/bin/sh\necho "nvcc stand-in: no" >&2\nexit 3\n' >"$tmp/fake/badnvcc" && chmod +x "$tmp/fake/badnvcc"
if TMPDIR=$tmp/t NNK_NVCC=$tmp/fake/badnvcc "$nnkc" -c "$k" -o "$tmp/bad.o" 2>"$tmp/err"; then
	bad "a failing nvcc: nnkc -c succeeded"
elif grep -q "exit 3" "$tmp/err" && grep -q "nvcc stand-in: no" "$tmp/err" && [ ! -e "$tmp/bad.o" ]; then
	ok "a failing nvcc: an error with its output, no object"
else
	bad "a failing nvcc: $(cat "$tmp/err")"
fi
printf '#!/bin/sh\nexec sleep 30\n' >"$tmp/fake/slownvcc" && chmod +x "$tmp/fake/slownvcc"
if TMPDIR=$tmp/t NNK_COMPILE_TIMEOUT=1 NNK_NVCC=$tmp/fake/slownvcc "$nnkc" -c "$k" -o "$tmp/slow.o" 2>"$tmp/err"; then
	bad "a hanging nvcc: nnkc -c succeeded"
elif grep -q "did not finish in 1 s" "$tmp/err"; then
	ok "a hanging nvcc: killed at NNK_COMPILE_TIMEOUT"
else
	bad "a hanging nvcc: $(cat "$tmp/err")"
fi
[ -z "$(ls -A "$tmp/t")" ] && ok "no temporary files left" || bad "temporary files left: $(ls "$tmp/t")"

# FMA contraction: -fmad=false unless --cuda-fmad (docs/cuda-backend.md):
# nvcc's PTX of a * b - c has mul.rn.f32 and sub.rn.f32 (never fused), or
# with --cuda-fmad a contractible mul.f32 or an fma
printf 'elementwise fms(a: f32[], b: f32[], c: f32[]) -> (y: f32[]) { y = a * b - c; }\n' >"$tmp/fms.nnk"
for mode in default --cuda-fmad; do
	rm -rf "$tmp/fk" && mkdir -p "$tmp/fk"
	flag=; [ $mode = default ] || flag=$mode
	# shellcheck disable=SC2086 # no flag is no word
	if NNKC_CUDA_KEEP="$tmp/fk" "$nnkc" -c $flag --cuda-arch=sm_80 "$tmp/fms.nnk" -o "$tmp/fms.o" 2>"$tmp/err"; then
		if [ $mode = default ]; then
			if grep -q 'mul\.rn\.f32' "$tmp/fk"/*.ptx && grep -q 'sub\.rn\.f32' "$tmp/fk"/*.ptx &&
				! grep -Eq 'fma\.rn\.f32|mul\.f32' "$tmp/fk"/*.ptx; then
				ok "a * b - c not contracted by default (-fmad=false)"
			else
				bad "a * b - c: nvcc's PTX is not mul.rn + sub.rn"
			fi
		elif grep -Eq 'fma\.rn\.f32|mul\.f32' "$tmp/fk"/*.ptx; then
			ok "--cuda-fmad: a * b - c contractible"
		else
			bad "--cuda-fmad: no contractible multiply in nvcc's PTX"
		fi
	else
		bad "nnkc -c $mode fms.nnk: $(cat "$tmp/err")"
	fi
done

# the header: C and C++
for lang in c c++; do
	if echo '#include "fat.h"' | $cc -x $lang -fsyntax-only -Wall -Wextra -Werror -I"$tmp" - 2>"$tmp/err"; then
		ok "the header compiles as $lang"
	else
		bad "the header as $lang: $(cat "$tmp/err")"
	fi
done

build_app "$tmp" "$tmp/fat.o" "$tmp/app_nnk" nnk && run_app "$tmp/app_nnk" cuda "fat object, app linked with libnnk (CPU fallback)" \
	|| { bad "cannot build the app with libnnk"; }
build_app "$tmp" "$tmp/fat.o" "$tmp/app_plain" plain && run_app "$tmp/app_plain" cuda "fat object, app linked without libnnk" \
	|| { bad "cannot link the app without libnnk (weak references?)"; }
if nm "$tmp/app_plain" 2>/dev/null | grep -q ' [TD] nnk_launch'; then bad "app without libnnk defines nnk_launch*?"; fi

# ---- every test and sample kernel as a fat object (one arch, two at a time) ----
# NNKCONF_SLICE=N (make check NNK_EMU_SLICE=N, the sanitizer stage of
# tests/run-all.sh): every Nth file only, the first included.  nvcc, cicc
# and ptxas are not sanitized and the plain stage builds every file; the
# fat objects of fat.nnk and norms.nnk above still go through the
# sanitized nnkc's whole -c driver.
slice=${NNKCONF_SLICE:-1}
case $slice in '' | *[!0-9]* | 0) slice=1 ;; esac
files=$(ls "$top_srcdir"/tests/diagnostics/valid/*.nnk "$top_srcdir"/samples/*.nnk "$top_srcdir"/samples/*/*.nnk 2>/dev/null |
	awk -v s="$slice" '(NR - 1) % s == 0')
[ "$slice" -eq 1 ] || echo "fatobj-check: NNKCONF_SLICE=$slice: every ${slice}th kernel file as a fat object"
start=$(date +%s)
n=0
for f in $files; do
	n=$((n + 1))
	b=$(basename "$f" .nnk)
	# nvcc's PTX kept (NNKC_CUDA_KEEP) for the PTX lint (tests/cuda/ptx_lint.h)
	mkdir -p "$tmp/keep-$n"
	# (files with raw parameters or index(d) too: their kernels take nnk_cuda_rargs)
	( if NNKC_CUDA_KEEP="$tmp/keep-$n" "$nnkc" -c -I"$(dirname "$f")" --cuda-arch=sm_80 "$f" -o "$tmp/all-$n-$b.o" 2>"$tmp/all-$n.log" &&
	     [ "$(archs_of "$tmp/all-$n-$b.o")" = "elf sm_80 ptx sm_80 " ] &&
	     "$top_builddir/tests/cuda/ptx_lint" "$tmp/keep-$n"/*.ptx >>"$tmp/all-$n.log" 2>&1; then
		echo ok >"$tmp/all-$n.st"; else echo FAIL >"$tmp/all-$n.st"; fi
	  rm -rf "$tmp/keep-$n" ) &
	[ $((n % 2)) -eq 0 ] && wait
done
wait
n=0
for f in $files; do
	n=$((n + 1))
	if [ "$(cat "$tmp/all-$n.st")" = ok ]; then ok "fat object of ${f#"$top_srcdir"/} (sm_80), nvcc's PTX lint-clean"; else bad "fat object of $f:"; cat "$tmp/all-$n.log"; fi
done
echo "fatobj-check: $n kernel files as fat objects in $(( $(date +%s) - start ))s"
exit $fail
