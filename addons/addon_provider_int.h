/* Names shared only by the parts of the provider-fetch check: the URL check
 * (addon_provider_url.c), the body walk (addon_provider.c) and the allowlist's
 * provider_fetch_pass list (addon_provider_pass.c). */
#ifndef ADDON_PROVIDER_INT_H
#define ADDON_PROVIDER_INT_H

#include <stddef.h>

#include "addons/addon_provider.h"

#define PV_HOST_MAX 255

/* Results of addon__provider_url_check: PV_URL_OK, or why the URL is refused. */
enum {
    PV_URL_OK = 0,
    PV_URL_NOT_STRING,
    PV_URL_BYTES,
    PV_URL_SCHEME,
    PV_URL_USERINFO,
    PV_URL_PORT,
    PV_URL_HOST,
    PV_URL_CLOSED,
    PV_URL_NO_POST,
};

#define PV_URL_DATA 1u /* a data: URL passes (inline content, nothing fetched) */
#define PV_URL_POST 2u /* the provider POSTs to it: the allowlist must allow that too */

/* Checks URL u[0..len) (borrowed) as a fetch by the provider under policy p: PV_URL_OK or a
 * PV_URL_* reason. host (hostcap bytes) gets the normalized host once it is parsed, else "". */
int addon__provider_url_check(const struct addon_policy *p, const char *u, size_t len, unsigned how,
                              char *host, size_t hostcap);

/* The text of a PV_URL_* reason (static). */
const char *addon__provider_url_reason(int r);

/* 1 when h[0..len) holds only the bytes of a DNS name (letters, digits, '.', '-', '_') or, when
 * it has a ':', of an IPv6 literal (hex digits, ':', '.'); 0 when empty or otherwise. */
int addon__provider_host_ok(const char *h, size_t len);

/* 1 when name[0..len) is a block type or top-level field airlock knows (and checks). */
int addon__provider_known(const char *name, size_t len);

/* 1 when the allowlist's provider_fetch_pass names name[0..len) (a block type or a top-level
 * field airlock does not know); p may be NULL. */
int addon__provider_pass(const struct addon_policy *p, const char *name, size_t len);

#endif
