#include "proxy/px_config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "addons/addon_policy.h"
#include "base/px_err.h"
#include "ca/ca.h"

void px_config_defaults(px_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->allowlist_path = "/network-allowlist.json";
    cfg->replacements_path = "/replacements.json";
    cfg->log_path = "/network-sandbox.log";
    cfg->confdir = "/mitmproxy-confdir";
    cfg->ca_days = CA_CONV_DEFAULT_DAYS;
    px_listen_parse(&cfg->listen_dns, "0.0.0.0:53");
    px_listen_parse(&cfg->listen_http, "0.0.0.0:80");
    px_listen_parse(&cfg->listen_https, "0.0.0.0:443");
    px_listen_parse(&cfg->listen_proxy, "off");
    px_listen_parse(&cfg->listen_transparent, "off");
    px_listen_parse(&cfg->listen_socks, "off");
    px_listen_parse(&cfg->metrics, "off");
    cfg->client_idle_ms = PX_CLIENT_IDLE_MS;
    cfg->upstream_first_byte_ms = PX_UPSTREAM_FIRST_BYTE_MS;
    cfg->connect_ms = PX_CONNECT_MS;
    cfg->handshake_ms = PX_HANDSHAKE_MS;
    cfg->workers = 0; /* auto: the CPUs the process may use (one loop with a decider) */
}

int px_parse_u64(const char *s, uint64_t min, uint64_t max, uint64_t *out)
{
    if (s == NULL || *s < '0' || *s > '9')
        return PX_ECONFIG;
    errno = 0;
    char *end = NULL;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == NULL || *end != '\0' || v < min || v > max)
        return PX_ECONFIG;
    *out = v;
    return 0;
}

int px_listen_parse(px_listen_t *l, const char *text)
{
    memset(l, 0, sizeof(*l));
    if (strcmp(text, "off") == 0)
        return 0;
    size_t len = strlen(text);
    if (len == 0 || len >= sizeof(l->text))
        return PX_ECONFIG;
    char host[64];
    const char *port;
    if (text[0] == '[') {
        const char *close = strchr(text, ']');
        if (close == NULL || close[1] != ':' || (size_t)(close - text - 1) >= sizeof(host))
            return PX_ECONFIG;
        memcpy(host, text + 1, (size_t)(close - text - 1));
        host[close - text - 1] = '\0';
        port = close + 2;
    } else {
        const char *colon = strrchr(text, ':');
        if (colon == NULL || (size_t)(colon - text) >= sizeof(host))
            return PX_ECONFIG;
        memcpy(host, text, (size_t)(colon - text));
        host[colon - text] = '\0';
        port = colon + 1;
    }
    uint64_t p;
    if (px_parse_u64(port, 0, 65535, &p) != 0)
        return PX_ECONFIG;
    struct sockaddr_in *v4 = (struct sockaddr_in *)&l->addr;
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)&l->addr;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)p);
    } else if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)p);
    } else {
        return PX_ECONFIG;
    }
    memcpy(l->text, text, len + 1);
    l->enabled = 1;
    return 0;
}

int px_cidr_parse(px_cidr_t *c, const char *text)
{
    char buf[64];
    size_t len = strlen(text);
    if (len == 0 || len >= sizeof(buf))
        return PX_ECONFIG;
    memcpy(buf, text, len + 1);
    char *slash = strchr(buf, '/');
    uint64_t prefix = 0;
    int has_prefix = slash != NULL;
    if (has_prefix) {
        *slash = '\0';
        if (px_parse_u64(slash + 1, 0, 128, &prefix) != 0)
            return PX_ECONFIG;
    }
    memset(c, 0, sizeof(*c));
    if (inet_pton(AF_INET, buf, c->addr) == 1) {
        c->family = AF_INET;
        if (!has_prefix)
            prefix = 32;
        if (prefix > 32)
            return PX_ECONFIG;
    } else if (inet_pton(AF_INET6, buf, c->addr) == 1) {
        c->family = AF_INET6;
        if (!has_prefix)
            prefix = 128;
    } else {
        return PX_ECONFIG;
    }
    c->prefix = (int)prefix;
    return 0;
}

int px_cidr_contains(const px_cidr_t *c, const struct sockaddr *sa)
{
    const uint8_t *a;
    uint8_t mapped[4];
    if (sa->sa_family == AF_INET) {
        if (c->family != AF_INET)
            return 0;
        a = (const uint8_t *)&((const struct sockaddr_in *)sa)->sin_addr;
    } else if (sa->sa_family == AF_INET6) {
        const uint8_t *b = (const uint8_t *)&((const struct sockaddr_in6 *)sa)->sin6_addr;
        static const uint8_t v4mapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
        if (c->family == AF_INET && memcmp(b, v4mapped, 12) == 0) {
            memcpy(mapped, b + 12, 4);
            a = mapped;
        } else if (c->family == AF_INET6) {
            a = b;
        } else {
            return 0;
        }
    } else {
        return 0;
    }
    int bits = c->prefix;
    for (int i = 0; bits > 0; i++, bits -= 8) {
        uint8_t mask = bits >= 8 ? 0xff : (uint8_t)(0xff << (8 - bits));
        if ((a[i] & mask) != (c->addr[i] & mask))
            return 0;
    }
    return 1;
}

static int px__check_upstream_dns(const char *v)
{
    /* IP, IP:PORT, [V6] or [V6]:PORT */
    char host[64];
    const char *port = NULL;
    size_t len = strlen(v);
    if (len == 0 || len >= sizeof(host))
        return PX_ECONFIG;
    if (v[0] == '[') {
        const char *close = strchr(v, ']');
        if (close == NULL)
            return PX_ECONFIG;
        memcpy(host, v + 1, (size_t)(close - v - 1));
        host[close - v - 1] = '\0';
        if (close[1] == ':')
            port = close + 2;
        else if (close[1] != '\0')
            return PX_ECONFIG;
    } else {
        const char *colon = strchr(v, ':');
        if (colon != NULL && strchr(colon + 1, ':') != NULL) {
            memcpy(host, v, len + 1); /* bare IPv6 */
        } else if (colon != NULL) {
            memcpy(host, v, (size_t)(colon - v));
            host[colon - v] = '\0';
            port = colon + 1;
        } else {
            memcpy(host, v, len + 1);
        }
    }
    uint8_t tmp[16];
    if (inet_pton(AF_INET, host, tmp) != 1 && inet_pton(AF_INET6, host, tmp) != 1)
        return PX_ECONFIG;
    uint64_t p;
    if (port != NULL && px_parse_u64(port, 1, 65535, &p) != 0)
        return PX_ECONFIG;
    return 0;
}

enum {
    OPT_PROXY_IP = 256,
    OPT_UPSTREAM_DNS,
    OPT_ALLOWLIST,
    OPT_ALLOWLIST_FORMAT,
    OPT_REPLACEMENTS,
    OPT_LOG,
    OPT_LOG_CREATE,
    OPT_CONFDIR,
    OPT_UPSTREAM_CA,
    OPT_ALLOW_CIDR,
    OPT_LISTEN_DNS,
    OPT_LISTEN_HTTP,
    OPT_LISTEN_HTTPS,
    OPT_LISTEN_PROXY,
    OPT_LISTEN_TRANSPARENT,
    OPT_LISTEN_SOCKS,
    OPT_IDLE,
    OPT_FIRST_BYTE,
    OPT_CONNECT,
    OPT_HANDSHAKE,
    OPT_VERBOSE,
    OPT_SANDBOXES,
    OPT_METRICS,
    OPT_SCRUB,
    OPT_WORKERS,
    OPT_CA_CONV,
    OPT_CA_DAYS,
    OPT_LOG_FORMAT,
    OPT_EVENTS,
    OPT_CONTROL,
    OPT_DECIDE_URL,
};

#define PX__STR2(x) #x
#define PX__STR(x) PX__STR2(x)

static const struct option px__run_opts[] = {
    {"proxy-ip", required_argument, NULL, OPT_PROXY_IP},
    {"upstream-dns", required_argument, NULL, OPT_UPSTREAM_DNS},
    {"allowlist", required_argument, NULL, OPT_ALLOWLIST},
    {"allowlist-format", required_argument, NULL, OPT_ALLOWLIST_FORMAT},
    {"replacements", required_argument, NULL, OPT_REPLACEMENTS},
    {"log", required_argument, NULL, OPT_LOG},
    {"log-create", no_argument, NULL, OPT_LOG_CREATE},
    {"log-format", required_argument, NULL, OPT_LOG_FORMAT},
    {"events", required_argument, NULL, OPT_EVENTS},
    {"control", required_argument, NULL, OPT_CONTROL},
    {"decide-url", required_argument, NULL, OPT_DECIDE_URL},
    {"confdir", required_argument, NULL, OPT_CONFDIR},
    {"ca-per-conversation", no_argument, NULL, OPT_CA_CONV},
    {"ca-days", required_argument, NULL, OPT_CA_DAYS},
    {"upstream-ca", required_argument, NULL, OPT_UPSTREAM_CA},
    {"allow-upstream-cidr", required_argument, NULL, OPT_ALLOW_CIDR},
    {"listen-dns", required_argument, NULL, OPT_LISTEN_DNS},
    {"listen-http", required_argument, NULL, OPT_LISTEN_HTTP},
    {"listen-https", required_argument, NULL, OPT_LISTEN_HTTPS},
    {"listen-proxy", required_argument, NULL, OPT_LISTEN_PROXY},
    {"listen-transparent", required_argument, NULL, OPT_LISTEN_TRANSPARENT},
    {"listen-socks", required_argument, NULL, OPT_LISTEN_SOCKS},
    {"client-idle-timeout", required_argument, NULL, OPT_IDLE},
    {"upstream-timeout", required_argument, NULL, OPT_FIRST_BYTE},
    {"connect-timeout", required_argument, NULL, OPT_CONNECT},
    {"handshake-timeout", required_argument, NULL, OPT_HANDSHAKE},
    {"verbose", no_argument, NULL, OPT_VERBOSE},
    {"sandboxes", required_argument, NULL, OPT_SANDBOXES},
    {"metrics", required_argument, NULL, OPT_METRICS},
    {"scrub-responses", required_argument, NULL, OPT_SCRUB},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {NULL, 0, NULL, 0},
};

static int px__set_str(char *dst, size_t cap, const char *v)
{
    size_t len = strlen(v);
    if (len >= cap)
        return PX_ECONFIG;
    memcpy(dst, v, len + 1);
    return 0;
}

static int px__ms(const char *v, uint64_t *out)
{
    /* seconds, fractional allowed with 'ms' suffix: "600", "250ms" */
    size_t len = strlen(v);
    char buf[32];
    if (len == 0 || len >= sizeof(buf))
        return PX_ECONFIG;
    memcpy(buf, v, len + 1);
    uint64_t mult = 1000;
    if (len > 2 && strcmp(buf + len - 2, "ms") == 0) {
        buf[len - 2] = '\0';
        mult = 1;
    }
    uint64_t n;
    if (px_parse_u64(buf, 1, 86400000, &n) != 0)
        return PX_ECONFIG;
    *out = n * mult;
    return 0;
}

/* The listener options of `airlock run`: as px__run_opt. */
static int px__listen_opt(px_config_t *cfg, int c, const char *v, const char **what)
{
    int rc = 0;
    switch (c) {
    case OPT_LISTEN_DNS:
        rc = px_listen_parse(&cfg->listen_dns, v);
        *what = "--listen-dns";
        break;
    case OPT_LISTEN_HTTP:
        rc = px_listen_parse(&cfg->listen_http, v);
        *what = "--listen-http";
        break;
    case OPT_LISTEN_HTTPS:
        rc = px_listen_parse(&cfg->listen_https, v);
        *what = "--listen-https";
        break;
    case OPT_LISTEN_PROXY:
        rc = px_listen_parse(&cfg->listen_proxy, v);
        *what = "--listen-proxy";
        break;
    case OPT_LISTEN_TRANSPARENT:
        rc = px_listen_parse(&cfg->listen_transparent, v);
        *what = "--listen-transparent";
        break;
    case OPT_LISTEN_SOCKS:
        rc = px_listen_parse(&cfg->listen_socks, v);
        *what = "--listen-socks";
        break;
    case OPT_METRICS:
        rc = px_listen_parse(&cfg->metrics, v);
        *what = "--metrics";
        break;
    default:
        break;
    }
    return rc;
}

/* The network log's options (px__run_opt()). */
static int px__log_opt(px_config_t *cfg, int c, const char *v, const char **what)
{
    switch (c) {
    case OPT_LOG:
        cfg->log_path = v;
        return 0;
    case OPT_LOG_CREATE:
        cfg->log_create = 1;
        return 0;
    case OPT_LOG_FORMAT:
        *what = "--log-format (text or json)";
        if (strcmp(v, "text") != 0 && strcmp(v, "json") != 0)
            return PX_ECONFIG;
        cfg->log_json = strcmp(v, "json") == 0;
        return 0;
    case OPT_EVENTS:
        *what = "--events";
        cfg->events_path = v;
        return *v == '\0' ? PX_ECONFIG : 0;
    case OPT_CONTROL: /* the deciders' socket (docs/approvals.md) */
        *what = "--control";
        cfg->control_path = v;
        return *v == '\0' ? PX_ECONFIG : 0;
    case OPT_DECIDE_URL: /* the decision webhook (docs/approvals.md); parsed at start */
        *what = "--decide-url";
        cfg->decide_url = v;
        return *v == '\0' ? PX_ECONFIG : 0;
    default:
        return 0;
    }
}

/* --workers N|auto (and AIRLOCK_WORKERS): 0 or PX_ECONFIG. */
static int px__workers_opt(px_config_t *cfg, const char *v, const char **what)
{
    *what = "--workers (1 to " PX__STR(PX_WORKERS_MAX) ", or auto)";
    if (strcmp(v, "auto") == 0) {
        cfg->workers = 0; /* the CPUs the process may use, counted at start */
        return 0;
    }
    char *end = NULL;
    long n = strtol(v, &end, 10);
    if (*v == '\0' || *end != '\0' || n < 1 || n > PX_WORKERS_MAX)
        return PX_ECONFIG;
    cfg->workers = (int)n;
    return 0;
}

/* Applies one `airlock run` option c with value v; sets *what to the option's name for an
 * error. Returns 0 or a negative code (a bad value). */
static int px__run_opt(px_config_t *cfg, int c, const char *v, const char **what)
{
    int rc = 0;
    switch (c) {
    case OPT_PROXY_IP:
        rc = px__set_str(cfg->proxy_ip, sizeof(cfg->proxy_ip), v);
        *what = "--proxy-ip";
        break;
    case OPT_UPSTREAM_DNS:
        rc = px__set_str(cfg->upstream_dns, sizeof(cfg->upstream_dns), v);
        *what = "--upstream-dns";
        break;
    case OPT_ALLOWLIST:
        cfg->allowlist_path = v;
        break;
    case OPT_ALLOWLIST_FORMAT: {
        addon_policy_format_t f;
        rc = addon_policy_format_parse(v, &f);
        cfg->allowlist_format = (int)f;
        *what = "--allowlist-format (auto, native, domain-list or agentbox)";
        break;
    }
    case OPT_REPLACEMENTS:
        cfg->replacements_path = v;
        break;
    case OPT_SANDBOXES:
        cfg->sandboxes_dir = v;
        break;
    case OPT_CONFDIR:
        cfg->confdir = v;
        break;
    case OPT_UPSTREAM_CA:
        cfg->upstream_ca = v;
        break;
    case OPT_ALLOW_CIDR:
        *what = "--allow-upstream-cidr";
        if (cfg->n_allow_cidrs >= PX_CIDR_MAX)
            rc = PX_ECONFIG;
        else
            rc = px_cidr_parse(&cfg->allow_cidrs[cfg->n_allow_cidrs++], v);
        break;
    case OPT_LISTEN_DNS:
    case OPT_LISTEN_HTTP:
    case OPT_LISTEN_HTTPS:
    case OPT_LISTEN_PROXY:
    case OPT_LISTEN_TRANSPARENT:
    case OPT_LISTEN_SOCKS:
    case OPT_METRICS:
        rc = px__listen_opt(cfg, c, v, what);
        break;
    case OPT_IDLE:
        rc = px__ms(v, &cfg->client_idle_ms);
        *what = "--client-idle-timeout";
        break;
    case OPT_FIRST_BYTE:
        rc = px__ms(v, &cfg->upstream_first_byte_ms);
        *what = "--upstream-timeout";
        break;
    case OPT_CONNECT:
        rc = px__ms(v, &cfg->connect_ms);
        *what = "--connect-timeout";
        break;
    case OPT_HANDSHAKE:
        rc = px__ms(v, &cfg->handshake_ms);
        *what = "--handshake-timeout";
        break;
    case OPT_VERBOSE:
        cfg->verbose++;
        break;
    case OPT_WORKERS:
        rc = px__workers_opt(cfg, v, what);
        break;
    case OPT_SCRUB:
        *what = "--scrub-responses (on or off)";
        if (strcmp(v, "on") == 0 || strcmp(v, "off") == 0)
            cfg->scrub_off = strcmp(v, "off") == 0;
        else
            rc = PX_ECONFIG;
        break;
    case OPT_CA_CONV:
        cfg->ca_per_conversation = 1;
        break;
    case OPT_CA_DAYS: {
        uint64_t d = CA_CONV_DEFAULT_DAYS;
        rc = px_parse_u64(v, 1, CA_CONV_MAX_DAYS, &d);
        cfg->ca_days = (int)d;
        *what = "--ca-days (1 to 365)";
        break;
    }
    default:
        rc = px__log_opt(cfg, c, v, what);
        break;
    }
    return rc;
}

/* The checks that need every option: the proxy IP's form, the upstream DNS server. Returns
 * 0, or the exit code with err filled. */
static int px__run_check(px_config_t *cfg, char *err, size_t errlen)
{
    if (cfg->proxy_ip[0] != '\0') {
        if (inet_pton(AF_INET, cfg->proxy_ip, &cfg->proxy_ip4) != 1) {
            snprintf(err, errlen, "bad value for --proxy-ip (PROXY_IP): '%s' (an IPv4 address)",
                     cfg->proxy_ip);
            return 2;
        }
    }
    if (cfg->upstream_dns[0] == '\0') {
        snprintf(err, errlen,
                 "UPSTREAM_DNS environment variable is required but not set "
                 "(or pass --upstream-dns IP[:PORT])");
        return 1;
    }
    if (px__check_upstream_dns(cfg->upstream_dns) != 0) {
        snprintf(err, errlen, "bad value for --upstream-dns (UPSTREAM_DNS): '%s' (IP[:PORT])",
                 cfg->upstream_dns);
        return 2;
    }
    return 0;
}

int px_config_parse_run(px_config_t *cfg, int argc, char **argv, char *err, size_t errlen)
{
    const char *env_ip = getenv("PROXY_IP");
    const char *env_dns = getenv("UPSTREAM_DNS");
    if (env_ip != NULL && *env_ip != '\0' &&
        px__set_str(cfg->proxy_ip, sizeof(cfg->proxy_ip), env_ip) != 0) {
        snprintf(err, errlen, "PROXY_IP is too long");
        return 2;
    }
    if (env_dns != NULL && *env_dns != '\0' &&
        px__set_str(cfg->upstream_dns, sizeof(cfg->upstream_dns), env_dns) != 0) {
        snprintf(err, errlen, "UPSTREAM_DNS is too long");
        return 2;
    }
    const char *env_workers = getenv("AIRLOCK_WORKERS"); /* --workers wins */
    const char *ewhat = NULL;
    if (env_workers != NULL && *env_workers != '\0' &&
        px__run_opt(cfg, OPT_WORKERS, env_workers, &ewhat) != 0) {
        snprintf(err, errlen, "bad value for AIRLOCK_WORKERS: '%s' (1 to %d, or auto)", env_workers,
                 PX_WORKERS_MAX);
        return 2;
    }
    optind = 1;
    opterr = 0;
    for (;;) {
        int prev = optind;
        int c = getopt_long(argc, argv, "", px__run_opts, NULL);
        if (c == -1)
            break;
        if (c == ':') {
            snprintf(err, errlen, "option %s needs a value", argv[prev]);
            return 2;
        }
        if (c == '?' || c < OPT_PROXY_IP) {
            snprintf(err, errlen, "unknown option %s (see airlock --help)", argv[prev]);
            return 2;
        }
        const char *v = optarg;
        const char *what = NULL;
        if (px__run_opt(cfg, c, v, &what) != 0) {
            snprintf(err, errlen, "bad value for %s: '%s'", what, v);
            return 2;
        }
    }
    if (optind < argc) {
        snprintf(err, errlen, "unexpected argument '%s'", argv[optind]);
        return 2;
    }
    return px__run_check(cfg, err, errlen);
}
