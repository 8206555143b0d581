/* Reads the SNI out of a TLS ClientHello without terminating TLS (for tunnels relayed
 * unread: `tls: passthrough` entries). */
#ifndef PX_HELLO_H
#define PX_HELLO_H

#include <stddef.h>

#define PX_HELLO_MAX (16 * 1024 + 5) /* one TLS record: a ClientHello must fit */

/* Parses data[0..len). Returns 1 and the server name in sni (NUL-terminated, as sent) when a
 * complete ClientHello with an SNI host_name is present, 0 when more bytes are needed, or
 * PX_EPARSE when it is not a ClientHello, has no SNI, or the name does not fit in cap. */
int px_hello_sni(const unsigned char *data, size_t len, char *sni, size_t cap);

#endif
