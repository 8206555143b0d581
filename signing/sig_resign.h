/* Re-signing a client's AWS request with real credentials, and verifying the client's own
 * signature. The client's algorithm, X-Amz-Date, scope (date, region, service), region set and
 * signed-header list are kept; the access key id is swapped and the real session token is put
 * in place BEFORE canonicalization. Nothing secret ever goes into an error or log text. */
#ifndef SIG_RESIGN_H
#define SIG_RESIGN_H

#include <stddef.h>

#include <openssl/types.h>

#include "signing/sig.h"
#include "signing/sig_auth.h"
#include "signing/sig_encode.h"

/* A request as the proxy parsed it; every range is borrowed. */
typedef struct sig_request {
    sig_str_t method;            /* as sent */
    sig_str_t target;            /* path and query as on the wire (origin form) */
    const sig_header_t *headers; /* all request headers in wire order (Authorization ignored) */
    size_t nheaders;
} sig_request_t;

/* One set of credentials; all borrowed. */
typedef struct sig_creds {
    sig_str_t access_key_id;
    sig_str_t secret;
    sig_str_t session_token; /* base == NULL: none */
    EVP_PKEY *v4a_key; /* SigV4A key of these credentials (cache it), NULL: derived per call */
} sig_creds_t;

/* sig_opts_t.flags, presigned layouts (see sig_verify for detecting them):
 * SIG_OPT_UNSIGNED_TOKEN: X-Amz-Security-Token is not signed (aws-c-auth omit_session_token,
 *   e.g. IoT websockets);
 * SIG_OPT_EMPTY_PAYLOAD: the payload line is SHA-256("") instead of UNSIGNED-PAYLOAD
 *   (aws-c-auth's default for non-S3 presigning). */
#define SIG_OPT_UNSIGNED_TOKEN 1u
#define SIG_OPT_EMPTY_PAYLOAD 2u

typedef struct sig_opts {
    sig_uri_mode_t uri_mode; /* SIG_URI_S3 for S3 (see sig_service_is_s3), else NORMALIZE */
    unsigned flags;          /* SIG_OPT_* */
    sig_str_t payload_hash;  /* base == NULL: header form takes x-amz-content-sha256, presigned
                                form X-Amz-Content-Sha256, else UNSIGNED-PAYLOAD (botocore,
                                S3) or SHA-256("") with SIG_OPT_EMPTY_PAYLOAD */
    sig_buf_t *creq;         /* optional: receives the canonical request (tests, debugging) */
    sig_buf_t *sts;          /* optional: receives the string to sign */
} sig_opts_t;

typedef struct sig_result {
    char signature[SIG_SIG_MAX + 1]; /* the new signature, hex, NUL-terminated */
    size_t signature_len;
    unsigned char v4_key[32]; /* SigV4 signing key of the real credentials */
    sig_str_t amz_date;       /* the X-Amz-Date used (borrows the request) */
} sig_result_t;

/* Length of the longest Authorization value sig_resign_header() can produce. */
#define SIG_AUTH_VALUE_MAX                                                                         \
    (22 + 12 + SIG_AKID_MAX + 1 + SIG_SCOPE_MAX + 16 +                                             \
     SIG_SIGNED_HEADERS_MAX * (SIG_HEADER_NAME_MAX + 1) + 12 + SIG_SIG_MAX)

/* Header form. Writes the new Authorization value (no NUL) to out (cap bytes), sets *out_len
 * and fills res (seed for an aws-chunked body). Afterwards the request must carry exactly one
 * X-Amz-Security-Token header holding creds->session_token when it is set, and none when it
 * is not: the signed list gains or loses x-amz-security-token accordingly (a token the client
 * sent unsigned stays unsigned). Returns 0, PX_EPARSE (bad X-Amz-Date or request), PX_ETOOBIG
 * (out too small, caps), PX_ESIGNING (no payload hash known), PX_ECRYPTO, PX_ENOMEM. */
int sig_resign_header(const sig_request_t *req, const sig_auth_t *auth, const sig_creds_t *creds,
                      const sig_opts_t *opts, char *out, size_t cap, size_t *out_len,
                      sig_result_t *res);

/* Presigned form. Writes the new query string (without '?', no NUL) to out: the wire query
 * byte for byte except X-Amz-Credential (real key id), X-Amz-Security-Token (real token,
 * added before X-Amz-Signature when missing, removed when creds have none) and
 * X-Amz-Signature. The token is signed unless opts->flags has SIG_OPT_UNSIGNED_TOKEN.
 * Returns as sig_resign_header(). */
int sig_resign_query(const sig_request_t *req, const sig_auth_t *auth, const sig_creds_t *creds,
                     const sig_opts_t *opts, char *out, size_t cap, size_t *out_len,
                     sig_result_t *res);

/* Checks the client's signature in auth against req with creds (the surrogate credentials).
 * Presigned layouts not pinned by opts are tried in turn (token signed, then unsigned;
 * UNSIGNED-PAYLOAD, then SHA-256("")); *flags_out (may be NULL) receives the SIG_OPT_* bits of
 * the layout that matched, to pass on to sig_resign_query(). Returns 0 when it matches,
 * PX_ESIGNING when it does not, other codes as sig_resign_header(). */
int sig_verify(const sig_request_t *req, const sig_auth_t *auth, const sig_creds_t *creds,
               const sig_opts_t *opts, unsigned *flags_out);

#endif
