#!/bin/sh
# An uninitialised struct kiln_err handed straight to kiln_fail() does not
# build (base/error.h's access attribute: GCC 11 and later, under -Werror);
# the same function with KILN_ERR_INIT does. Skips under other compilers.
# usage: err_uninit_refused.sh CC COMPILER_ID
set -u
cc=$1 id=$2 src=${KILN_SOURCE_DIR:?KILN_SOURCE_DIR not set}
[ "$id" = GNU ] || { echo "skip: $id has no access attribute"; exit 77; }
major=$("$cc" -dumpversion | cut -d. -f1)
[ "$major" -ge 11 ] || { echo "skip: GCC $major has no access attribute"; exit 77; }
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
body() {
    printf '#include "error.h"\nint f(int x);\nint f(int x)\n{\n    struct kiln_err e%s;\n' "$1"
    printf '    if (x)\n        return kiln_fail(&e, KILN_E_IO, "boom");\n    return 0;\n}\n'
}
body " = KILN_ERR_INIT" >"$dir/good.c"
body "" >"$dir/bad.c"
# -O2 as the default build: the warning needs the optimiser's data flow.
build() { "$cc" -std=c11 -O2 -Wall -Wextra -Werror -I"$src/base" -c "$1" -o "$1.o"; }
if ! build "$dir/good.c"; then
    echo "FAIL: a function using KILN_ERR_INIT does not build"
    exit 1
fi
if build "$dir/bad.c" 2>"$dir/err"; then
    echo "FAIL: kiln_fail() on an uninitialised struct kiln_err built"
    exit 1
fi
if ! grep -q 'maybe-uninitialized' "$dir/err"; then
    echo "FAIL: refused, but not for the uninitialised error:"
    cat "$dir/err"
    exit 1
fi
echo "ok: kiln_fail() on an uninitialised struct kiln_err does not build"
