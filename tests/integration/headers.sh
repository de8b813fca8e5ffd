#!/bin/sh
# Every generated header is a C99 and a C++11 header: the one --emit-header
# writes for each kernel file of the tree compiles alone (-pedantic -Werror),
# with nnk/nnk.h, and all of them in one translation unit (the types they
# share are guarded); a C and a C++ program call a complex kernel through it,
# linked with the object nnkc -c makes.
set -u
here=$(cd "$(dirname "$0")" && pwd)
top_srcdir=${top_srcdir:-$here/../..}
nnkc=${NNKC:-${top_builddir:-$here/../..}/nnkc}
case $nnkc in /*) ;; *) nnkc=$(pwd)/$nnkc ;; esac
cc=${CC:-cc}
cxx=${CXX:-c++}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
start=$(date +%s)
inc="-I$top_srcdir/runtime/include"

n=0
: >"$tmp/all.c"
for f in "$top_srcdir"/tests/diagnostics/valid/*.nnk "$top_srcdir"/tests/conformance/kernels/*.nnk \
         "$top_srcdir"/tests/integration/common/*.nnk "$top_srcdir"/samples/*.nnk "$top_srcdir"/samples/*/*.nnk; do
    [ -f "$f" ] || continue
    n=$((n + 1))
    h=h$n.h
    if ! "$nnkc" --emit-header -I"$(dirname "$f")" "$f" -o "$tmp/$h" 2>"$tmp/err"; then
        echo "FAIL nnkc --emit-header ${f#"$top_srcdir"/}: $(head -3 "$tmp/err")"; fail=1; continue
    fi
    for lang in c c++; do
        std=c99; comp=$cc
        [ $lang = c++ ] && { std=c++11; comp=$cxx; }
        if ! printf '#include "%s"\n#include <nnk/nnk.h>\n#include "%s"\n' "$h" "$h" |
             $comp -x $lang -std=$std -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$tmp" $inc - 2>"$tmp/err"; then
            echo "FAIL the header of ${f#"$top_srcdir"/} as $lang ($std): $(head -4 "$tmp/err")"; fail=1
        fi
    done
    # one translation unit for headers whose kernel names differ (complex
    # files among them, so the complex types meet twice)
    case $f in */complex*.nnk|*/saxpy*.nnk|*/norms.nnk) echo "#include \"$h\"" >>"$tmp/all.c" ;; esac
done
[ $n -ge 20 ] || { echo "FAIL only $n kernel files found under $top_srcdir"; fail=1; }
[ "$(wc -l <"$tmp/all.c")" -ge 3 ] || { echo "FAIL fewer than 3 headers for the shared translation unit"; fail=1; }
for lang in c c++; do
    if $( [ $lang = c ] && echo "$cc" || echo "$cxx" ) -x $lang -pedantic -Wall -Wextra -Werror -fsyntax-only -I"$tmp" $inc "$tmp/all.c" 2>"$tmp/err"; then
        echo "ok   $(wc -l <"$tmp/all.c") headers in one $lang translation unit"
    else
        echo "FAIL headers in one $lang translation unit: $(head -4 "$tmp/err")"; fail=1
    fi
done
echo "ok   $n headers checked alone as C99 and C++11"

# a complex kernel called through its header from C and C++
cat >"$tmp/cz.nnk" <<'NNK'
elementwise cz(a: c64, x: c64[]) -> (y: c64[]) { y = a * x; }
elementwise zz(a: c128, x: c128[]) -> (y: c128[]) { y = a * x + 1; }
NNK
cat >"$tmp/app.c" <<'APP'
#include "cz.h"
#include <stdio.h>
int main(void)
{
    nnk_c64 a = {0, 1}, x[2] = {{1, 0}, {2, 3}}, y[2];
    nnk_c128 b = {2, 0}, u[1] = {{1, -1}}, v[1];
    cz(2, a, x, y);
    zz(1, b, u, v);
    printf("%g %g %g %g %g %g\n", y[0].re, y[0].im, y[1].re, y[1].im, v[0].re, v[0].im);
    return 0;
}
APP
cp "$tmp/app.c" "$tmp/app.cpp"
if (cd "$tmp" && "$nnkc" -c --no-cuda cz.nnk -o cz.o -H cz.h) 2>"$tmp/err"; then
    for lang in c c++; do
        comp=$cc; src=app.c
        [ $lang = c++ ] && { comp=$cxx; src=app.cpp; }
        if (cd "$tmp" && $comp -Wall -Wextra -Werror -c $src -o app.o && $comp -o app app.o cz.o -lm) 2>"$tmp/err"; then
            got=$("$tmp/app")
            if [ "$got" = "0 1 -3 2 3 -2" ]; then echo "ok   a $lang program calls c64 and c128 kernels through the header"
            else echo "FAIL the $lang program printed '$got', expected '0 1 -3 2 3 -2'"; fail=1; fi
        else
            echo "FAIL the $lang program does not build: $(head -4 "$tmp/err")"; fail=1
        fi
    done
else
    echo "FAIL nnkc -c cz.nnk: $(head -3 "$tmp/err")"; fail=1
fi
echo "headers: $(( $(date +%s) - start ))s"
exit $fail
