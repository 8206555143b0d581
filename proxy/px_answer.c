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
