/* GitHub App credentials (`"type": "github-app"` entries of the replacement map): the entry's
 * own fields, the RS256 app JWT, the token-exchange body and answer, the per-entry token cache,
 * and the request side (which entry a request's `ghs_` surrogate names, the replacement, the
 * stripping of foreign credentials). Everything here is synchronous and pure but the cache,
 * which the proxy (proxy/px_stage_ghapp.c) fills after an exchange with the GitHub API.
 *
 * An entry: {"type": "github-app", "app_id": str|int, "private_key": PEM RSA,
 * "installation_id": int|digits, "base_url"?: "https://api.github.com", "scopes": [...],
 * "permissions"?: {name: level}, "repositories"?: [name, ...], "allow_foreign_credentials"?,
 * "timeout"?: seconds}.
 * The private key is parsed at load (an OpenSSL key object); its PEM text, the JWT and the
 * installation token are never written to the log, stderr or an error message. */
#ifndef ADDON_GHAPP_H
#define ADDON_GHAPP_H

#include <stddef.h>
#include <stdint.h>

#include "addons/addon.h"
#include "addons/addon_yaml.h"

struct addon_replacements;
struct addon_ghrepos;

/* Constants of the reference (refresh margin, JWT backdating and lifetime) and hard caps. */
#define ADDON_GHAPP_DEFAULT_BASE "https://api.github.com"
#define ADDON_GHAPP_REFRESH_MARGIN 300   /* s: a token this close to expiry is minted anew */
#define ADDON_GHAPP_JWT_BACKDATE 60      /* s: iat = now - this (clock skew) */
#define ADDON_GHAPP_JWT_LIFETIME 540     /* s: exp = now + this */
#define ADDON_GHAPP_JWT_MAX 4096         /* bytes of a JWT (RSA up to 16384 bits) */
#define ADDON_GHAPP_TOKEN_MAX 255        /* bytes of an installation token */
#define ADDON_GHAPP_BODY_MAX (64 * 1024) /* bytes of the token endpoint's answer */
#define ADDON_GHAPP_HOST_MAX 253
#define ADDON_GHAPP_TIMEOUT_DEFAULT 30 /* s: each request to the API (the reference's) */
#define ADDON_GHAPP_TIMEOUT_MAX 600    /* s: the largest "timeout" an entry may set */

typedef struct addon_ghapp addon_ghapp_t;

/* Parses the github-app fields of entry n (borrowed; keys already checked by the caller, which
 * also reads scopes and allow_foreign_credentials). what labels messages ("entry[3]"). 0 and
 * *out (taken by the caller, freed with addon_ghapp_free); or PX_ECONFIG/PX_ETOOBIG/PX_ENOMEM
 * with "name:line:col: message" in err, never quoting the key. */
int addon_ghapp_parse(const addon_yaml_node_t *n, const char *what, addon_ghapp_t **out, char *err,
                      size_t errlen);

/* Wipes and frees g (the key, the cached token). NULL is allowed. */
void addon_ghapp_free(addon_ghapp_t *g);

/* The token endpoint: host (normalized, lowercase), port, and the path of the access_tokens
 * resource ("{base path}/app/installations/{id}/access_tokens"). Borrowed from g. */
const char *addon_ghapp_host(const addon_ghapp_t *g);
uint16_t addon_ghapp_port(const addon_ghapp_t *g);
const char *addon_ghapp_token_path(const addon_ghapp_t *g);
/* The app id and installation id as written (borrowed), for `airlock check`. */
const char *addon_ghapp_app_id(const addon_ghapp_t *g);
const char *addon_ghapp_installation_id(const addon_ghapp_t *g);
/* The entry's "timeout": seconds each request to the API (the token request, each page of
 * the repositories) may take, ADDON_GHAPP_TIMEOUT_DEFAULT unless set. */
unsigned addon_ghapp_timeout(const addon_ghapp_t *g);

/* Makes the app JWT for time now (Unix seconds): header {"alg":"RS256","typ":"JWT"}, claims
 * {"iat": now-60, "exp": now+540, "iss": app_id}, RS256 over the private key. Writes it
 * NUL-terminated to out; 0 and *len, or PX_ETOOBIG / PX_ESIGNING. The caller wipes out. */
int addon_ghapp_jwt(const addon_ghapp_t *g, int64_t now, char *out, size_t outlen, size_t *len);

/* The JSON body of the token request: {"permissions": {...}, "repositories": [...]} with the
 * configured ones only ("{}" when neither is). *out is malloc'd (taken), NUL-terminated.
 * 0 or PX_ENOMEM. */
int addon_ghapp_mint_body(const addon_ghapp_t *g, char **out, size_t *len);

/* Reads the token endpoint's JSON answer (borrowed): the "token" string (printable ASCII
 * without spaces, at most ADDON_GHAPP_TOKEN_MAX bytes) into tok (NUL-terminated) and
 * "expires_at" (ISO 8601 UTC, "2026-01-01T00:00:00Z") into *expires (Unix seconds). 0 or
 * PX_EPARSE; why (static text, never the token) says what was wrong. */
int addon_ghapp_parse_token(const char *body, size_t len, char *tok, size_t toklen,
                            int64_t *expires, const char **why);

/* The token cache of the entry. valid: a token that expires more than the refresh margin
 * after now. get: the cached token (borrowed from g, NUL-terminated; "" when none). set
 * copies token[0..len). clear wipes it. */
int addon_ghapp_cache_valid(const addon_ghapp_t *g, int64_t now);
const char *addon_ghapp_cache_token(const addon_ghapp_t *g, size_t *len);
int64_t addon_ghapp_cache_expires(const addon_ghapp_t *g);
void addon_ghapp_cache_set(addon_ghapp_t *g, const char *token, size_t len, int64_t expires);
void addon_ghapp_cache_clear(addon_ghapp_t *g);

/* The installation's repositories, kept with the cached token for GraphQL scoping (borrowed
 * from g), or NULL when they are unknown (not fetched yet, or the fetch failed). set takes
 * repos (NULL: unknown) and frees the previous set. */
const struct addon_ghrepos *addon_ghapp_repos(const addon_ghapp_t *g);
void addon_ghapp_set_repos(addon_ghapp_t *g, struct addon_ghrepos *repos);

/* The path of page (1-based) of GET {base_url}/installation/repositories, per_page 100, into
 * out (NUL-terminated). 0 or PX_ETOOBIG. */
int addon_ghapp_repos_path(const addon_ghapp_t *g, unsigned page, char *out, size_t outlen);

/* The github-app entry a request names (§4.5 of the reference): the first entry, in file
 * order, whose surrogate is inside one of the request's Authorization values (directly, or in
 * the password of "Basic base64(user:password)") and whose scopes match the request host.
 * Returns the entry index, or -1. */
int addon_ghapp_match(const struct addon_replacements *r, const addon_req_t *req);

/* Flags of addon_ghapp_apply. */
#define ADDON_GHAPP_REFRESHED 1 /* the token was minted for this request ("refreshed") */
#define ADDON_GHAPP_SCOPED 2    /* the GraphQL repository scope was checked ("graphql-scoped") */

/* Replaces entry i's surrogate in the request's Authorization with token (borrowed; Bearer:
 * every occurrence; Basic: the password, re-encoded); other Authorization headers are removed
 * (a COLLAPSED line when there were any). Annotates " [github-app: cached|refreshed[,
 * graphql-scoped]] [masked: 1]" (flags above) and sets credentials_done. 0, PX_ENOENT (the
 * surrogate is no longer there), or PX_ENOMEM/PX_ETOOBIG (nothing usable: the caller answers
 * instead of forwarding). */
int addon_ghapp_apply(addon_req_t *req, const struct addon_replacements *r, size_t i,
                      const char *token, size_t toklen, int flags);

/* No github-app entry matched: for an in-scope github-app entry without
 * allow_foreign_credentials, every Authorization header is removed (one STRIPPED line; not
 * counted as dropped). Returns 1 when something was removed. */
int addon_ghapp_strip_foreign(addon_req_t *req, const struct addon_replacements *r);

/* A request carrying a GitHub App token to a GraphQL endpoint (a path ending in "/graphql") must
 * not have a query string (reference G10: a query there escapes the body's checks). 1 and ans
 * filled (403 graphql_repo_scope_blocked, detail "query-params"), else 0. */
int addon_ghapp_graphql_query(addon_req_t *req, addon_answer_t *ans);

/* A GraphQL endpoint, for repository scoping: the request path without its query,
 * percent-decoded and without trailing '/', ends in "/graphql" (ASCII case-insensitive), whatever
 * the method. 1 or 0. */
int addon_ghapp_graphql_path(const addon_req_t *req);

/* The repository scope of a GraphQL request carrying entry's token (reference §11.4; body
 * borrowed; repos: the installation's, NULL when unknown, which refuses every request). 0: it
 * passes; 1: ans is filled (403 graphql_repo_scope_blocked, detail: the target or the reason,
 * annotated " [github-app: graphql-scope-blocked: detail]"), with the loud line "GraphQL
 * repo-scope check failed: ..." when the body could not be read. A len over
 * ADDON_GHSCOPE_BODY_CAP is refused without reading body (which may then be NULL). */
int addon_ghapp_graphql_scope(addon_req_t *req, const struct addon_ghrepos *repos, const char *body,
                              size_t len, addon_answer_t *ans);

/* Fills ans with the 502 github_app_token_refresh_failed answer (verdict "allowed", logged
 * with " [github-app: refresh-failed]") and writes the reference's line "GitHub App token
 * refresh failed for METHOD URL: why" through req->log_cb. why is borrowed. */
void addon_ghapp_refresh_failed(addon_req_t *req, addon_answer_t *ans, const char *why);

#endif
