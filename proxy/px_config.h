/* airlock's engine configuration and the `airlock run` command line. */
#ifndef PX_CONFIG_H
#define PX_CONFIG_H

#include <netinet/in.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/px_limits.h"

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
    int log_json;                  /* --log-format json (0: text, the default) */
    const char *events_path;       /* --events: a second sink of JSON events; NULL: none */
    const char *control_path;      /* --control: the deciders' unix socket; NULL: none */
    const char *decide_url;        /* --decide-url: the decision webhook; NULL: none */
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
    px_listen_t listen_socks; /* --listen-socks ADDR: SOCKS5, decided like CONNECT (off) */
    px_listen_t metrics; /* --metrics ADDR: Prometheus /metrics on its own listener (off) */
    int scrub_off;       /* --scrub-responses off: real values in answers are not replaced */
    int workers;         /* --workers: event loops serving connections [1]; 0: auto (cores) */
    uint64_t client_idle_ms;
    uint64_t upstream_first_byte_ms;
    uint64_t connect_ms;
    uint64_t handshake_ms;
    int verbose;
} px_config_t;

/* Fills cfg with the defaults of the CLI contract (paths, listeners, limits). */
void px_config_defaults(px_config_t *cfg);

/* 1 when someone can answer a held request (--control or --decide-url): only then is a request
 * held, and then on one loop (the default --workers auto gives one). */
static inline int px_config_has_decider(const px_config_t *cfg)
{
    return cfg->control_path != NULL || cfg->decide_url != NULL;
}

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
