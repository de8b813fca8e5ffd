/* libFuzzer target for the whole compiler: lexer, parser, sema, lowering
 * and both source emitters.  Build with ./configure --enable-fuzz CC=clang,
 * run as tests/fuzz/fuzz_frontend -max_len=4096 CORPUS_DIR (seed it with
 * tests/diagnostics/ and samples/).  Any crash, hang, leak or sanitizer
 * report is a bug; the input is not expected to be a valid program. */
#include "nnkc.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    Compiler *c = nnkc_new();
    jmp_buf jb;
    if (setjmp(jb) == 0) {
        nnkc_enter(c, &jb);
        if (nnkc_compile(c, "fuzz.nnk", (const char *)data, size, true)) {
            Buf out = {0};
            EmitOptions eo = {.source_name = "fuzz.nnk", .symbol_suffix = ""};
            emit_c_file(c, &c->instances, &eo, &out);
            emit_header(c, &c->instances, &eo, &out);
            buf_free(&out);
        }
    } else {
        abort(); /* an internal error is a bug the fuzzer must report */
    }
    nnkc_leave(c);
    Buf d = {0};
    diag_render(c, &d, false);
    buf_free(&d);
    nnkc_free(c);
    return 0;
}
