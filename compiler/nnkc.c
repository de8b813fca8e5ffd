/* nnkc.c - the compiler driver.  Conventions of cc, nvcc and ispc: one
 * input file per output, -o names it ("-" is stdout), diagnostics on
 * stderr, exit 0 on success, 1 on errors in the input, 2 on bad usage.
 * Outputs are deterministic: the same input and flags give the same bytes. */
#include "nnkc.h"

#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef enum {
    MODE_NONE, MODE_CHECK, MODE_AST, MODE_IR, MODE_SOURCE, MODE_HEADER, MODE_OBJECT
} Mode;

typedef struct Args {
    Mode mode;
    NnkcTarget target;
    const char *output;
    const char *header;      /* -H */
    bool depfile;            /* -MD */
    const char *dep_path;    /* -MF */
    List dep_targets;        /* -MT and -MQ, in order: "T" or "Q" then the name (as gcc: -MQ escapes it) */
    bool dep_phony;          /* -MP */
    const char *cuda_archs;
    bool no_cuda;
    bool cuda_fmad;          /* --cuda-fmad */
    int jobs;                /* -j N: tools at once for -c (0: NNKC_JOBS, else the CPUs) */
    List inputs;
    Options opt;
    int color;               /* -1 auto, 0 never, 1 always */
} Args;

static const char usage_text[] =
    "usage: nnkc [options] FILE.nnk...\n"
    "\n"
    "What to do (one of):\n"
    "  --check              check the files; diagnostics only\n"
    "  -S                   write source code: --target=c (default), --target=cuda or --target=opencl\n"
    "  -c                   write a fat object: the C code (compiled with the C compiler configure\n"
    "                       found) and, with nvcc, the CUDA code for --cuda-arch; NAME_cuda, NAME_run\n"
    "  --emit-header        write the C header declaring the kernels' entry points\n"
    "  --emit=KIND          write a dump: ast (checked tree with types), ir, c, cuda, opencl, header\n"
    "\n"
    "Options:\n"
    "  -o FILE              output file ('-' for stdout); default: the input with the output's suffix\n"
    "  -H FILE              with -c, also write the header to FILE\n"
    "  --target=c|cuda|opencl the language of -S (opencl: OpenCL C 1.2, docs/opencl.md)\n"
    "  -I DIR               search DIR for imports (after the importing file's directory)\n"
    "  -T T1,T2,...         instantiate generic kernels for these types (e.g. -T f32,f16)\n"
    "  -O0 -O1 -O2 -O3      optimization level (default -O2)\n"
    "  -MD                  write a make depfile listing the imports (default name: output with .d)\n"
    "  -MF FILE             the depfile's name\n"
    "  -MT TARGET           the depfile's target as it is (default: the output); may be repeated\n"
    "  -MQ TARGET           the same, with make's special characters escaped\n"
    "  -MP                  add a phony target for every import\n"
    "  --cuda-arch=LIST     GPU architectures of fat objects (default " NNK_DEFAULT_CUDA_ARCHS ")\n"
    "  --cuda-fmad          let nvcc fuse a * b + c into one FMA (results then differ from the C code's)\n"
    "  --no-cuda            CPU code only\n"
    "  -j N                 with -c, run at most N tools at once (default: NNKC_JOBS, else the CPUs)\n"
    "  -Werror              treat warnings as errors\n"
    "  -Wconversion         warn about implicit conversions that may change a value\n"
    "  -w                   suppress all warnings\n"
    "  --color=WHEN         colour diagnostics: auto (default; off with NO_COLOR), always, never\n"
    "  --version            print the version and exit\n"
    "  --help               print this help and exit\n"
    "\n"
    "Exit status: 0 on success, 1 on errors in the input, 2 on bad usage.\n";

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "nnkc: error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(run 'nnkc --help' for the options)\n");
    return 2;
}

/* The options parse_args knows, for "did you mean" (a trailing '=': the
 * option takes its value after one). */
static const char *const option_names[] = {
    "--help", "--version", "--check", "-S", "-c", "--emit-header", "--emit=", "--target=", "-o", "-H", "-MF",
    "-MT", "-MQ", "-MD", "-MP", "-I", "-T", "-O3", "-O2", "-O1", "-O0", "-Werror", "-Wconversion", "-w", "--cuda-arch=",
    "--no-cuda", "--color=", "-j",
};

/* "unknown option '--chek'; did you mean '--check'?": the name before any
 * '=' against the known names, the value kept. */
static int unknown_option(Arena *ar, const char *s)
{
    enum { N = sizeof option_names / sizeof *option_names };
    const char *eq = strchr(s, '=');
    size_t n = eq ? (size_t)(eq - s) : strlen(s);
    const char *bare[N];
    for (int i = 0; i < N; i++) {
        size_t l = strlen(option_names[i]);
        bare[i] = option_names[i][l - 1] == '=' ? arena_strndup(ar, option_names[i], l - 1) : option_names[i];
    }
    const char *sug = diag_suggest(arena_strndup(ar, s, n), bare, N);
    if (!sug)
        return usage_error("unknown option '%s'", s);
    int k = 0;
    while (bare[k] != sug)
        k++;
    bool takes_value = bare[k] != option_names[k];
    fprintf(stderr, "nnkc: error: unknown option '%s'; did you mean '%s%s%s'?\n(run 'nnkc --help' for the options)\n", s,
            sug, takes_value ? "=" : "", takes_value ? (eq ? eq + 1 : "...") : "");
    return 2;
}

static bool parse_types(Options *o, const char *list)
{
    const char *p = list;
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        Type t = type_lookup(p, n);
        if (t == T_NONE || o->ntypes >= (int)(sizeof o->types / sizeof *o->types))
            return false;
        bool dup = false;
        for (int i = 0; i < o->ntypes; i++)
            dup |= o->types[i] == t;
        if (!dup)
            o->types[o->ntypes++] = t;
        p += n;
        if (*p == ',')
            p++;
    }
    return o->ntypes > 0;
}

static int set_mode(Args *a, Mode m, const char *flag)
{
    if (a->mode != MODE_NONE && a->mode != m)
        return usage_error("%s conflicts with another mode option", flag);
    a->mode = m;
    return 0;
}

/* Returns 0 when the arguments are good, else the exit status. */
static int parse_args(Arena *ar, int argc, char **argv, Args *a)
{
    a->color = -1;
    a->opt.opt_level = 2;
    a->cuda_archs = NNK_DEFAULT_CUDA_ARCHS;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        int rc = 0;
        /* an option's value: attached (-Ifoo, --x=foo) or the next argument */
#define NEXT_VALUE(flag) (s[strlen(flag)] ? s + strlen(flag) : (i + 1 < argc ? argv[++i] : NULL))
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            fputs(usage_text, stdout);
            exit(0);
        } else if (strcmp(s, "--version") == 0) {
            printf("nnkc %s\n", NNKC_VERSION);
            exit(0);
        } else if (strcmp(s, "--check") == 0) {
            rc = set_mode(a, MODE_CHECK, s);
        } else if (strcmp(s, "-S") == 0) {
            rc = set_mode(a, MODE_SOURCE, s);
        } else if (strcmp(s, "-c") == 0) {
            rc = set_mode(a, MODE_OBJECT, s);
        } else if (strcmp(s, "--emit-header") == 0) {
            rc = set_mode(a, MODE_HEADER, s);
        } else if (strncmp(s, "--emit=", 7) == 0) {
            const char *k = s + 7;
            if (strcmp(k, "ast") == 0)
                rc = set_mode(a, MODE_AST, s);
            else if (strcmp(k, "ir") == 0)
                rc = set_mode(a, MODE_IR, s);
            else if (strcmp(k, "c") == 0 || strcmp(k, "cuda") == 0 || strcmp(k, "opencl") == 0)
                rc = set_mode(a, MODE_SOURCE, s),
                a->target = k[1] == 'u' ? NNKC_TARGET_CUDA : k[1] ? NNKC_TARGET_OPENCL : NNKC_TARGET_C;
            else if (strcmp(k, "header") == 0)
                rc = set_mode(a, MODE_HEADER, s);
            else
                return usage_error("unknown --emit kind '%s' (known: ast, ir, c, cuda, opencl, header)", k);
        } else if (strncmp(s, "--target=", 9) == 0) {
            if (strcmp(s + 9, "c") == 0)
                a->target = NNKC_TARGET_C;
            else if (strcmp(s + 9, "cuda") == 0)
                a->target = NNKC_TARGET_CUDA;
            else if (strcmp(s + 9, "opencl") == 0)
                a->target = NNKC_TARGET_OPENCL;
            else
                return usage_error("unknown target '%s' (known: c, cuda, opencl)", s + 9);
        } else if (strcmp(s, "-o") == 0 || strcmp(s, "-H") == 0 || strcmp(s, "-MF") == 0 || strcmp(s, "-MT") == 0 ||
                   strcmp(s, "-MQ") == 0) {
            if (i + 1 >= argc)
                return usage_error("%s needs a value", s);
            const char *v = argv[++i];
            if (s[1] == 'o')
                a->output = v;
            else if (s[1] == 'H')
                a->header = v;
            else if (s[2] == 'F')
                a->dep_path = v;
            else
                list_push(ar, &a->dep_targets, arena_printf(ar, "%c%s", s[2], v));
        } else if (strcmp(s, "-MD") == 0) {
            a->depfile = true;
        } else if (strcmp(s, "-MP") == 0) {
            a->dep_phony = true;
        } else if (strncmp(s, "-I", 2) == 0) {
            const char *v = NEXT_VALUE("-I");
            if (!v || !*v)
                return usage_error("%s needs a directory", "-I");
            list_push(ar, &a->opt.include_dirs, (void *)v);
        } else if (strncmp(s, "-T", 2) == 0) {
            const char *v = NEXT_VALUE("-T");
            if (!v || !parse_types(&a->opt, v))
                return usage_error("-T needs a comma-separated list of types (bool i8 ... f64), got '%s'", v ? v : "");
        } else if (strlen(s) == 3 && strncmp(s, "-O", 2) == 0 && s[2] >= '0' && s[2] <= '3') {
            a->opt.opt_level = s[2] - '0';
        } else if (strncmp(s, "-j", 2) == 0) {
            const char *v = NEXT_VALUE("-j");
            char *end;
            long j = v ? strtol(v, &end, 10) : 0;
            if (!v || !*v || *end || j < 1 || j > 64)
                return usage_error("-j needs a number of jobs from 1 to 64, got '%s'", v ? v : "");
            a->jobs = (int)j;
        } else if (strcmp(s, "-Werror") == 0) {
            a->opt.werror = true;
        } else if (strcmp(s, "-Wconversion") == 0) {
            a->opt.wconversion = true;
        } else if (strcmp(s, "-w") == 0) {
            a->opt.no_warnings = true;
        } else if (strncmp(s, "--cuda-arch=", 12) == 0) {
            char err[256];
            if (!fatobj_check_archs(s + 12, err, sizeof err))
                return usage_error("%s", err);
            a->cuda_archs = s + 12;
        } else if (strcmp(s, "--no-cuda") == 0) {
            a->no_cuda = true;
        } else if (strcmp(s, "--cuda-fmad") == 0) {
            a->cuda_fmad = true;
        } else if (strncmp(s, "--color=", 8) == 0) {
            const char *w = s + 8;
            a->color = strcmp(w, "always") == 0 ? 1 : strcmp(w, "never") == 0 ? 0 : strcmp(w, "auto") == 0 ? -1 : -2;
            if (a->color == -2)
                return usage_error("--color takes auto, always or never, not '%s'", w);
        } else if (strcmp(s, "-") != 0 && s[0] == '-' && s[1]) {
            return unknown_option(ar, s);
        } else {
            list_push(ar, &a->inputs, (void *)s);
        }
        if (rc)
            return rc;
#undef NEXT_VALUE
    }
    if (a->mode == MODE_NONE)
        return usage_error("%s", "nothing to do: give --check, -S, -c, --emit-header or --emit=KIND");
    if (a->inputs.n == 0)
        return usage_error("%s", "no input files");
    if ((a->output || a->header || a->dep_path) && a->inputs.n > 1)
        return usage_error("%s", "-o, -H and -MF take one input file");
    if (a->header && a->mode != MODE_OBJECT)
        return usage_error("%s", "-H goes with -c");
    if (a->mode == MODE_OBJECT && a->output && strcmp(a->output, "-") == 0) /* cc -r wrote a file named '-' */
        return usage_error("%s", "-c writes an object file, not to standard output: -o - goes with -S, --emit-header "
                                 "and --emit");
    return 0;
}

static bool want_color(int setting)
{
    if (setting >= 0)
        return setting;
    const char *nc = getenv("NO_COLOR");
    const char *term = getenv("TERM");
    return isatty(2) && !(nc && *nc) && !(term && strcmp(term, "dumb") == 0);
}

/* input.nnk -> input<suffix> in the current directory, like cc -c. */
static char *default_output(Arena *ar, const char *input, const char *suffix)
{
    const char *base = strrchr(input, '/');
    base = base ? base + 1 : input;
    const char *dot = strrchr(base, '.');
    size_t n = dot ? (size_t)(dot - base) : strlen(base);
    return arena_printf(ar, "%.*s%s", (int)n, base, suffix);
}

/* Writes atomically: a temp file renamed over the target, so a failed run
 * never leaves a truncated output that make would consider up to date. */
static bool write_file(const char *path, const char *data, size_t len)
{
    if (strcmp(path, "-") == 0)
        return fwrite(data, 1, len, stdout) == len && fflush(stdout) == 0;
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        /* a device or a pipe (-o /dev/null): written into, as cc does; the
         * temp file renamed over it replaced /dev/null with a regular file
         * (run as root) */
        FILE *fp = fopen(path, "wb");
        bool ok = fp && fwrite(data, 1, len, fp) == len;
        if (fp)
            ok &= fclose(fp) == 0;
        if (!ok)
            fprintf(stderr, "nnkc: error: cannot write '%s': %s\n", path, strerror(errno));
        return ok;
    }
    size_t n = strlen(path);
    char *tmp = malloc(n + 16);
    if (!tmp)
        return false;
    snprintf(tmp, n + 16, "%s.tmp%ld", path, (long)getpid());
    FILE *fp = fopen(tmp, "wb");
    bool ok = fp && fwrite(data, 1, len, fp) == len;
    if (fp)
        ok &= fclose(fp) == 0;
    ok = ok && rename(tmp, path) == 0;
    if (!ok) {
        fprintf(stderr, "nnkc: error: cannot write '%s': %s\n", path, strerror(errno));
        unlink(tmp);
    }
    free(tmp);
    return ok;
}

/* Whether the output `path` is one of the files read (the input, an
 * import, through any name or link): it is refused, as cc refuses to
 * write over its input (nnkc -S k.nnk -o k.nnk replaced the source). */
static bool clobbers_input(Compiler *c, const char *path)
{
    struct stat so;
    if (!path || strcmp(path, "-") == 0 || stat(path, &so) != 0)
        return false;
    for (int i = 0; i < c->files.n; i++) {
        const SourceFile *f = c->files.items[i];
        struct stat si;
        if (f->realpath && stat(f->realpath, &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino) {
            fprintf(stderr, "nnkc: error: the output '%s' is the input file '%s'\n", path, f->path);
            return true;
        }
    }
    return false;
}

/* Whether `path` can be created, as write_file would (a temp file beside
 * it): the object's last step (cc -r) writes it itself, and its failure
 * would read as nnkc's bug rather than the reason. */
static bool can_write(const char *path)
{
    if (strcmp(path, "-") == 0)
        return true;
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) { /* a device, as write_file writes it */
        if (access(path, W_OK) == 0)
            return true;
        fprintf(stderr, "nnkc: error: cannot write '%s': %s\n", path, strerror(errno));
        return false;
    }
    size_t n = strlen(path);
    char *tmp = malloc(n + 16);
    if (!tmp)
        return false;
    snprintf(tmp, n + 16, "%s.tmp%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd < 0)
        fprintf(stderr, "nnkc: error: cannot write '%s': %s\n", path, strerror(errno));
    else
        close(fd), unlink(tmp);
    free(tmp);
    return fd >= 0;
}

/* Splits a command line on blanks (NNK_CC may be "ccache gcc"). */
static int split_words(Arena *ar, const char *s, char **out, int max)
{
    int n = 0;
    while (*s && n < max) {
        while (*s == ' ' || *s == '\t')
            s++;
        if (!*s)
            break;
        const char *e = s;
        while (*e && *e != ' ' && *e != '\t')
            e++;
        out[n++] = arena_strndup(ar, s, (size_t)(e - s));
        s = e;
    }
    return n;
}

/* make syntax: spaces and '#' escaped, '$' doubled.  make has no escape
 * for a newline (it would end the rule and let the rest of the name be
 * another one): write_depfile refuses such names. */
static bool dep_name_ok(const char *s)
{
    return !strpbrk(s, "\n\r");
}

static void dep_escape(Buf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == ' ' || *s == '#' || *s == '\\')
            buf_put(b, "\\", 1);
        if (*s == '$')
            buf_put(b, "$", 1);
        buf_put(b, s, 1);
    }
}

static bool write_depfile(Compiler *c, const Args *a, const char *input, const char *output, Arena *ar)
{
    const char *path = a->dep_path;
    if (!path) {
        const char *o = output && strcmp(output, "-") != 0 ? output : default_output(ar, input, ".o");
        const char *dot = strrchr(o, '.');
        const char *slash = strrchr(o, '/');
        size_t n = dot && (!slash || dot > slash) ? (size_t)(dot - o) : strlen(o);
        path = arena_printf(ar, "%.*s.d", (int)n, o);
    }
    const char *target = output ? output : "-";
    bool names_ok = dep_name_ok(target) && dep_name_ok(input) && (!a->header || dep_name_ok(a->header));
    for (int i = 0; i < a->dep_targets.n; i++)
        names_ok &= dep_name_ok((const char *)a->dep_targets.items[i] + 1);
    for (int i = 0; i < c->imports.n; i++)
        names_ok &= dep_name_ok(((SourceFile *)c->imports.items[i])->path);
    if (!names_ok) {
        fprintf(stderr, "nnkc: error: cannot write the depfile %s: a file name holds a newline, which make cannot read\n",
                path);
        return false;
    }
    Buf b = {0};
    for (int i = 0; i < a->dep_targets.n; i++) {
        const char *t = a->dep_targets.items[i];
        if (i)
            buf_puts(&b, " ");
        if (t[0] == 'Q')
            dep_escape(&b, t + 1);
        else
            buf_puts(&b, t + 1);
    }
    if (!a->dep_targets.n)
        dep_escape(&b, target);
    if (a->header && !a->dep_targets.n) {
        buf_puts(&b, " ");
        dep_escape(&b, a->header);
    }
    buf_puts(&b, ":");
    buf_puts(&b, " ");
    dep_escape(&b, input);
    for (int i = 0; i < c->imports.n; i++) {
        buf_puts(&b, " \\\n ");
        dep_escape(&b, ((SourceFile *)c->imports.items[i])->path);
    }
    buf_puts(&b, "\n");
    if (a->dep_phony) {
        for (int i = 0; i < c->imports.n; i++) {
            buf_puts(&b, "\n");
            dep_escape(&b, ((SourceFile *)c->imports.items[i])->path);
            buf_puts(&b, ":\n");
        }
    }
    bool ok = !clobbers_input(c, path) && write_file(path, b.data, b.len);
    buf_free(&b);
    return ok;
}

static int compile_one(const Args *a, const char *path)
{
    Arena *ar = arena_new();
    Compiler *c = nnkc_new();
    if (!ar || !c) {
        fputs("nnkc: out of memory\n", stderr);
        nnkc_free(c);
        arena_free(ar);
        return 1;
    }
    c->opt = a->opt;
    jmp_buf jb;
    int status = 0;
    if (setjmp(jb) == 0) {
        nnkc_enter(c, &jb);
        nnkc_compile(c, path, NULL, 0, a->mode != MODE_CHECK);
        /* Output that would hold nothing because every kernel's default
         * instance was skipped is not what anyone meant (docs/language.md). */
        if (c->nerrors == 0 && a->mode != MODE_CHECK && a->mode != MODE_AST && c->instances.n == 0 &&
            c->skipped_default)
            diag_error(c, c->skipped_default->name_range,
                       "nothing to emit: no kernel has an instance that type-checks; name the types with "
                       "'instantiate' or -T");
        if (c->nerrors == 0 && a->mode != MODE_CHECK) { /* ir_verify found nothing */
            EmitOptions eo = {.source_name = path, .symbol_suffix = ""};
            Buf out = {0}, hdr = {0};
            const char *dest = a->output;
            switch (a->mode) {
            case MODE_AST:
                ast_dump(c, &out);
                dest = dest ? dest : "-";
                break;
            case MODE_IR:
                for (int i = 0; i < c->instances.n; i++)
                    ir_dump(((Instance *)c->instances.items[i])->ir, &out);
                dest = dest ? dest : "-";
                break;
            case MODE_SOURCE:
                if (a->target == NNKC_TARGET_CUDA) {
                    emit_cuda_file(c, &c->instances, &eo, &out);
                    dest = dest ? dest : default_output(ar, path, ".cu");
                } else if (a->target == NNKC_TARGET_OPENCL) {
                    emit_opencl_file(c, &c->instances, &eo, &out);
                    dest = dest ? dest : default_output(ar, path, ".cl");
                } else {
                    emit_c_file(c, &c->instances, &eo, &out);
                    dest = dest ? dest : default_output(ar, path, ".c");
                }
                break;
            case MODE_HEADER:
                emit_header(c, &c->instances, &eo, &out);
                dest = dest ? dest : default_output(ar, path, ".h");
                break;
            case MODE_OBJECT: {
                /* a fat object: the CUDA as an embedded fatbin when nvcc is there */
                const char *nvcc = a->no_cuda || c->instances.n == 0 ? NULL : fatobj_nvcc();
                if (!nvcc && !a->no_cuda && c->instances.n)
                    fprintf(stderr, "nnkc: note: no nvcc (set NNK_NVCC or configure --with-cuda): %s gets CPU code "
                                    "only (--no-cuda says so quietly)\n", path);
                dest = dest ? dest : default_output(ar, path, ".o");
                if (clobbers_input(c, dest) || clobbers_input(c, a->header) || !can_write(dest) ||
                    (a->header && !can_write(a->header))) {
                    status = 1;
                    break;
                }
                const char *cc = getenv("NNK_CC");
                bool cc_chosen = cc && *cc;
                if (!cc_chosen)
                    cc = NNK_DEFAULT_CC;
                char *words[64];
                int ntool = split_words(ar, cc, words, 32);
                int nw = ntool + split_words(ar, nnkc_c_flags(a->opt.opt_level), words + ntool, 32);
                const char *nvcc_env = getenv("NNK_NVCC");
                FatobjConfig cfg = {.cc = words, .ncc = nw, .ncc_tool = ntool, .cc_chosen = cc_chosen, .nvcc = nvcc,
                                    .nvcc_chosen = nvcc_env && *nvcc_env, .archs = a->cuda_archs,
                                    .fmad = a->cuda_fmad, .jobs = a->jobs ? a->jobs : nnkc_jobs(),
                                    .opt = a->opt.opt_level, .output = dest};
                char *err = NULL;
                if (!fatobj_object(c, &c->instances, &eo, &cfg, &err)) {
                    fprintf(stderr, "nnkc: error: %s\n", err ? err : "cannot build the object");
                    free(err);
                    status = 1;
                    break;
                }
                if (a->header)
                    emit_header(c, &c->instances, &eo, &hdr);
                break;
            }
            default:
                break;
            }
            if (c->nerrors == 0 && status == 0) {
                bool ok;
                if (a->mode == MODE_OBJECT) {
                    ok = !a->header || write_file(a->header, hdr.data ? hdr.data : "", hdr.len);
                } else {
                    ok = !clobbers_input(c, dest) && write_file(dest, out.data ? out.data : "", out.len);
                }
                if (ok && a->depfile)
                    ok = write_depfile(c, a, path, dest, ar);
                if (!ok)
                    status = 1;
            }
            buf_free(&out);
            buf_free(&hdr);
        } else if (c->nerrors == 0 && a->depfile) {
            /* --check -MD, as gcc -fsyntax-only -MD: the target is -o's name, else input.o */
            if (!write_depfile(c, a, path, a->output ? a->output : default_output(ar, path, ".o"), ar))
                status = 1;
        }
    } else {
        status = 1;
        nnkc_release(c);
        if (c->oom)
            fputs("nnkc: out of memory\n", stderr);
        else
            fprintf(stderr, "nnkc: internal error at %s\n", c->bug);
    }
    nnkc_leave(c);
    Buf diags = {0};
    diag_render(c, &diags, want_color(a->color));
    if (diags.len)
        fwrite(diags.data, 1, diags.len, stderr);
    buf_free(&diags);
    /* the count after a file's diagnostics, as clang's "2 errors generated." */
    if (c->nwarnings || c->nerrors) {
        const int nw = c->nwarnings, ne = c->nerrors;
        if (nw)
            fprintf(stderr, "%d warning%s%s", nw, nw > 1 ? "s" : "", ne ? " and " : "");
        if (ne)
            fprintf(stderr, "%d error%s", ne, ne > 1 ? "s" : "");
        fputs(" generated.\n", stderr);
    }
    if (c->nerrors)
        status = 1;
    nnkc_free(c);
    arena_free(ar);
    return status;
}

int main(int argc, char **argv)
{
    Arena *ar = arena_new();
    if (!ar) {
        fputs("nnkc: out of memory\n", stderr);
        return 1;
    }
    Args args = {0};
    int rc = parse_args(ar, argc, argv, &args);
    if (rc == 0) {
        for (int i = 0; i < args.inputs.n; i++)
            rc |= compile_one(&args, args.inputs.items[i]);
    }
    arena_free(ar);
    return rc;
}
