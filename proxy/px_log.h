/* The network log (docs/network-log.md) and stderr diagnostics.
 *
 * Lines are queued by the loop thread and written by one writer thread, each line with one
 * write() on an O_APPEND descriptor, so concurrent writers never interleave and a slow disk
 * never stalls the loop (unless PX_LOG_QUEUE_MAX bytes are pending). px_log_close() drains
 * the queue, so no line is lost at shutdown. */
#ifndef PX_LOG_H
#define PX_LOG_H

#include <stddef.h>

#include "audit/audit_event.h"

#define PX_LOG_LINE_MAX AUDIT_EVENT_TEXT_MAX /* one line; longer lines are cut and marked */
#define PX_LOG_QUEUE_MAX (8 * 1024 * 1024)   /* pending bytes before the writer blocks */
#define PX_LOG_KICK_BYTES (16 * 1024)        /* batched: pending bytes that wake the writer */
/* the same for JSON (the --events sink, a log with --log-format json): its objects are about
 * three text lines long, so it would wake its writer three times as often (PX_LOG_DELAY_MS
 * still bounds the wait) */
#define PX_LOG_JSON_KICK_BYTES (64 * 1024)
#define PX_LOG_DELAY_MS 10 /* batched: the longest a line waits for the writer */

typedef struct px_log px_log_t;

/* Sets the process's log outputs once, at start-up, before any log is opened (like the
 * diagnostics level): json 1 writes the network logs as JSON objects (audit/audit_json.h)
 * instead of text lines, events_path (NULL: none) a second sink of JSON objects that every log
 * opened afterwards also writes to (created when missing, appended), and sandboxes_dir (NULL:
 * none) where the sandboxes' logs are, so an object can name its sandbox. Returns 0, or a
 * negative code with a reason in err. */
int px_log_configure(int json, const char *events_path, const char *sandboxes_dir, char *err,
                     size_t errlen);

/* Drains and closes the events sink and resets the outputs; after every log was closed. */
void px_log_unconfigure(void);

/* Opens path for appending. When the file does not exist and create is 0, the log is a no-op
 * sink (returns 0; the events sink, when configured, is still written). Returns 0 with *out
 * set, or a negative code with a reason in err. */
int px_log_open(const char *path, int create, px_log_t **out, char *err, size_t errlen);

/* Queues one line (len bytes, no newline). Every byte that is not printable ASCII is written
 * as \xNN (so a host, SNI, path or value can never carry a newline or a
 * terminal control sequence into the log), then the line is cut at PX_LOG_LINE_MAX. In JSON
 * format and for the events sink, the escaped line is read back (audit_event_parse()) and
 * written as its event's object (kind "other" with the text when it is not an event). Never
 * fails: on a write error the writer reports once on stderr and counts the line as lost. */
void px_log_line(px_log_t *log, const char *line, size_t len);

/* Queues the line of one decision, rendered by audit_event_render() (escaped and cut the same
 * way as px_log_line()), or by audit_json_render() with the time and the sandbox in JSON
 * format and to the events sink. Every network-log line of the proxy is written through here,
 * except the DNS responder's (dns/ sits below audit/ and formats its own) and the addons'
 * (idem); px_log_line() reads those back into a record for the JSON outputs. */
void px_log_event(px_log_t *log, const audit_event_t *ev);

/* px_log_event() with ev->tail set from a printf format (NULL: ev as it is). */
void px_log_eventf(px_log_t *log, audit_event_t *ev, const char *tail_fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Queues the "=== TASK START <now, UTC> ===" line that opens a conversation's log. */
void px_log_task_start(px_log_t *log);

/* printf-style px_log_line(). */
void px_log_printf(px_log_t *log, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* 1 when lines go to a file (the network log itself; the events sink aside). */
int px_log_enabled(const px_log_t *log);

/* 1 when log's events are also written as JSON (--log-format json, --events, OTLP export):
 * what only the JSON carries need not be made otherwise. */
int px_log_wants_json(const px_log_t *log);

/* Batched mode: lines are handed to the writer only by px_log_kick() (the engine calls it once
 * per loop turn), or when much is pending; saves a thread wake-up per line. */
void px_log_set_batched(px_log_t *log, int on);

/* Wakes the writer when lines are pending and force is set or PX_LOG_KICK_BYTES are pending
 * (PX_LOG_JSON_KICK_BYTES for JSON)
 * (each wake costs two context switches on the loop's CPU, so a busy loop hands lines over in
 * batches). Returns 1 when lines were left pending: the caller kicks again with force within
 * PX_LOG_DELAY_MS. */
int px_log_kick(px_log_t *log, int force);

/* 1 when a line was queued since the last px_log_kick() (a cheap test for a loop that kicks
 * many logs; the lines are queued and kicked on the same thread). */
int px_log_touched(const px_log_t *log);

/* Blocks until every queued line was written (or failed). */
void px_log_flush(px_log_t *log);

/* Number of lines that could not be written. */
unsigned long px_log_lost(px_log_t *log);

/* Drains the queue, stops the writer thread, closes the file and frees log. NULL is a no-op. */
void px_log_close(px_log_t *log);

/* Diagnostics on stderr (never the network log; never secrets). */
enum { PX_DIAG_ERROR = 0, PX_DIAG_WARN = 1, PX_DIAG_INFO = 2, PX_DIAG_DEBUG = 3 };
void px_diag_set_level(int level);
int px_diag_level(void);
void px_diag__emit(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define px_diag(level, ...)                                                                        \
    do {                                                                                           \
        if ((level) <= px_diag_level())                                                            \
            px_diag__emit((level), __VA_ARGS__);                                                   \
    } while (0)

#endif
