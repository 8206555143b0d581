/* Reads the SNI out of a TLS ClientHello without terminating TLS (for tunnels relayed
 * unread: `tls: passthrough` entries). */
#ifndef PX_HELLO_H
#define PX_HELLO_H

#include <stddef.h>
#include <stdint.h>

#define PX_HELLO_MAX (16 * 1024 + 5) /* one TLS record: a ClientHello must fit */

/* Parses data[0..len). Returns 1 and the server name in sni (NUL-terminated, as sent) when a
 * complete ClientHello with an SNI host_name is present, 0 when more bytes are needed, or
 * PX_EPARSE when it is not a ClientHello, has no SNI, or the name does not fit in cap. */
int px_hello_sni(const unsigned char *data, size_t len, char *sni, size_t cap);

/* What a ClientHello says about the program that sent it, for telling an operator how to make
 * that runtime trust airlock's CA. Heuristic, from the cipher suites, the extensions and ALPN
 * that each runtime's TLS stack sends by default (captured from the real runtimes in
 * tests/proxy/test_px_hello.c). */
typedef enum px_runtime {
    PX_RT_UNKNOWN = 0,
    PX_RT_CURL,   /* curl and other OpenSSL clients offering h2 */
    PX_RT_PYTHON, /* Python: ssl, urllib, requests, pip */
    PX_RT_NODE,
    PX_RT_GO,
    PX_RT_JAVA,
} px_runtime_t;

typedef struct px_hello_info {
    const uint16_t *ciphers; /* in the order offered */
    size_t nciphers;
    const int *exts;         /* extension types, in the order sent */
    size_t nexts;
    const unsigned char *alpn; /* the ALPN extension's protocol list (without its length), or NULL */
    size_t alpn_len;
} px_hello_info_t;

/* The runtime that most likely sent a ClientHello, or PX_RT_UNKNOWN. */
px_runtime_t px_hello_runtime(const px_hello_info_t *h);

/* "Node", ..., and the one fix that makes it trust a CA file (static text). */
const char *px_runtime_name(px_runtime_t rt);
const char *px_runtime_fix(px_runtime_t rt);

#endif
