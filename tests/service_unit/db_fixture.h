/* db_fixture.h - the service unit tests' fixture: a fresh kiln database in a
 * directory of its own, opened before each test and removed after it (the
 * cmocka setup and teardown of test_serve_queue and test_serve_tenants). */
#ifndef KILN_TEST_DB_FIXTURE_H
#define KILN_TEST_DB_FIXTURE_H

#include <stdio.h>
#include <stdlib.h>

#include "fsutil.h"
#include "service_impl.h"

struct fixture {
    char dir[4096], db[4200];
    struct sdb d;
};

static int db_fixture_setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    struct kiln_err e = KILN_ERR_INIT;
    if (!f)
        return -1;
    if (fs_make_tempdir("serve-unit", f->dir, sizeof(f->dir), &e) != KILN_OK) {
        free(f);
        return -1;
    }
    snprintf(f->db, sizeof(f->db), "%s/kiln.db", f->dir);
    if (sdb_open(f->db, &f->d, &e) != KILN_OK) {
        if (fs_remove_tree(f->dir, &e) != KILN_OK)
            fprintf(stderr, "db_fixture: %s\n", e.msg);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int db_fixture_teardown(void **state)
{
    struct fixture *f = *state;
    struct kiln_err e = KILN_ERR_INIT;
    sdb_close(&f->d);
    int rc = fs_remove_tree(f->dir, &e) == KILN_OK ? 0 : -1;
    free(f);
    return rc;
}

#endif
