#include "plog.h"

#include <stdarg.h>
#include <stdio.h>

void plog_printf(const struct plog *log, const char *fmt, ...)
{
    char text[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof(text), fmt, ap);
    va_end(ap);
    if (log && log->line)
        log->line(log->ctx, text);
    else
        fputs(text, stderr);
}
