/* Strict parsers for the two places AWS request authentication lives: the Authorization
 * header ("AWS4-HMAC-SHA256 Credential=AKID/scope, SignedHeaders=a;b, Signature=hex", or
 * AWS4-ECDSA-P256-SHA256) and presigned query parameters (X-Amz-Algorithm, X-Amz-Credential,
 * X-Amz-Date, X-Amz-Expires, X-Amz-SignedHeaders, X-Amz-Signature, X-Amz-Security-Token,
 * X-Amz-Region-Set). Anything malformed is PX_EPARSE; no input can crash them. */
#ifndef SIG_AUTH_H
#define SIG_AUTH_H

#include <stddef.h>

#include "signing/sig.h"

/* The parsed authentication of one request.
 * Header form: the views borrow the header value. Presigned form: decoded values live in
 * store, so a presigned sig_auth_t must not be copied by value (the views point into it). */
typedef struct sig_auth {
    sig_alg_t alg;
    int presigned;           /* 1: parsed from the query */
    sig_str_t access_key_id; /* the client's (surrogate) key id */
    sig_str_t scope;         /* date/region/service/aws4_request, V4A: date/service/aws4_request */
    sig_str_t date;          /* YYYYMMDD (first scope part) */
    sig_str_t region;        /* V4: second scope part; V4A: empty */
    sig_str_t service;
    sig_str_t signed_headers; /* "a;b;c", validated by sig_names_parse() */
    sig_str_t signature;      /* lower-case hex */
    /* Presigned form only (empty otherwise). */
    sig_str_t amz_date;       /* X-Amz-Date, YYYYMMDDTHHMMSSZ */
    sig_str_t expires;        /* X-Amz-Expires, decimal digits */
    sig_str_t region_set;     /* X-Amz-Region-Set (V4A, required there) */
    sig_str_t content_sha256; /* X-Amz-Content-Sha256 when present */
    sig_str_t token_raw;      /* X-Amz-Security-Token value as on the wire (still %-encoded) */
    int has_token;
    size_t store_len;
    char store[SIG_AUTH_STORE_MAX];
} sig_auth_t;

/* Parses an Authorization header value (len bytes, borrowed and referenced by out). Parts
 * may come in any order, separated by ',' with optional whitespace. Returns 0 or PX_EPARSE. */
int sig_auth_parse_header(const char *value, size_t len, sig_auth_t *out);

/* Parses the presigned parameters of a wire query (without '?'). Other parameters are
 * ignored; a repeated auth parameter is PX_EPARSE. Returns 0, PX_EPARSE, PX_ETOOBIG. */
int sig_auth_parse_query(const char *query, size_t len, sig_auth_t *out);

/* Splits "AKID/scope" for alg and fills access_key_id, scope, date, region, service of out.
 * Returns 0 or PX_EPARSE. */
int sig_auth_parse_credential(sig_alg_t alg, const char *cred, size_t len, sig_auth_t *out);

/* 1 when s is a well-formed YYYYMMDDTHHMMSSZ timestamp. */
int sig_amz_date_valid(const char *s, size_t len);

/* The algorithm named by an Authorization prefix or X-Amz-Algorithm value, or 0. */
sig_alg_t sig_alg_from_name(const char *s, size_t len);

/* The name of alg ("AWS4-HMAC-SHA256" or "AWS4-ECDSA-P256-SHA256"); static storage. */
const char *sig_alg_name(sig_alg_t alg);

/* 1 for the service names that use S3 URI rules (s3, s3-object-lambda, s3-outposts, s3express). */
int sig_service_is_s3(sig_str_t service);

#endif
