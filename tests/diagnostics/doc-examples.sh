#!/bin/sh
# Every ```nnk block of docs/language.md must check cleanly and every
# ```nnk-error block must be rejected (exit status 1, not a crash).
set -u
here=$(cd "$(dirname "$0")" && pwd)
top=${top_srcdir:-$here/../..}
nnkc=${NNKC:-${top_builddir:-$here/../..}/nnkc}
doc=$top/docs/language.md
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
awk -v dir="$tmp" '
    /^```nnk-error$/ { n++; f = sprintf("%s/bad%02d.nnk", dir, n); inb = 1; next }
    /^```nnk$/       { n++; f = sprintf("%s/ok%02d.nnk", dir, n); inb = 1; next }
    /^```/           { inb = 0; next }
    inb              { print > f }
' "$doc"
fail=0 n=0
for f in "$tmp"/*.nnk; do
    [ -e "$f" ] || { echo "no examples found in $doc"; exit 1; }
    n=$((n + 1))
    NO_COLOR=1 "$nnkc" --check "$f" >"$tmp/out" 2>&1
    rc=$?
    case $(basename "$f") in
    ok*)  [ $rc = 0 ] && [ ! -s "$tmp/out" ] || { echo "FAIL: example $(basename "$f") should check cleanly:"; cat "$f" "$tmp/out"; fail=1; } ;;
    bad*) [ $rc = 1 ] || { echo "FAIL: example $(basename "$f") should be rejected (status $rc)"; cat "$f"; fail=1; } ;;
    esac
done
echo "$n examples of docs/language.md checked"
exit $fail
