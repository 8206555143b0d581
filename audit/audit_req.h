/* A request read back from an access line, as the allowlist sees it, and re-decided with the
 * policy code the proxy runs (addons/addon_policy.h).
 *
 * Only lines whose verdict came from the allowlist can be re-decided: the pre-checks airlock
 * makes before the policy (its own 400/408/431 answers, host mismatches, CONNECT on 80/443)
 * and checks after it that this tool cannot repeat are named instead (not_why). */
#ifndef AUDIT_REQ_H
#define AUDIT_REQ_H

#include <stddef.h>
#include <stdint.h>

#include "addons/addon_policy.h"
#include "audit/audit_line.h"

#define AUDIT_PATH_MAX AUDIT_LINE_MAX /* an unescaped path never outgrows its line */
#define AUDIT_WHY_MAX 1024            /* a decision's explanation */

typedef struct audit_req {
    int redecidable;     /* 1: the fields below are set */
    const char *not_why; /* else why not (static text) */
    int then_allowed;    /* the allowlist let it through when it was logged */
    int connect;         /* an explicit-proxy CONNECT (decided on host and port only) */
    char method[AUDIT_METHOD_MAX + 1];
    char host[AUDIT_HOST_MAX + 1]; /* unescaped, lowercased, no trailing dot, no brackets */
    size_t host_len;
    char path[AUDIT_PATH_MAX]; /* unescaped path + query, as the client sent it */
    size_t path_len;
    uint16_t port;
    int tls;
} audit_req_t;

/* Reads access line l (borrowed) into *r. Returns 0 with r->redecidable 0 or 1. */
int audit_req_from_line(const audit_line_t *l, audit_req_t *r);

/* Decides r under p (borrowed; NULL = empty policy) as the proxy would: 1 allowed, 0 blocked;
 * why (whylen bytes, may be NULL) gets addon_policy_explain's text, or for a CONNECT a line
 * saying whether an entry names the host and port. */
int audit_req_decide(const addon_policy_t *p, const audit_req_t *r, char *why, size_t whylen);

/* The policy's view of r (views into r). */
addon_policy_query_t audit_req_query(const audit_req_t *r);

/* A policy that allows every host, path, method and the default ports: what it still blocks,
 * no allowlist entry can allow (pre-checks). One reference for the caller; NULL when out of
 * memory. */
addon_policy_t *audit_req_probe_policy(void);

/* 1 when no allowlist entry could allow r (probe is audit_req_probe_policy()); why gets the
 * probe's explanation. */
int audit_req_unallowable(const addon_policy_t *probe, const audit_req_t *r, char *why,
                          size_t whylen);

#endif
