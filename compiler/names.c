/* names.c - the identifiers generated code cannot take from a source
 * file (names.def): sema rejects them as kernel names, the emitters rename
 * them as parameter names. */
#include "nnkc.h"

#include <string.h>

static const struct {
    const char *name;
    NameKind kind;
} reserved[] = {
#define NAME(id, kind) {#id, NK_##kind},
#include "names.def"
#undef NAME
};

NameKind name_reserved(const char *name)
{
    if (strstr(name, "__") || (name[0] == '_' && name[1] >= 'A' && name[1] <= 'Z') || strncmp(name, "nnk_", 4) == 0 ||
        strncmp(name, "NNK_", 4) == 0)
        return NK_PATTERN;
    for (size_t i = 0; i < sizeof reserved / sizeof *reserved; i++)
        if (reserved[i].name[0] == name[0] && strcmp(reserved[i].name, name) == 0)
            return reserved[i].kind;
    return NK_NONE;
}

const char *name_kind_text(NameKind k)
{
    switch (k) {
    case NK_C: return "a C keyword";
    case NK_CXX: return "a C++ keyword (the generated header compiles as C++)";
    case NK_CUDA: return "a CUDA built-in";
    case NK_OPENCL: return "an OpenCL C keyword or built-in";
    case NK_GENERATED: return "a name the generated entry points use themselves";
    case NK_HEADER: return "declared by <math.h>, <stdint.h>, <stdlib.h> or <string.h>, which the generated C includes";
    case NK_PATTERN:
        return "reserved (names with '__', or starting with '_' and an upper-case letter, nnk_ or NNK_, belong to C and nnk)";
    case NK_NONE: break;
    }
    return "";
}

/* A parameter name as a C parameter: reserved names, and names ending in
 * '_' (the entry points' own locals end in one), get a '_' appended, which
 * keeps distinct names distinct. */
const char *name_c_param(Arena *a, const char *name)
{
    size_t n = strlen(name);
    bool bad = (n > 0 && name[n - 1] == '_') || name_reserved(name) != NK_NONE;
    return bad ? arena_printf(a, "%s_", name) : name;
}
