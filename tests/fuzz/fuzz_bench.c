/* libFuzzer target: bench_record_parse (kiln bench kernelbench's bench.json,
 * read back from a directory anyone may have written) on arbitrary bytes;
 * what it accepts holds only names in kiln's charsets. The level is a path
 * that does not exist, so a problem's file check fails: the fuzzer drives
 * the document's structure, the settings' comparison and the names. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench_kb.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct bench b;
    memset(&b, 0, sizeof(b));
    strcpy(b.out, "/nonexistent-kiln-fuzz-out");
    strcpy(b.level, "/nonexistent-kiln-fuzz-level");
    strcpy(b.backend, "cpu");
    strcpy(b.proposer, "replay");
    struct kiln_err err = KILN_ERR_INIT;
    if (bench_record_parse(&b, (const char *)data, size, &err) == KILN_OK && b.n > 0)
        abort(); /* no problem file can exist under that level */
    bench_free(&b);
    return 0;
}
