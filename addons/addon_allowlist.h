/* The allowlist addon: decides each request head under req->config->policy (docs/allowlist.md)
 * and answers 403 for what is blocked. */
#ifndef ADDON_ALLOWLIST_H
#define ADDON_ALLOWLIST_H

#include "addons/addon.h"

/* The addon (static storage). */
const addon_t *addon_allowlist(void);

#endif
