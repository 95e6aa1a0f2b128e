/* The saxpy workload of workloads/README.md, as test fixture text. */
#ifndef KILN_TEST_PARSERS_FIXTURES_H
#define KILN_TEST_PARSERS_FIXTURES_H

#include <stdio.h>
#include <string.h>

static const char saxpy_json[] =
    "{\n"
    "  \"name\": \"saxpy\",\n"
    "  \"description\": \"out[i] = a * x[i] + y[i] for float32 vectors of length n.\",\n"
    "  \"sizes\": [\"n\"],\n"
    "  \"signature\": [\n"
    "    {\"name\": \"n\",   \"kind\": \"scalar\", \"type\": \"int64\",   \"expr\": \"n\"},\n"
    "    {\"name\": \"a\",   \"kind\": \"scalar\", \"type\": \"float32\", \"value\": 2.5},\n"
    "    {\"name\": \"x\",   \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [\"n\"], "
    "\"role\": \"in\"},\n"
    "    {\"name\": \"y\",   \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [\"n\"], "
    "\"role\": \"in\"},\n"
    "    {\"name\": \"out\", \"kind\": \"tensor\", \"dtype\": \"float32\", \"shape\": [\"n\"], "
    "\"role\": \"out\"}\n"
    "  ],\n"
    "  \"cases\": [\n"
    "    {\"name\": \"n1\",    \"kind\": \"correctness\", \"sizes\": {\"n\": 1}},\n"
    "    {\"name\": \"prime\", \"kind\": \"correctness\", \"sizes\": {\"n\": 1000003}},\n"
    "    {\"name\": \"big\",   \"kind\": \"performance\", \"sizes\": {\"n\": 268435456}}\n"
    "  ],\n"
    "  \"held_out\": [{\"name\": \"held\", \"sizes\": {\"n\": 7340033}}],\n"
    "  \"tolerance\": {\"out\": {\"atol\": 1e-5, \"rtol\": 1e-5}},\n"
    "  \"cost\": {\"bytes\": \"12*n\", \"flops\": \"2*n\"},\n"
    "  \"backends\": [\"cuda\", \"cpu\"],\n"
    "  \"baseline\": {\"kind\": \"memcpy\", \"bytes\": \"12*n\"},\n"
    "  \"accept_weak\": []\n"
    "}\n";

/* `src` with the first occurrence of `from` replaced by `to`, into `out`. */
static inline void replace_in(char *out, size_t size, const char *src, const char *from,
                              const char *to)
{
    const char *at = strstr(src, from);
    if (!at) {
        snprintf(out, size, "fixture_replace: \"%s\" not in the fixture", from);
        return;
    }
    snprintf(out, size, "%.*s%s%s", (int)(at - src), src, to, at + strlen(from));
}

/* saxpy_json with the first occurrence of `from` replaced by `to`. */
static inline void fixture_replace(char *out, size_t size, const char *from, const char *to)
{
    replace_in(out, size, saxpy_json, from, to);
}

#endif
