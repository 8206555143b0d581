/* HTML output helpers for the report: escaping and a few table pieces. */
#ifndef AUDIT_HTML_H
#define AUDIT_HTML_H

#include <stddef.h>
#include <stdio.h>

/* Writes s[0..n) with & < > " ' escaped and bytes outside printable ASCII as U+FFFD. */
void audit_html_esc(FILE *out, const char *s, size_t n);

/* audit_html_esc for a NUL-terminated string. */
void audit_html_escs(FILE *out, const char *s);

#endif
