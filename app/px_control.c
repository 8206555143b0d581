/* The deciders' control socket (px_control.h; the protocol is in docs/approvals.md). */
#include "app/px_control.h"

#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/px_err.h"
#include "proxy/px_drafts.h"
#include "proxy/px_hold.h"
#include "proxy/px_log.h"

#define PX__CTL_QUEUE_MAX                                                                          \
    (256 * 1024) /* answer bytes queued to a control client: past it, it                           \
                    is too slow and is closed */

typedef struct px__ctl_conn px__ctl_conn_t;

struct px_control {
    uv_pipe_t server;
    uv_timer_t tick; /* the countdown lines of `follow` */
    px_ctx_t *ctx;
    char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
    px__ctl_conn_t *conns;
    size_t nconns;
    int handles; /* open: the server, the tick and each connection; c is freed when none is
                    left */
    size_t nfollow;
};

struct px__ctl_conn {
    uv_pipe_t pipe;
    px_control_t *c;
    px__ctl_conn_t *next;
    char line[PX_CONTROL_LINE_MAX];
    size_t len;
    int follow;
    int closing;
    char who[32]; /* "uid 1000" */
};

typedef struct {
    uv_write_t req;
    char data[];
} px__ctl_write_t;

static void px__ctl_release(px_control_t *c)
{
    if (--c->handles == 0)
        free(c);
}

static void on_conn_closed(uv_handle_t *h)
{
    px__ctl_conn_t *k = h->data;
    px_control_t *c = k->c;
    free(k);
    px__ctl_release(c);
}

static void px__conn_close(px__ctl_conn_t *k)
{
    if (k->closing)
        return;
    k->closing = 1;
    px_control_t *c = k->c;
    if (k->follow)
        c->nfollow--;
    for (px__ctl_conn_t **p = &c->conns; *p != NULL; p = &(*p)->next) {
        if (*p == k) {
            *p = k->next;
            break;
        }
    }
    c->nconns--;
    uv_close((uv_handle_t *)&k->pipe, on_conn_closed);
}

static void on_written(uv_write_t *req, int status)
{
    (void)status;
    free(px_container_of(req, px__ctl_write_t, req));
}

static void px__send(px__ctl_conn_t *k, const char *s, size_t len)
{
    if (k->closing)
        return;
    if (uv_stream_get_write_queue_size((uv_stream_t *)&k->pipe) > PX__CTL_QUEUE_MAX) {
        px__conn_close(k);
        return;
    }
    px__ctl_write_t *w = malloc(sizeof(*w) + len);
    if (w == NULL) {
        px__conn_close(k);
        return;
    }
    memcpy(w->data, s, len);
    uv_buf_t b = uv_buf_init(w->data, (unsigned)len);
    if (uv_write(&w->req, (uv_stream_t *)&k->pipe, &b, 1, on_written) != 0) {
        free(w);
        px__conn_close(k);
    }
}

static void px__sendf(px__ctl_conn_t *k, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void px__sendf(px__ctl_conn_t *k, const char *fmt, ...)
{
    char buf[PX_HOLD_FIELD_MAX * 2 + 512]; /* an approval line with its host and path */
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n > 0)
        px__send(k, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

/* s with every space, control and non-ASCII byte as \xNN (a field stays one word). */
static size_t px__word(const char *s, char *out, size_t cap)
{
    static const char hex[] = "0123456789abcdef";
    size_t o = 0;
    for (; *s != '\0' && o + 5 < cap; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch <= 0x20 || ch >= 0x7f || ch == '\\') {
            out[o++] = '\\';
            out[o++] = 'x';
            out[o++] = hex[ch >> 4];
            out[o++] = hex[ch & 15];
        } else {
            out[o++] = (char)ch;
        }
    }
    out[o] = '\0';
    return o;
}

/* "TAG hID AGE LEFT REQUESTS SANDBOX METHOD HOST PATH\n" into buf; its length. */
static size_t px__hold_line(const char *tag, const px_hold_info_t *q, uint64_t now, char *buf,
                            size_t cap)
{
    char host[PX_HOST_MAX * 4 + 8];
    char path[PX_HOLD_FIELD_MAX * 4 + 8];
    px__word(q->host, host, sizeof(host));
    px__word(q->path, path, sizeof(path));
    uint64_t age = now > q->created_ms ? now - q->created_ms : 0;
    uint64_t left = q->deadline_ms > now ? q->deadline_ms - now : 0;
    int n = snprintf(buf, cap, "%s h%" PRIu64 " %" PRIu64 "s %" PRIu64 "s %zu %s %s %s %s\n", tag,
                     q->id, age / 1000, (left + 999) / 1000, q->waiters, q->scope_name, q->method,
                     host, path);
    return n < 0 ? 0 : (size_t)n < cap ? (size_t)n : cap - 1;
}

typedef struct {
    px__ctl_conn_t *k;
    uint64_t now;
} px__list_arg_t;

static void on_list_one(void *arg, const px_hold_info_t *q)
{
    px__list_arg_t *a = arg;
    char buf[PX_HOLD_FIELD_MAX * 5 + 2048];
    size_t n = px__hold_line("hold", q, a->now, buf, sizeof(buf));
    px__send(a->k, buf, n);
}

static const char *px__outcome_word(px_hold_outcome_t o)
{
    return o == PX_HOLD_APPROVED ? "approved" : o == PX_HOLD_DENIED ? "denied" : "timed-out";
}

/* New and decided questions, to every `follow` connection. */
static void on_hold_event(void *arg, const px_hold_info_t *q, px_hold_outcome_t o, const char *by)
{
    px_control_t *c = arg;
    char buf[PX_HOLD_FIELD_MAX * 5 + 2048];
    size_t n = 0;
    if (o == PX_HOLD_PENDING && by == NULL)
        n = px__hold_line("new", q, px_hold_now(c->ctx->holds), buf, sizeof(buf));
    else
        n = (size_t)snprintf(buf, 256, "decided h%" PRIu64 " %s %s\n", q->id,
                             o == PX_HOLD_PENDING ? "gone" : px__outcome_word(o),
                             by != NULL ? by : "-");
    px__ctl_conn_t *k = c->conns;
    while (k != NULL) {
        px__ctl_conn_t *next = k->next; /* px__send may close k */
        if (k->follow)
            px__send(k, buf, n);
        k = next;
    }
}

static int px__parse_id(const char *s, uint64_t *id)
{
    if (s == NULL)
        return -1;
    if (*s == 'h')
        s++;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (*s == '\0' || *end != '\0' || errno != 0 || v == 0)
        return -1;
    *id = v;
    return 0;
}

static int px__scope(const char *w, int *scope)
{
    static const char *const names[] = {"once", "conversation", "persist"};
    for (int i = 0; i < 3; i++) {
        if (strcmp(w, names[i]) == 0) {
            *scope = i; /* PX_HOLD_SCOPE_ONCE, _CONVERSATION, _PERSIST */
            return 0;
        }
    }
    return -1;
}

/* `approvals [SANDBOX]`: the drafts file's entries, "approval aN WHEN METHODS HOST PATH WHO"
 * (PATH "-" for any path, METHODS "-" for any), then end. `undo aN [SANDBOX]`: removes one,
 * forgets the rule its approval left and reloads the configuration as SIGHUP does. */
static void px__drafts_command(px__ctl_conn_t *k, const char *cmd, const char *a1, const char *a2)
{
    const char *sandbox = strcmp(cmd, "undo") == 0 ? a2 : a1;
    char file[4096], err[1024];
    if (px_drafts_path_for(k->c->ctx->cfg, sandbox, file, sizeof(file)) != 0) {
        px__sendf(k, "error name the sandbox\n");
        return;
    }
    if (strcmp(cmd, "undo") == 0) {
        unsigned id = 0;
        char end;
        if (a1 == NULL || sscanf(a1, "a%u%c", &id, &end) != 1 || id == 0) {
            px__sendf(k, "error expected an approval ID (a3)\n");
            return;
        }
        px_draft_t gone;
        if (px_drafts_remove(file, id, &gone, err, sizeof(err)) != 0) {
            px__sendf(k, "error %s\n", err);
            return;
        }
        free(gone.host);
        free(gone.path);
        px_hold_forget(k->c->ctx->holds, sandbox != NULL ? sandbox : "-", id);
        /* the entry may be in the loaded allowlist too (loaded at start-up or on a SIGHUP): the
         * configuration is loaded again, exactly as SIGHUP does it */
        uv_kill(getpid(), SIGHUP);
        px__sendf(k, "ok a%u removed\n", id);
        return;
    }
    px_drafts_t set;
    if (px_drafts_read(file, &set, err, sizeof(err)) != 0) {
        px__sendf(k, "error %s\n", err);
        return;
    }
    for (size_t i = 0; i < set.n; i++) {
        const px_draft_t *d = &set.v[i];
        px__sendf(k, "approval a%u %s %s %s %s %s\n", d->id, d->when,
                  d->methods[0] != '\0' ? d->methods : "-", d->host,
                  d->path[0] != '\0' ? d->path : "-", d->who);
    }
    px_drafts_free(&set);
    px__send(k, "end\n", 4);
}

static void px__command(px__ctl_conn_t *k, char *line)
{
    px_hold_t *t = k->c->ctx->holds;
    char *save = NULL;
    char *cmd = strtok_r(line, " \t\r", &save);
    char *a1 = cmd != NULL ? strtok_r(NULL, " \t\r", &save) : NULL;
    char *a2 = a1 != NULL ? strtok_r(NULL, " \t\r", &save) : NULL;
    if (cmd == NULL)
        return;
    if (strcmp(cmd, "list") == 0 || strcmp(cmd, "follow") == 0) {
        px__list_arg_t a = {k, px_hold_now(t)};
        px_hold_each(t, on_list_one, &a);
        px__send(k, "end\n", 4);
        if (!k->follow && strcmp(cmd, "follow") == 0) {
            k->follow = 1;
            k->c->nfollow++;
        }
        return;
    }
    if (strcmp(cmd, "approvals") == 0 || strcmp(cmd, "undo") == 0) {
        px__drafts_command(k, cmd, a1, a2);
        return;
    }
    int approve = strcmp(cmd, "approve") == 0;
    if (!approve && strcmp(cmd, "deny") != 0) {
        px__sendf(k, "error unknown command (list, follow, approve ID [once|conversation|persist] "
                     "[path PATTERN] [methods LIST], deny ID, approvals [SANDBOX], undo aN "
                     "[SANDBOX])\n");
        return;
    }
    uint64_t id;
    if (px__parse_id(a1, &id) != 0) {
        px__sendf(k, "error expected a hold ID (h12)\n");
        return;
    }
    if (!approve) {
        if (a2 != NULL) {
            px__sendf(k, "error deny takes a hold ID alone\n");
            return;
        }
        int n = px_hold_decide(t, id, PX_HOLD_DENIED, 0, k->who);
        if (n < 0)
            px__sendf(k, "error no pending hold h%" PRIu64 "\n", id);
        else
            px__sendf(k, "ok h%" PRIu64 " denied %d\n", id, n);
        return;
    }
    int scope = PX_HOLD_SCOPE_ONCE;
    const char *path = NULL, *methods = NULL;
    for (char *w = a2; w != NULL; w = strtok_r(NULL, " \t\r", &save)) {
        char *v = NULL;
        if (strcmp(w, "path") == 0 || strcmp(w, "methods") == 0) {
            if ((v = strtok_r(NULL, " \t\r", &save)) == NULL) {
                px__sendf(k, "error %s needs a value\n", w);
                return;
            }
            *(w[0] == 'p' ? &path : &methods) = v;
        } else if (px__scope(w, &scope) != 0) {
            px__sendf(k, "error unknown scope '%.32s' (once, conversation or persist)\n", w);
            return;
        }
    }
    char msg[512];
    int n =
        px_drafts_approve(t, k->c->ctx->cfg, id, scope, path, methods, k->who, msg, sizeof(msg));
    if (n < 0)
        px__sendf(k, "error %s\n", msg);
    else
        px__sendf(k, "ok h%" PRIu64 " approved %d\n", id, n);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf)
{
    (void)suggested;
    px__ctl_conn_t *k = h->data;
    buf->base = k->line + k->len;
    buf->len = sizeof(k->line) - k->len;
}

static void on_conn_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf)
{
    (void)buf;
    px__ctl_conn_t *k = s->data;
    if (nread < 0) {
        px__conn_close(k);
        return;
    }
    k->len += (size_t)nread;
    char *nl;
    while (!k->closing && (nl = memchr(k->line, '\n', k->len)) != NULL) {
        size_t n = (size_t)(nl - k->line);
        char cmd[PX_CONTROL_LINE_MAX];
        memcpy(cmd, k->line, n);
        cmd[n] = '\0';
        memmove(k->line, nl + 1, k->len - n - 1);
        k->len -= n + 1;
        px__command(k, cmd);
    }
    if (!k->closing && k->len == sizeof(k->line)) {
        px__sendf(k, "error line too long\n");
        px__conn_close(k);
    }
}

/* The peer's uid into k->who: 0, or -1 when it may not decide (not airlock's uid nor root). */
static int px__peer(px__ctl_conn_t *k)
{
    uv_os_fd_t fd;
    struct ucred cr;
    socklen_t len = sizeof(cr);
    if (uv_fileno((uv_handle_t *)&k->pipe, &fd) != 0 ||
        getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &len) != 0)
        return -1;
    snprintf(k->who, sizeof(k->who), "uid %u", (unsigned)cr.uid);
    return cr.uid == geteuid() || cr.uid == 0 ? 0 : -1;
}

static void on_control_conn(uv_stream_t *server, int status)
{
    px_control_t *c = server->data;
    if (status < 0)
        return;
    px__ctl_conn_t *k = calloc(1, sizeof(*k));
    if (k == NULL)
        return;
    k->c = c;
    uv_pipe_init(server->loop, &k->pipe, 0);
    k->pipe.data = k;
    c->handles++;
    k->next = c->conns;
    c->conns = k;
    c->nconns++;
    if (uv_accept(server, (uv_stream_t *)&k->pipe) != 0 || px__peer(k) != 0 ||
        c->nconns > PX_CONTROL_CLIENTS_MAX) {
        px__conn_close(k);
        return;
    }
    uv_read_start((uv_stream_t *)&k->pipe, on_alloc, on_conn_read);
}

static void on_tick_one(void *arg, const px_hold_info_t *q)
{
    px_control_t *c = arg;
    uint64_t now = px_hold_now(c->ctx->holds);
    uint64_t left = q->deadline_ms > now ? q->deadline_ms - now : 0;
    char buf[64];
    int n =
        snprintf(buf, sizeof(buf), "left h%" PRIu64 " %" PRIu64 "s\n", q->id, (left + 999) / 1000);
    px__ctl_conn_t *k = c->conns;
    while (k != NULL) {
        px__ctl_conn_t *next = k->next; /* px__send may close k */
        if (k->follow)
            px__send(k, buf, (size_t)n);
        k = next;
    }
}

/* Once a second, for `follow`: a countdown line per pending hold. */
static void on_tick(uv_timer_t *t)
{
    px_control_t *c = t->data;
    if (c->nfollow > 0)
        px_hold_each(c->ctx->holds, on_tick_one, c);
}

static void on_server_closed(uv_handle_t *h)
{
    px__ctl_release(h->data);
}

int px_control_start(px_ctx_t *ctx, const char *path, px_control_t **out)
{
    struct stat st;
    if (strlen(path) >= sizeof(((struct sockaddr_un *)0)->sun_path)) {
        px_diag(PX_DIAG_ERROR, "--control %s: the path is too long for a unix socket", path);
        return PX_ECONFIG;
    }
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode)) {
            px_diag(PX_DIAG_ERROR, "--control %s: a file that is not a socket is there", path);
            return PX_ECONFIG;
        }
        unlink(path); /* a stale socket of an earlier run */
    }
    px_control_t *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return PX_ENOMEM;
    c->ctx = ctx;
    snprintf(c->path, sizeof(c->path), "%s", path);
    uv_pipe_init(ctx->loop.uv, &c->server, 0);
    c->server.data = c;
    c->handles = 1;
    mode_t old = umask(0177); /* the socket is born 0600: no moment where others may connect */
    int rc = uv_pipe_bind(&c->server, path);
    umask(old);
    if (rc == 0)
        rc = chmod(path, 0600) == 0 ? 0 : uv_translate_sys_error(errno);
    if (rc == 0)
        rc = uv_listen((uv_stream_t *)&c->server, 8, on_control_conn);
    if (rc != 0) {
        px_diag(PX_DIAG_ERROR, "cannot listen for control on %s: %s", path, uv_strerror(rc));
        uv_close((uv_handle_t *)&c->server, on_server_closed);
        return rc;
    }
    uv_timer_init(ctx->loop.uv, &c->tick);
    c->tick.data = c;
    c->handles++;
    uv_timer_start(&c->tick, on_tick, 1000, 1000);
    uv_unref((uv_handle_t *)&c->tick);
    px_hold_set_observer(ctx->holds, on_hold_event, c);
    *out = c;
    return 0;
}

void px_control_stop(px_control_t *c)
{
    if (c == NULL)
        return;
    px_hold_set_observer(c->ctx->holds, NULL, NULL);
    while (c->conns != NULL)
        px__conn_close(c->conns);
    unlink(c->path);
    uv_timer_stop(&c->tick);
    uv_close((uv_handle_t *)&c->tick, on_server_closed);
    uv_close((uv_handle_t *)&c->server, on_server_closed);
}

int px_control_connect(const char *path, int *fd)
{
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof(sa));
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof(sa.sun_path))
        return PX_ECONFIG;
    memcpy(sa.sun_path, path, strlen(path));
    int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return uv_translate_sys_error(errno);
    if (connect(s, (struct sockaddr *)&sa, sizeof(sa)) != 0) {
        int rc = uv_translate_sys_error(errno);
        close(s);
        return rc;
    }
    *fd = s;
    return 0;
}
