/* `airlock suggest`: allowlist entries, as YAML for a human to review, that would allow what
 * the logs show blocked (or, given the current allowlist, what it still blocks). Never
 * applied: the output is text. Streaming; memory bounded by AUDIT_SUGG_HOSTS_MAX hosts. */
#ifndef AUDIT_SUGGEST_H
#define AUDIT_SUGGEST_H

#include <stdio.h>

#include "addons/addon_policy.h"
#include "audit/audit_sugg.h"

typedef struct audit_suggest audit_suggest_t;

/* current (borrowed; may be NULL): only requests it blocks are considered; without it, the
 * requests the log shows blocked by the allowlist. NULL when out of memory. */
audit_suggest_t *audit_suggest_new(const addon_policy_t *current);
void audit_suggest_free(audit_suggest_t *s);

/* As audit_line_cb; file is kept for examples (must outlive s). Returns 0. */
int audit_suggest_line(audit_suggest_t *s, const char *file, unsigned long lineno, const char *line,
                       size_t len, int overlong);

/* Writes the YAML (a valid allowlist document: comments and url_prefixes). */
void audit_suggest_write(const audit_suggest_t *s, FILE *out);

/* The suggestions gathered (for the report and tests). */
const audit_sugg_t *audit_suggest_sugg(const audit_suggest_t *s);

/* Lines recognized as network-log lines. */
unsigned long audit_suggest_known_lines(const audit_suggest_t *s);

#endif
