/* The SOCKS5 handshake (RFC 1928) as a pure reader: the greeting (version, methods) and the
 * request (command, address, port), and the reply bytes. No I/O and no policy: the proxy's
 * SOCKS listener (proxy/px_connect.c) decides the target like a CONNECT. Fuzzed
 * (tests/fuzz/fuzz_socks.c) and table-tested (tests/net/test_px_socks.c). */
#ifndef PX_SOCKS_H
#define PX_SOCKS_H

#include <stddef.h>
#include <stdint.h>

#define PX_SOCKS_VER 5
#define PX_SOCKS_GREETING_MAX (2 + 255)        /* VER NMETHODS METHODS[255] */
#define PX_SOCKS_REQUEST_MAX (4 + 1 + 255 + 2) /* VER CMD RSV ATYP LEN NAME[255] PORT */
#define PX_SOCKS_REPLY_MAX (4 + 16 + 2)        /* with an IPv6 bound address */

/* Methods (RFC 1928 section 3): only "no authentication" is served. */
#define PX_SOCKS_NOAUTH 0x00
#define PX_SOCKS_NO_METHOD 0xff

/* Commands and address types (section 4). */
#define PX_SOCKS_CONNECT 0x01
#define PX_SOCKS_BIND 0x02
#define PX_SOCKS_UDP 0x03
#define PX_SOCKS_IPV4 0x01
#define PX_SOCKS_NAME 0x03
#define PX_SOCKS_IPV6 0x04

/* Reply codes (section 6). */
typedef enum px_socks_rep {
    PX_SOCKS_OK = 0x00,
    PX_SOCKS_FAILURE = 0x01,     /* general SOCKS server failure */
    PX_SOCKS_NOT_ALLOWED = 0x02, /* connection not allowed by ruleset */
    PX_SOCKS_NET_UNREACH = 0x03,
    PX_SOCKS_HOST_UNREACH = 0x04,
    PX_SOCKS_REFUSED = 0x05,
    PX_SOCKS_TTL = 0x06,
    PX_SOCKS_BAD_CMD = 0x07,  /* command not supported */
    PX_SOCKS_BAD_ATYP = 0x08, /* address type not supported */
} px_socks_rep_t;

/* Reads a greeting from p[0..len). Returns the bytes it took (> 0) when whole, *noauth then 1
 * when "no authentication" is among the methods; 0 when more is needed; PX_EPARSE when it is
 * not SOCKS5 (version byte) or offers no method. */
int px_socks_greeting(const unsigned char *p, size_t len, int *noauth);

/* A request as read. host is NUL-terminated text: the name as sent (a name holding a NUL byte
 * is refused), or the IPv4/IPv6 literal (IPv6 without brackets). */
typedef struct px_socks_req {
    uint8_t cmd;
    uint8_t atyp;
    uint16_t port;
    char host[256];
    px_socks_rep_t rep; /* PX_EPARSE: the reply to send */
} px_socks_req_t;

/* Reads a request from p[0..len) into *r. Returns the bytes it took (> 0) when whole, whatever
 * its command (the caller refuses BIND and UDP ASSOCIATE); 0 when more is needed; PX_EPARSE
 * when malformed, r->rep then PX_SOCKS_BAD_ATYP (unknown address type) or PX_SOCKS_FAILURE
 * (version, reserved byte, an empty name or one with a NUL byte, port 0). */
int px_socks_request(const unsigned char *p, size_t len, px_socks_req_t *r);

/* Writes the reply rep with the bound address addr (4 or 16 bytes, network order; NULL:
 * 0.0.0.0) and port into out (PX_SOCKS_REPLY_MAX bytes). Returns its length. */
size_t px_socks_reply(unsigned char *out, px_socks_rep_t rep, const uint8_t *addr, size_t alen,
                      uint16_t port);

#endif
