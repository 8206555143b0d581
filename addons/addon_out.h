/* A snprintf-style text writer for the describe/explain functions of the addons: writes at
 * most len-1 bytes plus a NUL into buf, and counts the full length needed. */
#ifndef ADDON_OUT_H
#define ADDON_OUT_H

#include <stddef.h>

#include "addons/addon.h"

typedef struct addon_out {
    char *buf;  /* may be NULL when len is 0 (measuring only) */
    size_t len;
    size_t pos; /* bytes the full text needs so far */
} addon_out_t;

/* Appends n bytes (borrowed). */
void addon_out_put(addon_out_t *o, const char *s, size_t n);

/* Appends printf-style text (each call up to 255 bytes). */
void addon_out_fmt(addon_out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends bytes from a file or a request on one printable line: printable ASCII as is, '\'
 * doubled, anything else as \xHH. */
void addon_out_esc(addon_out_t *o, addon_str_t s);

#endif
