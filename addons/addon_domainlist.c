/* The plain domain list of Squid's dstdomain ACL files and of pf+mitmproxy setups
 * (allowlist.txt): one host per line, '#' comments (whole lines, or after the host and a space),
 * blank lines ignored; ".example.com" is example.com and every name under it; "example.com"
 * only that name. Also the format of an agentbox allow_file. */
#include <stdio.h>
#include <string.h>

#include "addons/addon_policy_int.h"
#include "base/px_err.h"

static int dl_error(char *err, size_t errlen, const char *name, size_t line, size_t col,
                    const char *msg, int rc)
{
    snprintf(err, errlen, "%s:%zu:%zu: %s", name, line, col, msg);
    return rc;
}

int addon__domainlist_read(addon_policy_t *p, const char *name, const char *data, size_t len,
                           const char *origin, char *err, size_t errlen)
{
    size_t pos = 0;
    size_t line = 0;
    if (len >= 3 && memcmp(data, "\xef\xbb\xbf", 3) == 0)
        pos = 3; /* a UTF-8 byte order mark, as Windows editors write */
    while (pos < len) {
        line++;
        size_t begin = pos;
        const char *nl = memchr(data + pos, '\n', len - pos);
        size_t end = nl != NULL ? (size_t)(nl - data) : len;
        size_t i = pos;
        pos = end + 1;
        if (end > i && data[end - 1] == '\r')
            end--;
        while (i < end && (data[i] == ' ' || data[i] == '\t'))
            i++;
        if (i == end || data[i] == '#')
            continue;
        size_t h = i;
        while (i < end && data[i] != ' ' && data[i] != '\t')
            i++;
        size_t hend = i;
        while (i < end && (data[i] == ' ' || data[i] == '\t'))
            i++;
        if (i < end && data[i] != '#')
            return dl_error(err, errlen, name, line, i - begin + 1,
                            "one host per line (a second word here; comments start with '#')",
                            PX_ECONFIG);
        int rc;
        addon__policy_entry_t *e = addon__policy_push(p, ADDON_POLICY_DOMAINS, &rc);
        if (e == NULL)
            return dl_error(err, errlen, name, line, h - begin + 1,
                            rc == PX_ETOOBIG ? "too many entries" : "out of memory", rc);
        const char *why = NULL;
        rc = addon__policy_host(data + h, hend - h, e, &why);
        if (rc != 0)
            return dl_error(err, errlen, name, line, h - begin + 1, why, rc);
        char src[ADDON__POLICY_SRC_MAX];
        if (origin != NULL)
            snprintf(src, sizeof(src), "%s:%zu (%s)", name, line, origin);
        else
            snprintf(src, sizeof(src), "%s:%zu", name, line);
        if (addon__policy_set_src(e, src) != 0)
            return dl_error(err, errlen, name, line, h - begin + 1, "out of memory", PX_ENOMEM);
    }
    return 0;
}
