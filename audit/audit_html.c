#include "audit/audit_html.h"

#include <string.h>

void audit_html_esc(FILE *out, const char *s, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '&':
            fputs("&amp;", out);
            break;
        case '<':
            fputs("&lt;", out);
            break;
        case '>':
            fputs("&gt;", out);
            break;
        case '"':
            fputs("&quot;", out);
            break;
        case '\'':
            fputs("&#39;", out);
            break;
        default:
            if (c == '\n' || (c >= 0x20 && c < 0x7f))
                fputc(c, out);
            else
                fputs("&#xfffd;", out);
        }
    }
}

void audit_html_escs(FILE *out, const char *s)
{
    audit_html_esc(out, s, strlen(s));
}
