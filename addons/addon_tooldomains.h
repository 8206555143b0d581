/* The Anthropic server-side tool-domain trim (docs/anthropic-tools.md): a request-body filter
 * for api.anthropic.com /v1/messages* that cuts each server-side tool's allowed_domains down to
 * hosts the allowlist opens for unrestricted GET. */
#ifndef ADDON_TOOLDOMAINS_H
#define ADDON_TOOLDOMAINS_H

#include "addons/addon.h"

#define ADDON_TOOLDOMAINS_BODY_CAP (32 * 1024 * 1024) /* a larger body is refused */
#define ADDON_TOOLDOMAINS_LOGGED 10    /* domains named in one log annotation, then "+N more" */
#define ADDON_TOOLDOMAINS_TAG_MAX 1000 /* bytes of the [tool-domains: ...] tag */

/* The addon (static storage). It must come after the allowlist in the addon list. */
const addon_t *addon_tooldomains(void);

#endif
