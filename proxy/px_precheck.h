/* The pre-checks of a request head (docs/answers.md), as a pure function: framing fields,
 * Host, CONNECT, absolute form against Host, SNI or CONNECT host against Host, the port. The
 * verdict says what to answer, or how the request routes. Table-tested on its own. */
#ifndef PX_PRECHECK_H
#define PX_PRECHECK_H

#include "base/px_host.h"
#include <stddef.h>
#include <stdint.h>

#include "http/px_msg.h"

#define PX_URL_MAX 2048 /* the log line's URL; longer ones end in "..." */

typedef enum px_listener_kind {
    PX_LISTEN_HTTP = 0,
    PX_LISTEN_HTTPS,
    PX_LISTEN_PROXY,
    PX_LISTEN_TRANSPARENT,
    PX_LISTEN_SOCKS, /* a SOCKS5 handshake first; afterwards the connection is PX_LISTEN_PROXY's */
} px_listener_kind_t;

/* Where a request came in. Strings are borrowed, NUL-terminated, normalized (lowercase, no
 * trailing dot) or "" when absent. */
typedef struct px_pre_ctx {
    px_listener_kind_t kind;
    int tls;              /* the request came over TLS (scheme https) */
    const char *sni;      /* the ClientHello's server name */
    const char *tunnel;   /* inside an accepted CONNECT: its host */
    uint16_t tunnel_port;
    uint16_t orig_port;   /* transparent: the port the client dialed (0 otherwise) */
} px_pre_ctx_t;

typedef enum px_pre_verdict {
    PX_PRE_OK = 0,         /* route it: host, port, path are set */
    PX_PRE_BAD,            /* answer status (400 or 431) with reason; close */
    PX_PRE_TUNNEL,         /* explicit proxy: CONNECT host:port (host, port set) */
    PX_PRE_NO_TUNNEL,      /* CONNECT where tunnels are not allowed: 403 */
    PX_PRE_MISMATCH,       /* Host disagrees with the URL, the SNI or the CONNECT host: 403 */
} px_pre_verdict_t;

typedef struct px_pre {
    px_pre_verdict_t verdict;
    int status;             /* PX_PRE_BAD */
    const char *reason;     /* PX_PRE_BAD: static text */
    const char *host;       /* the Host host: case kept, no port, no brackets (view into m) */
    size_t host_len;
    int bracketed;          /* an IPv6 literal */
    uint16_t port;          /* the destination port */
    const char *path;       /* path + query as sent ("/" when empty; view into m or static) */
    size_t path_len;
    const char *other;      /* PX_PRE_MISMATCH: what disagrees with the Host (a view) */
    size_t other_len;
    const char *other_key;  /* "url", "sni" or "connect" */
    char norm_host[256];    /* the routing host: lowercase, no trailing dot */
    char url[PX_URL_MAX];   /* scheme://host[:port]path, for the log (the target for CONNECT) */
} px_pre_t;

/* Decides request m arriving in ctx into *out (views into m). Never fails otherwise. */
void px_precheck(const px_msg_t *m, const px_pre_ctx_t *ctx, px_pre_t *out);

/* Splits an authority "host[:port]" or "[v6][:port]". host excludes brackets; *port is 0 when
 * absent. Returns 0 or PX_EPARSE (bad characters, empty host, bad port, host over 255). */
int px_authority_split(const char *a, size_t len, const char **host, size_t *hlen,
                       uint16_t *port, int *bracketed);

#endif
