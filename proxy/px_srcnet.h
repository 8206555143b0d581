/* Source networks of --sandboxes in one address space. A dual-stack listener sees an IPv4
 * agent as ::ffff:a.b.c.d while an IPv4 listener sees a.b.c.d, and a sandbox may name either
 * form (or `::/0`, which holds both): so every source network and every source address is
 * compared as IPv6, IPv4 mapped into ::ffff:0:0/96. `10.0.0.0/8` is then ::ffff:10.0.0.0/104,
 * and it overlaps `::/0` and `::ffff:0:0/96`, as it really does on a dual-stack socket.
 * Pure functions: no state, no I/O. */
#ifndef PX_SRCNET_H
#define PX_SRCNET_H

#include <stdint.h>
#include <sys/socket.h>

#define PX_SRCNET_TEXT_MAX 64 /* "IP/PREFIX" as written in sandbox.conf */

typedef struct px_srcnet {
    uint8_t addr[16]; /* IPv6, or IPv4 mapped into ::ffff:0:0/96; bits past prefix are zero */
    int prefix;       /* 0..128 */
} px_srcnet_t;

/* Parses "IP/PREFIX" (IPv4 or IPv6; a bare IP is one host) into n. Returns 0 or PX_ECONFIG. */
int px_srcnet_parse(px_srcnet_t *n, const char *text);

/* Puts the address of sa (AF_INET or AF_INET6) into out, IPv4 mapped. Returns 0, or
 * PX_ECONFIG for another family. */
int px_srcnet_addr(const struct sockaddr *sa, uint8_t out[16]);

/* 1 when the address a (as px_srcnet_addr gives it) lies in n. */
int px_srcnet_contains(const px_srcnet_t *n, const uint8_t a[16]);

/* 1 when a and b share an address (one holds the other). */
int px_srcnet_overlap(const px_srcnet_t *a, const px_srcnet_t *b);

#endif
