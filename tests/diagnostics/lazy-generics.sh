#!/bin/sh
# docs/language.md, Generics: nnkc emits the default instances that
# type-check, warns about the others, and fails only when nothing is left
# to emit (--check accepts such a file: it is valid).
set -u
here=$(cd "$(dirname "$0")" && pwd)
nnkc=${NNKC:-${top_builddir:-$here/../..}/nnkc}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
err() { echo "FAIL: $*"; fail=1; }
printf 'elementwise gband<T>(x: T[], y: T[]) -> (z: T[]) { z = x & y; }\n' >"$tmp/one.nnk"
{ cat "$tmp/one.nnk"; printf 'elementwise gadd<T>(x: T[], y: T[]) -> (z: T[]) { z = x + y; }\n'; } >"$tmp/two.nnk"
for t in c cuda; do
    NO_COLOR=1 "$nnkc" -S --target=$t "$tmp/two.nnk" -o "$tmp/two.out" 2>"$tmp/log" || err "two.nnk --target=$t: status $?"
    grep -q "warning: 'gband<f32>', the default instance of generic kernel 'gband', does not type-check; it is not emitted" \
        "$tmp/log" || err "two.nnk --target=$t: no warning"
    grep -q 'gadd_f32' "$tmp/two.out" || err "two.nnk --target=$t: gadd_f32 not emitted"
    ! grep -q 'gband' "$tmp/two.out" || err "two.nnk --target=$t: gband emitted"
done
for mode in "-S --target=c" "-S --target=cuda" --emit-header --emit=ir "-c --no-cuda"; do
    # shellcheck disable=SC2086
    NO_COLOR=1 "$nnkc" $mode "$tmp/one.nnk" -o "$tmp/one.out" 2>"$tmp/log"
    rc=$?
    [ $rc = 1 ] || err "one.nnk $mode: status $rc, expected 1"
    grep -q 'one.nnk:1:13: error: nothing to emit: no kernel has an instance that type-checks' "$tmp/log" ||
        err "one.nnk $mode: no 'nothing to emit' error"
done
NO_COLOR=1 "$nnkc" --check "$tmp/one.nnk" 2>"$tmp/log" || err "one.nnk --check: status $?"
grep -q ': warning: ' "$tmp/log" || err "one.nnk --check: no warning"
NO_COLOR=1 "$nnkc" -S --target=c -T i32,u8 "$tmp/one.nnk" -o "$tmp/one.c" 2>"$tmp/log" || err "-T i32,u8: status $?"
[ -s "$tmp/log" ] && err "-T i32,u8: diagnostics: $(cat "$tmp/log")"
grep -q 'gband_i32' "$tmp/one.c" && grep -q 'gband_u8' "$tmp/one.c" || err "-T i32,u8: instances missing"
[ $fail = 0 ] && echo "lazy generics: nnkc checks passed"
exit $fail
