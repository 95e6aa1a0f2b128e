/* auth.c - API tokens: "kiln_<id>_<secret>", 32 random bytes of secret.
 * The database keeps only SHA-256 of the whole token; a request's token is
 * found by its id and compared with CRYPTO_memcmp, so neither the lookup
 * nor the compare tells an attacker how much of a guess was right. */
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "service_impl.h"

#define SECRET_HEX 64

/* YYYY-MM-DD HH:MM UTC of epoch seconds t. */
static void utc_date(double t, char *out, size_t cap)
{
    time_t s = (time_t)t;
    struct tm tm;
    if (!gmtime_r(&s, &tm) || !strftime(out, cap, "%Y-%m-%d %H:%M UTC", &tm))
        snprintf(out, cap, "%.0f", t);
}

static enum kiln_rc token_hash(const char *tok, unsigned char out[32], struct kiln_err *err)
{
    unsigned int n = 0;
    if (EVP_Digest(tok, strlen(tok), out, &n, EVP_sha256(), NULL) != 1 || n != 32)
        return kiln_fail(err, KILN_E_INTERNAL, "OpenSSL SHA-256 failed");
    return KILN_OK;
}

static bool hex_ok(const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

enum kiln_rc serve_token_add(const struct serve_token_opts *o, char out[SERVE_TOKEN_MAX],
                             struct kiln_err *err)
{
    size_t nl = o->name ? strlen(o->name) : 0;
    if (nl == 0 || nl > 63)
        return kiln_fail(err, KILN_E_USAGE, "a token needs a NAME of 1 to 63 characters");
    for (size_t i = 0; i < nl; i++) {
        char c = o->name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.' || c == '@'))
            return kiln_fail(err, KILN_E_USAGE, "token NAME '%s' may hold only A-Z a-z 0-9 _ - . @",
                             o->name);
    }
    char id[SERVE_TOKEN_ID_LEN + 1], secret[SECRET_HEX + 1];
    enum kiln_rc rc = serve_random_hex(id, SERVE_TOKEN_ID_LEN, err);
    if (rc == KILN_OK)
        rc = serve_random_hex(secret, SECRET_HEX, err);
    if (rc != KILN_OK)
        return rc;
    snprintf(out, SERVE_TOKEN_MAX, "kiln_%s_%s", id, secret);
    unsigned char h[32];
    if ((rc = token_hash(out, h, err)) != KILN_OK)
        return rc;
    struct sdb d;
    if ((rc = sdb_open(o->db, &d, err)) != KILN_OK)
        return rc;
    sqlite3_stmt *st = NULL;
    double burst = o->burst > 0 ? o->burst : SERVE_TOKEN_BURST;
    if (sqlite3_prepare_v2(d.db,
                           "INSERT INTO tokens(id, name, hash, admin, created, rate, burst, quota,"
                           " bucket, bucket_at, expires) VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?7,"
                           " ?5, ?9)",
                           -1, &st, NULL) != SQLITE_OK) {
        rc = kiln_fail(err, KILN_E_IO, "database: %s", sqlite3_errmsg(d.db));
    } else {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 2, o->name, -1, SQLITE_STATIC);
        sqlite3_bind_blob(st, 3, h, 32, SQLITE_STATIC);
        sqlite3_bind_int(st, 4, o->admin);
        sqlite3_bind_double(st, 5, serve_now());
        sqlite3_bind_double(st, 6, o->rate > 0 ? o->rate : SERVE_TOKEN_RATE);
        sqlite3_bind_double(st, 7, burst);
        sqlite3_bind_int64(st, 8, o->quota > 0 ? o->quota : SERVE_TOKEN_QUOTA);
        if (o->expires > 0)
            sqlite3_bind_double(st, 9, o->expires);
        int r = sqlite3_step(st);
        if (r == SQLITE_CONSTRAINT)
            rc = kiln_fail(err, KILN_E_USAGE,
                           "a token named '%s' exists already: choose another NAME", o->name);
        else if (r != SQLITE_DONE)
            rc = kiln_fail(err, KILN_E_IO, "database: %s", sqlite3_errmsg(d.db));
    }
    sqlite3_finalize(st);
    sdb_close(&d);
    if (rc != KILN_OK)
        memset(out, 0, SERVE_TOKEN_MAX);
    return rc;
}

enum kiln_rc sauth_check(struct sdb *d, const char *authorization, bool basic_ok,
                         struct stoken *out, struct kiln_err *err)
{
    memset(out, 0, sizeof(*out));
    char tok[SERVE_TOKEN_MAX];
    enum kiln_rc rc = serve_parse_authorization(authorization, basic_ok, tok, err);
    if (rc != KILN_OK)
        return rc;
    const char *p = tok;
    size_t n = strlen(p);
    if (n != 5 + SERVE_TOKEN_ID_LEN + 1 + SECRET_HEX || strncmp(p, "kiln_", 5) ||
        p[5 + SERVE_TOKEN_ID_LEN] != '_' || !hex_ok(p + 5, SERVE_TOKEN_ID_LEN) ||
        !hex_ok(p + 6 + SERVE_TOKEN_ID_LEN, SECRET_HEX))
        return kiln_fail(err, KILN_E_REJECTED,
                         "the token is malformed (expected kiln_<16 hex>_<64 "
                         "hex>, as printed by kiln token add)");
    char id[SERVE_TOKEN_ID_LEN + 1];
    memcpy(id, p + 5, SERVE_TOKEN_ID_LEN);
    id[SERVE_TOKEN_ID_LEN] = '\0';
    unsigned char h[32], want[32];
    rc = token_hash(p, h, err);
    if (rc != KILN_OK)
        return rc;
    memset(want, 0xff, sizeof(want));
    bool found = false;
    sqlite3_stmt *st = NULL;
    pthread_mutex_lock(&d->mu);
    double expires = 0, revoked = 0;
    if (sqlite3_prepare_v2(d->db,
                           "SELECT hash, name, admin, expires, revoked FROM tokens WHERE id=?1", -1,
                           &st, NULL) != SQLITE_OK) {
        rc = kiln_fail(err, KILN_E_IO, "database: %s", sqlite3_errmsg(d->db));
    } else {
        sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW && sqlite3_column_bytes(st, 0) == 32) {
            memcpy(want, sqlite3_column_blob(st, 0), 32);
            snprintf(out->name, sizeof(out->name), "%s", (const char *)sqlite3_column_text(st, 1));
            out->admin = sqlite3_column_int(st, 2) != 0;
            expires = sqlite3_column_double(st, 3); /* NULL reads 0: never */
            revoked = sqlite3_column_double(st, 4);
            found = true;
        } else if (r != SQLITE_ROW && r != SQLITE_DONE) {
            rc = kiln_fail(err, KILN_E_IO, "database: %s", sqlite3_errmsg(d->db));
        }
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&d->mu);
    if (rc != KILN_OK)
        return rc;
    /* Compared even when the id is unknown, so both cases take the same time. */
    bool match = CRYPTO_memcmp(h, want, 32) == 0;
    if (!found || !match) {
        memset(out, 0, sizeof(*out));
        return kiln_fail(err, KILN_E_REJECTED,
                         "the token is not valid (revoked, mistyped, or "
                         "from another server's database)");
    }
    /* Only a holder of the whole token learns that it was revoked or expired. */
    char when[32];
    if (revoked > 0 || (expires > 0 && serve_now() >= expires)) {
        bool rev = revoked > 0;
        utc_date(rev ? revoked : expires, when, sizeof(when));
        kiln_fail(err, KILN_E_REJECTED,
                  "the token '%s' %s on %s: ask the operator for a new one (kiln token add)",
                  out->name, rev ? "was revoked" : "expired", when);
        memset(out, 0, sizeof(*out));
        return KILN_E_REJECTED;
    }
    snprintf(out->id, sizeof(out->id), "%s", id);
    return KILN_OK;
}

enum kiln_rc sauth_still_valid(struct sdb *d, const char *token_id, bool *valid, bool *expired,
                               char *why, size_t cap, struct kiln_err *err)
{
    sqlite3_stmt *st = NULL;
    enum kiln_rc rc = KILN_OK;
    *valid = false;
    *expired = false;
    pthread_mutex_lock(&d->mu);
    double expires = 0, revoked = 0;
    char name[64] = "";
    bool found = false;
    if (sdb_prep(d, "SELECT name, expires, revoked FROM tokens WHERE id=?1", &st) != SQLITE_OK) {
        rc = sdb_fail(d, err, "token");
    } else {
        sqlite3_bind_text(st, 1, token_id, -1, SQLITE_STATIC);
        int r = sqlite3_step(st);
        if (r == SQLITE_ROW) {
            snprintf(name, sizeof(name), "%s", (const char *)sqlite3_column_text(st, 0));
            expires = sqlite3_column_double(st, 1);
            revoked = sqlite3_column_double(st, 2);
            found = true;
        } else if (r != SQLITE_DONE) {
            rc = sdb_fail(d, err, "token");
        }
    }
    sqlite3_finalize(st);
    pthread_mutex_unlock(&d->mu);
    if (rc != KILN_OK)
        return rc;
    char when[32];
    if (!found) {
        snprintf(why, cap, "the token was removed from the server's database");
    } else if (revoked > 0 || (expires > 0 && serve_now() >= expires)) {
        *expired = revoked <= 0;
        utc_date(*expired ? expires : revoked, when, sizeof(when));
        snprintf(why, cap, "the token '%s' %s on %s: ask the operator for a new one", name,
                 *expired ? "expired" : "was revoked", when);
    } else {
        *valid = true;
        why[0] = '\0';
    }
    return KILN_OK;
}

/* The database of `kiln token list|revoke`: it must exist already. */
static enum kiln_rc open_existing(const char *db, struct sdb *d, struct kiln_err *err)
{
    if (access(db, F_OK) != 0)
        return kiln_fail(err, KILN_E_USAGE,
                         "no database %s: give the server's with --db (kiln token add creates one)",
                         db);
    return sdb_open(db, d, err);
}

enum kiln_rc serve_token_list(const char *db, bool json, struct kiln_err *err)
{
    struct sdb d;
    enum kiln_rc rc = open_existing(db, &d, err);
    if (rc != KILN_OK)
        return rc;
    json_t *rows = NULL;
    rc = sdb_query_json(&d,
                        "SELECT name, id, CASE WHEN admin THEN 'admin' ELSE 'submit' END AS scope,"
                        " created, expires, revoked, rate, burst, quota,"
                        " (SELECT COUNT(*) FROM jobs j WHERE j.token_id=t.id) AS submissions,"
                        " (SELECT COUNT(*) FROM jobs j WHERE j.token_id=t.id AND state!='done')"
                        " AS pending FROM tokens t ORDER BY created",
                        NULL, &rows, err);
    /* The handle the public routes show for each (without --public-names). */
    if (rc == KILN_OK)
        rc = sdb_public_names(&d, rows, "id", NULL, "handle", err);
    sdb_close(&d);
    if (rc != KILN_OK) {
        json_decref(rows);
        return rc;
    }
    if (json) {
        json_t *doc = json_pack("{s:i,s:s,s:o}", "version", 1, "db", db, "tokens", rows);
        if (!doc || json_dumpf(doc, stdout, JSON_INDENT(2)) != 0)
            rc = kiln_fail(err, KILN_E_IO, "cannot print the token list as JSON");
        json_decref(doc);
        if (rc == KILN_OK)
            putchar('\n');
        return rc;
    }
    printf("%-20s %-16s %-17s %-6s %-20s %-20s %-8s %s\n", "NAME", "ID", "HANDLE", "SCOPE",
           "CREATED", "EXPIRES", "STATE", "SUBMISSIONS");
    double now = serve_now();
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        char created[32], expires[32] = "never";
        double ex = json_number_value(json_object_get(r, "expires"));
        double rv = json_number_value(json_object_get(r, "revoked"));
        utc_date(json_number_value(json_object_get(r, "created")), created, sizeof(created));
        if (ex > 0)
            utc_date(ex, expires, sizeof(expires));
        printf("%-20s %-16s %-17s %-6s %-20s %-20s %-8s %lld (%lld pending)\n",
               json_string_value(json_object_get(r, "name")),
               json_string_value(json_object_get(r, "id")),
               json_string_value(json_object_get(r, "handle")),
               json_string_value(json_object_get(r, "scope")), created, expires,
               rv > 0                ? "revoked"
               : ex > 0 && now >= ex ? "expired"
                                     : "active",
               (long long)json_integer_value(json_object_get(r, "submissions")),
               (long long)json_integer_value(json_object_get(r, "pending")));
    }
    if (json_array_size(rows) == 0)
        printf("(no tokens: kiln token add NAME --db %s)\n", db);
    json_decref(rows);
    return KILN_OK;
}

enum kiln_rc serve_token_revoke(const char *db, const char *name, struct kiln_err *err)
{
    struct sdb d;
    enum kiln_rc rc = open_existing(db, &d, err);
    if (rc != KILN_OK)
        return rc;
    sqlite3_stmt *st = NULL;
    if (sdb_prep(&d, "UPDATE tokens SET revoked=?2 WHERE name=?1 AND revoked IS NULL", &st) !=
        SQLITE_OK) {
        rc = sdb_fail(&d, err, "revoke");
    } else {
        sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
        sqlite3_bind_double(st, 2, serve_now());
        if (sqlite3_step(st) != SQLITE_DONE)
            rc = sdb_fail(&d, err, "revoke");
        else if (sqlite3_changes(d.db) == 0)
            rc = kiln_fail(err, KILN_E_USAGE,
                           "no active token named '%s' in %s (kiln token list shows them)", name,
                           db);
    }
    sqlite3_finalize(st);
    sdb_close(&d);
    return rc;
}
