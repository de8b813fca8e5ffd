#!/bin/sh
# No input crashes, hangs or leaks the front end: each generated input must
# end with exit status 0 or 1 (never a signal) within a time limit, and
# with the expected status where it is known.  Under --enable-sanitizers
# the same runs catch memory errors and leaks.
set -u
here=$(cd "$(dirname "$0")" && pwd)
nnkc=${NNKC:-${top_builddir:-$here/../..}/nnkc}
py=${PYTHON_NUMPY:-python3}
command -v "$py" >/dev/null 2>&1 || py=python3
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0

# name, expected status (0, 1, or "any" = 0 or 1), then the generator
check() {
    name=$1 want=$2 file=$tmp/$1.nnk
    start=$(date +%s)
    timeout 60 "$nnkc" --check "$file" >"$tmp/out" 2>&1
    rc=$?
    secs=$(( $(date +%s) - start ))
    lines=$(wc -l <"$tmp/out")
    if [ $rc -ge 2 ]; then
        echo "FAIL $name: exit status $rc (a signal or timeout)"; head -5 "$tmp/out"; fail=1
    elif [ "$want" != any ] && [ $rc != "$want" ]; then
        echo "FAIL $name: exit status $rc, expected $want"; head -5 "$tmp/out"; fail=1
    else
        echo "ok   $name (status $rc, ${secs}s, $lines lines of diagnostics)"
    fi
}

gen() { "$py" -c "$1" > "$tmp/$2.nnk"; }

: > "$tmp/empty.nnk";                                                        check empty 0
gen "print('elementwise k(x: f32[]) -> (y: f32[]) { y = ' + '('*10000 + 'x' + ')'*10000 + '; }')" deep_parens;   check deep_parens any
gen "print('elementwise k(x: f32[]) -> (y: f32[]) { y = ' + '-'*10000 + 'x; }')" deep_unary;                   check deep_unary 1
gen "print('elementwise k(x: f32[]) -> (y: f32[]) { y = ' + 'sin('*10000 + 'x' + ')'*10000 + '; }')" deep_calls; check deep_calls 1
# a flat chain is nested 2 deep however long, and so is a chain of lets
# that each double the one before (language.md, "Limits"): both are valid
gen "print('elementwise k(x: f32[]) -> (y: f32[]) { y = ' + ' + '.join(['x']*200000) + '; }')" long_sum;      check long_sum 0
gen "print('elementwise k(x: f32[]) -> (y: f32[]) { y = x ? ' * 10000 + 'x' + ' : x' * 10000 + '; }')" deep_ternary; check deep_ternary 1
gen "print('elementwise k(x: f32[]) -> (y: f32[]) {'); [print('  let a%d = %s * 2;' % (i, 'x' if i == 0 else 'a%d' % (i-1))) for i in range(10000)]; print('  y = a9999; }')" let_chain; check let_chain 0
gen "import sys; sys.stdout.write('elementwise k(x: f32[]) -> (y: f32[]) { y = x\x00 + 1; }\x00\x00')" nul_bytes; check nul_bytes 1
gen "import sys; sys.stdout.buffer.write(b'elementwise k(x: f32[]) -> (y: f32[]) { y = x \xc3\x28 \xff\xfe 1; }')" bad_utf8; check bad_utf8 1
gen "print('elementwise k(x: f64[]) -> (y: f64[]) { y = x + ' + '9'*50 + ' + 1.' + '1'*50 + '; }')" long_literals; check long_literals 1
gen "print('elementwise k(x: f64[]) -> (y: f64[]) { y = x * 1.' + '1'*50 + 'e-3; }')" long_float; check long_float 0
gen "
import sys
body = ''.join('elementwise k%d(x: f32[], a: f32 = 2) -> (y: f32[]) {\n    let t = a * x + %d.5;\n    y = sqrt(t * t) / (1 + exp(-t));\n}\n' % (i, i) for i in range(81000))
sys.stdout.write(body)
" ten_mb;  check ten_mb 0
gen "import random; random.seed(7); print(''.join(random.choice('(){}[];:,=<>+-*/%!~?|&^ abcxyz019.elementwise reduction let\n') for _ in range(200000)))" random_tokens; check random_tokens 1
gen "print('/*' + 'x' * 100000)" open_comment; check open_comment 1
gen "print('import \"' + 'a' * 5000 + '\";')" long_import; check long_import 1
size=$(wc -c <"$tmp/ten_mb.nnk")
[ "$size" -ge 10000000 ] || { echo "FAIL ten_mb is only $size bytes"; fail=1; }
exit $fail
