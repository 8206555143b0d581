/* Which upstream destinations airlock refuses (DESIGN.md §3 step 6): every address that is
 * not global unicast. Pure: no I/O. */
#ifndef PX_DEST_H
#define PX_DEST_H

#include <sys/socket.h>

/* Why sa (AF_INET or AF_INET6) is not a global unicast destination, as a short static text
 * ("loopback", "private (RFC 1918)", "NAT64 of 169.254.169.254: link-local", ...), or NULL when
 * it is one. IPv6 forms that carry an IPv4 address (mapped, NAT64 64:ff9b::/96, 6to4, Teredo)
 * are judged by that address; the text then names it in buf (cap bytes), which is returned.
 * Any other family is refused. */
const char *px_dest_special(const struct sockaddr *sa, char *buf, size_t cap);

#endif
