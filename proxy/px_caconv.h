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

typedef struct px_engine px_engine_t;

/* Writes the network-log line for a handshake that failed because eng's CA may not sign for
 * host (borrowed, normalized): one for a host the allowlist now allows (a reload widened it:
 * a new conversation is needed), another for a host it does not allow (the client cannot get
 * the 403 answer, which would need a certificate). */
void px_caconv_log_refused(px_engine_t *eng, const char *host);

/* For `airlock run --ca-per-conversation`: creates the constrained CA in confdir (as
 * px_caconv_create) unless confdir holds a CA already. 0 (*created 1 or 0), or negative with
 * err filled. The caller must still refuse a CA that turns out unconstrained. */
int px_caconv_ensure(const char *confdir, const char *path, addon_policy_format_t fmt, int days,
                     const char *proxy_ip, int *created, char *err, size_t errlen);

#endif
