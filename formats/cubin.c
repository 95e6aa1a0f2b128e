/*
 * cubin.c - the symbol-table check of cubin.h. Only the ELF structures it
 * needs are read (header, section headers, symbol tables and their string
 * tables), each range checked against the image before use.
 */
#include "cubin.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#define EM_CUDA_     190
#define SHT_SYMTAB_  2
#define SHT_DYNSYM_  11
#define SHN_UNDEF_   0
#define STT_FUNC_    2
#define STB_GLOBAL_  1
#define STB_WEAK_    2
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

/* A symbol as the walk hands it over: its name (validated, terminated), its
 * type and binding (st_info) and its section index (0: undefined). Returns
 * KILN_OK to go on, anything else to stop with that result. */
typedef enum kiln_rc (*sym_visit)(void *ctx, const char *name, uint8_t info, uint16_t shndx,
                                  struct kiln_err *err);

/* Checks the ELF64 little-endian header of `b`; cuda: also EM_CUDA. */
static enum kiln_rc elf_header(const unsigned char *b, size_t len, const char *what, int cuda,
                               struct kiln_err *err)
{
    if (len > CUBIN_MAX_BYTES)
        return kiln_fail(err, KILN_E_LIMIT, "%s: %zu bytes, more than the %u allowed", what, len,
                         CUBIN_MAX_BYTES);
    if (len < 64 || memcmp(b, "\177ELF", 4) != 0)
        return kiln_fail(err, KILN_E_PARSE,
                         cuda ? "%s is not an ELF image (kiln loads only cubins it can "
                                "inspect: compile with -cubin, not to PTX or a fatbin)"
                              : "%s is not an ELF image",
                         what);
    if (b[4] != 2 || b[5] != 1 || (cuda && rd16(b + 18) != EM_CUDA_))
        return kiln_fail(err, KILN_E_PARSE, "%s is not a 64-bit little-endian %sELF image", what,
                         cuda ? "CUDA " : "");
    return KILN_OK;
}

/* Calls `visit` on every named symbol of every symbol table of `b`. */
static enum kiln_rc walk_symbols(const unsigned char *b, size_t len, const char *what,
                                 sym_visit visit, void *ctx, struct kiln_err *err)
{
    uint64_t shoff = rd64(b + 40);
    uint16_t shentsize = rd16(b + 58), shnum = rd16(b + 60);
    if (shnum == 0)
        return kiln_fail(err, KILN_E_PARSE, "%s: no section headers", what);
    if (shentsize != SHDR_SIZE || !in_image(shoff, (uint64_t)shnum * SHDR_SIZE, len))
        return kiln_fail(err, KILN_E_PARSE, "%s: the section header table lies outside the image",
                         what);
    for (unsigned i = 0; i < shnum; i++) {
        const unsigned char *sh = b + shoff + (uint64_t)i * SHDR_SIZE;
        uint32_t type = rd32(sh + 4);
        if (type != SHT_SYMTAB_ && type != SHT_DYNSYM_)
            continue;
        uint64_t off = rd64(sh + 24), size = rd64(sh + 32), entsize = rd64(sh + 56);
        uint32_t link = rd32(sh + 40);
        if (entsize != SYM_SIZE || size % SYM_SIZE || !in_image(off, size, len) || link == 0 ||
            link >= shnum)
            return kiln_fail(err, KILN_E_PARSE, "%s: symbol table %u is malformed", what, i);
        const unsigned char *strsh = b + shoff + (uint64_t)link * SHDR_SIZE;
        uint64_t stroff = rd64(strsh + 24), strsize = rd64(strsh + 32);
        if (!in_image(stroff, strsize, len))
            return kiln_fail(err, KILN_E_PARSE,
                             "%s: the string table of symbol table %u lies outside the image", what,
                             i);
        const char *strtab = (const char *)b + stroff;
        for (uint64_t s = 0; s < size / SYM_SIZE; s++) {
            const unsigned char *sym = b + off + s * SYM_SIZE;
            uint32_t name = rd32(sym);
            if (name == 0)
                continue;
            if (name >= strsize)
                return kiln_fail(err, KILN_E_PARSE,
                                 "%s: symbol %llu's name lies outside its string table", what,
                                 (unsigned long long)s);
            size_t max = strsize - name < MAX_NAME ? (size_t)(strsize - name) : MAX_NAME;
            if (strnlen(strtab + name, max) == max)
                return kiln_fail(err, KILN_E_PARSE, "%s: symbol %llu's name is not terminated",
                                 what, (unsigned long long)s);
            enum kiln_rc rc = visit(ctx, strtab + name, sym[4], rd16(sym + 6), err);
            if (rc != KILN_OK)
                return rc;
        }
    }
    return KILN_OK;
}

static enum kiln_rc refuse_heap(void *ctx, const char *name, uint8_t info, uint16_t shndx,
                                struct kiln_err *err)
{
    (void)ctx;
    (void)info;
    if (shndx != SHN_UNDEF_ || !is_heap_function(name))
        return KILN_OK;
    return kiln_fail(err, KILN_E_REJECTED,
                     "the candidate calls device-side %.64s: kiln refuses the device "
                     "heap (malloc/free), whose memory survives module reloads and "
                     "could carry results between runs; use the tensors kiln passes, "
                     "registers or shared memory instead",
                     name);
}

enum kiln_rc cubin_check_heap(const void *data, size_t len, struct kiln_err *err)
{
    enum kiln_rc rc = elf_header(data, len, "candidate.cubin", 1, err);
    return rc != KILN_OK ? rc : walk_symbols(data, len, "candidate.cubin", refuse_heap, NULL, err);
}

struct fn_lookup {
    const char *const *want;
    size_t nwant;
    bool *found;
    char *defined; /* ", "-joined, capped */
    size_t cap, len;
};

/* Appends `name` to the list of defined functions once (a .so lists most
 * functions in both .symtab and .dynsym); "..." when full. */
static void list_defined(struct fn_lookup *l, const char *name)
{
    size_t n = strlen(name);
    if (n == 0) /* a name at a NUL byte: strstr would find "" forever */
        return;
    for (const char *p = l->defined; (p = strstr(p, name)) != NULL; p += n)
        if ((p == l->defined || p[-1] == ' ') && (p[n] == ',' || p[n] == '\0'))
            return;
    if (l->len + n + 6 >= l->cap) {
        if (l->len + 4 < l->cap && !strstr(l->defined, "..."))
            l->len +=
                (size_t)snprintf(l->defined + l->len, l->cap - l->len, "%s...", l->len ? ", " : "");
        return;
    }
    l->len +=
        (size_t)snprintf(l->defined + l->len, l->cap - l->len, "%s%s", l->len ? ", " : "", name);
}

static enum kiln_rc find_function(void *ctx, const char *name, uint8_t info, uint16_t shndx,
                                  struct kiln_err *err)
{
    (void)err;
    struct fn_lookup *l = ctx;
    unsigned bind = info >> 4, type = info & 0xf;
    if (shndx == SHN_UNDEF_ || type != STT_FUNC_ || (bind != STB_GLOBAL_ && bind != STB_WEAK_))
        return KILN_OK;
    for (size_t i = 0; i < l->nwant; i++)
        if (strcmp(l->want[i], name) == 0)
            l->found[i] = true;
    /* kiln's own (the cpu trampoline's kiln_launch_N) and the toolchain's
     * (_init, _fini, __*, nvcc's $__internal_*) are not the user's. */
    if (strncmp(name, "kiln_", 5) != 0 && strncmp(name, "__", 2) != 0 && !strchr(name, '$') &&
        strcmp(name, "_init") != 0 && strcmp(name, "_fini") != 0)
        list_defined(l, name);
    return KILN_OK;
}

enum kiln_rc elf_find_functions(const void *data, size_t len, int cuda, const char *const *want,
                                size_t nwant, bool *found, char *defined, size_t cap,
                                struct kiln_err *err)
{
    const char *what = cuda ? "candidate.cubin" : "candidate.so";
    struct fn_lookup l = {want, nwant, found, defined, cap, 0};
    for (size_t i = 0; i < nwant; i++)
        found[i] = false;
    if (cap)
        defined[0] = '\0';
    enum kiln_rc rc = elf_header(data, len, what, cuda, err);
    return rc != KILN_OK ? rc : walk_symbols(data, len, what, find_function, &l, err);
}
