/*
 * cubin.c - the symbol-table check of cubin.h. Only the ELF structures it
 * needs are read (header, section headers, symbol tables and their string
 * tables), each range checked against the image before use.
 */
#include "cubin.h"

#include <stdint.h>
#include <string.h>

#define EM_CUDA_     190
#define SHT_SYMTAB_  2
#define SHT_DYNSYM_  11
#define SHN_UNDEF_   0
#define SYM_SIZE     24
#define SHDR_SIZE    64
#define MAX_SECTIONS 65535
#define MAX_NAME     4096

static uint16_t rd16(const unsigned char *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t rd32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t rd64(const unsigned char *p)
{
    return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32;
}

/* [off, off + n) lies within an image of `len` bytes. */
static int in_image(uint64_t off, uint64_t n, size_t len)
{
    return off <= len && n <= len - off;
}

/* malloc, free and their relatives (__cuda_syscall_aligned_malloc, a
 * device-side cudaMalloc/cudaFree), compared without case. */
static int is_heap_function(const char *name)
{
    char l[256];
    size_t n = 0;
    for (; name[n] && n < sizeof(l) - 1; n++)
        l[n] = (char)(name[n] >= 'A' && name[n] <= 'Z' ? name[n] - 'A' + 'a' : name[n]);
    l[n] = '\0';
    return strstr(l, "malloc") != NULL || (n >= 4 && strcmp(l + n - 4, "free") == 0);
}

enum kiln_rc cubin_check_heap(const void *data, size_t len, struct kiln_err *err)
{
    const unsigned char *b = data;
    if (len > CUBIN_MAX_BYTES)
        return kiln_fail(err, KILN_E_LIMIT, "candidate.cubin: %zu bytes, more than the %u allowed",
                         len, CUBIN_MAX_BYTES);
    if (len < 64 || memcmp(b, "\177ELF", 4) != 0)
        return kiln_fail(err, KILN_E_PARSE,
                         "candidate.cubin is not an ELF image (kiln loads only cubins it can "
                         "inspect: compile with -cubin, not to PTX or a fatbin)");
    if (b[4] != 2 || b[5] != 1 || rd16(b + 18) != EM_CUDA_)
        return kiln_fail(err, KILN_E_PARSE,
                         "candidate.cubin is not a 64-bit little-endian CUDA ELF image");
    uint64_t shoff = rd64(b + 40);
    uint16_t shentsize = rd16(b + 58), shnum = rd16(b + 60);
    if (shnum == 0)
        return kiln_fail(err, KILN_E_PARSE, "candidate.cubin: no section headers");
    if (shentsize != SHDR_SIZE || !in_image(shoff, (uint64_t)shnum * SHDR_SIZE, len))
        return kiln_fail(err, KILN_E_PARSE,
                         "candidate.cubin: the section header table lies outside the image");
    for (unsigned i = 0; i < shnum; i++) {
        const unsigned char *sh = b + shoff + (uint64_t)i * SHDR_SIZE;
        uint32_t type = rd32(sh + 4);
        if (type != SHT_SYMTAB_ && type != SHT_DYNSYM_)
            continue;
        uint64_t off = rd64(sh + 24), size = rd64(sh + 32), entsize = rd64(sh + 56);
        uint32_t link = rd32(sh + 40);
        if (entsize != SYM_SIZE || size % SYM_SIZE || !in_image(off, size, len) || link == 0 ||
            link >= shnum)
            return kiln_fail(err, KILN_E_PARSE, "candidate.cubin: symbol table %u is malformed", i);
        const unsigned char *strsh = b + shoff + (uint64_t)link * SHDR_SIZE;
        uint64_t stroff = rd64(strsh + 24), strsize = rd64(strsh + 32);
        if (!in_image(stroff, strsize, len))
            return kiln_fail(err, KILN_E_PARSE,
                             "candidate.cubin: the string table of symbol table %u lies outside "
                             "the image",
                             i);
        const char *strtab = (const char *)b + stroff;
        for (uint64_t s = 0; s < size / SYM_SIZE; s++) {
            const unsigned char *sym = b + off + s * SYM_SIZE;
            uint32_t name = rd32(sym);
            uint16_t shndx = rd16(sym + 6);
            if (shndx != SHN_UNDEF_ || name == 0)
                continue;
            if (name >= strsize)
                return kiln_fail(err, KILN_E_PARSE,
                                 "candidate.cubin: symbol %llu's name lies outside its string "
                                 "table",
                                 (unsigned long long)s);
            size_t max = strsize - name < MAX_NAME ? (size_t)(strsize - name) : MAX_NAME;
            size_t n = strnlen(strtab + name, max);
            if (n == max)
                return kiln_fail(err, KILN_E_PARSE,
                                 "candidate.cubin: symbol %llu's name is not terminated",
                                 (unsigned long long)s);
            if (is_heap_function(strtab + name))
                return kiln_fail(err, KILN_E_REJECTED,
                                 "the candidate calls device-side %.64s: kiln refuses the device "
                                 "heap (malloc/free), whose memory survives module reloads and "
                                 "could carry results between runs; use the tensors kiln passes, "
                                 "registers or shared memory instead",
                                 strtab + name);
        }
    }
    return KILN_OK;
}
