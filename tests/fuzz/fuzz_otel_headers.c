/* libFuzzer target for the OTEL_EXPORTER_OTLP_HEADERS / OTEL_RESOURCE_ATTRIBUTES reader
 * (proxy/px_otel_conf.c): any bytes, read as the variable's value, must parse or be refused;
 * every header that passes is one "Name: value\r\n" line with a token name and no control byte
 * in its value (so no variable can add a line to the exporter's requests). */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxy/px_otel.h"

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond))                                                                               \
            abort();                                                                               \
    } while (0)

static const char *px__value;

static const char *get(const char *name)
{
    if (strcmp(name, "OTEL_EXPORTER_OTLP_ENDPOINT") == 0)
        return "http://127.0.0.1:4318";
    if (strcmp(name, "OTEL_EXPORTER_OTLP_HEADERS") == 0 ||
        strcmp(name, "OTEL_RESOURCE_ATTRIBUTES") == 0)
        return px__value;
    return NULL;
}

static int on_pair(void *arg, const char *key, const char *value)
{
    (void)arg;
    CHECK(key[0] != '\0' && strlen(key) <= 1024 && strlen(value) <= 1024);
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    CHECK(s != NULL);
    memcpy(s, data, size);
    s[size] = '\0';
    px_otel_parse_pairs(s, size, on_pair, NULL); /* on exactly size bytes (no NUL read) */
    px__value = s;
    px_otel_conf_t c;
    char err[256];
    if (px_otel_conf_load(&c, get, err, sizeof(err)) == 0) {
        CHECK(c.enabled);
        for (const char *l = c.headers; *l != '\0';) {
            const char *e = strstr(l, "\r\n");
            CHECK(e != NULL);
            const char *colon = memchr(l, ':', (size_t)(e - l));
            CHECK(colon != NULL && colon > l);
            for (const char *p = l; p < e; p++)
                CHECK((unsigned char)*p >= 0x20 || *p == '\t');
            l = e + 2;
        }
    }
    free(s);
    return 0;
}
