/* SigV4 canonical request, string to sign, signing key and HMAC signature.
 *
 * Rules (AWS / botocore / aws-c-auth): canonical URI per sig_uri_mode_t; canonical query
 * decoded then re-encoded with the strict set ('+' is a literal plus and becomes %2B), sorted
 * by encoded name then value; canonical headers lower-cased, values trimmed with internal
 * whitespace runs squeezed to one space, repeated headers joined with ',' in wire order. */
#ifndef SIG_V4_H
#define SIG_V4_H

#include <stddef.h>

#include "signing/sig.h"
#include "signing/sig_encode.h"

/* Flags for sig_canonical_query(). */
#define SIG_QUERY_SKIP_SIGNATURE 1u /* leave X-Amz-Signature out (presigned requests) */
#define SIG_QUERY_SKIP_TOKEN 2u     /* leave X-Amz-Security-Token out (token added unsigned) */

/* Algorithm labels, the first line of each string to sign. */
#define SIG_LABEL_V4 "AWS4-HMAC-SHA256"
#define SIG_LABEL_V4A "AWS4-ECDSA-P256-SHA256"
#define SIG_LABEL_V4_PAYLOAD "AWS4-HMAC-SHA256-PAYLOAD"
#define SIG_LABEL_V4A_PAYLOAD "AWS4-ECDSA-P256-SHA256-PAYLOAD"
#define SIG_LABEL_V4_TRAILER "AWS4-HMAC-SHA256-TRAILER"
#define SIG_LABEL_V4A_TRAILER "AWS4-ECDSA-P256-SHA256-TRAILER"
#define SIG_EMPTY_SHA256 "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
#define SIG_UNSIGNED_PAYLOAD "UNSIGNED-PAYLOAD"

/* A validated SignedHeaders list: lower-case names, sorted bytewise, no duplicates. The
 * names borrow the parsed list (or whatever the caller put there). */
typedef struct sig_names {
    sig_str_t name[SIG_SIGNED_HEADERS_MAX];
    size_t n;
} sig_names_t;

/* Everything a canonical request is built from. All ranges are borrowed. */
typedef struct sig_canon {
    sig_str_t method;            /* as sent */
    sig_str_t path;              /* wire path, without '?' and query */
    sig_str_t query;             /* wire query without the '?', may be empty */
    const sig_header_t *headers; /* request headers in wire order */
    size_t nheaders;
    const sig_names_t *names; /* the signed headers */
    sig_str_t token;          /* base != NULL: x-amz-security-token value used instead */
    sig_str_t payload_hash;   /* hex hash or literal (UNSIGNED-PAYLOAD, STREAMING-...) */
    sig_uri_mode_t uri_mode;
    unsigned query_flags; /* SIG_QUERY_SKIP_* */
} sig_canon_t;

/* Splits a request target at the first '?' into path and query (both borrow target). */
void sig_target_split(sig_str_t target, sig_str_t *path, sig_str_t *query);

/* Appends the botocore/RFC 3986 dot-segment removal of path (empty and '.' segments dropped,
 * '..' pops, leading and trailing '/' kept; "" gives "/"). Returns 0 or a sig_buf error. */
int sig_normalize_path(sig_buf_t *out, const char *path, size_t len);

/* Appends the canonical URI of a wire path. Returns 0, PX_EPARSE (S3 mode: bad %-escape),
 * or a sig_buf error. */
int sig_canonical_uri(sig_buf_t *out, const char *path, size_t len, sig_uri_mode_t mode);

/* Appends the canonical query string of a wire query (no '?'). Returns 0, PX_EPARSE on a
 * bad %-escape, PX_ETOOBIG past SIG_QUERY_PARAMS_MAX parameters, or a sig_buf error. */
int sig_canonical_query(sig_buf_t *out, const char *query, size_t len, unsigned flags);

/* Appends a header value trimmed, with internal whitespace runs squeezed to one space. */
int sig_canonical_header_value(sig_buf_t *out, const char *value, size_t len);

/* Parses "a;b;c" into out (validated, sorted). Returns 0 or PX_EPARSE (empty list, empty or
 * upper-case or non-token name, duplicate), PX_ETOOBIG past SIG_SIGNED_HEADERS_MAX. */
int sig_names_parse(const char *list, size_t len, sig_names_t *out);

/* Inserts name (borrowed, lower-case) keeping the order; no-op when present. 0 or PX_ETOOBIG. */
int sig_names_add(sig_names_t *names, sig_str_t name);

/* Removes name if present. */
void sig_names_remove(sig_names_t *names, const char *name);

/* Index of name in names, or -1. */
int sig_names_find(const sig_names_t *names, const char *name);

/* Appends the names joined with ';'. */
int sig_names_join(const sig_names_t *names, sig_buf_t *out);

/* Appends the canonical header block (every line "name:value\n"), for the headers in names.
 * A signed header absent from the request gives "name:". Returns 0 or a sig_buf error. */
int sig_canonical_headers(sig_buf_t *out, const sig_header_t *headers, size_t n,
                          const sig_names_t *names, sig_str_t token);

/* Appends the canonical request (six lines, no final newline). Returns 0, PX_EPARSE, or a
 * sig_buf error. */
int sig_canonical_request(sig_buf_t *out, const sig_canon_t *c);

/* Appends "label\namz_date\nscope\nhash_hex" (no final newline). */
int sig_string_to_sign(sig_buf_t *out, const char *label, sig_str_t amz_date, sig_str_t scope,
                       const char hash_hex[SIG_SHA256_HEX_LEN]);

/* Derives the SigV4 signing key HMAC chain ("AWS4"+secret, date, region, service,
 * "aws4_request") into key. Returns 0, PX_ETOOBIG (secret over 1 KiB) or PX_ECRYPTO. */
int sig_v4_signing_key(sig_str_t secret, sig_str_t date, sig_str_t region, sig_str_t service,
                       unsigned char key[SIG_SHA256_LEN]);

/* Writes the 64 lower-case hex digits of HMAC-SHA256(key, sts) to hex (no NUL). 0 or
 * PX_ECRYPTO. */
int sig_v4_signature(const unsigned char key[SIG_SHA256_LEN], const char *sts, size_t len,
                     char hex[SIG_V4_SIG_LEN]);

#endif
