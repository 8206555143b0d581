/* The host patterns an allowlist allows, listed for those who must know every name a policy
 * can reach (the per-conversation CA's name constraints). Read-only over a loaded policy. */
#ifndef ADDON_POLICY_HOSTS_H
#define ADDON_POLICY_HOSTS_H

#include <stddef.h>

#include "addons/addon_policy.h"

/* Called once per allow entry: pattern (NUL-terminated, borrowed for the call) as the policy
 * keeps it (lowercase A-labels, ".github.com" for the host and its subdomains, globs as
 * written, IPv6 without brackets); where says which entry ("domains[2] (allow.txt:3)").
 * A non-zero return stops the walk and is returned. */
typedef int (*addon_policy_host_cb)(void *arg, const char *pattern, size_t len, const char *where);

/* Walks the host patterns of p's domains, then url_prefixes (block entries only narrow what
 * is allowed, so they are not listed). 0, or the first non-zero return of cb. */
int addon_policy_each_host(const addon_policy_t *p, addon_policy_host_cb cb, void *arg);

#endif
