/* Types and hard caps shared by every file of signing/ (AWS SigV4 / SigV4A).
 *
 * signing/ is pure: no loop, no I/O, no globals. Every input is a byte range ({base, len}, no
 * NUL terminator assumed); every function returns 0 or a negative PX_E* code from
 * base/px_err.h. Secrets never appear in any output other than the signatures themselves. */
#ifndef SIG_H
#define SIG_H

#include <stddef.h>

#include "base/px_str.h"

/* Hard caps. Inputs beyond them fail with PX_ETOOBIG (or PX_EPARSE for framing). */
/* canonical request / canonical query text */
#define SIG_CANON_MAX (256 * 1024)
/* query parameters in one request target */
#define SIG_QUERY_PARAMS_MAX 1024
/* names in a SignedHeaders list, and the length of one name */
#define SIG_SIGNED_HEADERS_MAX 64
#define SIG_HEADER_NAME_MAX 128
/* access key id (surrogate or real) and credential scope date/region/service/aws4_request */
#define SIG_AKID_MAX 128
#define SIG_SCOPE_MAX 256
/* decoded presigned parameters kept in sig_auth_t */
#define SIG_AUTH_STORE_MAX 2048
/* X-Amz-Date: YYYYMMDDTHHMMSSZ */
#define SIG_AMZ_DATE_LEN 16
/* hex HMAC-SHA256; hex DER ECDSA P-256 (also the chunk signature padding width) */
#define SIG_V4_SIG_LEN 64
#define SIG_V4A_SIG_MAX 144
#define SIG_SIG_MAX SIG_V4A_SIG_MAX
/* largest aws-chunked chunk accepted (AWS SDKs use at most 8 MiB) */
#define SIG_CHUNK_MAX (16 * 1024 * 1024)
/* one chunk header line, CRLF included */
#define SIG_CHUNK_LINE_MAX 256
/* bytes and lines of the trailers of an aws-chunked body */
#define SIG_TRAILER_MAX 4096
#define SIG_TRAILERS_MAX 16
/* ECDSA signing attempts to fit a client's chunk signature width, and the narrowest width
 * worth trying (a DER signature shorter than this has odds of about 2^-16) */
#define SIG_V4A_SIGN_TRIES 64
#define SIG_V4A_MIN_WIDTH 136

/* A non-owning byte range; no NUL terminator is assumed (base/px_str.h). */
typedef px_str_t sig_str_t;

/* One request header as received (name and value are borrowed byte ranges). */
typedef px_field_t sig_header_t;

typedef enum sig_alg {
    SIG_ALG_V4 = 1, /* AWS4-HMAC-SHA256 */
    SIG_ALG_V4A = 2 /* AWS4-ECDSA-P256-SHA256 */
} sig_alg_t;

/* How the canonical URI is derived from the wire path. */
typedef enum sig_uri_mode {
    SIG_URI_NORMALIZE =
        0,              /* non-S3 default: remove dot segments and empty segments, encode again */
    SIG_URI_DOUBLE = 1, /* non-S3 without normalization: encode the wire path again */
    SIG_URI_S3 = 2      /* S3: decode once, encode once, keep '//', '.', '..' and '/' at end */
} sig_uri_mode_t;

#define SIG_STR(lit) ((sig_str_t){(lit), sizeof(lit) - 1})

#endif
