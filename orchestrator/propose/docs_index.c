/* docs_index.c - the SQLite FTS5 index of documentation passages (docs_index.h). */
#include "docs_index.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sqlite3.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fsutil.h"
#include "digest.h"
#include "strbuf.h"

#define DOCS_SCHEMA "kiln-docs-1"

struct docs_index {
    sqlite3 *db;
    char digest[SHA256_HEX_LEN + 1];
    size_t count;
};

static enum kiln_rc db_fail(struct kiln_err *err, sqlite3 *db, const char *what, const char *path)
{
    return kiln_fail(err, KILN_E_IO, "%s %s: %s", what, path,
                     db ? sqlite3_errmsg(db) : "no memory");
}

/* ---- building ---- */

static const char schema_sql[] =
    "PRAGMA journal_mode=OFF;"
    "PRAGMA synchronous=OFF;"
    "CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE VIRTUAL TABLE passages USING fts5(pid UNINDEXED, file UNINDEXED, source UNINDEXED, "
    "title, topic, body, tokenize='porter unicode61');";

static enum kiln_rc insert_all(sqlite3 *db, const struct docs_corpus *c, const char *digest,
                               const char *path, struct kiln_err *err)
{
    sqlite3_stmt *meta = NULL, *ins = NULL;
    enum kiln_rc rc = KILN_OK;
    if (sqlite3_exec(db, "BEGIN", NULL, NULL, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "INSERT INTO meta(key, value) VALUES (?1, ?2)", -1, &meta, NULL) !=
            SQLITE_OK ||
        sqlite3_prepare_v2(db,
                           "INSERT INTO passages(pid, file, source, title, topic, body) "
                           "VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                           -1, &ins, NULL) != SQLITE_OK)
        rc = db_fail(err, db, "preparing", path);
    const char *kv[][2] = {{"schema", DOCS_SCHEMA}, {"digest", digest}};
    for (size_t i = 0; rc == KILN_OK && i < 2; i++) {
        sqlite3_bind_text(meta, 1, kv[i][0], -1, SQLITE_STATIC);
        sqlite3_bind_text(meta, 2, kv[i][1], -1, SQLITE_STATIC);
        if (sqlite3_step(meta) != SQLITE_DONE)
            rc = db_fail(err, db, "writing", path);
        sqlite3_reset(meta);
    }
    for (size_t i = 0; rc == KILN_OK && i < c->n; i++) {
        const struct docs_passage *p = &c->passages[i];
        const char *v[] = {p->id, p->file, p->source, p->title, p->topic, p->body};
        for (int k = 0; k < 6; k++)
            sqlite3_bind_text(ins, k + 1, v[k], -1, SQLITE_STATIC);
        if (sqlite3_step(ins) != SQLITE_DONE)
            rc = db_fail(err, db, "writing", path);
        sqlite3_reset(ins);
    }
    sqlite3_finalize(meta);
    sqlite3_finalize(ins);
    if (rc == KILN_OK && sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK)
        rc = db_fail(err, db, "writing", path);
    return rc;
}

enum kiln_rc docs_index_build(const char *path, const struct docs_corpus *c, const char *digest,
                              struct kiln_err *err)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof(tmp), "%s.tmp-XXXXXX", path) >= (int)sizeof(tmp))
        return kiln_fail(err, KILN_E_USAGE, "path too long: %s", path);
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        return kiln_fail_errno(err, KILN_E_IO, "creating %s", tmp);
    (void)fchmod(fd, 0644);
    close(fd);
    sqlite3 *db = NULL;
    enum kiln_rc rc = KILN_OK;
    if (sqlite3_open_v2(tmp, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
        sqlite3_exec(db, schema_sql, NULL, NULL, NULL) != SQLITE_OK)
        rc = db_fail(err, db, "creating the index", tmp);
    if (rc == KILN_OK)
        rc = insert_all(db, c, digest, tmp, err);
    if (sqlite3_close(db) != SQLITE_OK && rc == KILN_OK)
        rc = kiln_fail(err, KILN_E_IO, "closing %s", tmp);
    if (rc == KILN_OK) {
        fd = open(tmp, O_RDONLY | O_CLOEXEC);
        if (fd < 0 || fsync(fd) != 0)
            rc = kiln_fail_errno(err, KILN_E_IO, "syncing %s", tmp);
        if (fd >= 0)
            close(fd);
    }
    if (rc == KILN_OK && rename(tmp, path) != 0)
        rc = kiln_fail_errno(err, KILN_E_IO, "renaming %s to %s", tmp, path);
    if (rc != KILN_OK)
        unlink(tmp);
    return rc;
}

/* ---- opening ---- */

static enum kiln_rc meta_get(sqlite3 *db, const char *key, char *out, size_t cap)
{
    sqlite3_stmt *st = NULL;
    enum kiln_rc rc = KILN_E_PARSE;
    if (sqlite3_prepare_v2(db, "SELECT value FROM meta WHERE key = ?1", -1, &st, NULL) ==
        SQLITE_OK) {
        sqlite3_bind_text(st, 1, key, -1, SQLITE_STATIC);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0)) {
            snprintf(out, cap, "%s", (const char *)sqlite3_column_text(st, 0));
            rc = KILN_OK;
        }
    }
    sqlite3_finalize(st);
    return rc;
}

/* Every passage's text as docs_corpus_parse checks a file's (UTF-8, no
 * control characters, bounded lengths): an index is a file on disk like
 * the corpus it came from, and what it returns reaches prompts and the
 * terminal. The index of kiln's corpus plus a user's holds at most twice
 * the passages of one corpus. */
static enum kiln_rc check_passages(sqlite3 *db, const char *path, struct kiln_err *err)
{
    static const struct {
        const char *col;
        size_t max;
    } field[] = {{"pid", DOCS_ID_MAX - 1},    {"file", DOCS_FILE_NAME_MAX},
                 {"source", DOCS_SOURCE_MAX}, {"title", DOCS_TITLE_MAX},
                 {"topic", DOCS_TITLE_MAX},   {"body", DOCS_FILE_MAX}};
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(db, "SELECT pid, file, source, title, topic, body FROM passages", -1,
                           &st, NULL) != SQLITE_OK)
        return db_fail(err, db, "reading", path);
    enum kiln_rc rc = KILN_OK;
    size_t n = 0;
    int r;
    while (rc == KILN_OK && (r = sqlite3_step(st)) == SQLITE_ROW) {
        if (++n > 2 * (size_t)DOCS_PASSAGES_MAX) {
            rc = kiln_fail(err, KILN_E_LIMIT, "%s holds more than %d passages", path,
                           2 * DOCS_PASSAGES_MAX);
            break;
        }
        for (int k = 0; rc == KILN_OK && k < 6; k++) {
            const char *v = (const char *)sqlite3_column_text(st, k);
            size_t len = (size_t)sqlite3_column_bytes(st, k);
            char name[PATH_MAX + 64];
            snprintf(name, sizeof(name), "%s (passage %zu, %s)", path, n, field[k].col);
            if (len > field[k].max)
                rc = kiln_fail(err, KILN_E_LIMIT, "%s: %zu bytes, more than %zu", name, len,
                               field[k].max);
            else
                rc = docs_text_check(name, v ? v : "", v ? len : 0, err);
        }
    }
    if (rc == KILN_OK && r != SQLITE_DONE)
        rc = db_fail(err, db, "reading", path);
    sqlite3_finalize(st);
    return rc;
}

enum kiln_rc docs_index_open(const char *path, struct docs_index **out, struct kiln_err *err)
{
    *out = NULL;
    if (access(path, R_OK) != 0)
        return kiln_fail_errno(err, errno == ENOENT ? KILN_E_NOTFOUND : KILN_E_IO, "opening %s",
                               path);
    struct docs_index *ix = calloc(1, sizeof(*ix));
    if (!ix)
        return kiln_fail(err, KILN_E_NOMEM, "docs index");
    enum kiln_rc rc = KILN_OK;
    if (sqlite3_open_v2(path, &ix->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK)
        rc = db_fail(err, ix->db, "opening", path);
    char schema[32] = "";
    if (rc == KILN_OK) {
        sqlite3_db_config(ix->db, SQLITE_DBCONFIG_DEFENSIVE, 1, NULL);
        sqlite3_db_config(ix->db, SQLITE_DBCONFIG_TRUSTED_SCHEMA, 0, NULL);
        if (meta_get(ix->db, "schema", schema, sizeof(schema)) != KILN_OK ||
            strcmp(schema, DOCS_SCHEMA) != 0 ||
            meta_get(ix->db, "digest", ix->digest, sizeof(ix->digest)) != KILN_OK)
            rc = kiln_fail(err, KILN_E_PARSE,
                           "%s is not a kiln documentation index of this version (%s): rebuild "
                           "it (cmake --build build --target kiln_docs_db)",
                           path, DOCS_SCHEMA);
    }
    if (rc == KILN_OK)
        rc = check_passages(ix->db, path, err);
    sqlite3_stmt *st = NULL;
    if (rc == KILN_OK &&
        (sqlite3_prepare_v2(ix->db, "SELECT count(*) FROM passages", -1, &st, NULL) != SQLITE_OK ||
         sqlite3_step(st) != SQLITE_ROW))
        rc = db_fail(err, ix->db, "reading", path);
    if (rc == KILN_OK)
        ix->count = (size_t)sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    if (rc != KILN_OK) {
        docs_index_close(ix);
        return rc;
    }
    *out = ix;
    return KILN_OK;
}

const char *docs_index_digest(const struct docs_index *ix)
{
    return ix->digest;
}

size_t docs_index_count(const struct docs_index *ix)
{
    return ix->count;
}

void docs_index_close(struct docs_index *ix)
{
    if (!ix)
        return;
    sqlite3_close(ix->db);
    free(ix);
}

enum kiln_rc docs_index_builtin_path(char *out, size_t cap, struct kiln_err *err)
{
    const char *env = getenv("KILN_DOCS_DB");
    if (env && *env) {
        if (snprintf(out, cap, "%s", env) >= (int)cap)
            return kiln_fail(err, KILN_E_USAGE, "KILN_DOCS_DB is too long");
        if (access(out, R_OK) != 0)
            return kiln_fail(err, KILN_E_NOTFOUND,
                             "KILN_DOCS_DB=%s is not a readable file: unset it to use kiln's own "
                             "docs.db, or point it at one kiln-docs-index built",
                             out);
        return KILN_OK;
    }
    char self[PATH_MAX];
    enum kiln_rc rc = fs_self_path(true, self, sizeof(self), err);
    if (rc != KILN_OK)
        return rc;
    static const char *const rel[] = {"docs.db", "../share/kiln/docs.db"};
    for (size_t i = 0; i < 2; i++)
        if (snprintf(out, cap, "%s/%s", self, rel[i]) < (int)cap && access(out, R_OK) == 0)
            return KILN_OK;
    return kiln_fail(err, KILN_E_NOTFOUND,
                     "kiln's documentation index is not in %s/docs.db nor %s/../share/kiln/: "
                     "build it (cmake --build build --target kiln_docs_db) or set KILN_DOCS_DB",
                     self, self);
}

enum kiln_rc docs_index_open_builtin(struct docs_index **out, struct kiln_err *err)
{
    char path[PATH_MAX];
    enum kiln_rc rc = docs_index_builtin_path(path, sizeof(path), err);
    return rc == KILN_OK ? docs_index_open(path, out, err) : rc;
}

/* ---- a user's corpus ---- */

static enum kiln_rc cache_dir(char *out, size_t cap, struct kiln_err *err)
{
    const char *d = getenv("KILN_DOCS_CACHE");
    int n;
    if (d && *d) {
        n = snprintf(out, cap, "%s", d);
    } else if ((d = getenv("XDG_CACHE_HOME")) && *d) {
        n = snprintf(out, cap, "%s/kiln/docs", d);
    } else if ((d = getenv("HOME")) && *d) {
        n = snprintf(out, cap, "%s/.cache/kiln/docs", d);
    } else {
        return kiln_fail(err, KILN_E_USAGE,
                         "no place for the docs index cache: set KILN_DOCS_CACHE to a directory");
    }
    if (n >= (int)cap)
        return kiln_fail(err, KILN_E_USAGE, "docs cache path too long");
    enum kiln_rc rc = fs_mkdirs(out, err);
    if (rc != KILN_OK)
        return rc;
    /* Indexes found here are trusted: the directory must be ours alone to write. */
    struct stat st;
    if (stat(out, &st) != 0)
        return kiln_fail_errno(err, KILN_E_IO, "docs cache %s", out);
    if (st.st_uid != geteuid() || (st.st_mode & 022))
        return kiln_fail(err, KILN_E_REJECTED,
                         "docs cache %s is writable by others or not owned by this user: "
                         "chmod go-w it, or set KILN_DOCS_CACHE to a private directory",
                         out);
    return KILN_OK;
}

/* A cache file is used only when it is a regular file (not a link) owned
 * by this user and writable by nobody else: the directory's check alone
 * would trust a file someone else put or left there. */
static bool cache_file_ours(const char *path)
{
    struct stat st;
    return lstat(path, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
           !(st.st_mode & 022);
}

static enum kiln_rc add_passage(struct docs_corpus *c, const char *prefix, const char *v[6],
                                struct kiln_err *err)
{
    struct docs_passage *p = docs_corpus_slot(c, err);
    if (!p)
        return err->rc;
    snprintf(p->id, sizeof(p->id), "%s%s", prefix, v[0]);
    p->file = strdup(v[1]);
    p->source = strdup(v[2]);
    p->title = strdup(v[3]);
    p->topic = strdup(v[4]);
    p->body = strdup(v[5]);
    c->n++; /* freed by docs_corpus_free even when a strdup failed */
    if (!p->file || !p->source || !p->title || !p->topic || !p->body)
        return kiln_fail(err, KILN_E_NOMEM, "docs corpus");
    return KILN_OK;
}

/* kiln's passages, read back from its index. */
static enum kiln_rc read_passages(struct docs_index *ix, struct docs_corpus *c,
                                  struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    if (sqlite3_prepare_v2(ix->db,
                           "SELECT pid, file, source, title, topic, body FROM passages "
                           "ORDER BY rowid",
                           -1, &st, NULL) != SQLITE_OK)
        return db_fail(err, ix->db, "reading", "kiln's docs index");
    enum kiln_rc rc = KILN_OK;
    int s;
    while (rc == KILN_OK && (s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *v[6];
        for (int k = 0; k < 6; k++) {
            v[k] = (const char *)sqlite3_column_text(st, k);
            if (!v[k])
                v[k] = "";
        }
        rc = add_passage(c, "", v, err);
    }
    if (rc == KILN_OK && s != SQLITE_DONE)
        rc = db_fail(err, ix->db, "reading", "kiln's docs index");
    sqlite3_finalize(st);
    return rc;
}

enum kiln_rc docs_index_open_user(const char *dir, struct docs_index **out, struct kiln_err *err)
{
    *out = NULL;
    struct docs_corpus user = {0}, all = {0};
    struct docs_index *builtin = NULL;
    char udigest[SHA256_HEX_LEN + 1], key[SHA256_HEX_LEN + 1], cdir[PATH_MAX], path[PATH_MAX];
    enum kiln_rc rc = docs_corpus_load_dir(&user, dir, 0, udigest, err);
    if (rc == KILN_OK)
        rc = docs_index_open_builtin(&builtin, err);
    if (rc == KILN_OK) {
        struct sha256_ctx h;
        uint8_t d[SHA256_DIGEST_LEN];
        sha256_init(&h);
        sha256_update(&h, "kiln-docs-user-v1\n", 18);
        sha256_update(&h, builtin->digest, strlen(builtin->digest));
        sha256_update(&h, udigest, strlen(udigest));
        sha256_final(&h, d);
        sha256_hex(d, key);
        rc = cache_dir(cdir, sizeof(cdir), err);
    }
    if (rc == KILN_OK && snprintf(path, sizeof(path), "%s/%s.db", cdir, key) >= (int)sizeof(path))
        rc = kiln_fail(err, KILN_E_USAGE, "docs cache path too long");
    if (rc == KILN_OK) {
        /* A cached index of exactly these corpora, ours alone to write and
         * holding only checked text; anything else is rebuilt (its name
         * replaced, so a planted file or link is never read again). */
        struct kiln_err oerr;
        kiln_err_clear(&oerr);
        if (cache_file_ours(path) && docs_index_open(path, out, &oerr) == KILN_OK &&
            strcmp((*out)->digest, key) == 0) {
            docs_index_close(builtin);
            docs_corpus_free(&user);
            return KILN_OK;
        }
        docs_index_close(*out);
        *out = NULL;
    }
    if (rc == KILN_OK)
        rc = read_passages(builtin, &all, err);
    for (size_t i = 0; rc == KILN_OK && i < user.n; i++) {
        const struct docs_passage *p = &user.passages[i];
        const char *v[6] = {p->id, p->file, p->source, p->title, p->topic, p->body};
        rc = add_passage(&all, "user/", v, err);
    }
    if (rc == KILN_OK)
        rc = docs_index_build(path, &all, key, err);
    if (rc == KILN_OK)
        rc = docs_index_open(path, out, err);
    docs_index_close(builtin);
    docs_corpus_free(&user);
    docs_corpus_free(&all);
    return rc;
}

/* ---- searching ---- */

static const char *const stop_words[] = {
    "a",     "about", "after", "all",   "also", "an",   "and",  "any",   "are",   "as",    "at",
    "be",    "been",  "but",   "by",    "can",  "do",   "does", "each",  "for",   "from",  "has",
    "have",  "how",   "i",     "if",    "in",   "into", "is",   "it",    "its",   "may",   "more",
    "most",  "much",  "must",  "near",  "no",   "not",  "of",   "on",    "one",   "only",  "or",
    "other", "over",  "per",   "so",    "some", "such", "than", "that",  "the",   "their", "them",
    "then",  "there", "these", "they",  "this", "to",   "too",  "under", "up",    "use",   "used",
    "using", "very",  "was",   "we",    "were", "what", "when", "where", "which", "while", "who",
    "why",   "will",  "with",  "would", "you",  "your",
};

static bool is_stop(const char *w)
{
    for (size_t i = 0; i < sizeof(stop_words) / sizeof(stop_words[0]); i++)
        if (strcmp(w, stop_words[i]) == 0)
            return true;
    return false;
}

static bool is_word_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

enum kiln_rc docs_query_match(const char *query, char **out, struct kiln_err *err)
{
    *out = NULL;
    char terms[DOCS_QUERY_TERMS][33];
    size_t nterms = 0;
    for (const char *s = query; *s && nterms < DOCS_QUERY_TERMS;) {
        if (!is_word_char(*s)) {
            s++;
            continue;
        }
        char w[33];
        size_t n = 0;
        bool letter = false;
        for (; is_word_char(*s); s++) {
            char c = *s >= 'A' && *s <= 'Z' ? (char)(*s - 'A' + 'a') : *s;
            letter |= c >= 'a' && c <= 'z';
            if (n < sizeof(w) - 1)
                w[n++] = c;
        }
        w[n] = '\0';
        if (n < 2 || !letter || is_stop(w))
            continue; /* "a", "1024", "the" select nothing */
        bool dup = false;
        for (size_t i = 0; i < nterms && !dup; i++)
            dup = strcmp(terms[i], w) == 0;
        if (!dup)
            memcpy(terms[nterms++], w, n + 1);
    }
    struct strbuf sb;
    strbuf_init(&sb);
    for (size_t i = 0; i < nterms; i++)
        strbuf_printf(&sb, "%s\"%s\"", i ? " OR " : "", terms[i]);
    return strbuf_finish(&sb, out, err);
}

static char *col_dup(sqlite3_stmt *st, int k)
{
    const unsigned char *t = sqlite3_column_text(st, k);
    return strdup(t ? (const char *)t : "");
}

enum kiln_rc docs_index_search(struct docs_index *ix, const char *query, size_t limit,
                               struct docs_hits *out, struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    if (limit < 1 || limit > DOCS_LIMIT_MAX)
        return kiln_fail(err, KILN_E_USAGE, "a docs search returns 1..%d passages, not %zu",
                         DOCS_LIMIT_MAX, limit);
    char *match = NULL;
    enum kiln_rc rc = docs_query_match(query, &match, err);
    if (rc != KILN_OK || !match[0]) {
        free(match);
        return rc;
    }
    out->v = calloc(limit, sizeof(*out->v));
    sqlite3_stmt *st = NULL;
    if (!out->v)
        rc = kiln_fail(err, KILN_E_NOMEM, "docs search");
    else if (sqlite3_prepare_v2(ix->db,
                                "SELECT pid, title, source, topic, body, "
                                "snippet(passages, 5, '', '', '...', 28), "
                                "bm25(passages, 0.0, 0.0, 0.0, 4.0, 2.0, 1.0) AS score "
                                "FROM passages WHERE passages MATCH ?1 "
                                "ORDER BY score, pid LIMIT ?2",
                                -1, &st, NULL) != SQLITE_OK)
        rc = db_fail(err, ix->db, "searching", "the docs index");
    if (rc == KILN_OK) {
        sqlite3_bind_text(st, 1, match, -1, SQLITE_STATIC);
        sqlite3_bind_int64(st, 2, (sqlite3_int64)limit);
    }
    int s = SQLITE_DONE;
    while (rc == KILN_OK && out->n < limit && (s = sqlite3_step(st)) == SQLITE_ROW) {
        struct docs_hit *h = &out->v[out->n++];
        h->id = col_dup(st, 0);
        h->title = col_dup(st, 1);
        h->source = col_dup(st, 2);
        h->topic = col_dup(st, 3);
        h->body = col_dup(st, 4);
        h->excerpt = col_dup(st, 5);
        h->score = sqlite3_column_double(st, 6);
        for (char *c = h->excerpt; c && *c; c++) /* one line for display */
            if (*c == '\n' || *c == '\t')
                *c = ' ';
        if (!h->id || !h->title || !h->source || !h->topic || !h->body || !h->excerpt)
            rc = kiln_fail(err, KILN_E_NOMEM, "docs search");
    }
    if (rc == KILN_OK && s != SQLITE_DONE && s != SQLITE_ROW)
        rc = db_fail(err, ix->db, "searching", "the docs index");
    sqlite3_finalize(st);
    free(match);
    if (rc != KILN_OK)
        docs_hits_free(out);
    return rc;
}

void docs_hit_free(struct docs_hit *x)
{
    free(x->id);
    free(x->title);
    free(x->source);
    free(x->topic);
    free(x->body);
    free(x->excerpt);
    memset(x, 0, sizeof(*x));
}

void docs_hits_free(struct docs_hits *h)
{
    if (!h)
        return;
    for (size_t i = 0; i < h->n; i++)
        docs_hit_free(&h->v[i]);
    free(h->v);
    memset(h, 0, sizeof(*h));
}
