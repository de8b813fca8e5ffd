/* cunit-main.c - main() of every CUnit program (cunit-main.h). */
#include "cunit-main.h"

#include <stdlib.h>
#include <string.h>

int main(void)
{
    const CunitProgram *p = &cunit_program;
    if (p->setup)
        p->setup();
    if (CU_initialize_registry() != CUE_SUCCESS)
        return 1;
    const char *only = getenv("NNK_TEST_ONLY");
    for (const CunitSuite *s = p->suites; s->name; s++) {
        CU_pSuite suite = CU_add_suite(s->name, NULL, NULL);
        for (const CunitTest *t = s->tests; t->name; t++)
            if (!only || strcmp(only, t->name) == 0)
                CU_add_test(suite, t->name, t->run);
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failed = CU_get_number_of_failures() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    if (p->teardown)
        p->teardown();
    return failed ? 1 : 0;
}
