#include "proxy/px_metrics.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static px_metrics_t px__metrics;

/* The histograms' upper bounds, seconds: LLM calls take seconds to minutes, a cached page ms. */
static const double px__bounds[PX_M_HIST_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                     0.5,   1,    2.5,   5,    15,  60};

px_metrics_t *px_metrics(void)
{
    return &px__metrics;
}

/* 1 when s holds the NUL-terminated word w. */
static int px__has(audit_str_t s, const char *w)
{
    size_t n = strlen(w);
    for (size_t i = 0; i + n <= s.len; i++)
        if (memcmp(s.base + i, w, n) == 0)
            return 1;
    return 0;
}

void px_metrics_event(const audit_event_t *ev)
{
    if ((unsigned)ev->kind <= AUDIT_EV_GRAPHQL_SCOPE && (unsigned)ev->verdict <= AUDIT_EV_REJECTED)
        px__metrics.events[ev->kind][ev->verdict]++;
    if (ev->verdict != AUDIT_EV_BLOCKED)
        return;
    /* the refusals' tails say who refused: "(leak: ...)", "(budget: ...)" (network-log.md) */
    if (ev->tail.len >= 5 && memcmp(ev->tail.base, "leak:", 5) == 0)
        px__metrics.leak_refusals++;
    else if (px__has(ev->tail, "budget: "))
        px__metrics.budget_refusals++;
}

px_metrics_uperr_t px_metrics_up_error(const char *why)
{
    if (why == NULL)
        return PX_M_UP_OTHER;
    if (strstr(why, "is not allowed") != NULL || strstr(why, "no usable address") != NULL)
        return PX_M_UP_DESTINATION;
    if (strstr(why, "timed out") != NULL)
        return PX_M_UP_TIMEOUT;
    if (strstr(why, "DNS") != NULL || strstr(why, "lookup") != NULL ||
        strstr(why, "resolve") != NULL)
        return PX_M_UP_RESOLVE;
    if (strstr(why, "TLS") != NULL || strstr(why, "certificate") != NULL ||
        strstr(why, "SSL") != NULL)
        return PX_M_UP_TLS;
    if (strstr(why, "invalid response") != NULL)
        return PX_M_UP_PROTOCOL;
    if (strncmp(why, "Connection failed", 17) == 0 || strncmp(why, "Server disconnected", 19) == 0)
        return PX_M_UP_CONNECT;
    return PX_M_UP_OTHER;
}

void px_metrics_observe(px_metrics_hist_t *h, double s)
{
    size_t i = 0;
    while (i < PX_M_HIST_BUCKETS && s > px__bounds[i])
        i++;
    h->counts[i]++;
    h->n++;
    h->sum += s;
}

typedef struct px__out {
    char *buf;
    size_t cap, len;
} px__out_t;

static void px__put(px__out_t *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void px__put(px__out_t *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->cap ? o->cap - o->len : 0;
    int n = vsnprintf(room > 0 ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (n > 0)
        o->len += (size_t)n;
}

static void px__head(px__out_t *o, const char *name, const char *type, const char *help)
{
    px__put(o, "# HELP airlock_%s %s\n# TYPE airlock_%s %s\n", name, help, name, type);
}

static void px__hist(px__out_t *o, const char *name, const char *help, const px_metrics_hist_t *h)
{
    px__head(o, name, "histogram", help);
    uint64_t cum = 0;
    for (size_t i = 0; i < PX_M_HIST_BUCKETS; i++) {
        cum += h->counts[i];
        px__put(o, "airlock_%s_bucket{le=\"%g\"} %llu\n", name, px__bounds[i],
                (unsigned long long)cum);
    }
    cum += h->counts[PX_M_HIST_BUCKETS];
    px__put(o, "airlock_%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
    px__put(o, "airlock_%s_sum %.6f\nairlock_%s_count %llu\n", name, h->sum, name,
            (unsigned long long)h->n);
}

static const char *const px__kinds[] = {
    [AUDIT_EV_REQUEST] = "request",
    [AUDIT_EV_CONNECT] = "connect",
    [AUDIT_EV_TUNNEL] = "tunnel",
    [AUDIT_EV_CONNECTION] = "connection",
    [AUDIT_EV_DNS] = "dns",
    [AUDIT_EV_STRIPPED] = "stripped",
    [AUDIT_EV_COLLAPSED] = "collapsed",
    [AUDIT_EV_WARNING] = "warning",
    [AUDIT_EV_TLS_REJECTED] = "tls_rejected",
    [AUDIT_EV_GHAPP_TOKEN] = "ghapp_token",
    [AUDIT_EV_GHAPP_REPOS] = "ghapp_repos",
    [AUDIT_EV_GRAPHQL_SCOPE] = "graphql_scope",
};

static const char *const px__verdicts[] = {
    [AUDIT_EV_V_NONE] = "none", [AUDIT_EV_ALLOWED] = "allowed", [AUDIT_EV_BLOCKED] = "blocked",
    [AUDIT_EV_ERROR] = "error", [AUDIT_EV_WARN] = "warn",       [AUDIT_EV_REJECTED] = "rejected",
};

static const char *const px__uperrs[PX_M_UP_KINDS] = {
    "destination", "resolve", "connect", "tls", "timeout", "protocol", "other",
};

size_t px_metrics_render(const px_metrics_t *m, const px_metrics_gauges_t *g, char *buf, size_t cap)
{
    px__out_t o = {buf, cap, 0};
    if (cap > 0)
        buf[0] = '\0';
    px__head(&o, "decisions_total", "counter",
             "Network-log events by kind and verdict (requests, CONNECTs, DNS answers, ...).");
    for (size_t k = 0; k < sizeof(px__kinds) / sizeof(px__kinds[0]); k++) {
        if (px__kinds[k] == NULL)
            continue;
        for (size_t v = 0; v < sizeof(px__verdicts) / sizeof(px__verdicts[0]); v++)
            if (m->events[k][v] != 0)
                px__put(&o, "airlock_decisions_total{kind=\"%s\",verdict=\"%s\"} %llu\n",
                        px__kinds[k], px__verdicts[v], (unsigned long long)m->events[k][v]);
    }
    px__head(&o, "leak_refusals_total", "counter",
             "Requests and tunnels the secret guard refused (a real value or a canary in them).");
    px__put(&o, "airlock_leak_refusals_total %llu\n", (unsigned long long)m->leak_refusals);
    px__head(&o, "budget_refusals_total", "counter",
             "Requests and responses an egress budget refused or cut.");
    px__put(&o, "airlock_budget_refusals_total %llu\n", (unsigned long long)m->budget_refusals);
    px__head(&o, "upstream_errors_total", "counter", "Upstream requests that failed, by cause.");
    for (size_t i = 0; i < PX_M_UP_KINDS; i++)
        px__put(&o, "airlock_upstream_errors_total{kind=\"%s\"} %llu\n", px__uperrs[i],
                (unsigned long long)m->upstream_errors[i]);
    px__head(&o, "reloads_total", "counter", "SIGHUP reloads of the configuration, by result.");
    px__put(&o, "airlock_reloads_total{result=\"ok\"} %llu\n", (unsigned long long)m->reloads_ok);
    px__put(&o, "airlock_reloads_total{result=\"failed\"} %llu\n",
            (unsigned long long)m->reloads_failed);
    px__head(&o, "body_bytes_total", "counter",
             "Body bytes relayed: up (requests to upstreams), down (responses to clients).");
    px__put(&o, "airlock_body_bytes_total{direction=\"up\"} %llu\n",
            (unsigned long long)m->bytes_up);
    px__put(&o, "airlock_body_bytes_total{direction=\"down\"} %llu\n",
            (unsigned long long)m->bytes_down);
    px__head(&o, "connections_total", "counter", "Client connections accepted.");
    px__put(&o, "airlock_connections_total %llu\n", (unsigned long long)g->accepted);
    px__head(&o, "connections", "gauge", "Client connections open.");
    px__put(&o, "airlock_connections %llu\n", (unsigned long long)g->connections);
    px__head(&o, "leaf_cache_total", "counter",
             "Certificates for clients: taken from the cache (hit) or minted (miss).");
    px__put(&o, "airlock_leaf_cache_total{result=\"hit\"} %llu\n",
            (unsigned long long)g->leaf_cache_hits);
    px__put(&o, "airlock_leaf_cache_total{result=\"miss\"} %llu\n",
            (unsigned long long)g->leaf_cache_misses);
    px__hist(&o, "request_duration_seconds",
             "A request's head read to the last byte of its answer (or its refusal).",
             &m->request_seconds);
    px__hist(&o, "upstream_first_byte_seconds",
             "A request's head read to the upstream's response head.", &m->first_byte_seconds);
    return o.len;
}
