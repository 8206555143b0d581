/* The masked-secret pass (docs/replacements.md): surrogate -> real value in request headers.
 *
 * A pure function over one request view and one replacement snapshot, run by the proxy on
 * allowed requests only, when no AWS re-signing handled the request. For each masked entry in
 * file order whose scopes match the request host (case-insensitive, one trailing dot ignored):
 * for each distinct header name (case-insensitive) matching one of the entry's header patterns,
 * every header of that name is tried in order until one holds the surrogate, either directly
 * (every occurrence is replaced) or, for Authorization values starting with exactly "Basic ",
 * inside the base64 "user:password" (strict standard base64 with padding; an undecodable value,
 * or one without ':', is simply not Basic; the result is re-encoded padded). The request then
 * carries exactly one header of that name, at the first one's position, with the replaced value;
 * the other duplicates are removed and, when there were any, a COLLAPSED line is logged with n =
 * the number of headers of that name before collapsing. masked += 1 per (entry, header name).
 * When no header of that name held the surrogate and an exact pattern (none of "*?[]") of the
 * entry names it, the name is a foreign-credential candidate. After all entries, a candidate
 * name that no entry replaced is removed entirely (every duplicate), unless every entry that
 * named it has allow_foreign_credentials; dropped += 1 per name, one STRIPPED line per name.
 * Finally " [masked: N]" and " [dropped: N]" are annotated when non-zero, in that order.
 * On a plain-http request (req->tls 0), an entry without allow_plain_http replaces nothing: a
 * header holding its surrogate only counts in plain_http, and the caller refuses the request
 * (the real value never crosses the network in clear).
 *
 * Deliberate differences from the reference: duplicates are scanned one by one and collapse to
 * the replaced value (mitmproxy folds them into "v1, v2" and the attacker's value survives);
 * Basic decoding is strict instead of skipping non-alphabet characters, and works on bytes (no
 * UTF-8 check); Host, Content-Length and Transfer-Encoding are never rewritten or stripped
 * (they frame or route the request, whatever the header patterns say).
 *
 * Only header values change: never the target, the body or the response. Real values are
 * written into the request's arena and nowhere else (no log line, no stderr); the stack scratch
 * used to build a value is wiped before returning. */
#ifndef ADDON_SECRETS_H
#define ADDON_SECRETS_H

#include "addons/addon.h"
#include "addons/addon_replacements.h"

/* Hard cap: a header value the pass decodes or builds. A longer Basic value is not decoded
 * (it is not Basic); a rewritten value longer than this fails the pass (PX_ETOOBIG). */
#define ADDON_SECRETS_VALUE_MAX (16 * 1024)
#define ADDON_SECRETS_LOG_NAME_MAX 128 /* header-name bytes shown in a STRIPPED/COLLAPSED line */

typedef struct addon_secrets_result {
    unsigned masked;    /* (entry, header name) pairs replaced */
    unsigned dropped;   /* distinct header names stripped as foreign credentials */
    unsigned collapsed; /* header names whose duplicates were removed */
    unsigned plain_http; /* (entry, header name) pairs holding a surrogate on a plain-http
                            request whose entry lacks allow_plain_http: nothing was replaced
                            there, and the request must be refused */
} addon_secrets_result_t;

/* Runs the pass over req (borrowed; headers rewritten in place, new values in its arena) with
 * repl (borrowed; NULL or empty = nothing to do). url (borrowed, may be NULL) is the proxy's URL
 * text for the STRIPPED/COLLAPSED lines, written through req->log_cb. res (may be NULL) gets the
 * counts. 0; or PX_ENOMEM (arena cap) / PX_ETOOBIG (a value over ADDON_SECRETS_VALUE_MAX): fail
 * closed, the request may hold a mix of real values and surrogates and must not be forwarded. */
int addon_secrets_apply(addon_req_t *req, const addon_replacements_t *repl, const char *url,
                        addon_secrets_result_t *res);

#endif
