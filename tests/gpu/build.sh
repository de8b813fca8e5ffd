#!/bin/sh
# build.sh - the build step of tests/gpu/run.sh: configure and make in
# $BUILD/obj from a configured source tree, a release tarball next to it
# (nnk-*.tar.gz), or ./bootstrap.  Environment: SRC, BUILD, JOBS, cuda_home.
set -eu
src=$SRC
if [ ! -x "$src/configure" ]; then
	tarball=$(ls "$SRC"/nnk-*.tar.gz 2>/dev/null | tail -1 || true)
	if [ -n "$tarball" ]; then
		echo "building from $tarball"
		rm -rf "$BUILD/src" && mkdir -p "$BUILD/src"
		tar -xzf "$tarball" -C "$BUILD/src" --strip-components=1
		src=$BUILD/src
	elif command -v autoreconf >/dev/null 2>&1; then
		echo "bootstrapping $SRC"
		(cd "$SRC" && ./bootstrap)
	else
		echo "no ./configure, no nnk-*.tar.gz and no autoreconf here: run 'make dist' where the tree builds and put the tarball next to the tree's top"
		exit 1
	fi
fi
mkdir -p "$BUILD/obj"
cd "$BUILD/obj"
if [ -n "${cuda_home:-}" ]; then with="--with-cuda=$cuda_home"; else with="--without-cuda"; fi
echo "$src/configure $with"
if ! "$src/configure" "$with" >configure.out 2>&1; then
	tail -30 configure.out
	tail -40 config.log
	exit 1
fi
sed -n '/^configure: *$/,$p' configure.out
if ! make -j"${JOBS:-4}" >make.out 2>&1; then
	grep -E 'error|Error' make.out | head -20
	tail -40 make.out
	exit 1
fi
ls -l .libs/libnnk.so.0 .libs/libnnk_ext_cuda.so .libs/libnnk_ext_cudnn.so nnkc
echo "built in $BUILD/obj"
