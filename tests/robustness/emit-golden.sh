#!/bin/sh
# emit-golden.sh OUTDIR [NNKC]: writes everything the emitters produce for
# every .nnk file of the source tree into OUTDIR, so that a change to the
# back end can be checked against the code generated before it:
#
#   tests/robustness/emit-golden.sh /tmp/before      # on the old tree
#   ... change, make ...
#   tests/robustness/emit-golden.sh /tmp/after
#   diff -r /tmp/before /tmp/after                   # empty, or the diff you mean
#
# Per input F (its path with / as __): F.c (nnkc -S --target=c), F.cu
# (--target=cuda), F.cl (--target=opencl), F.h (--emit-header), F.fat.c (the C of nnkc -c --no-cuda)
# and F.fatcu.c (the C of nnkc -c with CUDA, the toolkit's steps being
# stand-ins, so no nvcc is needed); F.MODE.err holds the exit status and the
# diagnostics (invalid inputs give only those).  The C of a fat object is
# caught by running nnkc -c with NNK_CC set to a script that copies its
# standard input.  Not part of make check: a tool (a few seconds).
set -u
out=${1:?usage: emit-golden.sh OUTDIR [NNKC]}
here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
nnkc=${2:-${NNKC:-${top_builddir:-$top/build}/nnkc}}
case $nnkc in /*) ;; *) nnkc=$(pwd)/$nnkc ;; esac
mkdir -p "$out" || exit 1
[ -z "$(ls -A "$out")" ] || { echo "emit-golden.sh: $out is not empty" >&2; exit 1; }
out=$(cd "$out" && pwd)
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# the C compiler nnkc -c runs: keep the C source (not the assembly of the
# second step of a fat object), make an empty output
cat >"$tmp/cc" <<'EOF'
#!/bin/sh
case " $* " in *" -x c "*) cat >"$NNK_GOLDEN_C" ;; *) cat >/dev/null ;; esac
for a; do last=$a; done
: >"$last"
EOF
# the CUDA toolkit: nvcc -ptx writes a PTX stand-in for its -arch=compute_XX,
# ptxas and fatbinary (found next to nvcc) fixed bytes
cat >"$tmp/nvcc" <<'EOF'
#!/bin/sh
arch=75
while [ $# -gt 0 ]; do
    case $1 in -arch=compute_*) arch=${1#-arch=compute_} ;; esac
    if [ "$1" = -o ]; then printf '// PTX-STAND-IN\n.target sm_%s\n' "$arch" >"$2"; shift; fi
    shift
done
EOF
cat >"$tmp/ptxas" <<'EOF'
#!/bin/sh
while [ $# -gt 0 ]; do
    if [ "$1" = -o ]; then printf 'CUBIN-STAND-IN' >"$2"; shift; fi
    shift
done
EOF
cat >"$tmp/fatbinary" <<'EOF'
#!/bin/sh
for a; do case $a in --create=*) printf 'FATBIN-STAND-IN' >"${a#--create=}" ;; esac; done
EOF
chmod +x "$tmp/cc" "$tmp/nvcc" "$tmp/ptxas" "$tmp/fatbinary"

cd "$top" || exit 1
files=$(git ls-files '*.nnk' 2>/dev/null) || files=
[ -n "$files" ] || files=$(find . -name '*.nnk' | sed 's,^\./,,' | LC_ALL=C sort)
n=0
for f in $files; do
    b=$out/$(printf '%s' "$f" | sed 's,/,__,g')
    dir=$(dirname "$f") base=$(basename "$f")
    # run from the file's directory: imports resolve, and the file name
    # written into the generated code does not depend on OUTDIR
    run() { # MODE OUTFILE ARGS...
        mode=$1 dest=$2; shift 2
        (cd "$dir" && "$nnkc" "$@" "$base") >"$b.$mode.err" 2>&1
        echo "exit $?" >>"$b.$mode.err"
        [ -s "$dest" ] || rm -f "$dest"
    }
    run c "$b.c" -S --target=c -o "$b.c"
    run cu "$b.cu" -S --target=cuda -o "$b.cu"
    run cl "$b.cl" -S --target=opencl -o "$b.cl"
    run h "$b.h" --emit-header -o "$b.h"
    NNK_CC=$tmp/cc NNK_GOLDEN_C=$b.fat.c run fat "$b.fat.c" -c --no-cuda -o "$tmp/o"
    NNK_CC=$tmp/cc NNK_NVCC=$tmp/nvcc NNK_GOLDEN_C=$b.fatcu.c run fatcu "$b.fatcu.c" -c -o "$tmp/o"
    n=$((n + 1))
done
echo "emit-golden: $n inputs into $out"
