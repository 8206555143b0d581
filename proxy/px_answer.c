#include "proxy/px_answer.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

const char *px_answer_reason(int status)
{
    switch (status) {
    case 100:
        return "Continue";
    case 200:
        return "OK";
    case 400:
        return "Bad Request";
    case 403:
        return "Forbidden";
    case 408:
        return "Request Timeout";
    case 413:
        return "Content Too Large";
    case 414:
        return "URI Too Long";
    case 431:
        return "Request Header Fields Too Large";
    case 501:
        return "Not Implemented";
    case 502:
        return "Bad Gateway";
    case 504:
        return "Gateway Timeout";
    default:
        return "Error";
    }
}

size_t px_answer_build(char *out, size_t cap, int status, const char *json, size_t json_len,
                       int close)
{
    px_sbuf_t b;
    px_sbuf_init(&b, out, cap);
    px_sbuf_printf(&b,
                   "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
                   "%s\r\n",
                   status, px_answer_reason(status), json_len + strlen(PX_ANSWER_EOL),
                   close ? "Connection: close\r\n" : "");
    px_sbuf_add(&b, json, json_len);
    px_sbuf_adds(&b, PX_ANSWER_EOL);
    return b.overflow ? 0 : b.len;
}

void px_answer_leak_json(px_sbuf_t *b, const char *kind, const char *name, const char *enc,
                         const char *where, const char *field, size_t field_len, const char *method,
                         const char *message)
{
    px_sbuf_adds(b, "{\"error\": \"blocked_secret_leak\", \"kind\": ");
    px_sbuf_json_str(b, kind, strlen(kind));
    px_sbuf_adds(b, ", \"name\": ");
    px_sbuf_json_str(b, name, strlen(name));
    px_sbuf_adds(b, ", \"encoding\": ");
    px_sbuf_json_str(b, enc, strlen(enc));
    px_sbuf_adds(b, ", \"where\": ");
    px_sbuf_json_str(b, where, strlen(where));
    if (field != NULL) {
        px_sbuf_adds(b, ", ");
        px_sbuf_json_str(b, where, strlen(where)); /* "header": NAME, "trailer": NAME */
        px_sbuf_adds(b, ": ");
        px_sbuf_json_str(b, field, field_len < 64 ? field_len : 64);
    }
    px_sbuf_adds(b, ", \"method\": ");
    px_sbuf_json_str(b, method, strlen(method));
    px_sbuf_adds(b, ", \"message\": ");
    px_sbuf_json_str(b, message, strlen(message));
    px_sbuf_adds(b, "}");
}
