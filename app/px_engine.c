#include "app/px_engine.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <ifaddrs.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "addons/addon_budget.h"
#include "addons/addon_leak.h"
#include "addons/addon_policy.h"
#include "dns/dns_resolve.h"
#include "dns/dns_server.h"
#include "proxy/px_client.h"
#include "base/px_err.h"
#include "proxy/px_policy.h"
#include "app/px_sandbox.h"
#include "app/px_metrics_http.h"
#include "app/px_control.h"
#include "app/px_worker.h"
#include "proxy/px_decide.h"
#include "proxy/px_hold.h"
#include "proxy/px_metrics.h"
#include "net/px_tls.h"
#include "proxy/px_upstream.h"
#include "ca/ca.h"
#include "proxy/px_caconv.h"
#include "proxy/px_secretfetch.h"

static void on_listener_closed(uv_handle_t *h)
{
    (void)h;
}

static void on_dns_closed(void *data)
{
    (void)data;
}

static void px__engine_stop(px_engine_t *eng)
{
    if (eng->ctx.stopping)
        return;
    eng->ctx.stopping = 1;
    px_diag(PX_DIAG_INFO, "shutting down");
    for (int i = 0; i < eng->nlisteners; i++)
        uv_close((uv_handle_t *)&eng->listeners[i].tcp, on_listener_closed);
    if (eng->dns != NULL)
        dns_server_close(eng->dns, on_dns_closed, NULL);
    eng->dns = NULL;
    px_client_close_all(&eng->ctx, "proxy shutting down");
    px_workers_stop(eng->workers);
    px_metrics_http_stop(eng->metrics);
    eng->metrics = NULL;
    px_secretfetch_close(eng->secrets);
    px_control_stop(eng->control);
    eng->control = NULL;
    px_decide_stop(eng->decide);
    eng->decide = NULL;
    px_upmgr_close_idle(eng->ctx.scope.up);
    px_sandboxes_stop(&eng->sandboxes);
    if (eng->resolver != NULL)
        dns_resolver_close(eng->resolver, NULL, NULL);
    eng->resolver = NULL;
    uv_close((uv_handle_t *)&eng->sig_term, NULL);
    uv_close((uv_handle_t *)&eng->sig_int, NULL);
    uv_close((uv_handle_t *)&eng->sig_hup, NULL);
    uv_check_stop(&eng->log_kick);
    uv_close((uv_handle_t *)&eng->log_kick, NULL);
    uv_close((uv_handle_t *)&eng->log_timer, NULL);
    uv_close((uv_handle_t *)&eng->trim, NULL);
}

static void on_log_timer(uv_timer_t *t)
{
    px_engine_t *eng = t->data;
    int left = px_log_kick(eng->ctx.log, 1) | px_sandboxes_kick_logs(&eng->sandboxes, 1);
    if (left)
        uv_timer_start(&eng->log_timer, on_log_timer, PX_LOG_DELAY_MS, 0); /* writer busy */
}

/* End of every loop turn: the lines of this turn go to the writer in batches, at the latest
 * PX_LOG_DELAY_MS after they were queued. */
static void on_log_kick(uv_check_t *h)
{
    px_engine_t *eng = h->data;
    int left = px_log_kick(eng->ctx.log, 0) | px_sandboxes_kick_logs(&eng->sandboxes, 0);
    if (left && !uv_is_active((uv_handle_t *)&eng->log_timer))
        uv_timer_start(&eng->log_timer, on_log_timer, PX_LOG_DELAY_MS, 0);
}

/* glibc keeps the memory of freed connections (buffers, TLS state) for reuse; after a burst
 * of thousands of connections that is tens of MB held for good. Once the connection count has
 * fallen well below its peak, give the free heap back. */
static void on_trim(uv_timer_t *t)
{
    px_engine_t *eng = t->data;
    /* a burst of connections ended, or the traffic went quiet (no read for a whole check
     * interval) after some: handshakes and large bodies leave their buffers' memory in the
     * heap, scattered between the connections that stay */
    int burst_over = eng->ctx.nclients_peak >= eng->ctx.nclients + PX_TRIM_DROP;
    if (eng->ctx.conns_all != NULL) { /* --workers: every loop's connections, looked at here */
        size_t all = __atomic_load_n(eng->ctx.conns_all, __ATOMIC_RELAXED);
        burst_over |= eng->conns_peak >= all + PX_TRIM_DROP;
        if (all > eng->conns_peak)
            eng->conns_peak = all;
        if (burst_over)
            eng->conns_peak = all;
    }
    uint64_t reads = eng->ctx.loop.reads;
    int quiet = reads == eng->reads_seen && reads != eng->reads_trimmed;
    eng->reads_seen = reads;
    if (!burst_over && !quiet)
        return;
    eng->ctx.nclients_peak = eng->ctx.nclients;
    eng->reads_trimmed = reads;
#ifdef __GLIBC__
    malloc_trim(0);
#endif
}

/* A reload ended (SIGHUP, or a value fetched from AWS changed): n goes in, or (NULL) the
 * previous configuration stays. */
static void on_reloaded(void *arg, px_snapshot_t *n)
{
    px_engine_t *eng = arg;
    if (n == NULL) {
        px_metrics()->reloads_failed++;
        return;
    }
    px_metrics()->reloads_ok++;
    if (eng->secrets != NULL)
        px_secretfetch_commit(eng->secrets);
    px_snapshot_unref(px_scope_set_snap(&eng->ctx.scope, n)); /* other loops read it */
    if (eng->ctx.scope.budgets != NULL) /* budgets still named keep their counts (else: lazily) */
        addon_budget_table_sync(eng->ctx.scope.budgets, n->cfg.policy, uv_now(eng->ctx.loop.uv));
    px_diag(PX_DIAG_WARN, "allowlist reloaded from %s (%zu domains, %zu url_prefixes)",
            eng->ctx.cfg->allowlist_path, addon_policy_count(n->cfg.policy, ADDON_POLICY_DOMAINS),
            addon_policy_count(n->cfg.policy, ADDON_POLICY_URL_PREFIXES));
}

/* A value fetched from AWS changed: the configuration is loaded again with it. */
static void on_secret_changed(void *arg)
{
    px_engine_t *eng = arg;
    px_diag(PX_DIAG_WARN, "a value fetched from AWS changed: reloading %s",
            eng->ctx.cfg->replacements_path);
    px_secretfetch_load(eng->secrets, eng->ctx.cfg, 0, on_reloaded, eng);
}

static void on_signal(uv_signal_t *s, int signum)
{
    px_engine_t *eng = s->data;
    if (signum == SIGHUP && eng->ctx.cfg->sandboxes_dir != NULL) {
        px_sandboxes_load(&eng->sandboxes, 0);
        px_workers_sandboxes_changed(eng->workers);
        px_metrics()->reloads_ok++; /* each sandbox keeps its policy when its files are bad */
        return;
    }
    if (signum == SIGHUP) {
        if (eng->secrets != NULL)
            px_secretfetch_load(eng->secrets, eng->ctx.cfg, 1, on_reloaded, eng);
        else {
            px_snapshot_t *n = NULL;
            on_reloaded(eng, px_snapshot_load(eng->ctx.cfg, 0, &n) == 0 ? n : NULL);
        }
        return;
    }
    px__engine_stop(eng);
}

static void on_accept(uv_stream_t *server, int status)
{
    px_listener_t *l = px_container_of(server, px_listener_t, tcp);
    if (status < 0) {
        px_diag(PX_DIAG_WARN, "accept failed: %s", uv_strerror(status));
        return;
    }
    px_client_accept(&l->eng->ctx, server, l->kind);
}

/* "name ip:port" (or "name [ip]:port") of the address tcp listens on, for the ready line. */
static void px__bound_text(const uv_tcp_t *tcp, const char *name, char *bound, size_t blen)
{
    struct sockaddr_storage ss;
    int len = sizeof(ss);
    uv_tcp_getsockname(tcp, (struct sockaddr *)&ss, &len);
    char ip[INET6_ADDRSTRLEN] = "?";
    if (ss.ss_family == AF_INET) {
        inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, ip, sizeof(ip));
        snprintf(bound, blen, "%s %s:%d", name, ip, ntohs(((struct sockaddr_in *)&ss)->sin_port));
    } else {
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, ip, sizeof(ip));
        snprintf(bound, blen, "%s [%s]:%d", name, ip,
                 ntohs(((struct sockaddr_in6 *)&ss)->sin6_port));
    }
}

static int px__listen(px_engine_t *eng, const px_listen_t *cfg, px_listener_kind_t kind,
                      const char *name, char *bound, size_t blen)
{
    if (eng->nlisteners == PX_ENGINE_LISTENERS)
        return PX_ENOMEM; /* cannot happen: one per kind */
    px_listener_t *l = &eng->listeners[eng->nlisteners];
    l->eng = eng;
    l->kind = kind;
    uv_tcp_init(eng->ctx.loop.uv, &l->tcp);
    /* with workers, theirs bind the same address: SO_REUSEPORT on every one */
    int rc = eng->nworkers > 1
                 ? px_worker_listen_reuseport(&l->tcp, (const struct sockaddr *)&cfg->addr)
                 : uv_tcp_bind(&l->tcp, (const struct sockaddr *)&cfg->addr, 0);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&l->tcp, 4096, on_accept);
    if (rc < 0) {
        px_diag(PX_DIAG_ERROR, "cannot listen for %s on %s: %s", name, cfg->text, uv_strerror(rc));
        uv_close((uv_handle_t *)&l->tcp, NULL);
        return rc;
    }
    eng->nlisteners++;
    px__bound_text(&l->tcp, name, bound, blen);
    return 0;
}

/* A DNS line ("DNS TYPE NAME -> ANSWER"), unless the query name holds a real value or a canary
 * of the snapshot's secret guard: the network log never holds a real secret
 * (docs/network-log.md), so the name is withheld and the entry named instead. The query was
 * answered like any other: nothing leaves airlock for a DNS query. */
static void px__dns_log(px_log_t *log, const px_snapshot_t *snap, const dns_log_fields_t *f)
{
    audit_event_t ev = {.kind = AUDIT_EV_DNS};
    ev.dns_type = audit_s(f->type);
    ev.host = (audit_str_t){f->name, f->name_len};
    ev.reason = audit_s(f->answer);
    addon_leak_match_t mt;
    char withheld[600];
    if (snap != NULL && addon_leak_scan(snap->leak, f->name, f->name_len, &mt)) {
        int n = snprintf(withheld, sizeof(withheld), "[name withheld: it holds %s %s]",
                         addon_leak_kind_name(mt.kind), mt.name);
        ev.host = (audit_str_t){withheld, n > 0 && (size_t)n < sizeof(withheld) ? (size_t)n
                                                                                : strlen(withheld)};
    }
    px_log_event(log, &ev);
}

static void on_dns_log(void *data, const dns_log_fields_t *f)
{
    px_engine_t *eng = data;
    px__dns_log(eng->ctx.log, eng->ctx.scope.snap, f);
}

static void on_sandbox_dns_log(void *data, const dns_log_fields_t *f)
{
    px_sandbox_t *sb = data;
    px__dns_log(sb->scope.log, sb->scope.snap, f);
}

/* --sandboxes: a query is answered for the sandbox of its source, or not at all. */
static void *on_dns_route(void *data, const struct sockaddr *src)
{
    px_engine_t *eng = data;
    px_sandbox_t *sb = px_sandbox_for(&eng->sandboxes, src);
    if (sb != NULL)
        return sb;
    char ip[INET6_ADDRSTRLEN] = "?";
    if (src->sa_family == AF_INET)
        inet_ntop(AF_INET, &((const struct sockaddr_in *)src)->sin_addr, ip, sizeof(ip));
    else if (src->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)src)->sin6_addr, ip, sizeof(ip));
    audit_event_t ev = audit_event_access(AUDIT_EV_CONNECTION, AUDIT_EV_BLOCKED, "DNS", NULL, -1);
    ev.reason = audit_s("no answer");
    px_log_eventf(eng->ctx.log, &ev, "source %s is in no sandbox", ip);
    return NULL;
}

static void px__own_addresses(px_engine_t *eng)
{
    struct ifaddrs *ifa = NULL;
    if (getifaddrs(&ifa) != 0)
        return;
    for (struct ifaddrs *i = ifa; i != NULL && eng->n_own < 64; i = i->ifa_next) {
        if (i->ifa_addr == NULL)
            continue;
        px_cidr_t *c = &eng->own[eng->n_own];
        if (i->ifa_addr->sa_family == AF_INET) {
            c->family = AF_INET;
            memcpy(c->addr, &((struct sockaddr_in *)i->ifa_addr)->sin_addr, 4);
            c->prefix = 32;
            eng->n_own++;
        } else if (i->ifa_addr->sa_family == AF_INET6) {
            c->family = AF_INET6;
            memcpy(c->addr, &((struct sockaddr_in6 *)i->ifa_addr)->sin6_addr, 16);
            c->prefix = 128;
            eng->n_own++;
        }
    }
    freeifaddrs(ifa);
}

/* PROXY_IP unset: the DNS listener's address if specific, else the first non-loopback IPv4. */
static void px__pick_proxy_ip(px_engine_t *eng, char *text, size_t cap)
{
    const px_config_t *cfg = eng->ctx.cfg;
    if (cfg->proxy_ip[0] != '\0') {
        eng->ctx.proxy_ip = cfg->proxy_ip4.s_addr;
        size_t n = strnlen(cfg->proxy_ip, sizeof(cfg->proxy_ip));
        if (n >= cap)
            n = cap - 1;
        memcpy(text, cfg->proxy_ip, n);
        text[n] = '\0';
        return;
    }
    const struct sockaddr_in *d = (const struct sockaddr_in *)&cfg->listen_dns.addr;
    if (cfg->listen_dns.enabled && d->sin_family == AF_INET && d->sin_addr.s_addr != 0) {
        eng->ctx.proxy_ip = d->sin_addr.s_addr;
    } else {
        eng->ctx.proxy_ip = htonl(INADDR_LOOPBACK);
        for (size_t i = 0; i < eng->n_own; i++) {
            if (eng->own[i].family == AF_INET && eng->own[i].addr[0] != 127) {
                memcpy(&eng->ctx.proxy_ip, eng->own[i].addr, 4);
                break;
            }
        }
    }
    inet_ntop(AF_INET, &eng->ctx.proxy_ip, text, (socklen_t)cap);
    if (cfg->listen_dns.enabled) /* only the DNS answers use it */
        px_diag(PX_DIAG_WARN, "PROXY_IP not set; answering DNS with %s", text);
}

/* --ca-per-conversation: the CA is made from the allowlist unless this conversation has one. */
static int px__conv_ca(const px_engine_t *eng, char *err, size_t errlen)
{
    const px_config_t *cfg = eng->ctx.cfg;
    char ip[INET_ADDRSTRLEN] = "";
    int created = 0;
    if (!cfg->ca_per_conversation)
        return 0;
    inet_ntop(AF_INET, &eng->ctx.proxy_ip, ip, sizeof(ip)); /* clients without SNI get its leaf */
    int rc = px_caconv_ensure(cfg->confdir, cfg->allowlist_path,
                              (addon_policy_format_t)cfg->allowlist_format, cfg->ca_days, ip,
                              &created, err, errlen);
    if (rc == 0 && created)
        px_diag(PX_DIAG_WARN,
                "created a per-conversation CA in %s (valid %d days, only for the "
                "allowlist's hosts): agents must trust %s/%s",
                cfg->confdir, cfg->ca_days, cfg->confdir, CA_FILE_CERT_PEM);
    return rc;
}

/* path made absolute with symlinks resolved, also when it does not exist yet: its longest
 * existing ancestor resolved, the rest appended as written. 0, or -1 (too long, unreadable). */
static int px__path_real(const char *path, char *out, size_t cap)
{
    char head[PATH_MAX], tail[PATH_MAX] = "", real[PATH_MAX];
    if ((size_t)snprintf(head, sizeof(head), "%s", path) >= sizeof(head))
        return -1;
    while (realpath(head[0] != '\0' ? head : ".", real) == NULL) {
        char *slash = strrchr(head, '/');
        if (errno != ENOENT || strlen(tail) + strlen(head) + 2 > sizeof(tail))
            return -1;
        const char *last = slash != NULL ? slash + 1 : head; /* moves to the front of tail */
        size_t ln = strlen(last), lt = strlen(tail);
        if (ln > 0) {
            memmove(tail + 1 + ln, tail, lt + 1);
            tail[0] = '/';
            memcpy(tail + 1, last, ln);
        }
        if (slash == head)
            head[1] = '\0'; /* "/" exists */
        else if (slash != NULL)
            *slash = '\0';
        else
            head[0] = '\0';
    }
    const char *root = strcmp(real, "/") == 0 && tail[0] != '\0' ? "" : real; /* no "//" */
    return (size_t)snprintf(out, cap, "%s%s", root, tail) < cap ? 0 : -1;
}

/* 1 when path a is b or lies under it (both resolved). */
static int px__path_under(const char *a, const char *b)
{
    size_t n = strlen(b);
    return strncmp(a, b, n) == 0 && (a[n] == '\0' || a[n] == '/' || (n == 1 && b[0] == '/'));
}

/* --sandboxes --ca-per-conversation: the sandboxes' CA keys (CONFDIR/sandbox-ca) must not be
 * inside DIR, where a key could land in a sandbox's directory, nor DIR inside them. */
static int px__sandbox_ca_check(const px_config_t *cfg)
{
    char keys[PATH_MAX], dir[PATH_MAX], real_keys[PATH_MAX], real_dir[PATH_MAX];
    snprintf(keys, sizeof(keys), "%s/%s", cfg->confdir, PX_SB_CA_DIR);
    snprintf(dir, sizeof(dir), "%s", cfg->sandboxes_dir);
    if (px__path_real(keys, real_keys, sizeof(real_keys)) != 0 ||
        px__path_real(dir, real_dir, sizeof(real_dir)) != 0) {
        px_diag(PX_DIAG_ERROR, "CA: cannot resolve %s or %s", keys, dir);
        return -1;
    }
    if (px__path_under(real_keys, real_dir) || px__path_under(real_dir, real_keys)) {
        px_diag(PX_DIAG_ERROR,
                "CA: the sandboxes' CA keys would be kept in %s, which overlaps --sandboxes %s: "
                "give --confdir a directory outside it",
                real_keys, real_dir);
        return -1;
    }
    return 0;
}

/* The CA (unless each sandbox has its own) and the TLS server context. Returns 0, or -1
 * after saying why on stderr. */
static int px__engine_ca(px_engine_t *eng)
{
    const px_config_t *cfg = eng->ctx.cfg;
    char err[512];
    /* --sandboxes --ca-per-conversation: each sandbox gets its own CA when it is loaded
     * (px_sandbox.c); the engine has none, so no connection can fall back to one */
    if (cfg->sandboxes_dir != NULL && cfg->ca_per_conversation) {
        if (px__sandbox_ca_check(cfg) != 0)
            return -1;
    } else {
        if (px__conv_ca(eng, err, sizeof(err)) != 0 ||
            ca_load(&eng->ctx.ca, cfg->confdir, cfg->ca_per_conversation ? 0 : CA_CREATE, 0, err,
                    sizeof(err)) != 0) {
            px_diag(PX_DIAG_ERROR, "CA: %s", err);
            return -1;
        }
        if (cfg->ca_per_conversation && ca_get_constraints(eng->ctx.ca) == NULL) {
            px_diag(PX_DIAG_ERROR,
                    "CA: %s/%s " PX_CACONV_UNCONSTRAINED " (give it an empty confdir)",
                    cfg->confdir, CA_FILE_KEY_CERT);
            return -1;
        }
        if (ca_was_generated(eng->ctx.ca))
            px_diag(PX_DIAG_WARN,
                    "created a new CA in %s: agents must trust %s/%s (see the documentation "
                    "for each runtime)",
                    cfg->confdir, cfg->confdir, CA_FILE_CERT_PEM);
    }
    if (px_tls_server_ctx_new(px_client_cert_cb, &eng->ctx, &eng->ctx.tls_server, err,
                              sizeof(err)) != 0) {
        px_diag(PX_DIAG_ERROR, "%s", err);
        return -1;
    }
    return 0;
}

/* Opens the log, the policy, the CA and the TLS contexts, the resolver and the upstream
 * manager. Returns 0, or -1 after saying why on stderr. */
static int px__engine_open(px_engine_t *eng, char *ipbuf, size_t iplen)
{
    const px_config_t *cfg = eng->ctx.cfg;
    char err[512];
    if (px_log_open(cfg->log_path, cfg->log_create, &eng->ctx.log, err, sizeof(err)) != 0) {
        px_diag(PX_DIAG_ERROR, "%s", err);
        return -1;
    }
    eng->ctx.conv = &eng->ctx.scope;
    eng->ctx.scope.log = eng->ctx.log; /* one conversation: its log is the process's */
    eng->ctx.scope.refs = 1;           /* the engine's, for good */
    if (cfg->sandboxes_dir != NULL) {
        eng->ctx.scope_for = px_sandbox_scope_for;
        eng->ctx.scope_arg = &eng->sandboxes;
    }
    if (!px_log_enabled(eng->ctx.log))
        px_diag(PX_DIAG_WARN,
                "network log %s does not exist: no audit log will be written (create the file, "
                "or pass --log-create)",
                cfg->log_path);
    /* with --sandboxes every connection has its sandbox's configuration; none is the engine's
     * (and nothing is fetched from AWS: the loader refuses those sources there) */
    if (cfg->sandboxes_dir == NULL &&
        (eng->secrets = px_secretfetch_new(&eng->ctx.loop, on_secret_changed, eng)) == NULL)
        return -1;
    if (cfg->sandboxes_dir == NULL && px_snapshot_load(cfg, 1, &eng->ctx.scope.snap) != 0)
        return -1;
    px__own_addresses(eng);
    px__pick_proxy_ip(eng, ipbuf, iplen);

    if ((cfg->listen_https.enabled || cfg->listen_http.enabled || cfg->listen_proxy.enabled ||
         cfg->listen_transparent.enabled || cfg->listen_socks.enabled) &&
        px__engine_ca(eng) != 0)
        return -1;
    if (px_tls_client_ctx_new(cfg->upstream_ca, &eng->ctx.tls_client, err, sizeof(err)) != 0) {
        px_diag(PX_DIAG_ERROR, "%s", err);
        return -1;
    }
    if (dns_resolver_create(eng->ctx.loop.uv, cfg->upstream_dns, &eng->resolver) != 0) {
        px_diag(PX_DIAG_ERROR, "cannot use upstream DNS server %s", cfg->upstream_dns);
        return -1;
    }
    eng->ctx.scope.up = px_upmgr_new(&eng->ctx.loop, cfg, eng->resolver, eng->ctx.tls_client);
    if (eng->ctx.scope.up == NULL)
        return -1;
    px_upmgr_set_own(eng->ctx.scope.up, eng->own, eng->n_own, eng->ctx.proxy_ip);
    if (eng->secrets != NULL) { /* values from AWS: fetched now, before anything is served */
        px_secretfetch_set_upmgr(eng->secrets, eng->ctx.scope.up);
        if (px_secretfetch_wanted(eng->secrets)) {
            px_snapshot_unref(eng->ctx.scope.snap);
            eng->ctx.scope.snap = NULL;
            if (px_secretfetch_load_sync(eng->secrets, cfg, &eng->ctx.scope.snap) != 0)
                return -1;
        }
    }
    eng->sandboxes.ctx = &eng->ctx;
    eng->sandboxes.resolver = eng->resolver;
    eng->sandboxes.own = eng->own;
    eng->sandboxes.n_own = eng->n_own;
    if (cfg->sandboxes_dir != NULL && px_sandboxes_load(&eng->sandboxes, 1) != 0)
        return -1;
    return 0;
}

/* The hold table's names for the listings: the sandbox whose network log is scope (the
 * table's key for a conversation), or NULL (the one conversation). */
static const char *on_hold_name(void *arg, const void *scope)
{
    px_engine_t *eng = arg;
    for (px_sandbox_t *sb = eng->sandboxes.list; sb != NULL; sb = sb->next)
        if ((const void *)sb->scope.log == scope)
            return sb->name;
    return NULL;
}

/* --workers N: the other loops, on the addresses the engine's listeners are bound to. 0, or -1
 * after saying why. */
static int px__engine_workers(px_engine_t *eng)
{
    if (eng->nworkers <= 1)
        return 0;
    px_worker_listen_t ls[PX_ENGINE_LISTENERS];
    size_t n = 0;
    for (int i = 0; i < eng->nlisteners && n < PX_ENGINE_LISTENERS; i++) {
        int len = sizeof(ls[n].addr);
        if (uv_tcp_getsockname(&eng->listeners[i].tcp, (struct sockaddr *)&ls[n].addr, &len) != 0)
            return -1;
        ls[n++].kind = (int)eng->listeners[i].kind;
    }
    return px_workers_start(&eng->ctx, eng->nworkers, ls, n, eng->own, eng->n_own, &eng->workers);
}

/* Starts the DNS responder and every enabled TCP listener, appending what each is bound to
 * to ready (" dns ip:port, http ip:port, ..."), then the hold table and the deciders' control
 * socket. Returns 0, or -1 after saying why. */
static int px__engine_listen(px_engine_t *eng, const char *ipbuf, char *ready, size_t cap)
{
    const px_config_t *cfg = eng->ctx.cfg;
    size_t rlen = strlen(ready);
    if (cfg->listen_dns.enabled) {
        int rc = dns_server_start(
            eng->ctx.loop.uv, (const struct sockaddr *)&cfg->listen_dns.addr, ipbuf,
            cfg->sandboxes_dir != NULL ? on_sandbox_dns_log : on_dns_log, eng, &eng->dns);
        if (rc == 0 && cfg->sandboxes_dir != NULL)
            dns_server_set_route(eng->dns, on_dns_route);
        if (rc != 0) {
            px_diag(PX_DIAG_ERROR, "cannot listen for DNS on %s: %s", cfg->listen_dns.text,
                    uv_strerror(rc));
            return -1;
        }
        struct sockaddr_storage ss;
        dns_server_address(eng->dns, &ss);
        char ip[INET6_ADDRSTRLEN] = "?";
        int port;
        if (ss.ss_family == AF_INET) {
            inet_ntop(AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, ip, sizeof(ip));
            port = ntohs(((struct sockaddr_in *)&ss)->sin_port);
        } else {
            inet_ntop(AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, ip, sizeof(ip));
            port = ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
        }
        rlen += (size_t)snprintf(ready + rlen, cap - rlen, " dns %s:%d", ip, port);
    }
    const struct {
        const px_listen_t *l;
        px_listener_kind_t kind;
        const char *name;
    } tcp[] = {
        {&cfg->listen_http, PX_LISTEN_HTTP, "http"},
        {&cfg->listen_https, PX_LISTEN_HTTPS, "https"},
        {&cfg->listen_proxy, PX_LISTEN_PROXY, "proxy"},
        {&cfg->listen_transparent, PX_LISTEN_TRANSPARENT, "transparent"},
        {&cfg->listen_socks, PX_LISTEN_SOCKS, "socks"},
    };
    for (size_t i = 0; i < sizeof(tcp) / sizeof(tcp[0]); i++) {
        char bound[128];
        if (!tcp[i].l->enabled)
            continue;
        if (px__listen(eng, tcp[i].l, tcp[i].kind, tcp[i].name, bound, sizeof(bound)) != 0)
            return -1;
        if (rlen < cap)
            rlen += (size_t)snprintf(ready + rlen, cap - rlen, "%s %s", rlen > 0 ? "," : "", bound);
    }
    if (cfg->metrics.enabled) { /* its own listener: never one the agent's traffic reaches */
        char bound[128];
        if (px_metrics_http_start(&eng->ctx, &cfg->metrics, &eng->metrics) != 0)
            return -1;
        px__bound_text(px_metrics_http_tcp(eng->metrics), "metrics", bound, sizeof(bound));
        if (rlen < cap)
            rlen += (size_t)snprintf(ready + rlen, cap - rlen, "%s %s", rlen > 0 ? "," : "", bound);
    }
    /* the table of held requests (on_block: hold), and the deciders' socket */
    eng->ctx.holds = px_hold_new();
    if (eng->ctx.holds == NULL || px_hold_start(eng->ctx.holds, eng->ctx.loop.uv) != 0)
        return -1;
    px_hold_set_namer(eng->ctx.holds, on_hold_name, eng);
    px_hold_set_audit(eng->ctx.holds, px_hold_audit_line, NULL);
    if (cfg->control_path != NULL &&
        px_control_start(&eng->ctx, cfg->control_path, &eng->control) != 0)
        return -1;
    if (cfg->decide_url != NULL &&
        px_decide_start(&eng->ctx, eng->ctx.scope.up, cfg->decide_url, &eng->decide) != 0)
        return -1;
    return px__engine_workers(eng);
}

/* Signals, the log's end-of-turn flush and the heap-trim timer; then the task-start line. */
static void px__engine_start(px_engine_t *eng)
{
    uv_signal_init(eng->ctx.loop.uv, &eng->sig_term);
    uv_signal_init(eng->ctx.loop.uv, &eng->sig_int);
    uv_signal_init(eng->ctx.loop.uv, &eng->sig_hup);
    eng->sig_term.data = eng->sig_int.data = eng->sig_hup.data = eng;
    uv_signal_start(&eng->sig_term, on_signal, SIGTERM);
    uv_signal_start(&eng->sig_int, on_signal, SIGINT);
    uv_signal_start(&eng->sig_hup, on_signal, SIGHUP);
    uv_check_init(eng->ctx.loop.uv, &eng->log_kick);
    eng->log_kick.data = eng;
    uv_check_start(&eng->log_kick, on_log_kick);
    uv_unref((uv_handle_t *)&eng->log_kick);
    uv_timer_init(eng->ctx.loop.uv, &eng->log_timer);
    eng->log_timer.data = eng;
    uv_timer_init(eng->ctx.loop.uv, &eng->trim);
    eng->trim.data = eng;
    uv_timer_start(&eng->trim, on_trim, PX_TRIM_CHECK_MS, PX_TRIM_CHECK_MS);
    uv_unref((uv_handle_t *)&eng->trim);
    px_log_set_batched(eng->ctx.log, 1);
    px_log_task_start(eng->ctx.log);
}

/* Closes what is still open, lets the loop run dry, and frees the engine. */
static void px__engine_free(px_engine_t *eng, uv_loop_t *loop)
{
    px_secretfetch_close(eng->secrets);
    if (eng->ctx.scope.up != NULL) /* a start-up fetch's kept-alive connection ends the run */
        px_upmgr_close_idle(eng->ctx.scope.up);
    if (!eng->ctx.stopping) {
        eng->ctx.stopping = 1;
        for (int i = 0; i < eng->nlisteners; i++)
            uv_close((uv_handle_t *)&eng->listeners[i].tcp, NULL);
        if (eng->dns != NULL)
            dns_server_close(eng->dns, NULL, NULL);
        if (eng->resolver != NULL)
            dns_resolver_close(eng->resolver, NULL, NULL);
        px_control_stop(eng->control);
        eng->control = NULL;
        px_decide_stop(eng->decide);
        eng->decide = NULL;
        uv_run(loop, UV_RUN_DEFAULT);
    }
    uv_run(loop, UV_RUN_DEFAULT);
    px_workers_free(eng->workers); /* their connections end: nothing shared is read after */
    eng->workers = NULL;
    px_hold_close(eng->ctx.holds); /* every exchange let go of its hold by now */
    px_loop_close(&eng->ctx.loop); /* nothing is queued once the loop ran dry */
    uv_run(loop, UV_RUN_DEFAULT);
    if (uv_loop_close(loop) != 0)
        px_diag(PX_DIAG_DEBUG, "loop closed with handles open");
    px_snapshot_unref(eng->ctx.scope.snap);
    px_secretfetch_free(eng->secrets);
    px_sandboxes_free(&eng->sandboxes);
    addon_budget_table_free(eng->ctx.scope.budgets);
    px_upmgr_free(eng->ctx.scope.up);
    SSL_CTX_free(eng->ctx.tls_server);
    SSL_CTX_free(eng->ctx.tls_client);
    ca_free(eng->ctx.ca);
    px_log_close(eng->ctx.log);
    free(eng);
}

int px_engine_run(const px_config_t *cfg)
{
    px_engine_t *eng = calloc(1, sizeof(*eng));
    if (eng == NULL)
        return 1;
    eng->ctx.cfg = cfg;
    int decider = px_config_has_decider(cfg);
    /* held requests live on one loop: with a decider, auto (the default) is one loop */
    eng->nworkers = decider && cfg->workers == 0 ? 1 : px_workers_count(cfg->workers);
    if (eng->nworkers > 1 && decider) {
        fprintf(stderr, "airlock: --control and --decide-url need --workers 1 (held requests "
                        "live on one loop)\n");
        free(eng);
        return 1;
    }
    uv_loop_t loop;
    uv_loop_init(&loop);
    if (px_loop_init(&eng->ctx.loop, &loop) != 0) {
        free(eng);
        return 1;
    }
    signal(SIGPIPE, SIG_IGN);
#ifdef __GLIBC__
    /* glibc gives the heap's top back past 128 KiB free (and mmaps blocks from 128 KiB up
     * until a free raises that bound): a download that frees and takes a 64 KiB buffer each
     * turn made a brk pair and fresh page faults per turn, about a third of its CPU over
     * HTTP/2. The heap's top is kept instead, up to PX_HEAP_TOP_KEEP; on_trim gives the free
     * heap back once the traffic goes quiet or a burst ends. */
    mallopt(M_MMAP_THRESHOLD, PX_HEAP_TOP_KEEP / 2);
    mallopt(M_TRIM_THRESHOLD, PX_HEAP_TOP_KEEP);
    /* one arena for every loop: malloc_trim gives back only the main arena's top, and a worker
     * loop's own arena would keep PX_HEAP_TOP_KEEP for good (small blocks come from each
     * thread's cache, without the arena's lock) */
    mallopt(M_ARENA_MAX, 1);
#endif
    int exit_code = 1;
    char ipbuf[INET6_ADDRSTRLEN];
    char ready[512] = "";
    if (px__engine_open(eng, ipbuf, sizeof(ipbuf)) == 0 &&
        px__engine_listen(eng, ipbuf, ready, sizeof(ready)) == 0) {
        px__engine_start(eng);
        if (eng->nworkers > 1)
            px_diag(PX_DIAG_INFO, "%d loops serve connections (--workers)", eng->nworkers);
        fprintf(stderr, "airlock %s: ready (proxy ip %s):%s\n", AIRLOCK_VERSION, ipbuf, ready);
        fflush(stderr);
        uv_run(&loop, UV_RUN_DEFAULT);
        exit_code = 0;
    }
    px__engine_free(eng, &loop);
    return exit_code;
}
