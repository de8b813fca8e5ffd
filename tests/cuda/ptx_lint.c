/* ptx_lint.c - the PTX scan of ptx_lint.h; with -DPTX_LINT_MAIN, also a
 * program over PTX files (the ones nvcc -keep leaves):
 *
 *     ptx_lint FILE.ptx...      exit 0: no findings, 1: findings, 2: usage or I/O
 *
 * PTX from NVVM is close to SSA: a virtual register has one definition
 * except the moves of loop-carried values, so "a register holding a
 * kernel-parameter pointer unchanged" is a register whose only
 * definition is cvta.to.global.u64 of a register whose only definition
 * is ld.param.u64 (or that ld.param itself).  A loop is the statements
 * from a label to a branch back to it. */
#include "ptx_lint.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct stmt {
    const char *text;            /* the statement, without the guard, NUL-terminated */
    int line;                    /* in the PTX */
} stmt;

typedef struct reg {
    char name[40];
    int defs;
    int def;                     /* the statement of the (last) definition */
} reg;

typedef struct fn {
    stmt *st;
    int n, cap;
    reg *regs;
    int nregs, rcap;             /* open addressing, rcap a power of two */
} fn;

static unsigned hash(const char *s, size_t n)
{
    unsigned h = 2166136261u;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)s[i]) * 16777619u;
    return h;
}

static reg *lookup(fn *f, const char *name, size_t n, bool add)
{
    if (n == 0 || n >= sizeof f->regs->name)
        return NULL;
    if (add && (f->nregs + 1) * 2 > f->rcap) {
        int ncap = f->rcap ? f->rcap * 2 : 1024;
        reg *nr = calloc((size_t)ncap, sizeof *nr);
        if (!nr)
            return NULL;
        for (int i = 0; i < f->rcap; i++)
            if (f->regs[i].name[0]) {
                unsigned h = hash(f->regs[i].name, strlen(f->regs[i].name)) & (unsigned)(ncap - 1);
                while (nr[h].name[0])
                    h = (h + 1) & (unsigned)(ncap - 1);
                nr[h] = f->regs[i];
            }
        free(f->regs);
        f->regs = nr;
        f->rcap = ncap;
    }
    if (!f->rcap)
        return NULL;
    unsigned h = hash(name, n) & (unsigned)(f->rcap - 1);
    while (f->regs[h].name[0]) {
        if (strlen(f->regs[h].name) == n && memcmp(f->regs[h].name, name, n) == 0)
            return &f->regs[h];
        h = (h + 1) & (unsigned)(f->rcap - 1);
    }
    if (!add)
        return NULL;
    memcpy(f->regs[h].name, name, n);
    f->regs[h].name[n] = 0;
    f->nregs++;
    return &f->regs[h];
}

static size_t reg_len(const char *s)
{
    size_t n = 0;
    if (s[0] != '%')
        return 0;
    for (n = 1; s[n] == '_' || s[n] == '$' || (s[n] >= 'a' && s[n] <= 'z') || (s[n] >= 'A' && s[n] <= 'Z') ||
                (s[n] >= '0' && s[n] <= '9');
         n++)
        ;
    return n;
}

/* The opcode (up to the first blank) and where the operands start. */
static size_t opcode_len(const char *s)
{
    size_t n = 0;
    while (s[n] && s[n] != ' ' && s[n] != '\t' && s[n] != ';')
        n++;
    return n;
}

static bool starts(const char *s, size_t n, const char *w)
{
    size_t l = strlen(w);
    return n >= l && memcmp(s, w, l) == 0 && (n == l || s[l] == '.');
}

/* Opcodes whose first operand is not a destination. */
static bool no_dest(const char *op, size_t n)
{
    static const char *const words[] = {"st", "bra", "ret", "exit", "bar", "barrier", "membar", "fence", "red",
                                        "prefetch", "prefetchu", "trap", "brkpt", "pmevent", "cp", "nanosleep",
                                        "griddepcontrol", "stmatrix", "call", "discard", "applypriority"};
    for (size_t i = 0; i < sizeof words / sizeof *words; i++)
        if (starts(op, n, words[i]))
            return true;
    return false;
}

/* The registers of the first operand: "%r1", "%r1|%p2", "{%r1, %r2}". */
static void record_defs(fn *f, int si, const char *ops)
{
    const char *p = ops;
    while (*p == ' ' || *p == '\t')
        p++;
    bool braced = *p == '{';
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '{' || *p == '|' || (braced && *p == ','))
            p++;
        size_t n = reg_len(p);
        if (!n)
            break;
        reg *r = lookup(f, p, n, true);
        if (r) {
            r->defs++;
            r->def = si;
        }
        p += n;
        if (*p == '}' || (!braced && *p != '|'))
            break;
    }
}

/* The state space of a memory opcode: 'g' global, 'n' generic, 'o' other. */
static char space_of(const char *op, size_t n)
{
    static const char *const other[] = {".local", ".shared", ".const", ".param", ".tex"};
    for (size_t i = 0; i < sizeof other / sizeof *other; i++) {
        const char *q = op;
        size_t l = strlen(other[i]);
        while ((q = strstr(q, other[i])) && q < op + n) {
            if (q[l] == '.' || q[l] == ' ' || q[l] == '\t' || q[l] == ':' || q + l == op + n)
                return 'o';
            q += l;
        }
    }
    const char *g = strstr(op, ".global");
    return g && g < op + n ? 'g' : 'n';
}

static bool is_memory(const char *op, size_t n)
{
    return starts(op, n, "ld") || starts(op, n, "st") || starts(op, n, "atom") || starts(op, n, "red") ||
           starts(op, n, "ldu");
}

/* r holds a kernel-parameter pointer unchanged: the chain of its only
 * definitions, cvta.to.global then ld.param.u64/b64 (either alone too). */
static bool param_pointer(fn *f, const char *name, size_t n, char *why, size_t whylen)
{
    for (int depth = 0; depth < 2; depth++) {
        reg *r = lookup(f, name, n, false);
        if (!r || r->defs != 1)
            return false;
        const char *t = f->st[r->def].text;
        size_t on = opcode_len(t);
        if ((starts(t, on, "ld") && strstr(t, ".param") && strstr(t, ".param") < t + on) &&
            (strstr(t, ".u64") || strstr(t, ".b64") || strstr(t, ".s64"))) {
            snprintf(why, whylen, "%.*s", (int)strcspn(t, ";"), t);
            return true;
        }
        if (!starts(t, on, "cvta") || !strstr(t, ".to.global") || depth > 0)
            return false;
        /* cvta.to.global.u64 %rdA, %rdB */
        const char *c = strchr(t + on, ',');
        if (!c)
            return false;
        c++;
        while (*c == ' ' || *c == '\t')
            c++;
        name = c;
        n = reg_len(c);
        if (!n)
            return false;
    }
    return false;
}

static int lint_fn(fn *f, const char *label, const char *kname, size_t klen, FILE *out)
{
    /* definitions, labels and backward branches */
    int *depth = calloc((size_t)f->n + 2, sizeof *depth);
    if (!depth) {
        fprintf(out, "%s: out of memory\n", label);
        return 1;
    }
    for (int i = 0; i < f->n; i++) {
        const char *t = f->st[i].text;
        size_t on = opcode_len(t);
        if (t[0] == '$' || t[strlen(t) - 1] == ':')
            continue;
        if (!no_dest(t, on))
            record_defs(f, i, t + on);
    }
    for (int j = 0; j < f->n; j++) {
        const char *t = f->st[j].text;
        size_t on = opcode_len(t);
        if (!starts(t, on, "bra"))
            continue;
        const char *l = t + on;
        while (*l == ' ' || *l == '\t')
            l++;
        size_t ll = strcspn(l, "; \t");
        for (int i = 0; i <= j; i++) {
            const char *u = f->st[i].text;
            if (strncmp(u, l, ll) == 0 && u[ll] == ':') {
                depth[i]++;
                depth[j + 1]--;
                break;
            }
        }
    }
    int found = 0, in_loop = 0;
    /* NAME__rd_row keeps the row in a register array: local memory there
     * means it was indexed at run time (or spilled), and each phase reads
     * the row from a stack frame instead; NAME__rd_srow (the row in shared
     * memory) has none either */
    bool row_kernel = (klen > 8 && memcmp(kname + klen - 8, "__rd_row", 8) == 0) ||
                      (klen > 9 && memcmp(kname + klen - 9, "__rd_srow", 9) == 0);
    for (int i = 0; i < f->n; i++) {
        in_loop += depth[i];
        const char *t = f->st[i].text;
        size_t on = opcode_len(t);
        if (!is_memory(t, on))
            continue;
        if (row_kernel && (strncmp(t, "ld.local", 8) == 0 || strncmp(t, "st.local", 8) == 0)) {
            if (found < 20)
                fprintf(out, "%s: kernel %.*s: line %d: %.*s: local memory in a kernel that keeps the row on chip\n",
                        label, (int)klen, kname, f->st[i].line, (int)strcspn(t, ";"), t);
            found++;
            continue;
        }
        const char *b = strchr(t + on, '[');
        if (!b)
            continue;
        size_t n = reg_len(b + 1);
        if (!n)
            continue; /* [name+offset]: a symbol */
        char why[200];
        const char *problem = NULL;
        reg *r = lookup(f, b + 1, n, false);
        if (!r || r->defs == 0)
            problem = "through a register that nothing defines";
        else if (in_loop > 0 && space_of(t, on) != 'o' && param_pointer(f, b + 1, n, why, sizeof why))
            problem = "inside a loop through a kernel-parameter pointer that never changes";
        if (!problem)
            continue;
        if (found < 20)
            fprintf(out, "%s: kernel %.*s: line %d: %.*s: %s%s%s%s\n", label, (int)klen, kname, f->st[i].line,
                    (int)strcspn(t, ";"), t, problem, r && r->defs ? " (" : "", r && r->defs ? why : "",
                    r && r->defs ? ")" : "");
        found++;
    }
    if (found > 20)
        fprintf(out, "%s: kernel %.*s: %d more findings\n", label, (int)klen, kname, found - 20);
    free(depth);
    return found;
}

int ptx_lint(const char *ptx, const char *label, FILE *out, int *nkernels)
{
    size_t len = strlen(ptx);
    char *buf = malloc(len + 1);
    if (!buf) {
        fprintf(out, "%s: out of memory\n", label);
        return 1;
    }
    memcpy(buf, ptx, len + 1);
    fn f = {0};
    int findings = 0, line = 0, brace = 0;
    const char *kname = NULL;
    size_t klen = 0;
    bool in_fn = false;
    for (char *p = buf, *nl; p && *p; p = nl ? nl + 1 : NULL) {
        nl = strchr(p, '\n');
        if (nl)
            *nl = 0;
        line++;
        while (*p == ' ' || *p == '\t')
            p++;
        char *cm = strstr(p, "//");
        if (cm)
            *cm = 0;
        if (!in_fn) {
            char *e = strstr(p, ".entry ");
            char *fu = strstr(p, ".func ");
            char *h = e ? e + 7 : fu ? fu + 6 : NULL;
            if (h && !strchr(p, ';')) {
                /* ".func (.param .b32 r) name(" - the name is before the last '(' of the line */
                char *paren = strrchr(h, '(');
                if (paren && paren > h) {
                    char *q = paren;
                    while (q > h && (q[-1] == ' ' || q[-1] == '\t'))
                        q--;
                    char *s = q;
                    while (s > h && s[-1] != ' ' && s[-1] != ')')
                        s--;
                    kname = s;
                    klen = (size_t)(q - s);
                } else {
                    kname = h;
                    klen = strcspn(h, " \t(");
                }
                in_fn = true;
                brace = 0;
                f.n = 0;
                f.nregs = 0;
                if (f.regs)
                    memset(f.regs, 0, (size_t)f.rcap * sizeof *f.regs);
                (*nkernels) += e != NULL;
                /* the name must survive: it points into buf, which stays */
            }
            continue;
        }
        /* inside a function: statements split at ';', braces counted */
        for (char *s = p; *s;) {
            while (*s == ' ' || *s == '\t')
                s++;
            if (*s == '{') {
                brace++;
                s++;
                continue;
            }
            if (*s == '}') {
                brace--;
                s++;
                if (brace == 0) {
                    findings += lint_fn(&f, label, kname, klen, out);
                    in_fn = false;
                    break;
                }
                continue;
            }
            if (!*s)
                break;
            char *end = strpbrk(s, ";{}");
            bool label_stmt = false;
            if (!end) {
                /* a label ("$L__BB0_2:") or the parameter list */
                size_t l = strlen(s);
                label_stmt = l > 1 && s[l - 1] == ':';
                if (!label_stmt)
                    break;
                end = s + l;
            }
            char keep = *end;
            *end = 0;
            if (*s == '@') { /* the guard: "@%p1 " or "@!%p1 " */
                while (*s && *s != ' ' && *s != '\t')
                    s++;
                while (*s == ' ' || *s == '\t')
                    s++;
            }
            if (*s && *s != '.' && brace > 0) {
                if (f.n == f.cap) {
                    int nc = f.cap ? f.cap * 2 : 4096;
                    stmt *ns = realloc(f.st, (size_t)nc * sizeof *ns);
                    if (!ns) {
                        fprintf(out, "%s: out of memory\n", label);
                        free(f.st);
                        free(f.regs);
                        free(buf);
                        return findings + 1;
                    }
                    f.st = ns;
                    f.cap = nc;
                }
                f.st[f.n].text = s;
                f.st[f.n++].line = line;
            }
            if (label_stmt || !keep)
                break;
            *end = keep;
            if (keep == ';')
                end++;
            s = end;
            if (keep == ';')
                end[-1] = 0; /* the statement ends at its ';' */
        }
    }
    free(f.st);
    free(f.regs);
    free(buf);
    return findings;
}

#ifdef PTX_LINT_MAIN
int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: ptx_lint FILE.ptx...\n");
        return 2;
    }
    int total = 0, kernels = 0, rc = 0;
    for (int a = 1; a < argc; a++) {
        FILE *fp = fopen(argv[a], "rb");
        if (!fp) {
            perror(argv[a]);
            rc = 2;
            continue;
        }
        size_t cap = 1 << 20, len = 0, got;
        char *s = malloc(cap + 1);
        while (s && (got = fread(s + len, 1, cap - len, fp)) > 0) {
            len += got;
            if (len == cap) {
                char *ns = realloc(s, cap * 2 + 1);
                if (!ns) {
                    free(s);
                    s = NULL;
                    break;
                }
                s = ns;
                cap *= 2;
            }
        }
        fclose(fp);
        if (!s) {
            fprintf(stderr, "%s: out of memory\n", argv[a]);
            rc = 2;
            continue;
        }
        s[len] = 0;
        total += ptx_lint(s, argv[a], stdout, &kernels);
        free(s);
    }
    printf("ptx_lint: %d kernels in %d files: %d findings\n", kernels, argc - 1, total);
    return rc ? rc : total ? 1 : 0;
}
#endif
