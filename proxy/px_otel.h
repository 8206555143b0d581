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

/* Bounds (each a hard cap, whatever the environment says). */
#define PX_OTEL_QUEUE_BYTES_MAX (4 * 1024 * 1024) /* queued event bytes */
#define PX_OTEL_BODY_MAX (4 * 1024 * 1024)        /* one request body: a batch is cut to fit */
#define PX_OTEL_HEADERS_MAX 4096                  /* extra request headers, rendered */
#define PX_OTEL_RESOURCE_MAX 4096                 /* resource attributes, rendered as JSON */
#define PX_OTEL_URL_MAX 1024
#define PX_OTEL_QUEUE_SIZE_MAX 65536 /* OTEL_BLRP_MAX_QUEUE_SIZE above this is cut */
#define PX_OTEL_RETRY_MAX 5          /* attempts per batch, within the export timeout */
#define PX_OTEL_SHUTDOWN_MAX_MS 5000 /* the flush at exit, at most */
#define PX_OTEL_REPORT_INTERVAL_S 60 /* one stderr line about drops per interval, at most */

/* What the environment asks for (px_otel_conf_load()). */
typedef struct px_otel_conf {
    int enabled;                         /* an endpoint is set (and OTEL_SDK_DISABLED is not) */
    char url[PX_OTEL_URL_MAX + 320];     /* the logs endpoint, as used */
    char host[256];                      /* from url: the name or address (no brackets) */
    char port[8];                        /* from url: digits */
    char hostport[300];                  /* the Host header */
    char path[PX_OTEL_URL_MAX];          /* from url: path and query ("/" when empty) */
    char headers[PX_OTEL_HEADERS_MAX];   /* "Name: value\r\n" per OTEL_*_HEADERS entry */
    char resource[PX_OTEL_RESOURCE_MAX]; /* the resource's "attributes" array, as JSON */
    unsigned timeout_ms;                 /* one HTTP attempt: OTEL_EXPORTER_OTLP[_LOGS]_TIMEOUT */
    unsigned delay_ms;                   /* OTEL_BLRP_SCHEDULE_DELAY */
    unsigned export_timeout_ms;          /* OTEL_BLRP_EXPORT_TIMEOUT: a batch, retries included */
    unsigned max_queue;                  /* OTEL_BLRP_MAX_QUEUE_SIZE */
    unsigned max_batch;                  /* OTEL_BLRP_MAX_EXPORT_BATCH_SIZE (<= max_queue) */
} px_otel_conf_t;

/* Reads the OTEL_* variables through get (getenv() or a test's table; it returns NULL for an
 * unset variable; an empty value counts as unset) into c. Returns 0 (c->enabled 0 when no
 * endpoint is set), or a negative code with the reason in err (never a header's value): an
 * https:// or malformed endpoint, a protocol other than http/json or http/protobuf, a malformed
 * header or resource attribute, a number out of range. */
int px_otel_conf_load(px_otel_conf_t *c, const char *(*get)(const char *name), char *err,
                      size_t errlen);

/* Parses a "key=value,key=value" list (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES:
 * W3C Baggage's shape, values percent-decoded, blanks around keys and values dropped). Calls
 * on_pair for each pair (key and value NUL-terminated, borrowed for the call); a non-zero
 * return stops the parse and is returned. Returns 0, or -1 for a malformed list (an entry
 * without '=' or with an empty key, a bad %XX, a key or value over 1024 bytes). */
int px_otel_parse_pairs(const char *s, size_t len,
                        int (*on_pair)(void *arg, const char *key, const char *value), void *arg);

/* Writes the OTLP LogRecord of one JSON event (audit_json.h; json[0..len), borrowed) as a JSON
 * object into out (cap bytes, NUL-terminated): times, severity, the text line as body, the
 * event's members as attributes. observed_ns: when it was queued. Returns the length, or -1
 * when json is not an object or out is too small. */
int px_otel_record_render(const char *json, size_t len, uint64_t observed_ns, char *out,
                          size_t cap);

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

/* What the exporter did since it started: atomics, read by the metrics renderer. */
typedef struct px_otel_stats {
    uint64_t exported;       /* records the collector accepted */
    uint64_t dropped_full;   /* records refused because the queue was full */
    uint64_t dropped_failed; /* records given up on: the collector failed or refused them */
    uint64_t retries;        /* export attempts repeated after a retryable failure */
} px_otel_stats_t;

void px_otel_stats(px_otel_stats_t *out);

#endif
