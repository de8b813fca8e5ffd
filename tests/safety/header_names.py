#!/usr/bin/python3
"""header_names.py - the ordinary identifiers that the headers generated
code includes (<math.h>, <stdint.h>, <stdlib.h>, <string.h>) declare or define here:
macros (cc -dM -E), and functions, variables, typedefs and enumeration
constants (clang's JSON AST).  Names starting with '_' are left out (the
reserved patterns of compiler/names.def cover them).

Prints one name per line.  tests/safety/names.py checks that every one of
them is handled (a kernel name is rejected, a parameter name renamed), so
a newer C library that adds a name shows up as a test failure here.
compiler/names.def's "header" rows were generated with this script."""
import json
import os
import subprocess
import sys
import tempfile

HEADERS = ["math.h", "stdint.h", "stdlib.h", "string.h"]


def names(cc="cc", clang="clang"):
    out = set()
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "h.c")
        with open(src, "w") as f:
            f.write("".join("#include <%s>\n" % h for h in HEADERS))
        macros = subprocess.run([cc, "-E", "-dM", src], capture_output=True, text=True, check=True).stdout
        for line in macros.splitlines():
            parts = line.split()
            if len(parts) >= 2 and parts[0] == "#define":
                out.add(parts[1].split("(")[0])
        try:
            ast = subprocess.run([clang, "-Xclang", "-ast-dump=json", "-fsyntax-only", src], capture_output=True,
                                 text=True, check=True).stdout
        except (OSError, subprocess.CalledProcessError):
            ast = None
        if ast:
            def walk(node):
                if node.get("kind") in ("FunctionDecl", "VarDecl", "TypedefDecl", "EnumConstantDecl") and \
                        node.get("name") and not node.get("isImplicit"):
                    out.add(node["name"])
                if node.get("kind") in ("TranslationUnitDecl", "EnumDecl", "LinkageSpecDecl"):
                    for ch in node.get("inner", []):
                        walk(ch)
            walk(json.loads(ast))
    return sorted(n for n in out if not n.startswith("_"))


if __name__ == "__main__":
    for n in names(os.environ.get("CC") or "cc"):
        print(n)
