"""api_docs.py - keeps the reference docs in step with the code.

    api_docs.py [--update]

1. Every function of runtime/include/nnk/nnk.h with its full prototype, by
   section of the header, in docs/runtime.md ("## Every function") and in
   the SYNOPSIS of docs/nnk.3, between generated-block markers: without
   --update, any difference is a failure (a function added, removed or
   changed in nnk.h and not in the docs); --update rewrites the blocks.
2. Every citation "language.md §N" / "language.md section N" in the tracked
   sources names a section of docs/language.md that exists, and one about
   the C interface (the contiguous entry points, the header) names "The C
   interface of generated code".
3. The headers that docs/language.md and README.md say the generated C
   includes are the ones `nnkc -S --target=c` writes (needs $top_builddir/nnkc;
   skipped without it).

Environment: top_srcdir (default: two levels up), top_builddir.
Exit status 0 when everything agrees.
"""
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.environ.get("top_srcdir") or os.path.normpath(os.path.join(HERE, "..", ".."))
BUILD = os.environ.get("top_builddir") or TOP
HEADER = os.path.join(TOP, "runtime", "include", "nnk", "nnk.h")
RUNTIME_MD = os.path.join(TOP, "docs", "runtime.md")
MAN3 = os.path.join(TOP, "docs", "nnk.3")
LANGUAGE_MD = os.path.join(TOP, "docs", "language.md")

MD_BEGIN = "<!-- generated from runtime/include/nnk/nnk.h by tests/docs/api_docs.py --update: do not edit -->"
MD_END = "<!-- end of the generated prototypes -->"
MAN_BEGIN = '.\\" generated from runtime/include/nnk/nnk.h by tests/docs/api_docs.py --update: do not edit'
MAN_END = '.\\" end of the generated prototypes'


def prototypes():
    """[(section, [declaration text])] in the header's order."""
    out, section, decl = [], None, None
    with open(HEADER) as f:
        lines = f.read().split("\n")
    in_comment = False
    depth = 0  # inside a struct/enum/union body
    for line in lines:
        m = re.match(r"/\* ---- (.*?) -+ \*/$", line)
        if m:
            section = m.group(1)
            out.append((section, []))
            continue
        if decl is not None:
            decl.append(line.strip())
            if line.rstrip().endswith(";") or ";" in line:
                out[-1][1].append(decl)
                decl = None
            continue
        s = line.strip()
        if in_comment:
            in_comment = "*/" not in s
            continue
        if s.startswith("/*"):
            in_comment = "*/" not in s
            continue
        if s.startswith('extern "C"'):
            continue
        depth += s.count("{") - s.count("}")
        if depth or not s or s.startswith("#") or s.startswith("typedef") or s.startswith("}"):
            continue
        if re.match(r"[A-Za-z_][\w \*]*\bnnk_\w+\(", s) and section is not None:
            decl = [s]
            if ";" in s:
                out[-1][1].append(decl)
                decl = None
    return [(sec, [" ".join(d) for d in ds]) for sec, ds in out if ds]


def split_comment(d):
    """'int f(void); /* note */' -> ('int f(void);', 'note')"""
    m = re.match(r"(.*?;)\s*(?:/\*\s*(.*?)\s*\*/)?\s*$", d)
    return re.sub(r"\s+", " ", m.group(1)).replace("( ", "(").replace(" )", ")"), m.group(2)


def wrap(decl, width):
    """A prototype broken after commas to lines of at most width, the
    continuation lines indented to the opening parenthesis (or 8)."""
    if len(decl) <= width:
        return [decl]
    paren = decl.index("(") + 1
    indent = paren if paren < width // 2 else 8
    lines, cur = [], ""
    for part in re.split(r"(?<=,) ", decl):
        if cur and len(cur) + 1 + len(part) > width:
            lines.append(cur)
            cur = " " * indent + part
        else:
            cur = cur + " " + part if cur else part
    lines.append(cur)
    return lines


def markdown(protos):
    out = [MD_BEGIN, ""]
    for sec, ds in protos:
        out.append("#### %s" % sec)
        out.append("")
        out.append("```c")
        for d in ds:
            decl, note = split_comment(d)
            lines = wrap(decl, 100)
            if note:
                lines[-1] += "  /* %s */" % note
            out += lines
        out.append("```")
        out.append("")
    out.append(MD_END)
    return "\n".join(out)


def roff(protos):
    out = [MAN_BEGIN]
    for sec, ds in protos:
        out.append(".PP")
        out.append("/* %s */" % sec)
        for d in ds:
            decl, _ = split_comment(d)
            for line in wrap(decl, 72):  # the page indents by 7
                out.append(line.replace("\\", "\\e").replace("-", "\\-"))
    out.append(MAN_END)
    return "\n".join(out)


def replace_block(path, begin, end, block, update):
    with open(path) as f:
        text = f.read()
    i, j = text.find(begin), text.find(end)
    if i < 0 or j < 0:
        print("FAIL %s: no generated block (%s ... %s)" % (os.path.relpath(path, TOP), begin, end))
        return False
    new = text[:i] + block + text[j + len(end):]
    if new == text:
        return True
    if update:
        with open(path, "w") as f:
            f.write(new)
        print("updated %s" % os.path.relpath(path, TOP))
        return True
    print("FAIL %s: the prototypes differ from runtime/include/nnk/nnk.h (run tests/docs/api_docs.py --update"
          " and document what changed):" % os.path.relpath(path, TOP))
    old = set(text[i:j].split("\n"))
    for line in block.split("\n"):
        if line not in old:
            print("  missing or changed: %s" % line)
    return False


def language_sections():
    secs = {}
    with open(LANGUAGE_MD) as f:
        for line in f:
            m = re.match(r"## (\d+)\. (.*)", line)
            if m:
                secs[int(m.group(1))] = m.group(2).strip()
    return secs


def check_citations():
    secs = language_sections()
    cinterface = [n for n, t in secs.items() if t == "The C interface of generated code"]
    ok = True
    if len(cinterface) != 1:
        print("FAIL docs/language.md: no section 'The C interface of generated code'")
        return False
    try:
        files = subprocess.run(["git", "-C", TOP, "ls-files"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               universal_newlines=True, check=True).stdout.split()
    except (OSError, subprocess.CalledProcessError):
        files = []
        for d, _, fs in os.walk(TOP):
            if "/build" in d[len(TOP):] or "/.git" in d:
                continue
            files += [os.path.relpath(os.path.join(d, f), TOP) for f in fs]
    cite = re.compile(r"language\.md,? (?:§|section )(\d+)|(?<![\w.])(?:§|section )(\d+)(?= entry)")
    n = 0
    for rel in files:
        if not re.search(r"\.(c|h|tmpl|md|py|sh|nnk|cc|cu|[13])$|README$", rel):
            continue
        try:
            with open(os.path.join(TOP, rel), encoding="utf-8", errors="replace") as f:
                lines = f.read().split("\n")
        except OSError:
            continue
        for no, line in enumerate(lines, 1):
            for m in cite.finditer(line):
                num = int(m.group(1) or m.group(2))
                n += 1
                ctx = " ".join(lines[max(0, no - 2):no + 1]).lower()
                if num not in secs:
                    print("FAIL %s:%d: cites language.md section %d, which does not exist" % (rel, no, num))
                    ok = False
                elif any(w in ctx for w in ("contiguous", "c interface", "entry point", "[outer, len, inner]")) \
                        and num != cinterface[0]:
                    print("FAIL %s:%d: cites section %d (%s) for the C interface, which is section %d"
                          % (rel, no, num, secs[num], cinterface[0]))
                    ok = False
    print("%d citations of docs/language.md sections checked" % n)
    return ok


def check_includes():
    nnkc = os.path.join(BUILD, "nnkc")
    if not os.access(nnkc, os.X_OK):
        print("(no %s: the includes of the generated C not checked)" % nnkc)
        return True
    src = os.path.join(TOP, "samples", "norms.nnk")
    p = subprocess.run([nnkc, "-S", "--target=c", src, "-o", "-"], stdout=subprocess.PIPE, universal_newlines=True)
    got = sorted(set(re.findall(r"^#include (<[^>]+>)", p.stdout, re.M)))
    ok = p.returncode == 0
    for path, pat in ((LANGUAGE_MD, r"writes self-contained C11 \(only\s+(.*?)[:;)]"),
                      (os.path.join(TOP, "README.md"), r"self-contained C11 \(only (.*?)[,)]\s*(?:for|\|)")):
        with open(path) as f:
            m = re.search(pat, f.read(), re.S)
        if not m:
            print("FAIL %s: no sentence naming the headers of the generated C" % os.path.relpath(path, TOP))
            ok = False
            continue
        said = sorted(set(re.findall(r"<[^>]+>", m.group(1))))
        if said != got:
            print("FAIL %s: says the generated C includes %s; nnkc -S writes %s"
                  % (os.path.relpath(path, TOP), " ".join(said), " ".join(got)))
            ok = False
    print("the generated C includes %s, as the docs say" % " ".join(got) if ok else "")
    return ok


def main():
    update = sys.argv[1:] == ["--update"]
    protos = prototypes()
    nfun = sum(len(ds) for _, ds in protos)
    ok = nfun > 0
    ok &= replace_block(RUNTIME_MD, MD_BEGIN, MD_END, markdown(protos), update)
    ok &= replace_block(MAN3, MAN_BEGIN, MAN_END, roff(protos), update)
    print("%d functions of nnk.h in %d sections" % (nfun, len(protos)))
    if not update:
        ok &= check_citations()
        ok &= check_includes()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
