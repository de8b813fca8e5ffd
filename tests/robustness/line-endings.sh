#!/bin/sh
# Lines end with LF, CR LF or a lone CR (docs/language.md section 2): one
# program written with each, mixed, and ending in a CR gives the same
# generated code for every target (the per-statement comments copy its
# source lines, with their numbers), and the C compiles with $CC -Werror.
# A file of lone CRs was one line before: a // comment swallowed it all,
# and a statement's comment would have named line 1.  (The diagnostics of
# each style: tests/diagnostics/eol_*.)
set -u
here=$(cd "$(dirname "$0")" && pwd)
nnkc=${NNKC:-${top_builddir:-$here/../..}/nnkc}
cc=${CC:-cc}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
# the lines, joined below with each style's line ends (\f, \v: a form feed
# and a vertical tab, blanks within a line)
good='// a comment, then a kernel
elementwise k(x: f32[], a: f32 = 2) -> (y: f32[]) {
    /* a block comment
       over lines */ let t = x * a; // its line
    let u = t *
        sqrt(t);
    let v = u\f+ 1;\v
    y = v * 2;
}'
write() { # style file
    printf '%s\n' "$good" | STYLE=$1 "${PYTHON:-python3}" -c '
import os, sys
text = sys.stdin.read().replace("\\f", "\f").replace("\\v", "\v").split("\n")[:-1]
eols = {"lf": ["\n"], "crlf": ["\r\n"], "cr": ["\r"], "mixed": ["\r", "\r\n", "\n"]}[os.environ["STYLE"]]
sys.stdout.write("".join(l + eols[i % len(eols)] for i, l in enumerate(text)))' >"$2"
}
for style in lf crlf cr mixed; do
    mkdir -p "$tmp/$style"
    write $style "$tmp/$style/k.nnk"
    for target in c cuda opencl; do
        if ! (cd "$tmp/$style" && "$nnkc" -S --target=$target k.nnk -o k.$target) 2>"$tmp/err"; then
            echo "FAIL $style, --target=$target: nnkc failed"; cat "$tmp/err"; fail=1; continue
        fi
        if [ $style != lf ] && ! cmp -s "$tmp/lf/k.$target" "$tmp/$style/k.$target"; then
            echo "FAIL $style, --target=$target: the generated code differs from that of LF lines"
            diff "$tmp/lf/k.$target" "$tmp/$style/k.$target" | head -10; fail=1
        fi
    done
    if ! "$cc" -std=c11 -Wall -Werror -c -x c "$tmp/$style/k.c" -o "$tmp/$style/k.o" 2>"$tmp/err"; then
        echo "FAIL $style: the generated C does not compile"; cat "$tmp/err"; fail=1
    fi
    # the statements' comments name their lines
    for want in 'k.nnk:4: over lines \*\\x2f let t = x \* a; // its line' 'k.nnk:5: let u = t \*' \
        'k.nnk:7: let v = u\\x0c+ 1;\\x0b' 'k.nnk:8: y = v \* 2;'; do
        grep -q "/\* $want \*/" "$tmp/$style/k.c" ||
            { echo "FAIL $style: no comment /* $want */ in the generated C"; fail=1; }
    done
    [ $fail = 0 ] && echo "ok   $style"
done
exit $fail
