/* The per-conversation CA: a fresh CA whose name constraints permit only what the allowlist
 * can reach (`airlock ca init --per-conversation`, `airlock run --ca-per-conversation`). The
 * ca module enforces the constraints of any CA it loads; this only builds them. */
#ifndef PX_CACONV_H
#define PX_CACONV_H

#include <stddef.h>

#include "addons/addon_policy.h"
#include "ca/ca.h"

/* What the answers and the network log say about a host the conversation CA cannot sign for. */
#define PX_CACONV_WHY "outside the conversation CA's name constraints; start a new conversation"
/* Said after a CA's file when --ca-per-conversation finds it without name constraints. */
#define PX_CACONV_UNCONSTRAINED                                                                    \
    "has no name constraints; --ca-per-conversation never uses an unconstrained CA"

/* Adds to c the subtree of every host pattern p allows (every format; block entries aside).
 * Borrows both. 0, or a negative code with err naming the entry ("domains[0] (allow.txt:1):
 * host pattern '*' can match ..."). */
int px_caconv_constraints(const addon_policy_t *p, ca_constraints_t *c, char *err, size_t errlen);

/* Loads the allowlist at path (format fmt; AUTO detects it) and creates the constrained CA in
 * confdir, valid days. proxy_ip (may be NULL) is permitted too: a client that sends no SNI
 * (`airlock health` among them) gets a leaf for the proxy's address. *desc (may be NULL) gets
 * the constraints' description (free()). 0 or a negative code with err filled. */
int px_caconv_create(const char *confdir, const char *path, addon_policy_format_t fmt, int days,
                     const char *proxy_ip, char **desc, char *err, size_t errlen);

/* As px_caconv_create, from an allowlist already loaded (p, borrowed; path names it in
 * messages). */
int px_caconv_create_from(const char *confdir, const addon_policy_t *p, const char *path, int days,
                          const char *proxy_ip, char **desc, char *err, size_t errlen);

typedef struct px_log px_log_t;

/* Writes to log the network-log line for a handshake that failed because the connection's CA
 * may not sign for host (borrowed, normalized), policy being the connection's allowlist: one
 * for a host the allowlist now allows (a reload widened it: a new conversation is needed),
 * another for a host it does not allow (the client cannot get the 403 answer, which would
 * need a certificate). */
void px_caconv_log_refused(px_log_t *log, const addon_policy_t *policy, const char *host);

/* For `airlock run --ca-per-conversation`: creates the constrained CA in confdir (as
 * px_caconv_create) unless confdir holds a CA already. 0 (*created 1 or 0), or negative with
 * err filled. The caller must still refuse a CA that turns out unconstrained. */
int px_caconv_ensure(const char *confdir, const char *path, addon_policy_format_t fmt, int days,
                     const char *proxy_ip, int *created, char *err, size_t errlen);

#define PX_CACONV_SB_CACHE 256 /* leaves cached per sandbox CA (a sandbox reaches few hosts) */

/* What px_caconv_sandbox() needs (all borrowed). */
typedef struct px_caconv_sb {
    const char *privdir;          /* where the CA and its key live: only airlock reads it */
    const char *pubdir;           /* the sandbox's directory: gets the certificate only */
    const addon_policy_t *policy; /* the sandbox's allowlist, loaded from path */
    const char *path;
    int days;
    const char *proxy_ip; /* permitted too (clients without SNI); may be NULL */
} px_caconv_sb_t;

/* --sandboxes with --ca-per-conversation: one sandbox's CA. Made in a->privdir from a->policy
 * unless privdir holds one from an earlier start (*created says which), loaded into *out
 * (ca_free), refused when it has no name constraints; its root certificate (what the agent
 * trusts) is copied into a->pubdir. *desc gets a new CA's constraints (free(); may be NULL).
 * 0, or a negative code with err filled; a CA made by the failed call is removed again. */
int px_caconv_sandbox(const px_caconv_sb_t *a, ca_t **out, int *created, char **desc, char *err,
                      size_t errlen);

#endif
