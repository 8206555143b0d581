/* OpenTelemetry export of the audit events (docs/otel.md): when OTEL_EXPORTER_OTLP_ENDPOINT
 * (or OTEL_EXPORTER_OTLP_LOGS_ENDPOINT) is set, every event the JSON outputs get is also sent
 * to a collector as an OTLP log record, over HTTP with the JSON encoding (http/json).
 *
 * The loops only copy an already rendered JSON event into a bounded queue (count and bytes,
 * under a mutex, so any number of loop threads may push); one exporter thread of its own turns
 * the events into log records, batches them and POSTs them with blocking sockets and poll()
 * timeouts. A slow or dead collector costs the loops nothing: when the queue is full a record is
 * dropped and counted, never waited for. */
#ifndef PX_OTEL_H
#define PX_OTEL_H

#include <stddef.h>
#include <stdint.h>

#include "proxy/px_otel_conf.h"

/* Bounds (each a hard cap, whatever the environment says). */
#define PX_OTEL_QUEUE_BYTES_MAX (4 * 1024 * 1024) /* queued event bytes */
#define PX_OTEL_BODY_MAX (4 * 1024 * 1024)        /* one request body: a batch is cut to fit */
#define PX_OTEL_RETRY_MAX 5          /* attempts per batch, within the export timeout */
#define PX_OTEL_SHUTDOWN_MAX_MS 5000 /* the flush at exit, at most */
#define PX_OTEL_REPORT_INTERVAL_S 60 /* one stderr line about drops per interval, at most */

/* Writes the OTLP LogRecord of one JSON event (audit_json.h; json[0..len), borrowed) as a JSON
 * object into out (cap bytes, NUL-terminated): times, severity, the text line as body, the
 * event's members as attributes. line[0..line_len) (borrowed): the event's text line as the
 * text log wrote it, or NULL to have it read back from json (audit_jread_line(), which parses
 * the event once more: most of the cost). observed_ns: when it was queued. Returns the length,
 * or -1 when json is not an object or out is too small. */
int px_otel_record_render(const char *json, size_t len, const char *line, size_t line_len,
                          uint64_t observed_ns, char *out, size_t cap);

/* The severity of a JSON event's decision ("allowed" ..., NULL: none): sets *text to its
 * name and returns its SeverityNumber (INFO 9, WARN 13, ERROR 17). */
int px_otel_severity(const char *decision, const char *kind, const char **text);

/* Reads the configuration from the environment and, when an endpoint is set, starts the
 * exporter thread. Once, at start-up, before any loop runs. Returns 0 (also when nothing is
 * set), or a negative code with the reason in err. */
int px_otel_start(char *err, size_t errlen);

/* Stops the exporter: sends what is queued within the shutdown budget (the export timeout, at
 * most PX_OTEL_SHUTDOWN_MAX_MS), drops and counts the rest, joins the thread. After every
 * loop stopped pushing. A no-op when not started. */
void px_otel_stop(void);

/* 1 when the exporter runs (read-only after px_otel_start()). */
int px_otel_enabled(void);

/* Queues one JSON event (json[0..len), copied; no newline) for export. Thread-safe, never
 * blocks on the collector: when the queue is full the record is dropped and counted. */
void px_otel_push(const char *json, size_t len);

/* The same with the event's text line (line[0..line_len), copied), which the record's body is:
 * the exporter then need not read it back from the JSON (about three quarters of its CPU per
 * event, tests/bench/otel_bench.sh). */
void px_otel_push_line(const char *json, size_t len, const char *line, size_t line_len);

/* What the exporter did since it started: atomics, read by the metrics renderer. */
typedef struct px_otel_stats {
    uint64_t exported;       /* records the collector accepted */
    uint64_t dropped_full;   /* records refused because the queue was full */
    uint64_t dropped_failed; /* records given up on: the collector failed or refused them */
    uint64_t retries;        /* export attempts repeated after a retryable failure */
} px_otel_stats_t;

void px_otel_stats(px_otel_stats_t *out);

#endif
