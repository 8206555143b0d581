#include "proxy/px_metrics.h"
#include "proxy/px_otel.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define PX__STR2(x) #x
#define PX__STR(x) PX__STR2(x)

/* The engine loop's counters (and any thread's that is not a worker's). */
static px_metrics_t px__metrics;
/* A worker loop's own (px_metrics_thread_begin): counting stays an increment without a lock or
 * an atomic; px_metrics_sum() adds them up when the metrics are read. */
static __thread px_metrics_t *px__mine;
static pthread_mutex_t px__threads_mu = PTHREAD_MUTEX_INITIALIZER;
static px_metrics_t *px__threads[PX_METRICS_THREADS_MAX];

/* The histograms' upper bounds, seconds: LLM calls take seconds to minutes, a cached page ms. */
static const double px__bounds[PX_M_HIST_BUCKETS] = {0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
                                                     0.5,   1,    2.5,   5,    15,  60};

px_metrics_t *px_metrics(void)
{
    return px__mine != NULL ? px__mine : &px__metrics;
}

int px_metrics_thread_begin(px_metrics_t *m)
{
    int rc = -1;
    pthread_mutex_lock(&px__threads_mu);
    for (size_t i = 0; i < PX_METRICS_THREADS_MAX && rc != 0; i++) {
        if (px__threads[i] == NULL) {
            px__threads[i] = m;
            rc = 0;
        }
    }
    pthread_mutex_unlock(&px__threads_mu);
    if (rc == 0)
        px__mine = m;
    return rc;
}

void px_metrics_thread_end(void)
{
    pthread_mutex_lock(&px__threads_mu);
    for (size_t i = 0; i < PX_METRICS_THREADS_MAX; i++)
        if (px__threads[i] == px__mine && px__mine != NULL)
            px__threads[i] = NULL;
    pthread_mutex_unlock(&px__threads_mu);
    px__mine = NULL;
}

static void px__hist_add(px_metrics_hist_t *to, const px_metrics_hist_t *h)
{
    for (size_t i = 0; i <= PX_M_HIST_BUCKETS; i++)
        to->counts[i] += h->counts[i];
    to->n += h->n;
    to->sum += h->sum;
}

static px_metrics_sandbox_t *px__sandbox_in(px_metrics_t *m, const char *name);

/* Adds a worker's per-request counters to out (what only the engine's loop counts, reloads and
 * the like, is in out already). */
static void px__add(px_metrics_t *out, const px_metrics_t *m)
{
    for (size_t k = 0; k <= AUDIT_EV_KIND_LAST; k++)
        for (size_t v = 0; v <= AUDIT_EV_REJECTED; v++)
            out->events[k][v] += m->events[k][v];
    out->leak_refusals += m->leak_refusals;
    out->budget_refusals += m->budget_refusals;
    for (size_t i = 0; i < PX_M_UP_KINDS; i++)
        out->upstream_errors[i] += m->upstream_errors[i];
    out->bytes_up += m->bytes_up;
    out->bytes_down += m->bytes_down;
    px__hist_add(&out->request_seconds, &m->request_seconds);
    px__hist_add(&out->first_byte_seconds, &m->first_byte_seconds);
    for (size_t i = 0; i < PX_M_TLS_REASONS; i++)
        out->tls_failures[i] += m->tls_failures[i];
    out->h2_streams += m->h2_streams;
    out->accepted += m->accepted;
    for (size_t i = 0; i <= m->nsandboxes; i++) {
        const px_metrics_sandbox_t *s = i < m->nsandboxes ? &m->sandboxes[i] : &m->sandbox_other;
        px_metrics_sandbox_t *t =
            i < m->nsandboxes ? px__sandbox_in(out, s->name) : &out->sandbox_other;
        for (size_t v = 0; v <= AUDIT_EV_REJECTED; v++)
            t->requests[v] += s->requests[v];
    }
}

void px_metrics_sum(px_metrics_t *out)
{
    /* the other loops' counters are read while they count: each value is a whole aligned word,
     * so a read sees it before or after an increment, and the sum is as of "about now" */
    memcpy(out, &px__metrics, sizeof(*out));
    out->loops_accepted[0] = px__metrics.accepted;
    out->nloops = 1;
    pthread_mutex_lock(&px__threads_mu);
    for (size_t i = 0; i < PX_METRICS_THREADS_MAX; i++) {
        if (px__threads[i] == NULL)
            continue;
        px__add(out, px__threads[i]);
        out->loops_accepted[out->nloops++] = px__threads[i]->accepted;
    }
    pthread_mutex_unlock(&px__threads_mu);
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
    if ((unsigned)ev->kind <= AUDIT_EV_KIND_LAST && (unsigned)ev->verdict <= AUDIT_EV_REJECTED)
        px_metrics()->events[ev->kind][ev->verdict]++;
    if (ev->verdict != AUDIT_EV_BLOCKED)
        return;
    /* the refusals' tails say who refused: "(leak: ...)", "(budget: ...)" (network-log.md) */
    if (ev->tail.len >= 5 && memcmp(ev->tail.base, "leak:", 5) == 0)
        px_metrics()->leak_refusals++;
    else if (px__has(ev->tail, "budget: "))
        px_metrics()->budget_refusals++;
}

/* The request-shaped kinds: one per request, CONNECT, tunnel or connection refused whole. */
static int px__request_shaped(audit_event_kind_t k)
{
    return k == AUDIT_EV_REQUEST || k == AUDIT_EV_CONNECT || k == AUDIT_EV_TUNNEL ||
           k == AUDIT_EV_CONNECTION;
}

/* The sandbox's slot: found, or the next free one, or the shared one once all are taken (a
 * linear scan: at most PX_METRICS_SANDBOXES_MAX short names, only with --sandboxes). */
static px_metrics_sandbox_t *px__sandbox_in(px_metrics_t *m, const char *name)
{
    for (size_t i = 0; i < m->nsandboxes; i++)
        if (strcmp(m->sandboxes[i].name, name) == 0)
            return &m->sandboxes[i];
    if (m->nsandboxes == PX_METRICS_SANDBOXES_MAX || strlen(name) >= PX_METRICS_SANDBOX_NAME_MAX ||
        strcmp(name, PX_METRICS_SANDBOX_OTHER) == 0)
        return &m->sandbox_other;
    px_metrics_sandbox_t *s = &m->sandboxes[m->nsandboxes++];
    memcpy(s->name, name, strlen(name) + 1);
    return s;
}

void px_metrics_sandbox_event(const char *name, const audit_event_t *ev)
{
    if (name == NULL || name[0] == '\0' || !px__request_shaped(ev->kind) ||
        (unsigned)ev->verdict > AUDIT_EV_REJECTED)
        return;
    px__sandbox_in(px_metrics(), name)->requests[ev->verdict]++;
}

/* The client's alerts that say it does not accept the certificate (RFC 8446 6.2). */
static int px__cert_alert(int alert)
{
    return alert == 42 /* bad_certificate */ || alert == 43 /* unsupported_certificate */ ||
           alert == 44 /* certificate_revoked */ || alert == 45 /* certificate_expired */ ||
           alert == 46 /* certificate_unknown */ || alert == 48 /* unknown_ca */;
}

px_metrics_tlsfail_t px_metrics_tls_reason(int alert, int sent_cert, int has_sni, const char *err)
{
    if (err == NULL)
        err = "";
    if (px__cert_alert(alert) || (alert < 0 && sent_cert))
        return PX_M_TLS_UNTRUSTED;
    /* the owner's certificate callback refused the name: OpenSSL fails the handshake with
     * SSL_R_CALLBACK_FAILED ("callback failed") after sending the alert it was given */
    if (strstr(err, "callback failed") != NULL)
        return has_sni ? PX_M_TLS_UNKNOWN_NAME : PX_M_TLS_NO_SNI;
    if (alert >= 0 || strstr(err, "routines") != NULL || strstr(err, "version") != NULL ||
        strstr(err, "cipher") != NULL || strstr(err, "record") != NULL)
        return PX_M_TLS_PROTOCOL;
    if (err[0] == '\0' || strstr(err, "EOF") != NULL || strstr(err, "eof") != NULL ||
        strstr(err, "reset") != NULL || strstr(err, "closed") != NULL)
        return PX_M_TLS_CLIENT_ABORTED;
    return PX_M_TLS_OTHER;
}

void px_metrics_tls_failed(px_metrics_tlsfail_t why)
{
    if ((unsigned)why < PX_M_TLS_REASONS)
        px_metrics()->tls_failures[why]++;
}

void px_metrics_h2_stream(int delta)
{
    px_metrics_t *m = px_metrics();
    m->h2_streams += delta;
    if (m->h2_streams < 0) /* never below zero, whatever a caller does */
        m->h2_streams = 0;
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
    [AUDIT_EV_DECISION] = "decision",
};

static const char *const px__verdicts[] = {
    [AUDIT_EV_V_NONE] = "none", [AUDIT_EV_ALLOWED] = "allowed", [AUDIT_EV_BLOCKED] = "blocked",
    [AUDIT_EV_ERROR] = "error", [AUDIT_EV_WARN] = "warn",       [AUDIT_EV_REJECTED] = "rejected",
};

static const char *const px__uperrs[PX_M_UP_KINDS] = {
    "destination", "resolve", "connect", "tls", "timeout", "protocol", "other",
};

static const char *const px__decides[PX_M_DECIDE_OUTCOMES] = {
    "allow", "deny", "timeout", "error", "malformed",
};

static const char *const px__tlsfails[PX_M_TLS_REASONS] = {
    "untrusted", "unknown_name", "no_sni", "protocol", "client_aborted", "other",
};

/* A label value per the exposition format: backslash, quote and newline escaped. */
static void px__label(px__out_t *o, const char *v)
{
    for (; *v != '\0'; v++) {
        if (*v == '\\' || *v == '"')
            px__put(o, "\\%c", *v);
        else if (*v == '\n')
            px__put(o, "\\n");
        else
            px__put(o, "%c", *v);
    }
}

static void px__sandbox_series(px__out_t *o, const px_metrics_sandbox_t *s, const char *name)
{
    for (size_t v = 0; v < sizeof(px__verdicts) / sizeof(px__verdicts[0]); v++) {
        if (s->requests[v] == 0)
            continue;
        px__put(o, "airlock_sandbox_requests_total{sandbox=\"");
        px__label(o, name);
        px__put(o, "\",verdict=\"%s\"} %llu\n", px__verdicts[v],
                (unsigned long long)s->requests[v]);
    }
}

/* The decision webhook (--decide-url): its calls by outcome, its breaker, its calls under way. */
static void px__render_decide(px__out_t *o, const px_metrics_t *m)
{
    px__head(o, "decide_calls_total", "counter",
             "Calls to the decision webhook (--decide-url), by outcome: allow, deny, or a failure "
             "that denied (timeout, error, malformed).");
    for (size_t i = 0; i < PX_M_DECIDE_OUTCOMES; i++)
        px__put(o, "airlock_decide_calls_total{outcome=\"%s\"} %llu\n", px__decides[i],
                (unsigned long long)m->decide_calls[i]);
    px__head(o, "decide_breaker_open", "gauge",
             "1 while the decision webhook's circuit breaker is open (or half-open: one trial "
             "call), else 0.");
    px__put(o, "airlock_decide_breaker_open %lld\n", (long long)m->decide_breaker_open);
    px__head(o, "decide_calls_in_flight", "gauge", "Calls to the decision webhook under way.");
    px__put(o, "airlock_decide_calls_in_flight %lld\n", (long long)m->decide_in_flight);
}

/* The series added for issue 31: TLS failures by reason, HTTP/2 streams, per sandbox. */
static void px__render_more(px__out_t *o, const px_metrics_t *m)
{
    px__head(o, "tls_handshake_failures_total", "counter",
             "Client TLS handshakes that failed, by reason.");
    for (size_t i = 0; i < PX_M_TLS_REASONS; i++)
        px__put(o, "airlock_tls_handshake_failures_total{reason=\"%s\"} %llu\n", px__tlsfails[i],
                (unsigned long long)m->tls_failures[i]);
    px__head(o, "h2_streams", "gauge", "HTTP/2 streams open on client connections.");
    px__put(o, "airlock_h2_streams %lld\n", (long long)m->h2_streams);
    px__head(o, "sandbox_requests_total", "counter",
             "Requests, CONNECTs, tunnels and refused connections per sandbox (--sandboxes), by "
             "verdict; sandboxes past the first " PX__STR(
                 PX_METRICS_SANDBOXES_MAX) " are counted as " PX_METRICS_SANDBOX_OTHER ".");
    for (size_t i = 0; i < m->nsandboxes; i++)
        px__sandbox_series(o, &m->sandboxes[i], m->sandboxes[i].name);
    px__sandbox_series(o, &m->sandbox_other, PX_METRICS_SANDBOX_OTHER);
    px__head(o, "loop_connections_total", "counter",
             "Client connections accepted by each event loop (--workers; loop 0 is the "
             "engine's).");
    size_t nloops = m->nloops > 0 ? m->nloops : 1;
    for (size_t i = 0; i < nloops && i <= PX_METRICS_THREADS_MAX; i++)
        px__put(o, "airlock_loop_connections_total{loop=\"%zu\"} %llu\n", i,
                (unsigned long long)(m->nloops > 0 ? m->loops_accepted[i] : m->accepted));
    /* the OTLP exporter runs on a thread of its own, not a loop: its counters are its atomics,
     * read here (px_otel_stats()), not fields bumped by a loop */
    px_otel_stats_t ot;
    px_otel_stats(&ot);
    px__head(o, "otel_log_records_total", "counter",
             "Audit events sent to the OpenTelemetry collector (OTEL_EXPORTER_OTLP_ENDPOINT), by "
             "result: exported, or dropped because the queue was full or the collector failed.");
    px__put(o, "airlock_otel_log_records_total{result=\"exported\"} %llu\n",
            (unsigned long long)ot.exported);
    px__put(o, "airlock_otel_log_records_total{result=\"dropped_queue_full\"} %llu\n",
            (unsigned long long)ot.dropped_full);
    px__put(o, "airlock_otel_log_records_total{result=\"dropped_export_failed\"} %llu\n",
            (unsigned long long)ot.dropped_failed);
    px__head(o, "otel_export_retries_total", "counter",
             "Export requests repeated after a retryable failure (429, 502, 503, 504, no "
             "connection).");
    px__put(o, "airlock_otel_export_retries_total %llu\n", (unsigned long long)ot.retries);
    px__render_decide(o, m);
}

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
    px__render_more(&o, m);
    return o.len;
}
