/* The one host normalizer: every place that compares or keys host names (the pre-checks'
 * Host/SNI/CONNECT comparisons, the policy, upstream routing, the CA's leaf cache, the DNS
 * cache) normalizes with this function, so the same name never has two spellings. */
#ifndef PX_HOST_H
#define PX_HOST_H

#include <stddef.h>

/* Writes host[0..len) normalized into out as a NUL-terminated string: one pair of IPv6
 * brackets removed ("[::1]" -> "::1"), otherwise one trailing dot removed unless the name is
 * only "." (the root), ASCII letters lowercased; no other byte changes and nothing is
 * validated (callers that need a DNS name check it). Returns the length, or -1 when it does
 * not fit in cap bytes (out is then ""). Borrows host. */
int px_host_norm(char *out, size_t cap, const char *host, size_t len);

#endif
