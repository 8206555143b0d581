/* The AWS re-signing addon (DESIGN.md §9, second bullet): requests signed with a surrogate
 * access key id from /replacements.json, toward a host in that entry's scopes, are re-signed
 * with the real credentials (SigV4 and SigV4A; header and presigned forms; aws-chunked bodies
 * as they stream). A request carrying a known surrogate that cannot be re-signed is answered
 * 403 {"error": "signing_failed"} and never sent. */
#ifndef ADDON_AWS_H
#define ADDON_AWS_H

#include "addons/addon.h"

#define ADDON_AWS_BODY_CAP (64 * 1024 * 1024) /* body hashed in memory when no payload hash */
#define ADDON_AWS_SKEW_S (5 * 60)             /* clock-skew warning threshold */

/* The addon (static storage). */
const addon_t *addon_aws(void);

#endif
