/* libFuzzer target for the OTLP LogRecord writer (proxy/px_otel_rec.c), which reads a JSON
 * event with a scanner of its own and copies its strings and numbers as spelled: any bytes,
 * read as an event, must be refused or give one valid JSON object with the record's fields;
 * every input jansson reads as an object must be rendered (a valid event is never lost). */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "proxy/px_otel.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_otel_record: line %d: %s\n", __LINE__, #cond);                   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 32 * 1024)
        return 0; /* an event is at most 32 KiB */
    size_t cap = size * 8 + 8192;
    char *out = malloc(cap);
    CHECK(out != NULL);
    int n =
        px_otel_record_render((const char *)data, size, NULL, 0, 1770122097999000001ull, out, cap);
    /* (a raw NUL byte is never JSON; jansson lets one pass after a number) */
    json_t *in = json_loadb((const char *)data, size, 0, NULL);
    if (json_is_object(in) && memchr(data, 0, size) == NULL)
        CHECK(n >= 0);
    json_decref(in);
    if (n >= 0) {
        CHECK((size_t)n < cap && out[n] == '\0');
        json_error_t e;
        json_t *rec = json_loadb(out, (size_t)n, JSON_ALLOW_NUL, &e);
        if (rec == NULL)
            fprintf(stderr, "fuzz_otel_record: %s at %d: %.*s\n", e.text, e.position, n, out);
        CHECK(json_is_object(rec));
        CHECK(json_is_array(json_object_get(rec, "attributes")));
        CHECK(json_is_string(json_object_get(json_object_get(rec, "body"), "stringValue")));
        CHECK(json_is_integer(json_object_get(rec, "severityNumber")));
        size_t i;
        json_t *a;
        json_array_foreach(json_object_get(rec, "attributes"), i, a)
        {
            CHECK(json_is_string(json_object_get(a, "key")));
            json_t *v = json_object_get(a, "value");
            CHECK(json_is_object(v) && json_object_size(v) == 1);
            json_t *iv = json_object_get(v, "intValue");
            CHECK(iv == NULL || json_is_string(iv));
        }
        json_decref(rec);
    }
    /* any bytes as the text line the log passed: still one valid record */
    n = px_otel_record_render("{\"v\":2}", 7, (const char *)data, size, 1, out, cap);
    CHECK(n > 0);
    json_t *rec = json_loadb(out, (size_t)n, JSON_ALLOW_NUL, NULL);
    CHECK(json_is_string(json_object_get(json_object_get(rec, "body"), "stringValue")));
    json_decref(rec);
    free(out);
    return 0;
}
