/* The address an upstream request is actually connected to, for its audit event
 * (docs/events.md, upstream_addr). A part of the upstream client (px_upstream.h): it reads the
 * request's connection, so it is built with its files. */
#ifndef PX_UPPEER_H
#define PX_UPPEER_H

#include <stddef.h>

#include "proxy/px_upstream.h"

/* Writes the peer address of r's connection as "ip:port" (IPv6: "[ip]:port") into out (cap
 * bytes, NUL-terminated; 48 hold any). r is borrowed. Returns the length, or a negative code
 * when r is on no connection yet (or the socket has no peer), with out empty. */
int px_up_peer(const px_upreq_t *r, char *out, size_t cap);

#endif
