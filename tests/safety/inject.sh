#!/bin/sh
# File names are the one user text that reaches generated code outside
# identifiers (the first comment of every file; compiler/emit.c's
# emit_comment_text).  A name that closes the comment must not inject
# code: `nnkc -c 'a*/ int robust_injected = 42; /*k.nnk'` once defined
# robust_injected.  Every output kind, with names holding */, /*, a
# newline, a backslash and bytes outside ASCII, must compile with
# -Wall -Werror (-Wcomment) and define nothing but the kernel.  Make
# depfiles (-MD) escape what make can read back and refuse newlines.
set -u
top_builddir=${top_builddir:-$(cd "$(dirname "$0")/../.." && pwd)}
nnkc=$top_builddir/nnkc
cc=${CC:-cc}
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT
fail=0
n=0
for name in 'a*/ int robust_injected = 42; /*k.nnk' "$(printf 'x\n int robust_injected = 42; //\\\n*/k.nnk')" \
    "$(printf 'b\\*/\377\001/*.nnk')"; do
    n=$((n + 1))
    mkdir -p "$tmp/$n/$(dirname "$name")" || exit 1
    src=$tmp/$n/$name
    printf 'elementwise k%d(a: f32, x: f32[]) -> (y: f32[]) { y = a * x; }\n' $n >"$src"
    if ! "$nnkc" -c --no-cuda "$src" -o "$tmp/k$n.o" -H "$tmp/k$n.h" 2>"$tmp/err"; then
        echo "FAIL nnkc -c on name $n: $(cat "$tmp/err")"; fail=1; continue
    fi
    if nm "$tmp/k$n.o" | grep -q robust_injected; then
        echo "FAIL name $n: nnkc -c defined robust_injected"; fail=1
    fi
    "$nnkc" -S --target=c "$src" -o "$tmp/k$n.c" && "$nnkc" -S --target=cuda "$src" -o "$tmp/k$n.cu" || fail=1
    for f in "$tmp/k$n.c" "$tmp/k$n.h" "$tmp/k$n.cu"; do
        # the first comment ends after the file name, not inside it
        if ! head -c 4000 "$f" | tr '\n' ' ' | sed 's|\*/.*||' | grep -q '; do not edit\.'; then
            echo "FAIL name $n: the file name ends the first comment of $(basename "$f"):"; head -2 "$f"; fail=1
        fi
    done
    if ! "$cc" -std=c11 -Wall -Wextra -Werror -DNNK_NO_CLONES -O0 -c "$tmp/k$n.c" -o "$tmp/s$n.o" 2>"$tmp/err" ||
        ! "$cc" -std=c11 -Wall -Werror -fsyntax-only -x c "$tmp/k$n.h" 2>>"$tmp/err"; then
        echo "FAIL name $n: the generated C does not compile with -Werror:"; head -20 "$tmp/err"; fail=1
    elif nm "$tmp/s$n.o" | grep -q robust_injected; then
        echo "FAIL name $n: nnkc -S code defines robust_injected"; fail=1
    fi
done
# Depfiles (-MD) are make syntax: a name with '$', '#', spaces is escaped
# (make reads the rule back), a name with a newline is refused.  The make
# that reads it back is not a sub-make of `make check` (whose MAKEFLAGS
# would make it print 'Entering directory' lines).
dn="$tmp/d \$x #1.nnk"
printf 'elementwise kd(x: f32[]) -> (y: f32[]) { y = x; }\n' >"$dn"
if ! "$nnkc" -S -MD "$dn" -o "$tmp/d.c" -MF "$tmp/d.d" -MT "t" 2>"$tmp/err" ||
    ! printf 't:\n\t$(info $^)\ninclude %s\n' "$tmp/d.d" >"$tmp/mk" ||
    [ "$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -f "$tmp/mk" 2>&1)" != "$dn" ]; then
    echo "FAIL the depfile of '$dn' does not read back in make:"; cat "$tmp/d.d" "$tmp/err"; fail=1
fi
# -MT names a target as it is, -MQ escapes it, and both may repeat (gcc's
# options): a make variable in -MT stays one, a space in -MQ is escaped
"$nnkc" -S -MD "$dn" -o "$tmp/q.c" -MF "$tmp/q.d" -MT '$(OBJ)q.o' -MQ "$tmp/a b.o" 2>"$tmp/err"
want="\$(OBJ)q.o $(printf '%s' "$tmp/a b.o" | sed 's/ /\\ /g'):"
if [ "$(head -c ${#want} "$tmp/q.d")" != "$want" ]; then
    echo "FAIL -MT/-MQ targets: want '$want', got:"; cat "$tmp/q.d" "$tmp/err"; fail=1
fi
# --check -MD writes the depfile too, as gcc -fsyntax-only -MD: the target is
# -o's name, else the input's base name with .o, and so is the depfile's
mkdir -p "$tmp/chk" && printf 'elementwise kc(x: f32[]) -> (y: f32[]) { y = x; }\n' >"$tmp/chk/c.nnk"
if ! (cd "$tmp/chk" && "$nnkc" --check -MD c.nnk 2>"$tmp/err") || [ "$(cat "$tmp/chk/c.d" 2>&1)" != "c.o: c.nnk" ]; then
    echo "FAIL nnkc --check -MD c.nnk: no c.d reading 'c.o: c.nnk':"; cat "$tmp/chk/c.d" "$tmp/err"; fail=1
fi
if ! "$nnkc" --check -MD "$tmp/chk/c.nnk" -MF "$tmp/chk/s.d" -MT stamp 2>"$tmp/err" ||
    [ "$(cat "$tmp/chk/s.d" 2>&1)" != "stamp: $tmp/chk/c.nnk" ]; then
    echo "FAIL nnkc --check -MD -MF s.d -MT stamp:"; cat "$tmp/chk/s.d" "$tmp/err"; fail=1
fi
# the main input is held to an import's limit: /dev/zero is an error, not all of the memory
if [ -r /dev/zero ] && { "$nnkc" --check /dev/zero 2>"$tmp/err"; [ $? -ne 1 ] || ! grep -q 'larger than 16 MiB' "$tmp/err"; }; then
    echo "FAIL nnkc --check /dev/zero:"; cat "$tmp/err"; fail=1
fi
nl="$tmp/$(printf 'n\nevil: ; touch pwn\n.nnk')"
printf 'elementwise kn(x: f32[]) -> (y: f32[]) { y = x; }\n' >"$nl"
if "$nnkc" -S -MD "$nl" -o "$tmp/n.c" -MF "$tmp/n.d" 2>/dev/null || [ -e "$tmp/n.d" ]; then
    echo "FAIL a depfile was written for a file name with a newline (a make rule injected)"; fail=1
fi
[ $fail = 0 ] && echo "ok: $n hostile file names, every output kind; depfiles"
exit $fail
