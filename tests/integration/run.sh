#!/bin/sh
# Builds three projects against an installed nnk, outside the source tree:
# Autotools (nnk.m4 + nnk.mk), CMake (nnk_add_kernels) and a plain Makefile
# (pkg-config).  Each builds an app from a .nnk that imports another .nnk and
# runs it; then the imported file is touched and exactly the objects that
# depend on it must rebuild.  Usage: run.sh PREFIX (an installed nnk).
set -eu
prefix=${1:?usage: run.sh PREFIX}
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export PATH="$prefix/bin:$PATH"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig:$prefix/lib64/pkgconfig${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export ACLOCAL_PATH="$prefix/share/aclocal${ACLOCAL_PATH:+:$ACLOCAL_PATH}"
export LD_LIBRARY_PATH="$prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

mtime() { stat -c %Y "$1"; }

# check_rebuild NAME DIR BUILD-COMMAND DEP-OBJECT INDEP-OBJECT
check_rebuild() {
    name=$1 dir=$2 build=$3 dep=$4 indep=$5
    (cd "$dir" && ./app) || { echo "FAIL $name: the app did not run"; exit 1; }
    before_dep=$(mtime "$dir/$dep")
    before_indep=$(mtime "$dir/$indep")
    sleep 1.1
    touch "$src/common.nnk"
    (cd "$dir" && eval "$build") >/dev/null
    after_dep=$(mtime "$dir/$dep")
    after_indep=$(mtime "$dir/$indep")
    if [ "$after_dep" = "$before_dep" ]; then
        echo "FAIL $name: touching common.nnk did not rebuild $dep"; exit 1
    fi
    if [ "$after_indep" != "$before_indep" ]; then
        echo "FAIL $name: touching common.nnk rebuilt $indep, which does not import it"; exit 1
    fi
    (cd "$dir" && ./app) >/dev/null || { echo "FAIL $name: the rebuilt app failed"; exit 1; }
    echo "ok   $name: built, ran, and rebuilt exactly $dep"
}

# The installed libnnk searches the installed extension directory (the
# paths follow the configuration, runtime/nnk_paths.h): a program built
# with pkg-config alone, its run-time path from nnk.pc's rpath, no
# NNK_EXTENSION_PATH and no LD_LIBRARY_PATH, lists the installed cuda and
# cudnn extensions and names the directory nnk.pc names.
cat > "$work/ext.c" <<'EOF'
#include <nnk/nnk.h>
#include <stdio.h>
#include <string.h>
int main(int argc, char **argv)
{
    const char *names[64];
    int32_t n = 0;
    if (argc != 2 || nnk_list_extensions(names, 64, &n) != NNK_OK || n > 64)
        return 2;
    int found = 0;
    for (int32_t i = 0; i < n; i++) {
        printf(" %s", names[i]);
        found += strcmp(names[i], "cuda") == 0 || strcmp(names[i], "cudnn") == 0;
    }
    printf(" (in %s)\n", nnk_extension_dir());
    return found == 2 && strcmp(nnk_extension_dir(), argv[1]) == 0 ? 0 : 1;
}
EOF
# shellcheck disable=SC2046
${CC:-cc} -o "$work/ext" "$work/ext.c" $(pkg-config --cflags --libs nnk) $(pkg-config --variable=rpath nnk)
extdir=$(pkg-config --variable=extensiondir nnk)
if ! out=$(env -u NNK_EXTENSION_PATH -u LD_LIBRARY_PATH "$work/ext" "$extdir"); then
    echo "FAIL the installed libnnk: extensions$out, expected cuda and cudnn from $extdir"; exit 1
fi
case $(pkg-config --variable=prefix nnk) in
"$prefix") ;;
*) echo "FAIL nnk.pc: prefix=$(pkg-config --variable=prefix nnk), installed in $prefix"; exit 1 ;;
esac
echo "ok   installed libnnk: extensions$out"

# plain Makefile + pkg-config
src=$work/make-src
mkdir -p "$src" "$work/make"
cp "$here/common/"* "$src/"
cp "$here/make/Makefile" "$work/make/"
(cd "$work/make" && make -s SRC="$src" >/dev/null)
check_rebuild "plain make + pkg-config" "$work/make" "make -s SRC=$src" uses_common.o standalone.o

# CMake
src=$work/cmake-src/common
mkdir -p "$src" "$work/cmake-src/cmake" "$work/cmake-build"
cp "$here/common/"* "$src/"
cp "$here/cmake/CMakeLists.txt" "$work/cmake-src/cmake/"
(cd "$work/cmake-build" && cmake -S "$work/cmake-src/cmake" -B . -DCMAKE_PREFIX_PATH="$prefix" >/dev/null && cmake --build . >/dev/null)
check_rebuild "CMake nnk_add_kernels" "$work/cmake-build" "cmake --build ." uses_common.nnk.o standalone.nnk.o

# Autotools
src=$work/auto-src/common
mkdir -p "$src" "$work/auto-build"
cp "$here/common/"* "$src/"
cp "$here/autotools/configure.ac" "$here/autotools/Makefile.am" "$work/auto-src/"
(cd "$work/auto-src" && autoreconf -fi >/dev/null 2>&1)
(cd "$work/auto-build" && "$work/auto-src/configure" -q >/dev/null && make -s >/dev/null)
check_rebuild "Autotools nnk.m4 + nnk.mk" "$work/auto-build" "make -s" uses_common.o standalone.o
