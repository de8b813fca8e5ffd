#!/bin/sh
# Golden diagnostics: for every NAME.nnk here, `nnkc --check` must print
# exactly NAME.err on stderr and exit 1 when NAME.err holds an error (else
# 0).  A first line "// nnkc-flags: ..." adds options.  Files under valid/
# must check cleanly with no output.  `run.sh --update` rewrites the .err
# files from the current compiler (review the diff before committing).
set -u
here=$(cd "$(dirname "$0")" && pwd)
nnkc=${NNKC:-${top_builddir:-$here/../..}/nnkc}
update=0
[ "${1:-}" = --update ] && update=1
cd "$here" || exit 1
fail=0 n=0
out=$(mktemp) || exit 1
trap 'rm -f "$out"' EXIT
for f in *.nnk; do
    n=$((n + 1))
    name=${f%.nnk}
    flags=$(sed -n '1s|^// nnkc-flags: *||p' "$f")
    # shellcheck disable=SC2086
    NO_COLOR=1 "$nnkc" --check --color=never $flags "$f" 2>"$out" >/dev/null
    rc=$?
    if [ $update = 1 ]; then
        cp "$out" "$name.err"
        continue
    fi
    want=0
    grep -q ': error:' "$name.err" 2>/dev/null && want=1
    if [ $rc -ne $want ]; then
        echo "FAIL $f: exit status $rc, expected $want"
        fail=$((fail + 1))
    elif ! cmp -s "$out" "$name.err"; then
        echo "FAIL $f: diagnostics differ"
        diff -u "$name.err" "$out" | head -40
        fail=$((fail + 1))
    fi
done
for f in valid/*.nnk; do
    [ -e "$f" ] || continue
    n=$((n + 1))
    if ! NO_COLOR=1 "$nnkc" --check --color=never -I valid "$f" >"$out" 2>&1 || [ -s "$out" ]; then
        echo "FAIL $f: a valid program was rejected or warned"
        cat "$out"
        fail=$((fail + 1))
    fi
done
[ $update = 1 ] && { echo "updated the .err files"; exit 0; }
# misspelled options: exit status 2 and a suggestion (the value kept)
while read -r opt want; do
    n=$((n + 1))
    "$nnkc" "$opt" valid/does-not-matter.nnk >/dev/null 2>"$out"
    rc=$?
    if [ $rc -ne 2 ] || ! grep -qF "nnkc: error: unknown option '$opt'; did you mean '$want'?" "$out"; then
        echo "FAIL option $opt: exit status $rc, expected 2 and a suggestion of $want:"
        cat "$out"
        fail=$((fail + 1))
    fi
done <<'OPTIONS'
--chek --check
--taget=cuda --target=cuda
--cuda-archs=sm_80 --cuda-arch=sm_80
--colour=never --color=never
-Wconvertion -Wconversion
--emitheader --emit-header
--no-cdua --no-cuda
-O4 -O3
OPTIONS
n=$((n + 1))
"$nnkc" --zzzzzzzz valid/does-not-matter.nnk >/dev/null 2>"$out"
rc=$?
if [ $rc -ne 2 ] || grep -q "did you mean" "$out"; then
    echo "FAIL: an option far from every known one: exit status $rc (expected 2), or a suggestion:"
    cat "$out"
    fail=$((fail + 1))
fi
# Lines end with LF, CR LF or a lone CR: the eol_* cases hold the same text
# with each (their own .err files are checked above) and must say the same
# file:line:col, line and caret
for f in eol_*.err; do
    n=$((n + 1))
    name=${f%.err}
    case $name in
    eol_eof_*) ref=eol_eof_lf ;;
    *) ref=eol_lf ;;
    esac
    if ! sed "s/^$name\.nnk:/$ref.nnk:/" "$f" | cmp -s - "$ref.err"; then
        echo "FAIL $name.nnk: its diagnostics differ from $ref.nnk's"
        sed "s/^$name\.nnk:/$ref.nnk:/" "$f" | diff -u "$ref.err" - | head -20
        fail=$((fail + 1))
    fi
done
# "-" reads standard input, as cc's, and its diagnostics say <stdin>, as gcc's
n=$((n + 1))
printf 'elementwise k(x: f32[]) -> (y: f32[]) {\n    y = tahn(x);\n}\n' | "$nnkc" --check --color=never - >/dev/null 2>"$out"
rc=$?
if [ $rc -ne 1 ] || ! grep -q "^<stdin>:2:9: error: unknown function 'tahn'" "$out"; then
    echo "FAIL nnkc --check - (standard input): exit status $rc, expected 1 and <stdin>:2:9:"; cat "$out"
    fail=$((fail + 1))
fi
n=$((n + 1))
if ! printf 'elementwise k(x: f32[]) -> (y: f32[]) { y = x; }\n' | "$nnkc" -S - -o - 2>"$out" | grep -q 'void k(int64_t n'; then
    echo "FAIL nnkc -S - -o - (standard input to standard output):"; cat "$out"
    fail=$((fail + 1))
fi
# a byte order mark is not part of the first line: not in the generated
# code's comment that quotes it either (it came as \xef\xbb\xbf)
n=$((n + 1))
if ! printf '\357\273\277elementwise k(x: f32[]) -> (y: f32[]) { y = x; }\n' | "$nnkc" -S - -o - 2>"$out" |
    grep -q '/\* <stdin>:1: elementwise k'; then
    echo "FAIL nnkc -S of a file with a byte order mark: the comment quoting line 1 holds it:"; cat "$out"
    fail=$((fail + 1))
fi
# imports nested deeper than 200 files: an error at the import past the
# limit (a chain of 2500 overflowed nnkc's stack), and 200 are fine
n=$((n + 1))
d=$(mktemp -d) || exit 1
i=0
while [ $i -lt 2500 ]; do
    printf 'import "f%d.nnk";\n' $((i + 1)) >"$d/f$i.nnk"
    i=$((i + 1))
done
printf 'elementwise k(x: f32[]) -> (y: f32[]) { y = x; }\n' >"$d/f2500.nnk"
"$nnkc" --check --color=never "$d/f0.nnk" >/dev/null 2>"$out"
rc=$?
cp "$d/f2500.nnk" "$d/f199.nnk"
if [ $rc -ne 1 ] || ! grep -q "^$d/f199.nnk:1:8: error: imports nested too deeply (the limit is 200 files)" "$out" ||
    ! "$nnkc" --check "$d/f0.nnk" 2>>"$out"; then
    echo "FAIL an import chain of 2500 files: exit status $rc, expected 1 and the limit's error at f199.nnk; 200 files fine:"
    head -5 "$out"
    fail=$((fail + 1))
fi
rm -rf "$d"
# 100 imports deep, an error in each file past the 60th and in the main
# one: the order is the source's (an import's file where it is imported,
# so the deepest first, the main file's last; the key of a chain past 64
# levels was cut short and mixed them up), each error after its import
# chain, the main file's first, 8 levels of it shown
n=$((n + 1))
d=$(mktemp -d) || exit 1
i=0
while [ $i -lt 100 ]; do
    { printf 'import "f%d.nnk";\n' $((i + 1))
      [ $i -eq 0 ] || [ $i -ge 60 ] && printf 'elementwise k%d(x: f32[]) -> (y: f32[]) { y = q; }\n' $i; } >"$d/f$i.nnk"
    i=$((i + 1))
done
printf 'elementwise k(x: f32[]) -> (y: f32[]) { y = x; }\n' >"$d/f100.nnk"
(cd "$d" && "$nnkc" --check --color=never f0.nnk) >/dev/null 2>"$out"
rc=$?
got=$(sed -n 's/^\(f[0-9]*\)\.nnk:2:.*error.*/\1/p' "$out" | tr '\n' ' ')
want=$(i=99; while [ $i -ge 60 ]; do printf 'f%d ' $i; i=$((i - 1)); done; echo 'f0 ')
chain=$(sed -n '1,9p' "$out" | tr '\n' '|')
want_chain='In file imported from f0.nnk:1:8:|In file imported from f1.nnk:1:8:|In file imported from f2.nnk:1:8:|In file imported from f3.nnk:1:8:|In file imported through 91 more files:|In file imported from f95.nnk:1:8:|In file imported from f96.nnk:1:8:|In file imported from f97.nnk:1:8:|In file imported from f98.nnk:1:8:|'
if [ $rc -ne 1 ] || [ "$got" != "$want" ] || [ "$chain" != "$want_chain" ]; then
    echo "FAIL errors in a chain of 100 imports: exit status $rc, the order"
    echo "  $got, expected"; echo "  $want; the first chain:"; sed -n '1,10p' "$out"
    fail=$((fail + 1))
fi
rm -rf "$d"
# a function that calls the one before it twice, 40 deep: every call
# expanded the body again, 2^40 copies (all of the memory; 1 GB here)
n=$((n + 1))
i=0 src='func g0(v) = v + 1;'
while [ $i -lt 40 ]; do
    src="$src
func g$((i + 1))(v) = g$i(v) * g$i(v) + v;"
    i=$((i + 1))
done
printf '%s\nelementwise k(x: f32[]) -> (y: f32[]) { y = g40(x); }\n' "$src" >"$out.nnk"
# the cap: ulimit -v, or under ASan (its shadow memory is a reservation
# far past any such cap, so nnkc would not start) ASan's own RSS limit
if (ulimit -v 1000000 && "$nnkc" --version) >/dev/null 2>&1; then
    cap='ulimit -v 1000000'
else
    cap='ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}hard_rss_limit_mb=1000; export ASAN_OPTIONS'
fi
(eval "$cap" && timeout 120 "$nnkc" --check --color=never "$out.nnk") >/dev/null 2>"$out"
rc=$?
if [ $rc -ne 1 ] || ! grep -q "error: expression too large after expanding functions (the limit is 1048576 nodes)" "$out"; then
    echo "FAIL functions that double 40 times: exit status $rc, expected 1 and 'expression too large':"; head -3 "$out"
    fail=$((fail + 1))
fi
rm -f "$out.nnk"
# 40,000 lets, each reading the parameter bound before all of them: a
# lookup walked the whole scope (quadratic: 20,000 lets took 7 CPU-s),
# now one probe; and a name that reduce()'s combine function shadows is
# the let again after it
n=$((n + 1))
awk 'BEGIN { print "elementwise k(x: f32[]) -> (y: f32[]) {";
             for (i = 0; i < 40000; i++) printf "    let a%d = x + %d;\n", i, i;
             print "    y = a0 + a39999;\n}";
             print "reduction r(x: f32[]) -> (s: f32) {\n    let a = max(x);";
             print "    s = reduce(x, 0.0, |a, b| a + b) + a;\n}" }' >"$out.nnk"
(ulimit -t 5 && "$nnkc" --check --color=never "$out.nnk") >/dev/null 2>"$out"
rc=$?
if [ $rc -ne 0 ]; then
    echo "FAIL 40,000 lets and a shadowed let in 5 CPU-s: exit status $rc, expected 0:"; head -3 "$out"
    fail=$((fail + 1))
fi
rm -f "$out.nnk"
# a flat chain of 10,000 terms is nested 2 deep, not 10,000 (it was past
# the limit of 256): every phase walks it in a loop, within ulimit -s 8192
# (and under ASan, whose frames are larger: the sanitizer stage runs this
# too), for each target; a chain of 2,000 consts each defined by the next
# one (a recursion for each) is an error at the limit, not a crash
n=$((n + 1))
awk 'BEGIN { printf "elementwise k(x: f32[]) -> (y: f32[]) {\n    y = x";
             for (i = 1; i < 10000; i++) printf " + x"; print ";\n}" }' >"$out.nnk"
for t in c cuda opencl; do
    (ulimit -s 8192 && "$nnkc" -S --target=$t "$out.nnk" -o "$out.src") >/dev/null 2>"$out"
    rc=$?
    if [ $rc -ne 0 ] || [ "$(grep -c ' = t[0-9]* + t[0-9]*;' "$out.src")" -lt 9000 ]; then
        echo "FAIL a chain of 10,000 terms, --target=$t, under ulimit -s 8192: exit status $rc, expected 0 and 9,999 sums:"; head -3 "$out"
        fail=$((fail + 1))
    fi
done
awk 'BEGIN { for (i = 0; i < 1999; i++) printf "const k%d = k%d + 1;\n", i, i + 1;
             print "const k1999 = 1;\nelementwise k(x: f32[]) -> (y: f32[]) { y = x + k0; }" }' >"$out.nnk"
(ulimit -s 8192 && "$nnkc" --check --color=never "$out.nnk") >/dev/null 2>"$out"
rc=$?
if [ $rc -ne 1 ] || ! grep -q "^$out.nnk:257:7: error: consts defined in terms of later consts nested too deeply (the limit is 256 levels)" "$out"; then
    echo "FAIL 2,000 consts each defined by the next: exit status $rc, expected 1 and the limit at k256:"; head -3 "$out"
    fail=$((fail + 1))
fi
rm -f "$out.nnk" "$out.src"
# a line of 1 MB (a generated file's): each diagnostic shows 4096 bytes of
# it around the caret, "..." for the rest (all of it was printed, for each
# error), and the caret is under the culprit
n=$((n + 1))
awk 'BEGIN { printf "elementwise k(x: f32[]) -> (y: f32[]) { y = x";
             for (i = 1; i < 250000; i++) printf " + x"; print " + q + x + x; }" }' >"$out.nnk"
"$nnkc" --check --color=never "$out.nnk" >/dev/null 2>"$out"
rc=$?
if [ $rc -ne 1 ] || [ "$(awk 'length($0) > m { m = length($0) } END { print m }' "$out")" -gt 4102 ] ||
    [ "$(awk 'NR == 2 { print index($0, "q") } NR == 3 { print index($0, "^") }' "$out" | uniq | wc -l)" -ne 1 ]; then
    echo "FAIL an error in a line of 1 MB: exit status $rc, expected 1, 4096 bytes of the line and the caret under 'q':"
    cut -c1-100 "$out" | head -4
    fail=$((fail + 1))
fi
rm -f "$out.nnk"
# a name of 100,000 characters in a message is cut after 4096 bytes too
n=$((n + 1))
awk 'BEGIN { printf "elementwise k(x: f32[]) -> (y: f32[]) { y = x + ";
             for (i = 0; i < 100000; i++) printf "w"; print "; }" }' >"$out.nnk"
"$nnkc" --check --color=never "$out.nnk" >/dev/null 2>"$out"
rc=$?
if [ $rc -ne 1 ] || [ "$(wc -c <"$out")" -gt 16000 ] || ! head -1 "$out" | grep -q "error: unknown name 'www*\.\.\.$"; then
    echo "FAIL an unknown name of 100,000 characters: exit status $rc, expected 1 and the message cut:"; head -c 300 "$out"
    fail=$((fail + 1))
fi
rm -f "$out.nnk"
# 50,000 warnings (a bidirectional override in each of 50,000 comments):
# each was compared with every one before it, to drop duplicates
# (quadratic: 10 CPU-s, a 16 MiB file hours); now a hash set
n=$((n + 1))
awk 'BEGIN { print "elementwise k(x: f32[]) -> (y: f32[]) { y = x; }";
             for (i = 0; i < 50000; i++) print "// \342\200\256" }' >"$out.nnk"
(ulimit -t 5 && "$nnkc" --check --color=never "$out.nnk") >/dev/null 2>"$out"
rc=$?
if [ $rc -ne 0 ] || [ "$(tail -1 "$out")" != "50000 warnings generated." ]; then
    echo "FAIL 50,000 warnings in 5 CPU-s: exit status $rc, expected 0 and 50000 warnings:"; tail -3 "$out"
    fail=$((fail + 1))
fi
rm -f "$out.nnk"
# -T with no type that fits any kernel: nothing to emit is an error, as
# when every default instance is skipped (an empty C file came with exit 0)
n=$((n + 1))
printf 'elementwise add<T: float>(a: T[], b: T[]) -> (c: T[]) { c = a + b; }\n' |
    "$nnkc" -S -T i32 - -o "$out.c" >/dev/null 2>"$out"
rc=$?
if [ $rc -ne 1 ] || ! grep -q "error: nothing to emit" "$out" || [ -e "$out.c" ]; then
    echo "FAIL nnkc -S -T i32 on a float kernel: exit status $rc, expected 1 and 'nothing to emit', no output:"; cat "$out"
    fail=$((fail + 1))
fi
rm -f "$out.c"
# -c -o -: an object to standard output is bad usage (a file named '-' was written)
n=$((n + 1))
d=$(mktemp -d) || exit 1
(cd "$d" && "$nnkc" -c --no-cuda "$here/valid/raw.nnk" -o - >/dev/null 2>"$out")
rc=$?
if [ $rc -ne 2 ] || ! grep -q "not to standard output" "$out" || [ -e "$d/-" ]; then
    echo "FAIL nnkc -c -o -: exit status $rc, expected 2 and a usage error, no file '-':"; cat "$out"
    fail=$((fail + 1))
fi
rm -rf "$d"
# an object into a directory that does not exist: the reason, as -S gives
# it, not the linker's failure called a bug in nnkc
n=$((n + 1))
"$nnkc" -c --no-cuda valid/raw.nnk -o /nonexistent-nnk-dir/k.o >/dev/null 2>"$out"
rc=$?
if [ $rc -ne 1 ] || [ "$(cat "$out")" != "nnkc: error: cannot write '/nonexistent-nnk-dir/k.o': No such file or directory" ]; then
    echo "FAIL nnkc -c -o /nonexistent-nnk-dir/k.o: exit status $rc, expected 1 and 'cannot write':"; cat "$out"
    fail=$((fail + 1))
fi
# an output that is an input (the main file, an import, through a link)
# is refused, as cc refuses it (nnkc -S k.nnk -o k.nnk replaced the
# source); an output that is a pipe or a device (-o /dev/null) is written
# into (a temp file renamed over it replaced /dev/null, run as root)
n=$((n + 1))
: >"$out"
d=$(mktemp -d) || exit 1
printf 'import "lib.nnk";\nelementwise k(x: f32[]) -> (y: f32[]) { y = f(x); }\n' >"$d/k.nnk"
printf 'func f(v) = v + 1;\n' >"$d/lib.nnk"
ln -s lib.nnk "$d/link.nnk"
cp "$d/k.nnk" "$d/k.orig"
msgs=
for o in k.nnk lib.nnk link.nnk; do
    (cd "$d" && "$nnkc" -S k.nnk -o $o) >/dev/null 2>>"$out" || msgs="$msgs x"
done
(cd "$d" && "$nnkc" --check -MD -MF lib.nnk k.nnk) >/dev/null 2>>"$out" || msgs="$msgs x"
mkfifo "$d/pipe"
timeout 20 cat "$d/pipe" >"$d/got" &
cat_pid=$!
"$nnkc" -S "$d/k.nnk" -o "$d/pipe" 2>>"$out" || echo "$nnkc -S -o a pipe failed" >>"$out"
wait $cat_pid
if [ "$msgs" != " x x x x" ] || [ "$(grep -c "is the input file" "$out")" -ne 4 ] || ! cmp -s "$d/k.nnk" "$d/k.orig" ||
    [ "$(cat "$d/lib.nnk")" != 'func f(v) = v + 1;' ] || [ ! -p "$d/pipe" ] || ! grep -q 'void k(int64_t n' "$d/got"; then
    echo "FAIL outputs that are inputs (refused) or a pipe (written into):"; cat "$out"
    fail=$((fail + 1))
fi
rm -rf "$d"
# a C compiler the user named (NNK_CC) that fails on the generated code:
# the message says NNK_CC chose it, not only "a bug in nnkc"
n=$((n + 1))
d=$(mktemp -d) || exit 1
NNK_CC="${CC:-cc} -fno-such-option-nnk" "$nnkc" -c --no-cuda valid/raw.nnk -o "$d/k.o" >/dev/null 2>"$out"
rc=$?
if [ $rc -ne 1 ] || ! grep -q "NNK_CC chose this compiler: if it compiles C11, this is a bug in nnkc" "$out" ||
    ! grep -q "fno-such-option-nnk" "$out"; then
    echo "FAIL nnkc -c with a failing NNK_CC: exit status $rc, expected 1 and 'NNK_CC chose this compiler':"; cat "$out"
    fail=$((fail + 1))
fi
rm -rf "$d"
echo "$((n - fail))/$n diagnostics cases passed"
[ $fail = 0 ]
