/* The OTLP exporter's configuration (docs/otel.md, "Environment variables"): the OTEL_*
 * variables read once at start-up into a plain struct, shared by the exporter (px_otel.h) and
 * its connection (px_otel_net.h). */
#ifndef PX_OTEL_CONF_H
#define PX_OTEL_CONF_H

#include <stddef.h>

/* Bounds (each a hard cap, whatever the environment says). */
#define PX_OTEL_HEADERS_MAX 4096  /* extra request headers, rendered */
#define PX_OTEL_RESOURCE_MAX 4096 /* resource attributes, rendered as JSON */
#define PX_OTEL_URL_MAX 1024
#define PX_OTEL_PATH_MAX 1024        /* a CA, certificate or key file's name */
#define PX_OTEL_QUEUE_SIZE_MAX 65536 /* OTEL_BLRP_MAX_QUEUE_SIZE above this is cut */

/* What the environment asks for (px_otel_conf_load()). */
typedef struct px_otel_conf {
    int enabled;                         /* an endpoint is set (and OTEL_SDK_DISABLED is not) */
    int tls;                             /* an https:// endpoint */
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
    /* https only ("" when unset; read but unused with http://) */
    char ca_file[PX_OTEL_PATH_MAX];   /* OTEL_EXPORTER_OTLP[_LOGS]_CERTIFICATE: "" system store */
    char cert_file[PX_OTEL_PATH_MAX]; /* OTEL_EXPORTER_OTLP[_LOGS]_CLIENT_CERTIFICATE */
    char key_file[PX_OTEL_PATH_MAX];  /* OTEL_EXPORTER_OTLP[_LOGS]_CLIENT_KEY */
} px_otel_conf_t;

/* Reads the OTEL_* variables through get (getenv() or a test's table; it returns NULL for an
 * unset variable; an empty value counts as unset) into c. Returns 0 (c->enabled 0 when no
 * endpoint is set), or a negative code with the reason in err (never a header's value): a
 * malformed endpoint, a protocol other than http/json or http/protobuf, a malformed header or
 * resource attribute, a number out of range, a client certificate without its key (or the
 * reverse). The files are only named here; px_otel_start() loads them. */
int px_otel_conf_load(px_otel_conf_t *c, const char *(*get)(const char *name), char *err,
                      size_t errlen);

/* Parses a "key=value,key=value" list (OTEL_EXPORTER_OTLP_HEADERS, OTEL_RESOURCE_ATTRIBUTES:
 * W3C Baggage's shape, values percent-decoded, blanks around keys and values dropped). Calls
 * on_pair for each pair (key and value NUL-terminated, borrowed for the call); a non-zero
 * return stops the parse and is returned. Returns 0, or -1 for a malformed list (an entry
 * without '=' or with an empty key, a bad %XX, a key or value over 1024 bytes). */
int px_otel_parse_pairs(const char *s, size_t len,
                        int (*on_pair)(void *arg, const char *key, const char *value), void *arg);

#endif
