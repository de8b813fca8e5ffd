/* cunit-main.h - the one main() of the CUnit programs (tests/cunit-main.c).
 * A program lists its tests in tables and defines cunit_program:
 *
 *     static const CunitTest lexer[] = {{"tokens", test_tokens}, ..., {NULL}};
 *     static const CunitSuite suites[] = {{"lexer", lexer}, ..., {NULL}};
 *     const CunitProgram cunit_program = {suites, setup, teardown};
 *
 * setup and teardown (either NULL) run before and after all the tests.
 * NNK_TEST_ONLY=NAME runs the tests of that name only (valgrind.sh picks a
 * subset).  The exit status is 1 when a test failed. */
#ifndef NNK_CUNIT_MAIN_H
#define NNK_CUNIT_MAIN_H

#include <CUnit/Basic.h>

typedef struct CunitTest {
    const char *name;
    void (*run)(void);
} CunitTest;

typedef struct CunitSuite {
    const char *name;
    const CunitTest *tests; /* ends with {NULL} */
} CunitSuite;

typedef struct CunitProgram {
    const CunitSuite *suites; /* ends with {NULL} */
    void (*setup)(void);
    void (*teardown)(void);
} CunitProgram;

extern const CunitProgram cunit_program;

#endif
