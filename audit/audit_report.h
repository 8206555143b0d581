/* `airlock report`: one self-contained HTML page of what network logs show (totals and a
 * timeline, hosts, blocked requests with suggested entries, upstream errors, TLS REJECTED
 * lines, DNS names never requested, credential lines). The logs are read as a stream into
 * capped tables (AUDIT_REPORT_*_MAX in audit_report_int.h): memory does not grow with the
 * number of lines, and what a full table refused is counted on the page. */
#ifndef AUDIT_REPORT_H
#define AUDIT_REPORT_H

#include <stdio.h>

#include "addons/addon_policy.h"

typedef struct audit_report audit_report_t;

/* current (borrowed; may be NULL): explains blocked requests and limits the suggestions to
 * what it still blocks. name is shown on the page (borrowed). NULL when out of memory. */
audit_report_t *audit_report_new(const addon_policy_t *current, const char *name);
void audit_report_free(audit_report_t *r);

/* Marks the start of the next log (its name is borrowed for the page and examples). */
void audit_report_file(audit_report_t *r, const char *file);

/* As audit_line_cb. Returns 0. */
int audit_report_line(audit_report_t *r, const char *file, unsigned long lineno, const char *line,
                      size_t len, int overlong);

/* Lines recognized as network-log lines. */
unsigned long audit_report_known_lines(const audit_report_t *r);

/* Writes the page. title is borrowed. */
void audit_report_write_html(audit_report_t *r, FILE *out, const char *title);

/* Bytes held by the tables (for the memory figures). */
size_t audit_report_bytes(const audit_report_t *r);

#endif
