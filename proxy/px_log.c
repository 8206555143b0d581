#include "proxy/px_log.h"
#include "proxy/px_metrics.h"
#include "proxy/px_otel.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "audit/audit_json.h"
#include "base/px_err.h"

/* Pending lines are stored back to back, each followed by '\n'. The writer swaps the pending
 * buffer with its own and writes line by line. */
typedef struct px__logbuf {
    char *data;
    size_t len;
    size_t cap;
} px__logbuf_t;

struct px_log {
    int fd;
    pthread_t thread;
    int thread_started;
    pthread_mutex_t mu;
    pthread_cond_t wake; /* writer: work or stop */
    pthread_cond_t idle; /* producers: space freed / queue drained */
    px__logbuf_t pending;
    px__logbuf_t writing;
    int busy;          /* the writer holds a batch */
    int waiting;       /* the writer sleeps on `wake` */
    int batched;       /* wake the writer from px_log_kick() only (once per loop turn) */
    size_t kick_bytes; /* batched: pending bytes that wake the writer (larger for JSON) */
    int touched;       /* a line was queued since the last px_log_kick() (any loop: read and written
                          atomically; a loop that clears it kicks what is pending) */
    int stop;
    unsigned long lost;
    int reported;
    int json;         /* --log-format json: objects instead of text lines */
    px_log_t *events; /* --events: the shared JSON sink (not owned), or NULL */
    char name[64];    /* the sandbox whose log this is ("": none) */
};

/* The process's log outputs (px_log_configure()): set once at start-up from the command line,
 * before the loop and any log exist; read-only afterwards, like the diagnostics level. */
static struct {
    int json;
    px_log_t *events;
    char sbdir[1024]; /* --sandboxes, without a trailing '/' */
} px__out;

static int px__diag_level = PX_DIAG_WARN;

void px_diag_set_level(int level)
{
    px__diag_level = level;
}

int px_diag_level(void)
{
    return px__diag_level;
}

void px_diag__emit(int level, const char *fmt, ...)
{
    static const char *const names[] = {"error", "warning", "info", "debug"};
    char buf[2048];
    int off = snprintf(buf, sizeof(buf), "airlock: %s: ",
                       names[level < 0   ? 0
                             : level > 3 ? 3
                                         : level]);
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf + off, sizeof(buf) - (size_t)off - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len =
        (size_t)off +
        ((size_t)n < sizeof(buf) - (size_t)off - 1 ? (size_t)n : sizeof(buf) - (size_t)off - 2);
    buf[len++] = '\n';
    ssize_t w = write(STDERR_FILENO, buf, len);
    (void)w;
}

/* Writes a batch of whole lines with as few write() calls as the kernel allows (one, on a
 * regular file: with O_APPEND the batch lands contiguous, never interleaved with another
 * writer's lines). On a failure the lines not written are counted as lost, once each. */
static void px__write_batch(px_log_t *log, const px__logbuf_t *b)
{
    const char *p = b->data;
    size_t left = b->len;
    while (left > 0) {
        ssize_t w = write(log->fd, p, left);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            size_t lines = 0;
            for (const char *q = p; (q = memchr(q, '\n', (size_t)(b->data + b->len - q))) != NULL;
                 q++)
                lines++;
            pthread_mutex_lock(&log->mu);
            log->lost += lines;
            int first = !log->reported;
            log->reported = 1;
            pthread_mutex_unlock(&log->mu);
            if (first)
                px_diag(PX_DIAG_ERROR, "network log write failed: %s (lines are being lost)",
                        strerror(w < 0 ? errno : EIO));
            return;
        }
        p += w;
        left -= (size_t)w;
    }
}

static void *px__writer_main(void *arg)
{
    px_log_t *log = arg;
    pthread_mutex_lock(&log->mu);
    for (;;) {
        while (log->pending.len == 0 && !log->stop) {
            log->waiting = 1;
            pthread_cond_wait(&log->wake, &log->mu);
            log->waiting = 0;
        }
        if (log->pending.len == 0 && log->stop)
            break;
        px__logbuf_t tmp = log->writing;
        log->writing = log->pending;
        log->pending = tmp;
        log->pending.len = 0;
        log->busy = 1;
        pthread_cond_broadcast(&log->idle);
        pthread_mutex_unlock(&log->mu);
        px__write_batch(log, &log->writing);
        pthread_mutex_lock(&log->mu);
        log->writing.len = 0;
        log->busy = 0;
        pthread_cond_broadcast(&log->idle);
    }
    pthread_mutex_unlock(&log->mu);
    return NULL;
}

/* A new log takes the configured outputs, and its sandbox's name when path lies in a
 * sandbox's folder (<sandboxes>/<name>/...). */
static void px__log_inherit(px_log_t *log, const char *path)
{
    log->json = px__out.json;
    log->events = px__out.events;
    log->kick_bytes = log->json ? PX_LOG_JSON_KICK_BYTES : PX_LOG_KICK_BYTES;
    size_t dl = strlen(px__out.sbdir);
    if (dl == 0 || strncmp(path, px__out.sbdir, dl) != 0 || path[dl] != '/')
        return;
    const char *n = path + dl;
    while (*n == '/')
        n++;
    const char *e = strchr(n, '/');
    if (e != NULL && e > n && (size_t)(e - n) < sizeof(log->name)) {
        memcpy(log->name, n, (size_t)(e - n));
        log->name[e - n] = '\0';
    }
}

int px_log_open(const char *path, int create, px_log_t **out, char *err, size_t errlen)
{
    px_log_t *log = calloc(1, sizeof(*log));
    if (log == NULL)
        return PX_ENOMEM;
    log->fd = -1;
    pthread_mutex_init(&log->mu, NULL);
    pthread_cond_init(&log->wake, NULL);
    pthread_cond_init(&log->idle, NULL);
    int flags = O_WRONLY | O_APPEND | O_CLOEXEC | (create ? O_CREAT : 0);
    int fd = open(path, flags, 0644);
    if (fd < 0) {
        if (errno == ENOENT && !create) {
            px__log_inherit(log, path);
            *out = log; /* a no-op sink, as the reference: no file, no logging */
            return 0;
        }
        snprintf(err, errlen, "cannot open network log %s: %s", path, strerror(errno));
        px_log_close(log);
        return PX_EIO;
    }
    log->fd = fd;
    px__log_inherit(log, path);
    if (pthread_create(&log->thread, NULL, px__writer_main, log) != 0) {
        snprintf(err, errlen, "cannot start the log writer thread");
        px_log_close(log);
        return PX_ENOMEM;
    }
    log->thread_started = 1;
    *out = log;
    return 0;
}

int px_log_enabled(const px_log_t *log)
{
    return log != NULL && log->fd >= 0;
}

int px_log_wants_json(const px_log_t *log)
{
    return log != NULL && ((log->json && log->fd >= 0) || log->events != NULL || px_otel_enabled());
}

/* 1 when a line goes anywhere: the log's file or the events sink. */
static int px__log_active(const px_log_t *log)
{
    return log != NULL && (log->fd >= 0 || log->events != NULL || px_otel_enabled());
}

static int px__buf_reserve(px__logbuf_t *b, size_t extra)
{
    if (b->cap - b->len >= extra)
        return 0;
    size_t cap = b->cap ? b->cap : 16384;
    while (cap - b->len < extra)
        cap *= 2;
    char *d = realloc(b->data, cap);
    if (d == NULL)
        return PX_ENOMEM;
    b->data = d;
    b->cap = cap;
    return 0;
}

/* Bytes a log line carries as they are: printable ASCII. Everything else (control bytes such
 * as ESC or CR that could rewrite a terminal or forge a line, and bytes >= 0x7f) is written as
 * \xNN. The backslash stays as it is: DNS names already use the \DDD presentation form. */
static int px__log_plain(unsigned char c)
{
    return c >= 0x20 && c < 0x7f;
}

/* Reserves need bytes at the end of the pending queue, waiting while it is full. Returns the
 * place with the lock held, or NULL (the line is lost; the lock is released). */
static char *px__log_reserve(px_log_t *log, size_t need)
{
    pthread_mutex_lock(&log->mu);
    while (log->pending.len + need > PX_LOG_QUEUE_MAX && !log->stop)
        pthread_cond_wait(&log->idle, &log->mu);
    if (px__buf_reserve(&log->pending, need) != 0) {
        log->lost++;
        pthread_mutex_unlock(&log->mu);
        return NULL;
    }
    return log->pending.data + log->pending.len;
}

/* Commits len bytes written at the place px__log_reserve() gave, and releases the lock.
 * batched: the writing log's mode (the events sink follows the log that wrote to it). */
static void px__log_commit(px_log_t *log, size_t len, int batched)
{
    log->pending.len += len;
    /* a signal per line costs a context switch per request: batched logs are woken once per
     * loop turn by px_log_kick(), unless a lot is pending */
    if (log->waiting && (!batched || log->pending.len > PX_LOG_QUEUE_MAX / 8))
        pthread_cond_signal(&log->wake);
    pthread_mutex_unlock(&log->mu);
}

/* Queues buf[0..n) and a newline on log (the events sink included). */
static void px__log_queue(px_log_t *log, const char *buf, size_t n, int batched)
{
    char *dst = px__log_reserve(log, n + 1);
    if (dst == NULL)
        return;
    memcpy(dst, buf, n);
    dst[n] = '\n';
    px__log_commit(log, n + 1, batched);
}

/* Escapes line into out (PX_LOG_LINE_MAX + the mark): every byte that is not printable ASCII
 * as \xNN, cut at PX_LOG_LINE_MAX and marked. Returns the length. */
static size_t px__log_escape(const char *line, size_t len, char *out)
{
    static const char cut[] = AUDIT_EVENT_TRUNC_MARK;
    static const char hexd[] = "0123456789abcdef";
    size_t off = 0, used = 0;
    for (; used < len; used++) {
        unsigned char c = (unsigned char)line[used];
        size_t w = px__log_plain(c) ? 1 : 4;
        if (off + w > PX_LOG_LINE_MAX)
            break;
        if (w == 1) {
            out[off++] = (char)c;
        } else {
            out[off++] = '\\';
            out[off++] = 'x';
            out[off++] = hexd[c >> 4];
            out[off++] = hexd[c & 15];
        }
    }
    if (used < len) {
        memcpy(out + off, cut, sizeof(cut) - 1);
        off += sizeof(cut) - 1;
    }
    return off;
}

/* The JSON outputs of one event: the log's own file in JSON format, the events sink and the
 * OTLP exporter. escaped: ev's views hold the log's \xNN form (a line read back). text: the
 * event's text line when it was rendered (the exporter's record body), or NULL. */
static void px__log_json(px_log_t *log, const audit_event_t *ev, const char *line, size_t len,
                         int escaped, const char *text, size_t tlen)
{
    int to_file = log->json && log->fd >= 0;
    if (!to_file && log->events == NULL && !px_otel_enabled())
        return;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    audit_json_ctx_t ctx = {(int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000, audit_s(log->name),
                            escaped};
    char buf[AUDIT_JSON_LINE_CAP];
    int n = ev != NULL ? audit_json_render(ev, &ctx, buf, sizeof(buf))
                       : audit_json_render_other(line, len, &ctx, buf, sizeof(buf));
    if (n < 0)
        return;
    if (to_file)
        px__log_queue(log, buf, (size_t)n, log->batched);
    if (log->events != NULL) {
        __atomic_store_n(&log->events->touched, 1, __ATOMIC_RELAXED);
        px__log_queue(log->events, buf, (size_t)n, log->batched);
    }
    /* the OTLP exporter (a no-op when it is off), handed the text line when there is one: it
     * need not read the JSON back to make it */
    px_otel_push_line(buf, (size_t)n, text, text != NULL ? tlen : 0);
}

void px_log_line(px_log_t *log, const char *line, size_t len)
{
    if (!px__log_active(log))
        return;
    __atomic_store_n(&log->touched, 1, __ATOMIC_RELAXED);
    char text[AUDIT_EVENT_LINE_CAP];
    size_t n = px__log_escape(line, len, text);
    if (log->fd >= 0 && !log->json)
        px__log_queue(log, text, n, log->batched);
    if (!log->json && log->events == NULL && !px_otel_enabled())
        return;
    /* a line formatted elsewhere (DNS, addons) is read back into its event for JSON */
    audit_event_t ev;
    int known = audit_event_parse(text, n, &ev) == 0 && ev.kind != AUDIT_EV_BLANK;
    px__log_json(log, known ? &ev : NULL, text, n, 1, text, n);
}

void px_log_event(px_log_t *log, const audit_event_t *ev)
{
    px_metrics_event(ev); /* every decision is counted, logged or not (--metrics) */
    if (log != NULL && log->name[0] != '\0')
        px_metrics_sandbox_event(log->name, ev);
    if (!px__log_active(log))
        return;
    /* rendered whole (escaped, cut and marked) by the one module that also reads lines back:
     * for the text log, and as the body of the OTLP record */
    char text[AUDIT_EVENT_LINE_CAP];
    int tn = -1;
    int to_text = log->fd >= 0 && !log->json;
    if (to_text || px_otel_enabled())
        tn = audit_event_render(ev, text, sizeof(text));
    if (to_text) {
        if (tn < 0)
            return;
        __atomic_store_n(&log->touched, 1, __ATOMIC_RELAXED);
        px__log_queue(log, text, (size_t)tn, log->batched);
    }
    if (audit_json_kind_name(ev->kind) == NULL)
        return;
    __atomic_store_n(&log->touched, 1, __ATOMIC_RELAXED);
    px__log_json(log, ev, NULL, 0, 0, tn >= 0 ? text : NULL, tn >= 0 ? (size_t)tn : 0);
}

void px_log_eventf(px_log_t *log, audit_event_t *ev, const char *tail_fmt, ...)
{
    if (!px__log_active(log))
        return;
    char tail[PX_LOG_LINE_MAX + 1];
    if (tail_fmt != NULL) {
        va_list ap;
        va_start(ap, tail_fmt);
        int n = vsnprintf(tail, sizeof(tail), tail_fmt, ap);
        va_end(ap);
        if (n < 0)
            return;
        ev->tail.base = tail;
        ev->tail.len = (size_t)n < sizeof(tail) ? (size_t)n : sizeof(tail) - 1;
    }
    px_log_event(log, ev);
    if (tail_fmt != NULL)
        ev->tail.base = NULL, ev->tail.len = 0; /* tail was on this stack */
}

void px_log_printf(px_log_t *log, const char *fmt, ...)
{
    if (!px__log_active(log))
        return;
    char buf[PX_LOG_LINE_MAX + 1];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    px_log_line(log, buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf));
}

void px_log_set_batched(px_log_t *log, int on)
{
    if (log != NULL)
        log->batched = on;
}

/* Wakes one log's writer (see px_log_kick()). Returns 1 when lines were left pending. */
static int px__log_kick1(px_log_t *log, int force)
{
    int left = 0;
    __atomic_store_n(&log->touched, 0, __ATOMIC_RELAXED);
    pthread_mutex_lock(&log->mu);
    if (log->pending.len > 0 && log->waiting && (force || log->pending.len >= log->kick_bytes))
        pthread_cond_signal(&log->wake);
    else
        left = log->pending.len > 0;
    pthread_mutex_unlock(&log->mu);
    return left;
}

int px_log_kick(px_log_t *log, int force)
{
    if (!px__log_active(log))
        return 0;
    int left = 0;
    __atomic_store_n(&log->touched, 0, __ATOMIC_RELAXED);
    if (log->fd >= 0)
        left = px__log_kick1(log, force);
    /* the events sink is kicked with the logs that write to it */
    if (log->events != NULL && (force || __atomic_load_n(&log->events->touched, __ATOMIC_RELAXED)))
        left |= px__log_kick1(log->events, force);
    return left;
}

int px_log_touched(const px_log_t *log)
{
    return log != NULL && __atomic_load_n(&log->touched, __ATOMIC_RELAXED);
}

static void px__log_flush1(px_log_t *log)
{
    pthread_mutex_lock(&log->mu);
    if (log->pending.len > 0)
        pthread_cond_signal(&log->wake);
    while (log->pending.len > 0 || log->busy)
        pthread_cond_wait(&log->idle, &log->mu);
    pthread_mutex_unlock(&log->mu);
}

void px_log_flush(px_log_t *log)
{
    if (px_log_enabled(log))
        px__log_flush1(log);
    if (log != NULL && log->events != NULL)
        px__log_flush1(log->events);
}

unsigned long px_log_lost(px_log_t *log)
{
    if (log == NULL)
        return 0;
    pthread_mutex_lock(&log->mu);
    unsigned long n = log->lost;
    pthread_mutex_unlock(&log->mu);
    return n;
}

void px_log_close(px_log_t *log)
{
    if (log == NULL)
        return;
    if (log->thread_started) {
        pthread_mutex_lock(&log->mu);
        log->stop = 1;
        pthread_cond_signal(&log->wake);
        pthread_mutex_unlock(&log->mu);
        pthread_join(log->thread, NULL);
    }
    if (log->fd >= 0)
        close(log->fd);
    pthread_mutex_destroy(&log->mu);
    pthread_cond_destroy(&log->wake);
    pthread_cond_destroy(&log->idle);
    free(log->pending.data);
    free(log->writing.data);
    free(log);
}

int px_log_configure(int json, const char *events_path, const char *sandboxes_dir, char *err,
                     size_t errlen)
{
    int rc = px_otel_start(err, errlen); /* OTEL_EXPORTER_OTLP_ENDPOINT (docs/otel.md) */
    if (rc != 0)
        return rc;
    px__out.json = json != 0;
    px__out.sbdir[0] = '\0';
    if (sandboxes_dir != NULL) {
        size_t n = strlen(sandboxes_dir);
        while (n > 1 && sandboxes_dir[n - 1] == '/')
            n--;
        if (n < sizeof(px__out.sbdir)) {
            memcpy(px__out.sbdir, sandboxes_dir, n);
            px__out.sbdir[n] = '\0';
        }
    }
    if (events_path == NULL)
        return 0;
    px_log_t *ev = NULL;
    px__out.json = 0; /* the sink is handed whole objects: it needs no format of its own */
    char why[600];
    rc = px_log_open(events_path, 1, &ev, why, sizeof(why));
    px__out.json = json != 0;
    if (rc != 0) {
        px_otel_stop();
        snprintf(err, errlen, "--events: %s", why);
        return rc;
    }
    ev->kick_bytes = PX_LOG_JSON_KICK_BYTES; /* opened as text: it is handed JSON objects */
    px__out.events = ev;
    return 0;
}

void px_log_unconfigure(void)
{
    px_log_close(px__out.events);
    px_otel_stop(); /* sends what is queued, within its shutdown budget */
    memset(&px__out, 0, sizeof(px__out));
}

void px_log_task_start(px_log_t *log)
{
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    char ts[32];
    strftime(ts, sizeof(ts), "%Y-%m-%dT%H:%M:%SZ", &tm);
    audit_event_t ev = {.kind = AUDIT_EV_TASK_START};
    ev.text = audit_s(ts);
    px_log_event(log, &ev);
}
