"""pip install ./python -- builds nnk._nnk against an installed libnnk.

libnnk is found with pkg-config (`pkg-config --cflags --libs nnk`; set
PKG_CONFIG_PATH for a prefix of your own, PKG_CONFIG for another pkg-config
command); its library directory goes into
the extension's run path, so the package works without LD_LIBRARY_PATH.
The project's own build (./configure && make) builds the same module
without this file (docs/python.md)."""
import os
import shlex
import subprocess

from setuptools import Extension, setup


def pkg_config(*args):
    cmd = shlex.split(os.environ.get("PKG_CONFIG", "pkg-config"))
    try:
        out = subprocess.run([*cmd, *args, "nnk"], check=True, capture_output=True, text=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit("nnk: libnnk not found by pkg-config (install nnk first, or set PKG_CONFIG_PATH to "
                         "the directory of its nnk.pc): %s" % e)
    return shlex.split(out)


cflags = pkg_config("--cflags")
libs = pkg_config("--libs")
libdirs = [f[2:] for f in libs if f.startswith("-L")]

setup(
    ext_modules=[
        Extension(
            "nnk._nnk",
            sources=["src/nnkmodule.c"],
            depends=["src/dlpack.h"],
            extra_compile_args=cflags + ["-std=gnu11"],
            extra_link_args=libs,
            runtime_library_dirs=libdirs,
        )
    ],
)
