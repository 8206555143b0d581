/* Suggested allowlist entries: the smallest set that would allow a set of blocked requests.
 *
 * One url_prefixes entry per host (hosts are never widened to a glob): the path is the
 * requests' longest common prefix at a '/' boundary followed by '*' (the exact path when all
 * requests share it and none had a query; no path when the prefix is "/"), the methods are
 * the ones the requests used, and ports lists the non-default ports they reached. Requests no
 * entry can allow (pre-checks: see audit_req_unallowable) are counted apart, never suggested. */
#ifndef AUDIT_SUGG_H
#define AUDIT_SUGG_H

#include <stddef.h>

#include "audit/audit_req.h"

#define AUDIT_SUGG_HOSTS_MAX 8192        /* hosts with suggestions */
#define AUDIT_SUGG_PREFIX_MAX 1024       /* bytes of a path prefix kept */
#define AUDIT_SUGG_METHODS_MAX 8         /* more distinct methods: the entry allows any */
#define AUDIT_SUGG_PORTS_MAX 32          /* distinct non-default ports listed per host */
#define AUDIT_SUGG_EXAMPLE_MAX 160       /* bytes of the example URL in the comment */
#define AUDIT_SUGG_ENTRY_MAX (16 * 1024) /* one entry's YAML */

typedef struct audit_sugg audit_sugg_t;

/* NULL when out of memory. */
audit_sugg_t *audit_sugg_new(void);
void audit_sugg_free(audit_sugg_t *s);

/* Adds blocked request r (borrowed) that some entry could allow. url is the logged URL, for
 * the example comment. 0, or PX_ETOOBIG when the host table is full (counted). */
int audit_sugg_add(audit_sugg_t *s, const audit_req_t *r, const char *url, size_t url_len);

/* Hosts with a suggestion; requests added; requests refused because the table was full or
 * the host cannot be written as a plain pattern. */
size_t audit_sugg_hosts(const audit_sugg_t *s);
unsigned long audit_sugg_requests(const audit_sugg_t *s);
unsigned long audit_sugg_skipped(const audit_sugg_t *s);

/* The hosts in name order: the i-th host's name (NUL-terminated, static while s lives). */
const char *audit_sugg_host(const audit_sugg_t *s, size_t i);

/* Writes the i-th host's entry as YAML list items under url_prefixes (indent "  ", with a
 * comment line first), snprintf-style: returns the full length. */
size_t audit_sugg_entry(const audit_sugg_t *s, size_t i, char *buf, size_t len);

/* Index (name order) of host, or (size_t)-1. */
size_t audit_sugg_find(const audit_sugg_t *s, const char *host, size_t hlen);

#endif
