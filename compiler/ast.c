/* ast.c - syntax tree constructors (the parser's actions) and the
 * --emit=ast dump.
 *
 * Constructors compute each node's source range from its first and last
 * tokens, and its nesting as a reader sees it (parentheses, calls,
 * operands other than a flat chain's: what the walks of later phases
 * recurse on): an expression nested deeper than NNKC_MAX_NESTING is
 * reported once, where it crosses the limit, and the nesting saturates
 * there so later passes can refuse it without recursing. */
#include "nnkc.h"
#include "parser.h"

#include <string.h>

static Expr *new_expr(Compiler *c, ExprKind k, Range r)
{
    Expr *e = arena_alloc(c->arena, sizeof *e);
    e->kind = (uint8_t)k;
    e->type = T_NONE;
    e->range = r;
    e->nest = 1;
    return e;
}

/* The deepest nesting of the children so far.  `chain`: the child is a
 * binary operator's left operand, no deeper to a reader than its parent
 * (and walked in a loop): `a + b + ... + z` is nested 2 however long,
 * a + (b + (...)) one more for each parenthesis and each operator. */
static int deeper(int m, const Expr *e, bool chain)
{
    if (!e)
        return m;
    int n = e->nest - (chain && !e->paren && e->kind == E_BINARY && e->nest <= NNKC_MAX_NESTING);
    return n > m ? n : m;
}

/* m: the deepest of the children.  The limit is reported where the
 * expression crosses it, once: past it a node saturates at limit + 1. */
static void set_depth(Compiler *c, Expr *e, int m)
{
    e->nest = (uint16_t)(m > NNKC_MAX_NESTING ? NNKC_MAX_NESTING + 1 : m + 1);
    if (m + 1 == NNKC_MAX_NESTING + 1)
        diag_error(c, e->range, "expression nested too deeply (the limit is %d levels)", NNKC_MAX_NESTING);
}

/* A level that is no node (parentheses, unary plus): e, one deeper. */
static void nest_once_more(Compiler *c, Expr *e)
{
    if (e->nest == NNKC_MAX_NESTING)
        diag_error(c, e->range, "expression nested too deeply (the limit is %d levels)", NNKC_MAX_NESTING);
    if (e->nest <= NNKC_MAX_NESTING)
        e->nest++;
}

Expr *ast_int(Compiler *c, Token t)
{
    Expr *e = new_expr(c, t.bad ? E_ERROR : E_INT, t.range);
    e->value = t.value;
    return e;
}

Expr *ast_float(Compiler *c, Token t)
{
    Expr *e = new_expr(c, t.bad ? E_ERROR : E_FLOAT, t.range);
    e->value = t.value;
    return e;
}

Expr *ast_bool(Compiler *c, Token t, bool v)
{
    Expr *e = new_expr(c, E_BOOL, t.range);
    e->value = value_int(T_BOOL, v);
    return e;
}

Expr *ast_name(Compiler *c, Token t)
{
    Expr *e = new_expr(c, E_NAME, t.range);
    e->name = t.text;
    e->name_range = t.range;
    return e;
}

Expr *ast_keyword(Compiler *c, Token t, ExprKind k)
{
    return new_expr(c, k, t.range);
}

/* The operator of the parser's token: ops.def's token column. */
static Op op_of(Token op, bool unary)
{
    Op o = op_of_token(op.kind, unary);
    nnkc_assert(o < OP_COUNT);
    return o;
}

Expr *ast_unary(Compiler *c, Token op, Expr *a)
{
    if (op.kind == NNK_TK_PLUS) { /* unary plus is the identity, but a level as any unary operator */
        a->range = range_join(op.range, a->range);
        nest_once_more(c, a);
        return a;
    }
    Expr *e = new_expr(c, E_UNARY, range_join(op.range, a->range));
    e->op = (uint16_t)op_of(op, true);
    e->name_range = op.range;
    e->a = a;
    set_depth(c, e, deeper(0, a, false));
    return e;
}

Expr *ast_binary(Compiler *c, Expr *a, Token op, Expr *b)
{
    Expr *e = new_expr(c, E_BINARY, range_join(a->range, b->range));
    e->op = (uint16_t)op_of(op, false);
    e->name_range = op.range;
    e->a = a;
    e->b = b;
    set_depth(c, e, deeper(deeper(0, a, true), b, false));
    return e;
}

Expr *ast_cond(Compiler *c, Expr *cond, Expr *a, Expr *b)
{
    Expr *e = new_expr(c, E_COND, range_join(cond->range, b->range));
    e->a = cond;
    e->b = a;
    e->c = b;
    set_depth(c, e, deeper(deeper(deeper(0, cond, false), a, false), b, false));
    return e;
}

Expr *ast_call(Compiler *c, Token callee, List *args, Token rparen)
{
    Expr *e = new_expr(c, E_CALL, range_join(callee.range, rparen.range));
    e->name = callee.text;
    e->name_range = callee.range;
    e->args = *args;
    int m = 0;
    for (int i = 0; i < args->n; i++)
        m = deeper(m, args->items[i], false);
    set_depth(c, e, m);
    return e;
}

/* Parentheses are no node, but a level of nesting (as clang's bracket depth). */
Expr *ast_paren(Compiler *c, Token lp, Expr *e, Token rp)
{
    e->range = range_join(lp.range, rp.range);
    e->paren = true;
    nest_once_more(c, e);
    return e;
}

Expr *ast_lambda(Compiler *c, Token open, List *names, Expr *body)
{
    Expr *e = new_expr(c, E_LAMBDA, range_join(open.range, body->range));
    e->args = *names;
    e->a = body;
    set_depth(c, e, deeper(0, body, false));
    return e;
}

Expr *ast_tuple_lambda(Compiler *c, Token open, List *a, List *b, Expr *body)
{
    Expr *e = ast_lambda(c, open, a, body);
    e->index = a->n; /* a tuple lambda: the names of a, then those of b */
    e->args = (List){0};
    for (int i = 0; i < a->n; i++)
        list_push(c->arena, &e->args, a->items[i]);
    for (int i = 0; i < b->n; i++)
        list_push(c->arena, &e->args, b->items[i]);
    if (a->n != b->n)
        e->op = 1; /* sides of different widths: sema reports it */
    return e;
}

Expr *ast_tuple(Compiler *c, Token lp, List *first, Expr *last, Token rp)
{
    Expr *e = new_expr(c, E_TUPLE, range_join(lp.range, rp.range));
    int d = 0;
    for (int i = 0; i < first->n; i++) {
        list_push(c->arena, &e->args, first->items[i]);
        d = deeper(d, first->items[i], false);
    }
    list_push(c->arena, &e->args, last);
    set_depth(c, e, deeper(d, last, false));
    return e;
}

Expr *ast_error(Compiler *c, Token at)
{
    return new_expr(c, E_ERROR, at.range);
}

List *ast_list(Compiler *c, void *first)
{
    List *l = arena_alloc(c->arena, sizeof *l);
    if (first)
        list_push(c->arena, l, first);
    return l;
}

List *ast_append(Compiler *c, List *l, void *item)
{
    list_push(c->arena, l, item);
    return l;
}

/* Lambda parameters are kept as Expr names so they keep their ranges. */
List *ast_name_list(Compiler *c, List *l, Token name)
{
    if (!l)
        l = ast_list(c, NULL);
    list_push(c->arena, l, ast_name(c, name));
    return l;
}

TypeRef *ast_type(Compiler *c, Token name, bool tensor, Token end)
{
    TypeRef *t = arena_alloc(c->arena, sizeof *t);
    t->present = true;
    t->tensor = tensor;
    t->name = name.text;
    t->range = range_join(name.range, end.range);
    t->scalar = name.kind == NNK_TK_TYPENAME ? type_lookup(name.text, strlen(name.text)) : T_NONE;
    return t;
}

TypeRef *ast_no_type(Compiler *c)
{
    TypeRef *t = arena_alloc(c->arena, sizeof *t);
    t->scalar = T_NONE;
    return t;
}

Generic *ast_generic(Compiler *c, Token name, Token *cls)
{
    Generic *g = arena_alloc(c->arena, sizeof *g);
    g->name = name.text;
    g->range = name.range;
    g->cls = CLASS_ANY;
    if (cls) {
        g->cls_name = cls->text;
        g->cls_range = cls->range;
        g->cls = class_lookup(cls->text); /* CLASS_NONE is reported by sema */
    }
    return g;
}

Param *ast_param(Compiler *c, Token name, TypeRef *ty, Expr *dflt)
{
    Param *p = arena_alloc(c->arena, sizeof *p);
    p->name = name.text;
    p->range = name.range;
    p->ty = *ty;
    p->dflt = dflt;
    return p;
}

Expr *ast_index(Compiler *c, Token name, List *indices, Token rbracket)
{
    Expr *e = ast_call(c, name, indices, rbracket);
    e->kind = E_INDEX;
    return e;
}

Param *ast_param_mod(Compiler *c, Token mod, Token name, TypeRef *ty)
{
    Param *p = ast_param(c, name, ty, NULL);
    p->mod = mod.text;
    p->mod_range = mod.range;
    return p;
}

Stmt *ast_let(Compiler *c, Token let, Token name, TypeRef *ty, Expr *value, Token semi)
{
    Stmt *s = arena_alloc(c->arena, sizeof *s);
    s->kind = S_LET;
    s->name = name.text;
    s->name_range = name.range;
    s->range = range_join(let.range, semi.range);
    s->ty = *ty;
    s->value = value;
    return s;
}

Stmt *ast_let_tuple(Compiler *c, Token let, List *names, Expr *value, Token semi)
{
    Stmt *s = arena_alloc(c->arena, sizeof *s);
    s->kind = S_LET;
    const Expr *first = names->items[0];
    s->name = first->name;
    s->name_range = range_join(first->range, ((Expr *)names->items[names->n - 1])->range);
    s->names = *names;
    s->range = range_join(let.range, semi.range);
    s->value = value;
    return s;
}

Stmt *ast_assign(Compiler *c, Token name, Expr *value, Token semi)
{
    Stmt *s = arena_alloc(c->arena, sizeof *s);
    s->kind = S_ASSIGN;
    s->name = name.text;
    s->name_range = name.range;
    s->range = range_join(name.range, semi.range);
    s->ty.scalar = T_NONE;
    s->value = value;
    return s;
}

Stmt *ast_lost_stmt(Compiler *c, Token semi)
{
    Stmt *s = arena_alloc(c->arena, sizeof *s);
    s->kind = S_ERROR;
    s->range = semi.range;
    return s;
}

InstSpec *ast_inst(Compiler *c, Token name, List *types, Token end)
{
    InstSpec *s = arena_alloc(c->arena, sizeof *s);
    s->name = name.text;
    s->name_range = name.range;
    s->range = range_join(name.range, end.range);
    if (types)
        s->types = *types;
    return s;
}

static Item *new_item(Compiler *c, ItemKind k, Token kw, Token end)
{
    Item *it = arena_alloc(c->arena, sizeof *it);
    it->kind = k;
    it->range = range_join(kw.range, end.range);
    it->src = source_get(c, kw.range.file);
    return it;
}

Item *ast_import(Compiler *c, Token kw, Token path, Token semi)
{
    Item *it = new_item(c, I_IMPORT, kw, semi);
    it->name = path.text;
    it->name_range = path.range;
    return it;
}

Item *ast_const(Compiler *c, Token kw, Token name, TypeRef *ty, Expr *value, Token semi)
{
    Item *it = new_item(c, I_CONST, kw, semi);
    it->name = name.text;
    it->name_range = name.range;
    it->ty = *ty;
    it->value = value;
    return it;
}

Item *ast_func(Compiler *c, Token kw, Token name, List *generics, List *params, TypeRef *ret, Expr *body, Token semi)
{
    Item *it = new_item(c, I_FUNC, kw, semi);
    it->name = name.text;
    it->name_range = name.range;
    it->generics = *generics;
    it->params = *params;
    it->ty = *ret;
    it->value = body;
    return it;
}

Item *ast_kernel(Compiler *c, Token kw, Token name, List *generics, List *params, List *outs, List *body, Token rbrace)
{
    Item *it = new_item(c, kw.kind == NNK_TK_REDUCTION ? I_REDUCTION : I_ELEMENTWISE, kw, rbrace);
    it->name = name.text;
    it->name_range = name.range;
    it->generics = *generics;
    it->params = *params;
    if (outs)
        it->outputs = *outs;
    it->body = *body;
    return it;
}

Item *ast_instantiate(Compiler *c, Token kw, List *insts, Token semi)
{
    Item *it = new_item(c, I_INSTANTIATE, kw, semi);
    it->insts = *insts;
    return it;
}

void ast_add_item(Compiler *c, Item *it)
{
    list_push(c->arena, &c->items, it);
}

/* ---- --emit=ast ------------------------------------------------------------ */

static void dump_type(const TypeRef *t, Buf *out)
{
    if (!t->present)
        return;
    buf_printf(out, ": %s%s", t->name, t->tensor ? "[]" : "");
}

void ast_dump_expr(const Expr *e, Buf *out)
{
    if (!e) {
        buf_puts(out, "<null>");
        return;
    }
    if (expr_too_deep(e)) {
        buf_puts(out, "<too deep>");
        return;
    }
    switch ((ExprKind)e->kind) {
    case E_ERROR: buf_puts(out, "<error>"); break;
    case E_INT: case E_FLOAT: case E_BOOL: case E_CONST: value_format(e->value, out, false); break;
    case E_NAME: buf_puts(out, e->name); break;
    case E_IDX: buf_puts(out, "idx"); break;
    case E_N: buf_puts(out, "n"); break;
    case E_PARAM: buf_printf(out, "$%d", e->index); break;
    case E_LPARAM: buf_printf(out, "$lambda%d", e->index); break;
    case E_UNARY:
        buf_printf(out, "(%s", op_info[e->op].tok);
        ast_dump_expr(e->a, out);
        buf_puts(out, ")");
        break;
    case E_BINARY: {
        /* a flat chain's left spine in a loop (it is as long as the source) */
        Buf spine = {0};
        const Expr *s = e;
        for (; s->kind == E_BINARY && !expr_too_deep(s); s = s->a) {
            buf_put(&spine, (const char *)&s, sizeof s);
            buf_puts(out, "(");
        }
        ast_dump_expr(s, out);
        for (size_t i = spine.len / sizeof s; i-- > 0;) {
            memcpy(&s, spine.data + i * sizeof s, sizeof s);
            buf_printf(out, " %s ", op_info[s->op].tok);
            ast_dump_expr(s->b, out);
            buf_puts(out, ")");
        }
        buf_free(&spine);
        break;
    }
    case E_COND:
        buf_puts(out, "(");
        ast_dump_expr(e->a, out);
        buf_puts(out, " ? ");
        ast_dump_expr(e->b, out);
        buf_puts(out, " : ");
        ast_dump_expr(e->c, out);
        buf_puts(out, ")");
        break;
    case E_CAST:
        buf_printf(out, "%s(", type_name((Type)e->type));
        ast_dump_expr(e->a, out);
        buf_puts(out, ")");
        break;
    case E_CALL: case E_BUILTIN:
        buf_puts(out, e->kind == E_CALL ? e->name : builtin_info[e->op].name);
        buf_puts(out, "(");
        for (int i = 0; i < e->args.n; i++) {
            if (i)
                buf_puts(out, ", ");
            ast_dump_expr(e->args.items[i], out);
        }
        buf_puts(out, ")");
        break;
    case E_REDUCE:
        buf_printf(out, "%s(", reducer_info[e->op].name);
        ast_dump_expr(e->a, out);
        if (e->b) {
            buf_puts(out, ", ");
            ast_dump_expr(e->b, out);
            buf_puts(out, ", |a, b| ");
            ast_dump_expr(e->c, out);
        }
        buf_puts(out, ")");
        break;
    case E_INDEX: case E_RAWLOAD:
        if (e->kind == E_INDEX)
            buf_puts(out, e->name);
        else
            buf_printf(out, "$%d", e->index);
        buf_puts(out, "[");
        for (int i = 0; i < e->args.n; i++) {
            if (i)
                buf_puts(out, ", ");
            ast_dump_expr(e->args.items[i], out);
        }
        buf_puts(out, "]");
        break;
    case E_RAWSHAPE: buf_printf(out, "shape($%d, %d)", e->index, e->op); break;
    case E_DIMIDX: buf_printf(out, "index(%d)", e->op); break;
    case E_LAMBDA:
        buf_puts(out, "|");
        for (int i = 0; i < e->args.n; i++) {
            bool open = e->index && (i == 0 || i == e->index), close = e->index && (i + 1 == e->index || i + 1 == e->args.n);
            buf_printf(out, "%s%s%s%s", i ? ", " : "", open ? "(" : "", ((Expr *)e->args.items[i])->name, close ? ")" : "");
        }
        buf_puts(out, "| ");
        ast_dump_expr(e->a, out);
        break;
    case E_TUPLE:
        buf_puts(out, "(");
        for (int i = 0; i < e->args.n; i++) {
            if (i)
                buf_puts(out, ", ");
            ast_dump_expr(e->args.items[i], out);
        }
        buf_puts(out, ")");
        break;
    }
    if (e->type != T_NONE && e->kind != E_CAST)
        buf_printf(out, ":%s", type_name((Type)e->type));
}

static void dump_params(const List *l, Buf *out)
{
    for (int i = 0; i < l->n; i++) {
        const Param *p = l->items[i];
        if (p->inout_of) /* sema's output for an inout parameter (they come last) */
            continue;
        buf_printf(out, "%s%s%s%s", i ? ", " : "", p->mod ? p->mod : "", p->mod ? " " : "", p->name);
        dump_type(&p->ty, out);
        if (p->dflt) {
            buf_puts(out, " = ");
            ast_dump_expr(p->dflt, out);
        }
    }
}

static void dump_generics(const List *l, Buf *out)
{
    if (!l->n)
        return;
    buf_puts(out, "<");
    for (int i = 0; i < l->n; i++) {
        const Generic *g = l->items[i];
        buf_printf(out, "%s%s: %s", i ? ", " : "", g->name, class_name(g->cls));
    }
    buf_puts(out, ">");
}

/* The checked program: every item, then every instance with the typed
 * tree of its outputs (types after ':'). */
void ast_dump(Compiler *c, Buf *out)
{
    for (int i = 0; i < c->items.n; i++) {
        const Item *it = c->items.items[i];
        switch (it->kind) {
        case I_IMPORT:
            buf_printf(out, "import \"%s\"\n", it->name);
            break;
        case I_CONST:
            buf_printf(out, "const %s", it->name);
            dump_type(&it->ty, out);
            buf_puts(out, " = ");
            ast_dump_expr(it->checked ? it->checked : it->value, out);
            buf_puts(out, "\n");
            break;
        case I_FUNC:
            buf_printf(out, "func %s", it->name);
            dump_generics(&it->generics, out);
            buf_puts(out, "(");
            dump_params(&it->params, out);
            buf_puts(out, ") = ");
            ast_dump_expr(it->value, out);
            buf_puts(out, "\n");
            break;
        case I_ELEMENTWISE:
        case I_REDUCTION:
            buf_printf(out, "%s %s", it->kind == I_REDUCTION ? "reduction" : "elementwise", it->name);
            dump_generics(&it->generics, out);
            buf_puts(out, "(");
            dump_params(&it->params, out);
            buf_puts(out, ") -> (");
            dump_params(&it->outputs, out);
            buf_puts(out, ")\n");
            for (int j = 0; j < it->body.n; j++) {
                const Stmt *s = it->body.items[j];
                buf_printf(out, "    %s", s->kind == S_LET ? "let " : "");
                if (s->names.n) {
                    buf_puts(out, "(");
                    for (int n = 0; n < s->names.n; n++)
                        buf_printf(out, "%s%s", n ? ", " : "", ((Expr *)s->names.items[n])->name);
                    buf_puts(out, ")");
                } else {
                    buf_puts(out, s->name);
                }
                dump_type(&s->ty, out);
                buf_puts(out, " = ");
                ast_dump_expr(s->value, out);
                buf_puts(out, "\n");
            }
            break;
        case I_INSTANTIATE:
            buf_puts(out, "instantiate");
            for (int j = 0; j < it->insts.n; j++) {
                const InstSpec *s = it->insts.items[j];
                buf_printf(out, "%s %s", j ? "," : "", s->name);
                for (int k = 0; k < s->types.n; k++)
                    buf_printf(out, "%s%s", k ? ", " : "<", ((TypeRef *)s->types.items[k])->name);
                if (s->types.n)
                    buf_puts(out, ">");
            }
            buf_puts(out, "\n");
            break;
        }
    }
    for (int i = 0; i < c->instances.n; i++) {
        const Instance *in = c->instances.items[i];
        buf_printf(out, "instance %s (%s)\n", in->name, in->display);
        for (int j = 0; j < in->nparams; j++) {
            const InstParam *p = &in->params[j];
            buf_printf(out, "    param $%d %s: %s%s", j, p->name, type_name(p->type), p->tensor ? "[]" : "");
            if (p->storage != p->type)
                buf_printf(out, " (stored as %s)", type_name(p->storage));
            if (p->has_default) {
                buf_puts(out, " = ");
                value_format(p->dflt, out, false);
            }
            buf_puts(out, "\n");
        }
        for (int j = 0; j < in->nouts; j++) {
            const InstParam *p = &in->outs[j];
            buf_printf(out, "    out %s: %s%s = ", p->name, type_name(p->type), p->tensor ? "[]" : "");
            ast_dump_expr(in->values[j], out);
            buf_puts(out, "\n");
        }
    }
}
