#!/bin/sh
# build.sh - the build step of tests/gpu/run.sh: configure and make in
# $BUILD/obj from, in this order, the release tarball $TARBALL, a
# configured source tree, a tarball nnk-*.tar.gz next to it, or the
# working tree through ./bootstrap (autoconf, automake, libtool, re2c and
# lemon; installed first with apt-get when missing and possible).
# Environment: SRC, BUILD, JOBS, cuda_home, TARBALL.  Exit 0 when libnnk,
# the extensions and nnkc are built; otherwise a message that starts with
# "BUILD FAILED".
set -eu
src=$SRC
fail() { echo "BUILD FAILED: $*"; exit 1; }
have_tools() {
	for t in autoreconf automake libtoolize re2c lemon make; do
		command -v "$t" >/dev/null 2>&1 || return 1
	done
}
unpack() {
	echo "building from $1"
	rm -rf "$BUILD/src" && mkdir -p "$BUILD/src"
	tar -xzf "$1" -C "$BUILD/src" --strip-components=1 || fail "cannot unpack $1"
	src=$BUILD/src
}
if [ -n "${TARBALL:-}" ]; then
	[ -f "$TARBALL" ] || fail "no tarball $TARBALL"
	unpack "$TARBALL"
elif [ ! -x "$src/configure" ]; then
	tarball=$(find "$SRC" -maxdepth 1 -name 'nnk-*.tar.gz' | sort | tail -1)
	if [ -n "$tarball" ]; then
		unpack "$tarball"
	else
		if ! have_tools; then
			set --
			[ "$(id -u)" = 0 ] || set -- sudo -n
			if command -v apt-get >/dev/null 2>&1; then
				echo "installing the bootstrap tools (apt-get)"
				DEBIAN_FRONTEND=noninteractive timeout 90 "$@" apt-get install -y -qq --no-install-recommends \
					autoconf automake libtool pkg-config re2c lemon make gcc >apt.out 2>&1 ||
					{ tail -5 apt.out; echo "(apt-get could not install them)"; }
			fi
		fi
		have_tools || fail "the working tree needs ./bootstrap, which needs autoreconf, automake, libtoolize, re2c and lemon (not here, and apt-get could not install them): pass a release tarball (make dist where the tree builds): tests/gpu/run.sh nnk-X.tar.gz"
		echo "bootstrapping $SRC"
		(cd "$SRC" && ./bootstrap) || fail "./bootstrap failed"
	fi
fi
mkdir -p "$BUILD/obj"
cd "$BUILD/obj"
if [ -n "${cuda_home:-}" ]; then with="--with-cuda=$cuda_home"; else with="--without-cuda"; fi
echo "$src/configure $with"
if ! "$src/configure" "$with" >configure.out 2>&1; then
	tail -30 configure.out
	tail -40 config.log
	fail "configure failed"
fi
sed -n '/^configure: *$/,$p' configure.out
if ! make -j"${JOBS:-4}" >make.out 2>&1; then
	grep -E 'error|Error' make.out | head -20
	tail -40 make.out
	fail "make failed"
fi
ls -l .libs/libnnk.so.0 .libs/libnnk_ext_cuda.so .libs/libnnk_ext_cudnn.so nnkc
echo "built in $BUILD/obj"
