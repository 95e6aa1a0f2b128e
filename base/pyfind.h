/*
 * pyfind.h - find a python3 that has numpy, for workload scripts (found,
 * not imported: the import is what costs; kiln doctor imports it for real
 * in a script sandbox).
 * Tried in order: $KILN_PYTHON, every python3 on PATH, /usr/bin/python3.
 * The sandbox's `script` image binds what this finds (the interpreter's
 * prefix and base prefix), so a virtual environment works as well.
 */
#ifndef KILN_PYFIND_H
#define KILN_PYFIND_H

#include <limits.h>

#include "error.h"

struct pyfind {
    char path[PATH_MAX];        /* the interpreter as found (may be a venv's) */
    char executable[PATH_MAX];  /* sys.executable */
    char prefix[PATH_MAX];      /* sys.prefix */
    char base_prefix[PATH_MAX]; /* sys.base_prefix */
    char python_version[32];
    char numpy_version[32];
};

/* Probes (runs python) once per process and per interpreter identity: a
 * later call with the same candidates, each the same file (device, inode,
 * size, mtime, ctime), returns the remembered answer without running
 * python. Across processes, the answer is also kept for 10 minutes in
 * $XDG_RUNTIME_DIR/kiln/pyfind.memo (/run/kiln for root; none for another
 * user without XDG_RUNTIME_DIR), keyed on the same plus the working
 * directory and the environment, and used only when that directory and
 * file are this user's alone. Thread-safe. */
enum kiln_rc pyfind_numpy(struct pyfind *out, struct kiln_err *err) KILN_NODISCARD;

#endif
