/* nnkc.c - the compiler driver.  Conventions of cc, nvcc and ispc: one
 * input file per output, -o names it ("-" is stdout), diagnostics on
 * stderr, exit 0 on success, 1 on errors in the input, 2 on bad usage. */
#include "nnkc.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum { MODE_CHECK, MODE_EMIT_AST } Mode;

typedef struct Args {
    Mode mode;
    bool mode_set;
    const char *output;
    List inputs;
    Options opt;
    int color; /* -1 auto, 0 never, 1 always */
} Args;

static const char usage_text[] =
    "usage: nnkc [options] FILE.nnk...\n"
    "\n"
    "Modes:\n"
    "  --check              check the files, print diagnostics only\n"
    "  --emit=ast           print the checked syntax tree with resolved types\n"
    "\n"
    "Options:\n"
    "  -o FILE              write the output to FILE ('-' for stdout)\n"
    "  -I DIR               search DIR for imported files (after the importing file's directory)\n"
    "  -T T1,T2,...         instantiate generic kernels for these types\n"
    "  -O0 -O1 -O2 -O3      optimization level (default -O2)\n"
    "  -Werror              treat warnings as errors\n"
    "  -Wconversion         warn about implicit conversions that may change a value\n"
    "  -w                   suppress all warnings\n"
    "  --color=WHEN         colour diagnostics: auto (default; not with NO_COLOR), always, never\n"
    "  --version            print the version and exit\n"
    "  --help               print this help and exit\n";

static int usage_error(const char *fmt, const char *arg)
{
    fprintf(stderr, "nnkc: error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n(run 'nnkc --help' for the options)\n");
    return 2;
}

static bool parse_types(Arena *a, Options *o, const char *list)
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
    (void)a;
    return o->ntypes > 0;
}

/* Returns 0 when the arguments are good, else the exit status. */
static int parse_args(Arena *a, int argc, char **argv, Args *args)
{
    args->color = -1;
    args->opt.opt_level = 2;
    for (int i = 1; i < argc; i++) {
        const char *s = argv[i];
        const char *val = NULL;
#define VALUE(flag)                                                        \
    (strcmp(s, flag) == 0 ? (i + 1 < argc ? (val = argv[++i]) : NULL)      \
                          : (strncmp(s, flag, strlen(flag)) == 0 ? (val = s + strlen(flag)) : NULL))
        if (strcmp(s, "--help") == 0 || strcmp(s, "-h") == 0) {
            fputs(usage_text, stdout);
            exit(0);
        } else if (strcmp(s, "--version") == 0) {
            printf("nnkc %s\n", NNKC_VERSION);
            exit(0);
        } else if (strcmp(s, "--check") == 0 || strcmp(s, "--emit=ast") == 0) {
            Mode m = strcmp(s, "--check") == 0 ? MODE_CHECK : MODE_EMIT_AST;
            if (args->mode_set && args->mode != m)
                return usage_error("conflicting modes (%s)", s);
            args->mode = m;
            args->mode_set = true;
        } else if (strncmp(s, "--emit=", 7) == 0) {
            return usage_error("unknown --emit kind '%s' (known: ast)", s + 7);
        } else if (strcmp(s, "-o") == 0) {
            if (i + 1 >= argc)
                return usage_error("%s needs a file name", s);
            args->output = argv[++i];
        } else if (strncmp(s, "-I", 2) == 0) {
            if (!VALUE("-I") || !*val)
                return usage_error("%s needs a directory", "-I");
            list_push(a, &args->opt.include_dirs, (void *)val);
        } else if (strncmp(s, "-T", 2) == 0) {
            if (!VALUE("-T") || !parse_types(a, &args->opt, val))
                return usage_error("-T needs a comma-separated list of types (bool i8 ... f64), got '%s'", val ? val : "");
        } else if (strlen(s) == 3 && strncmp(s, "-O", 2) == 0 && s[2] >= '0' && s[2] <= '3') {
            args->opt.opt_level = s[2] - '0';
        } else if (strcmp(s, "-Werror") == 0) {
            args->opt.werror = true;
        } else if (strcmp(s, "-Wconversion") == 0) {
            args->opt.wconversion = true;
        } else if (strcmp(s, "-w") == 0) {
            args->opt.no_warnings = true;
        } else if (strncmp(s, "--color=", 8) == 0) {
            const char *w = s + 8;
            args->color = strcmp(w, "always") == 0 ? 1 : strcmp(w, "never") == 0 ? 0 : strcmp(w, "auto") == 0 ? -1 : -2;
            if (args->color == -2)
                return usage_error("--color takes auto, always or never, not '%s'", w);
        } else if (s[0] == '-' && s[1]) {
            return usage_error("unknown option '%s'", s);
        } else {
            list_push(a, &args->inputs, (void *)s);
        }
#undef VALUE
    }
    if (args->inputs.n == 0)
        return usage_error("%s", "no input files");
    if (args->output && args->inputs.n > 1)
        return usage_error("%s", "-o with more than one input file");
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

static FILE *open_output(const char *path)
{
    if (!path || strcmp(path, "-") == 0)
        return stdout;
    return fopen(path, "wb");
}

static int compile_one(const Args *args, const char *path)
{
    Compiler *c = nnkc_new();
    c->opt = args->opt;
    jmp_buf jb;
    int status = 0;
    if (setjmp(jb) == 0) {
        nnkc_enter(c, &jb);
        /* Checking goes on after errors, so one run reports them all. */
        if (sema_load(c, path, NULL, 0) || c->items.n)
            sema_instantiate_all(c);
        if (c->nerrors == 0 && args->mode == MODE_EMIT_AST) {
            Buf out = {0};
            ast_dump(c, &out);
            FILE *fp = open_output(args->output);
            if (!fp || fwrite(out.data ? out.data : "", 1, out.len, fp) != out.len) {
                fprintf(stderr, "nnkc: error: cannot write '%s'\n", args->output);
                status = 1;
            }
            if (fp && fp != stdout)
                fclose(fp);
            buf_free(&out);
        }
    } else {
        status = 1;
    }
    nnkc_leave(c);
    Buf diags = {0};
    diag_render(c, &diags, want_color(args->color));
    if (diags.len)
        fwrite(diags.data, 1, diags.len, stderr);
    buf_free(&diags);
    if (c->nerrors)
        status = 1;
    nnkc_free(c);
    return status;
}

int main(int argc, char **argv)
{
    Arena *a = arena_new();
    Args args = {0};
    int rc = parse_args(a, argc, argv, &args);
    if (rc == 0) {
        for (int i = 0; i < args.inputs.n; i++)
            rc |= compile_one(&args, args.inputs.items[i]);
    }
    arena_free(a);
    return rc;
}
