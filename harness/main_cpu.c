/* kiln-harness-cpu: the harness with the CPU backend (see hx.h). */
#include "hx.h"

int main(int argc, char **argv)
{
    return hx_main(&hx_cpu_ops, argc, argv);
}

#if defined(__SANITIZE_ADDRESS__)
/* An ASan build's harness runs in the gpu-run sandbox, whose seccomp policy
 * refuses the clone LeakSanitizer makes at exit. ASAN_OPTIONS overrides
 * this: tests/evaluator_harness runs the harness unsandboxed with leak checks on. */
const char *__asan_default_options(void);
const char *__asan_default_options(void)
{
    return "detect_leaks=0";
}
#endif
