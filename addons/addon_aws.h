/* The AWS re-signing addon (docs/replacements.md, AWS): requests signed with a surrogate
 * access key id from /replacements.json, toward a host in that entry's scopes, are re-signed
 * with the real credentials (SigV4 and SigV4A; header and presigned forms; aws-chunked bodies
 * as they stream). A request carrying a known surrogate that cannot be re-signed is answered
 * 403 {"error": "signing_failed"} and never sent.
 *
 * The replacement map holds no surrogate secret, so the client's own signature cannot be
 * checked: any well-formed request with a known surrogate key id toward an in-scope host is
 * re-signed. Presigned layouts are therefore read from the wire: an X-Amz-Security-Token after
 * X-Amz-Signature was appended unsigned (aws-c-auth omit_session_token); the payload line is
 * UNSIGNED-PAYLOAD for S3 and SHA-256("") for other services (botocore, aws-c-auth), unless
 * the query carries X-Amz-Content-Sha256.
 *
 * Access-line annotations: " [masked: 1] [region: R]" where R is the scope's region for SigV4
 * and the signed region set (X-Amz-Region-Set) for SigV4A. */
#ifndef ADDON_AWS_H
#define ADDON_AWS_H

#include <stddef.h>

#include "addons/addon.h"

#define ADDON_AWS_BODY_CAP (64 * 1024 * 1024) /* body hashed in memory when no payload hash */
#define ADDON_AWS_SKEW_S (5 * 60)             /* clock-skew warning threshold */
#define ADDON_AWS_KEY_CACHE 16                /* SigV4A key pairs kept per process */
#define ADDON_AWS_REGION_MAX 64               /* region text shown in the access line */

/* The addon (static storage). */
const addon_t *addon_aws(void);

/* SigV4A key cache counters (for tests and `airlock` diagnostics): keys held now, and key
 * derivations done since start. Either pointer may be NULL. */
void addon_aws_key_cache_stats(size_t *entries, unsigned long *derivations);

/* Drops every cached SigV4A key (tests; a reload does not need it: keys age out). */
void addon_aws_key_cache_clear(void);

#endif
