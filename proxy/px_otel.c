/* The OTLP exporter's queue and thread (px_otel.h, docs/otel.md). */
#include "proxy/px_otel.h"

#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/px_err.h"
#include "proxy/px_otel_net.h"

#define PX__REC_MAX (256 * 1024) /* one rendered LogRecord (an event is at most 32 KiB) */
#define PX__BACKOFF_MS 500       /* the first retry's delay; doubled per attempt */
#define PX__SLICE_MS 100         /* waits are cut in slices so a stop is noticed */

/* One queued event: the JSON object as the events sink got it. */
typedef struct px__rec {
    struct px__rec *next;
    uint64_t observed_ns;
    size_t len;      /* the JSON event: data[0..len) */
    size_t line_len; /* its text line, data[len..len + line_len); 0: none given */
    char data[];
} px__rec_t;

/* The process's exporter: configured once by px_otel_start(), before any loop. */
static struct {
    px_otel_conf_t conf;
    px_otel_link_t link; /* the connection to the collector (the exporter thread's) */
    int on;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t wake;
    px__rec_t *head, *tail; /* the queue (mu) */
    size_t count, bytes;    /* (mu) */
    int waiting;            /* the thread sleeps on `wake` (mu) */
    atomic_int stop;
    atomic_ullong stop_deadline_ms; /* monotonic: the flush at exit ends here */
    atomic_ullong exported, dropped_full, dropped_failed, retries;
} px__ot = {.mu = PTHREAD_MUTEX_INITIALIZER, .wake = PTHREAD_COND_INITIALIZER};

/* The drop report's state: the exporter thread's only. */
static struct {
    uint64_t since_ms;     /* the window's start */
    uint64_t full, failed; /* drops already reported */
    char why[96];          /* the collector's last failure */
    unsigned seed;         /* the retries' jitter */
} px__rep;

static uint64_t px__mono_ms(void)
{
    return px_otel_mono_ms();
}

int px_otel_enabled(void)
{
    return px__ot.on;
}

void px_otel_stats(px_otel_stats_t *out)
{
    out->exported = atomic_load(&px__ot.exported);
    out->dropped_full = atomic_load(&px__ot.dropped_full);
    out->dropped_failed = atomic_load(&px__ot.dropped_failed);
    out->retries = atomic_load(&px__ot.retries);
}

void px_otel_push(const char *json, size_t len)
{
    px_otel_push_line(json, len, NULL, 0);
}

void px_otel_push_line(const char *json, size_t len, const char *line, size_t line_len)
{
    if (!px__ot.on)
        return;
    if (line == NULL)
        line_len = 0;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    px__rec_t *r = malloc(sizeof(*r) + len + line_len);
    if (r == NULL) {
        atomic_fetch_add(&px__ot.dropped_full, 1);
        return;
    }
    r->next = NULL;
    r->observed_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
    r->len = len;
    r->line_len = line_len;
    memcpy(r->data, json, len);
    if (line_len > 0)
        memcpy(r->data + len, line, line_len);
    len += line_len; /* the queue's bytes */
    pthread_mutex_lock(&px__ot.mu);
    if (px__ot.count >= px__ot.conf.max_queue || px__ot.bytes + len > PX_OTEL_QUEUE_BYTES_MAX ||
        atomic_load(&px__ot.stop)) {
        pthread_mutex_unlock(&px__ot.mu);
        free(r);
        atomic_fetch_add(&px__ot.dropped_full, 1);
        return;
    }
    if (px__ot.tail != NULL)
        px__ot.tail->next = r;
    else
        px__ot.head = r;
    px__ot.tail = r;
    px__ot.count++;
    px__ot.bytes += len;
    /* a full batch wakes the exporter; otherwise it wakes on its schedule (no signal, so no
     * context switch, per event) */
    if (px__ot.waiting && px__ot.count >= px__ot.conf.max_batch)
        pthread_cond_signal(&px__ot.wake);
    pthread_mutex_unlock(&px__ot.mu);
}

/* The end of a wait that started now and may last ms: cut by the flush at exit. */
static uint64_t px__deadline(uint64_t ms)
{
    uint64_t d = px__mono_ms() + ms;
    if (atomic_load(&px__ot.stop)) {
        uint64_t s = atomic_load(&px__ot.stop_deadline_ms);
        if (s < d)
            d = s;
    }
    return d;
}

/* One POST of body on the kept connection (or a new one). Returns the HTTP status, or a
 * negative code with the reason in why. */
static int px__post(const char *body, size_t len, uint64_t deadline, unsigned *retry_ms, char *why,
                    size_t whylen)
{
    char head[PX_OTEL_HEADERS_MAX + 2048];
    int hn = snprintf(head, sizeof(head),
                      "POST %s HTTP/1.1\r\nHost: %s\r\nUser-Agent: airlock/" AIRLOCK_VERSION
                      "\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n%s\r\n",
                      px__ot.conf.path, px__ot.conf.hostport, len, px__ot.conf.headers);
    if (hn <= 0 || (size_t)hn >= sizeof(head)) {
        snprintf(why, whylen, "request head over %zu bytes", sizeof(head));
        return PX_ECONFIG;
    }
    return px_otel_link_post(&px__ot.link, head, (size_t)hn, body, len, deadline, retry_ms, why,
                             whylen);
}

/* A failed connection is retried, a certificate that failed verification is not: the same
 * certificate comes back within the export timeout (the next batch tries again). */
static int px__retryable(int status)
{
    return (status < 0 && status != PX_EFORBIDDEN) || status == 429 || status == 502 ||
           status == 503 || status == 504;
}

/* Sleeps ms, in slices, or less when the flush at exit ends sooner. */
static void px__sleep(uint64_t ms)
{
    uint64_t end = px__deadline(ms);
    uint64_t now;
    while ((now = px__mono_ms()) < end) {
        uint64_t s = end - now < PX__SLICE_MS ? end - now : PX__SLICE_MS;
        struct timespec ts = {(time_t)(s / 1000), (long)(s % 1000) * 1000000};
        nanosleep(&ts, NULL);
        uint64_t left = end > px__mono_ms() ? end - px__mono_ms() : 0;
        if (atomic_load(&px__ot.stop)) /* a stop during the wait shortens it */
            end = px__deadline(left);
    }
}

/* Sends one batch of n records (body), retrying per the OTLP specification (429, 502, 503, 504
 * and failed connections, with exponential backoff or the collector's Retry-After) within the
 * export timeout; counts the records exported or dropped. */
static void px__export(const char *body, size_t len, size_t n)
{
    uint64_t end = px__deadline(px__ot.conf.export_timeout_ms);
    unsigned backoff = PX__BACKOFF_MS;
    char why[sizeof(px__rep.why)] = "";
    for (int attempt = 0; attempt < PX_OTEL_RETRY_MAX; attempt++) {
        uint64_t now = px__mono_ms();
        uint64_t d = px__deadline(px__ot.conf.timeout_ms);
        if (d > end)
            d = end;
        if (now >= d)
            break;
        unsigned retry_ms = 0;
        int st = px__post(body, len, d, &retry_ms, why, sizeof(why));
        if (st >= 200 && st < 300) {
            atomic_fetch_add(&px__ot.exported, n);
            return;
        }
        if (st > 0)
            snprintf(why, sizeof(why), "HTTP %d", st);
        if (!px__retryable(st))
            break;
        /* jitter: up to a quarter more, so many exporters do not retry in step */
        unsigned wait = retry_ms > 0
                            ? retry_ms
                            : backoff + (unsigned)(rand_r(&px__rep.seed) % (backoff / 4 + 1));
        backoff *= 2;
        if (attempt + 1 == PX_OTEL_RETRY_MAX || px__mono_ms() + wait >= end)
            break;
        px__sleep(wait);
        atomic_fetch_add(&px__ot.retries, 1);
    }
    atomic_fetch_add(&px__ot.dropped_failed, n);
    memcpy(px__rep.why, why, sizeof(why));
}

/* One stderr line per PX_OTEL_REPORT_INTERVAL_S at most, for the records dropped since the
 * last; force: at exit, whatever the interval. */
static void px__report(int force)
{
    uint64_t now = px__mono_ms();
    uint64_t full = atomic_load(&px__ot.dropped_full);
    uint64_t failed = atomic_load(&px__ot.dropped_failed);
    uint64_t n = full - px__rep.full + failed - px__rep.failed;
    if (n == 0 || (!force && px__rep.full + px__rep.failed > 0 &&
                   now - px__rep.since_ms < PX_OTEL_REPORT_INTERVAL_S * 1000u))
        return;
    char line[256];
    int len =
        snprintf(line, sizeof(line),
                 "airlock: warning: otel: %llu records dropped in the last %llus (%s%s)\n",
                 (unsigned long long)n, (unsigned long long)((now - px__rep.since_ms + 999) / 1000),
                 failed > px__rep.failed ? "collector failing: " : "queue full",
                 failed > px__rep.failed ? px__rep.why : "");
    if (len > 0) {
        ssize_t w = write(STDERR_FILENO, line, (size_t)len < sizeof(line) ? (size_t)len : 0);
        (void)w;
    }
    px__rep.full = full;
    px__rep.failed = failed;
    px__rep.since_ms = now;
}

/* Takes the queue's first record out (the exporter is the only one that takes). */
static void px__pop(void)
{
    pthread_mutex_lock(&px__ot.mu);
    px__rec_t *r = px__ot.head;
    px__ot.head = r->next;
    if (px__ot.head == NULL)
        px__ot.tail = NULL;
    px__ot.count--;
    px__ot.bytes -= r->len + r->line_len;
    pthread_mutex_unlock(&px__ot.mu);
    free(r);
}

static px__rec_t *px__peek(void)
{
    pthread_mutex_lock(&px__ot.mu);
    px__rec_t *r = px__ot.head;
    pthread_mutex_unlock(&px__ot.mu);
    return r;
}

/* Renders up to max_batch queued records into one OTLP/JSON request body (at most
 * PX_OTEL_BODY_MAX: a record that does not fit waits for the next batch) and sends it. Returns
 * the number of records taken. */
static size_t px__batch(char *body, char *rec)
{
    static const char tail[] = "]}]}]}";
    int off = snprintf(body, PX_OTEL_BODY_MAX,
                       "{\"resourceLogs\":[{\"resource\":{\"attributes\":%s},\"scopeLogs\":[{"
                       "\"scope\":{\"name\":\"airlock\",\"version\":\"" AIRLOCK_VERSION
                       "\"},\"logRecords\":[",
                       px__ot.conf.resource);
    size_t len = (size_t)off, n = 0, taken = 0;
    px__rec_t *r;
    while (taken < px__ot.conf.max_batch && (r = px__peek()) != NULL) {
        int w = px_otel_record_render(r->data, r->len, r->line_len > 0 ? r->data + r->len : NULL,
                                      r->line_len, r->observed_ns, rec, PX__REC_MAX);
        if (w < 0) { /* not an event object: never sent */
            atomic_fetch_add(&px__ot.dropped_failed, 1);
            snprintf(px__rep.why, sizeof(px__rep.why), "an event could not be rendered");
            px__pop();
            taken++;
            continue;
        }
        if (len + 1 + (size_t)w + sizeof(tail) > PX_OTEL_BODY_MAX)
            break;
        if (n > 0)
            body[len++] = ',';
        memcpy(body + len, rec, (size_t)w);
        len += (size_t)w;
        n++;
        taken++;
        px__pop();
    }
    if (n == 0)
        return taken;
    memcpy(body + len, tail, sizeof(tail) - 1);
    len += sizeof(tail) - 1;
    px__export(body, len, n);
    return taken;
}

/* Drops what is still queued when the flush at exit ran out of time. */
static void px__drop_rest(void)
{
    while (px__peek() != NULL) {
        px__pop();
        atomic_fetch_add(&px__ot.dropped_failed, 1);
    }
    snprintf(px__rep.why, sizeof(px__rep.why), "shutdown: the flush at exit ran out of time");
}

/* The exporter: a batch when max_batch records are queued or the schedule delay passed. */
static void *px__main(void *arg)
{
    (void)arg;
    pthread_setname_np(pthread_self(), "otel-export"); /* a bench finds its CPU by this name */
    char *body = malloc(PX_OTEL_BODY_MAX);
    char *rec = malloc(PX__REC_MAX);
    px__rep.since_ms = px__mono_ms();
    px__rep.seed = (unsigned)px__rep.since_ms;
    for (;;) {
        uint64_t due = px__mono_ms() + px__ot.conf.delay_ms;
        pthread_mutex_lock(&px__ot.mu);
        while (!atomic_load(&px__ot.stop) && px__ot.count < px__ot.conf.max_batch) {
            uint64_t now = px__mono_ms();
            if (now >= due)
                break;
            uint64_t s = due - now < PX__SLICE_MS * 10 ? due - now : PX__SLICE_MS * 10;
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_sec += (time_t)(s / 1000);
            ts.tv_nsec += (long)(s % 1000) * 1000000;
            if (ts.tv_nsec >= 1000000000)
                ts.tv_sec++, ts.tv_nsec -= 1000000000;
            px__ot.waiting = 1;
            pthread_cond_timedwait(&px__ot.wake, &px__ot.mu, &ts);
            px__ot.waiting = 0;
        }
        int stop = atomic_load(&px__ot.stop), empty = px__ot.count == 0;
        pthread_mutex_unlock(&px__ot.mu);
        if (stop && (empty || px__mono_ms() >= atomic_load(&px__ot.stop_deadline_ms)))
            break;
        if (body == NULL || rec == NULL) /* out of memory at start: nothing can be sent */
            px__drop_rest();
        else
            while (px__batch(body, rec) == px__ot.conf.max_batch && !atomic_load(&px__ot.stop))
                ;
        px__report(0);
    }
    px__drop_rest();
    px__report(1);
    px_otel_link_close(&px__ot.link);
    free(rec);
    free(body);
    return NULL;
}

static const char *px__getenv(const char *name)
{
    return getenv(name);
}

int px_otel_start(char *err, size_t errlen)
{
    if (px__ot.on)
        return 0;
    int rc = px_otel_conf_load(&px__ot.conf, px__getenv, err, errlen);
    if (rc != 0 || !px__ot.conf.enabled)
        return rc;
    rc = px_otel_link_init(&px__ot.link, &px__ot.conf, err, errlen);
    if (rc != 0)
        return rc;
    atomic_store(&px__ot.stop, 0);
    /* the thread takes no signal: the loop's handlers run on the loop */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    rc = pthread_create(&px__ot.thread, NULL, px__main, NULL);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        px_otel_link_free(&px__ot.link);
        snprintf(err, errlen, "otel: cannot start the exporter thread");
        return PX_ENOMEM;
    }
    px__ot.on = 1;
    return 0;
}

void px_otel_stop(void)
{
    if (!px__ot.on)
        return;
    unsigned budget = px__ot.conf.export_timeout_ms;
    if (budget > PX_OTEL_SHUTDOWN_MAX_MS)
        budget = PX_OTEL_SHUTDOWN_MAX_MS;
    atomic_store(&px__ot.stop_deadline_ms, px__mono_ms() + budget);
    pthread_mutex_lock(&px__ot.mu);
    atomic_store(&px__ot.stop, 1);
    pthread_cond_signal(&px__ot.wake);
    pthread_mutex_unlock(&px__ot.mu);
    pthread_join(px__ot.thread, NULL);
    px_otel_link_free(&px__ot.link);
    px__ot.on = 0;
}
