/*
 * plog.h - where the pipeline's progress lines go ("kiln: evaluating c3").
 * A caller that draws its own status line on the terminal (kiln optimize)
 * passes a sink that clears the line, prints the text and redraws it, so a
 * log line and the status line never share a terminal row. NULL: stderr.
 */
#ifndef KILN_PLOG_H
#define KILN_PLOG_H

#include "error.h"

struct plog {
    /* One whole line, ending in '\n'. */
    void (*line)(void *ctx, const char *text);
    void *ctx;
};

/* Formats one line (cut at 1 KiB) and hands it to `log`, or stderr. */
void plog_printf(const struct plog *log, const char *fmt, ...) KILN_PRINTF(2, 3);

#endif
