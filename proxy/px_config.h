/* airlock's engine configuration and the `airlock run` command line. */
#ifndef PX_CONFIG_H
#define PX_CONFIG_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

/* Named limits and defaults (README.md, "Limits"). */
#define PX_HEAD_MAX (64 * 1024)           /* request or response head bytes */
#define PX_HEADERS_MAX 100                /* header lines in one head */
#define PX_TRAILER_MAX (16 * 1024)        /* bytes of a chunked message's trailer section */
#define PX_TRAILERS_MAX 32                /* trailer fields in one message */
#define PX_INTERIM_MAX 16                 /* 1xx responses before the final one */
#define PX_BODY_DISCARD_MAX (64 * 1024 * 1024) /* request body bytes dropped after an answer */
#define PX_HOST_MAX 255                   /* a host name */
#define PX_IN_MAX (PX_HEAD_MAX + 65536)   /* client bytes read ahead of their turn */
#define PX_POOL_IDLE_MAX 256              /* idle upstream connections kept in all */
#define PX_POOL_PER_KEY_MAX 128           /* idle upstream connections per host:port:scheme */
#define PX_POOL_IDLE_MS (60 * 1000)       /* an idle upstream connection is closed after this */
#define PX_REJECT_EVERY_MS (60 * 1000)    /* one TLS REJECTED line per host this often */
#define PX_REJECT_HOSTS 64                /* hosts remembered for that */
#define PX_CLIENT_IDLE_MS (600 * 1000)    /* idle client connection */
#define PX_UPSTREAM_FIRST_BYTE_MS (600 * 1000) /* slow LLM calls */
#define PX_CONNECT_MS (10 * 1000)         /* upstream TCP connect */
#define PX_HANDSHAKE_MS (10 * 1000)       /* client TLS handshake */
#define PX_CIDR_MAX 32                    /* --allow-upstream-cidr entries */
#define PX_CONNS_MAX 20000                /* client connections at once */
#define PX_TRIM_CHECK_MS 1000            /* how often to look for a finished burst or quiet */
#define PX_TRIM_DROP 64                   /* connections gone since the peak = a burst ended */
#define PX_TLS_SESSIONS_MAX 1024          /* upstream host:port keys with TLS sessions (LRU) */
#define PX_TLS_TICKETS_PER_KEY 4          /* TLS 1.3 tickets kept per key (one TLS 1.2 session) */
/* Decoded HTTP/2 request header bytes (name + value + 32 a field, as RFC 9113 counts them) held
 * by streams from their HEADERS frame until they close: HPACK lets ~50 bytes on the wire decode
 * to a 64 KiB list, which a stream waiting on a slow upstream holds (with its copies toward the
 * upstream: about 3x). Real clients send a few KiB per request (100 streams at once). */
#define PX_H2_CONN_HEADS_MAX (1024 * 1024)         /* one connection's streams */
#define PX_H2_SANDBOX_HEADS_MAX (16 * 1024 * 1024) /* one sandbox's connections (--sandboxes) */
#define PX_H2_PROCESS_HEADS_MAX (64 * 1024 * 1024) /* every connection */
#define PX_H2_HEADS_REFUSED_MAX 8 /* streams refused for those bounds before the GOAWAY */

typedef struct px_cidr {
    int family; /* AF_INET or AF_INET6 */
    uint8_t addr[16];
    int prefix;
} px_cidr_t;

/* A listen address; enabled == 0 when the listener is off. */
typedef struct px_listen {
    int enabled;
    struct sockaddr_storage addr;
    char text[64];
} px_listen_t;

typedef struct px_config {
    char proxy_ip[64];             /* --proxy-ip / PROXY_IP; "" = unset */
    struct in_addr proxy_ip4;      /* parsed proxy_ip (IPv4) */
    char upstream_dns[80];         /* --upstream-dns / UPSTREAM_DNS: IP[:PORT] */
    const char *allowlist_path;
    int allowlist_format;          /* addon_policy_format_t: --allowlist-format [auto] */
    const char *replacements_path;
    const char *log_path;
    int log_create;
    const char *sandboxes_dir;     /* --sandboxes: many sandboxes by source address; NULL: one */
    const char *confdir;
    int ca_per_conversation;       /* --ca-per-conversation: a constrained CA, made when absent */
    int ca_days;                   /* --ca-days: its validity [7] */
    const char *upstream_ca;       /* NULL = system bundle */
    px_cidr_t allow_cidrs[PX_CIDR_MAX];
    size_t n_allow_cidrs;
    px_listen_t listen_dns;
    px_listen_t listen_http;
    px_listen_t listen_https;
    px_listen_t listen_proxy;
    px_listen_t listen_transparent;
    uint64_t client_idle_ms;
    uint64_t upstream_first_byte_ms;
    uint64_t connect_ms;
    uint64_t handshake_ms;
    int verbose;
} px_config_t;

/* Fills cfg with the defaults of the CLI contract (paths, listeners, limits). */
void px_config_defaults(px_config_t *cfg);

/* Parses `airlock run` arguments (argv[0] is "run") and the PROXY_IP / UPSTREAM_DNS
 * environment. Returns 0, or 2 with a one-line reason in err (usage error), or 1 when a
 * required value is missing (UPSTREAM_DNS). Strings in cfg borrow argv. */
int px_config_parse_run(px_config_t *cfg, int argc, char **argv, char *err, size_t errlen);

/* Parses "ADDR:PORT", "[V6]:PORT" or "off" into l. Returns 0 or PX_ECONFIG. */
int px_listen_parse(px_listen_t *l, const char *text);

/* Parses "IP/PREFIX" (v4 or v6; a bare IP means a host route). Returns 0 or PX_ECONFIG. */
int px_cidr_parse(px_cidr_t *c, const char *text);

/* 1 when sa (v4 or v6) lies inside c. */
int px_cidr_contains(const px_cidr_t *c, const struct sockaddr *sa);

/* Parses a decimal in [min, max]; returns 0 or PX_ECONFIG. */
int px_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out);

#endif
