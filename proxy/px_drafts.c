/* The approvals drafts file (px_drafts.h). The file is small and rewritten whole: read it,
 * change the list, render it, check that the text loads as an allowlist, write a temp file
 * beside it and rename it over. */
#include "proxy/px_drafts.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "addons/addon_glob.h"
#include "base/px_err.h"
#include "base/px_limits.h"

#define PX__DRAFTS_HEADER                                                                          \
    "# Approvals drafts: entries approved with `airlock approve --scope persist`, loaded with\n"   \
    "# the allowlist beside this file. airlock rewrites this file (`airlock approvals undo ID`\n"  \
    "# removes an entry): move an entry to the allowlist to keep it there.\n"

int px_drafts_path(const char *allowlist, char *buf, size_t len)
{
    const char *base = strrchr(allowlist, '/');
    base = base != NULL ? base + 1 : allowlist;
    const char *dot = strrchr(base, '.');
    size_t stem = dot != NULL && dot != base ? (size_t)(dot - allowlist) : strlen(allowlist);
    int n = snprintf(buf, len, "%.*s.approved.yaml", (int)stem, allowlist);
    return n < 0 || (size_t)n >= len ? PX_ETOOBIG : 0;
}

int px_drafts_path_for(const px_config_t *cfg, const char *sandbox, char *buf, size_t len)
{
    if (cfg->sandboxes_dir == NULL)
        return px_drafts_path(cfg->allowlist_path, buf, len);
    if (sandbox == NULL || strcmp(sandbox, "-") == 0 || strchr(sandbox, '/') != NULL ||
        sandbox[0] == '.')
        return PX_ECONFIG;
    /* a sandbox's allowlist is DIR/NAME/network-allowlist.yaml (app/px_sandbox.c) */
    int n =
        snprintf(buf, len, "%s/%s/network-allowlist.approved.yaml", cfg->sandboxes_dir, sandbox);
    return n < 0 || (size_t)n >= len ? PX_ETOOBIG : 0;
}

void px_drafts_free(px_drafts_t *d)
{
    for (size_t i = 0; i < d->n; i++) {
        free(d->v[i].host);
        free(d->v[i].path);
    }
    free(d->v);
    d->v = NULL;
    d->n = 0;
}

/* 1 when every byte of s is printable ASCII other than a space: what the file may hold. */
static int px__word(const char *s)
{
    for (; *s != '\0'; s++)
        if ((unsigned char)*s <= 0x20 || (unsigned char)*s >= 0x7f)
            return 0;
    return 1;
}

/* The YAML double-quoted string at *s (after the opening quote is checked) into a new string;
 * NULL when malformed or out of memory. Only \" and \\ are escapes (what px__quote writes). */
static char *px__unquote(const char *s)
{
    if (*s++ != '"')
        return NULL;
    size_t n = strlen(s);
    char *d = malloc(n + 1), *o = d;
    if (d == NULL)
        return NULL;
    for (; *s != '\0' && *s != '"'; s++) {
        if (*s == '\\' && (s[1] == '"' || s[1] == '\\'))
            s++;
        else if (*s == '\\')
            break;
        *o++ = *s;
    }
    *o = '\0';
    if (*s != '"' || s[1] != '\0') {
        free(d);
        return NULL;
    }
    return d;
}

/* Parses one comment line "approval aN by WHO at WHEN (hold HN)" (after "  # "). */
static int px__parse_head(const char *s, px_draft_t *d)
{
    if (sscanf(s, "approval a%u by ", &d->id) != 1 || d->id == 0)
        return -1;
    const char *by = strstr(s, " by ");
    const char *at = by != NULL ? strstr(by, " at ") : NULL;
    const char *hold = at != NULL ? strstr(at, " (hold ") : NULL;
    if (hold == NULL || strcmp(hold + strlen(hold) - 1, ")") != 0)
        return -1;
    by += 4;
    snprintf(d->who, sizeof(d->who), "%.*s", (int)(at - by), by);
    at += 4;
    snprintf(d->when, sizeof(d->when), "%.*s", (int)(hold - at), at);
    hold += 7;
    snprintf(d->hold, sizeof(d->hold), "%.*s", (int)(strlen(hold) - 1), hold);
    return 0;
}

/* "[GET, POST]" into "GET,POST"; -1 when malformed. */
static int px__parse_methods(const char *s, char *out, size_t len)
{
    size_t n = strlen(s);
    if (n < 2 || s[0] != '[' || s[n - 1] != ']' || n - 2 >= len)
        return -1;
    size_t o = 0;
    for (size_t i = 1; i + 1 < n; i++)
        if (s[i] != ' ')
            out[o++] = s[i];
    out[o] = '\0';
    return 0;
}

/* One line of the file into d (lineno for the error). 0 or -1 with why. */
static int px__parse_line(char *line, px_drafts_t *d, const char **why)
{
    if (line[0] == '#' || line[0] == '\0' || strcmp(line, "url_prefixes:") == 0 ||
        strcmp(line, "url_prefixes: []") == 0)
        return 0;
    px_draft_t *cur = d->n > 0 ? &d->v[d->n - 1] : NULL;
    if (strncmp(line, "  # ", 4) == 0) {
        if (d->n == PX_DRAFTS_MAX) {
            *why = "too many entries";
            return -1;
        }
        px_draft_t *v = realloc(d->v, (d->n + 1) * sizeof(*v));
        if (v == NULL) {
            *why = "out of memory";
            return -1;
        }
        d->v = v;
        cur = &v[d->n];
        memset(cur, 0, sizeof(*cur));
        d->n++;
        if (px__parse_head(line + 4, cur) != 0) {
            *why = "expected '# approval aN by WHO at WHEN (hold hN)'";
            return -1;
        }
        return 0;
    }
    if (strncmp(line, "  - host: ", 10) == 0 && cur != NULL && cur->host == NULL) {
        cur->host = px__unquote(line + 10);
        *why = "a host that is not a quoted string";
        return cur->host != NULL ? 0 : -1;
    }
    if (strncmp(line, "    path: ", 10) == 0 && cur != NULL && cur->host != NULL &&
        cur->path == NULL) {
        cur->path = px__unquote(line + 10);
        *why = "a path that is not a quoted string";
        return cur->path != NULL ? 0 : -1;
    }
    if (strncmp(line, "    methods: ", 13) == 0 && cur != NULL && cur->host != NULL) {
        *why = "methods that are not a [A, B] list";
        return px__parse_methods(line + 13, cur->methods, sizeof(cur->methods));
    }
    *why = "not a line airlock writes in a drafts file";
    return -1;
}

int px_drafts_read(const char *path, px_drafts_t *out, char *err, size_t errlen)
{
    out->v = NULL;
    out->n = 0;
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        if (errno == ENOENT)
            return 0;
        snprintf(err, errlen, "%s: %s", path, strerror(errno));
        return PX_EIO;
    }
    char line[PX_HOLD_FIELD_MAX + 64];
    unsigned lineno = 0;
    size_t total = 0;
    int rc = 0;
    while (fgets(line, sizeof(line), f) != NULL) {
        lineno++;
        size_t n = strlen(line);
        total += n;
        const char *why = NULL;
        if (total > PX_DRAFTS_FILE_MAX) {
            why = "the file is too long";
        } else if (n == 0 || line[n - 1] != '\n') {
            if (n + 1 == sizeof(line))
                why = "the line is too long";
        }
        if (n > 0 && line[n - 1] == '\n')
            line[--n] = '\0';
        if (why == NULL && px__parse_line(line, out, &why) == 0)
            continue;
        snprintf(err, errlen, "%s:%u: %s", path, lineno, why);
        rc = PX_ECONFIG;
        break;
    }
    fclose(f);
    for (size_t i = 0; rc == 0 && i < out->n; i++) {
        if (out->v[i].host == NULL) {
            snprintf(err, errlen, "%s: approval a%u has no host", path, out->v[i].id);
            rc = PX_ECONFIG;
        } else if (out->v[i].path == NULL && (out->v[i].path = strdup("")) == NULL) {
            rc = PX_ENOMEM;
        }
    }
    if (rc != 0)
        px_drafts_free(out);
    return rc;
}

/* s as a YAML double-quoted string into buf; -1 when s holds a byte the file never does. */
static int px__quote(const char *s, char *buf, size_t len)
{
    size_t o = 0;
    if (!px__word(s) && *s != '\0')
        return -1;
    buf[o++] = '"';
    for (; *s != '\0' && o + 3 < len; s++) {
        if (*s == '"' || *s == '\\')
            buf[o++] = '\\';
        buf[o++] = *s;
    }
    if (*s != '\0' || o + 2 > len)
        return -1;
    buf[o++] = '"';
    buf[o] = '\0';
    return 0;
}

/* The text of d into a new buffer (*text, *len); 0, PX_ECONFIG (an entry the file cannot hold)
 * or PX_ENOMEM. */
static int px__render(const px_drafts_t *d, char **text, size_t *len)
{
    size_t cap = sizeof(PX__DRAFTS_HEADER) + 32;
    for (size_t i = 0; i < d->n; i++)
        cap += 2 * (strlen(d->v[i].host) + strlen(d->v[i].path)) + 256 + PX_DRAFTS_METHODS_MAX;
    char *t = malloc(cap), q[2 * PX_HOLD_FIELD_MAX + 4];
    if (t == NULL)
        return PX_ENOMEM;
    size_t o = (size_t)snprintf(t, cap, "%s%s\n", PX__DRAFTS_HEADER,
                                d->n == 0 ? "url_prefixes: []" : "url_prefixes:");
    for (size_t i = 0; i < d->n; i++) {
        const px_draft_t *e = &d->v[i];
        if (px__quote(e->host, q, sizeof(q)) != 0 ||
            (!px__word(e->methods) && e->methods[0] != '\0')) {
            free(t);
            return PX_ECONFIG;
        }
        o += (size_t)snprintf(t + o, cap - o, "  # approval a%u by %s at %s (hold %s)\n", e->id,
                              e->who, e->when, e->hold);
        o += (size_t)snprintf(t + o, cap - o, "  - host: %s\n", q);
        if (e->path[0] != '\0') {
            if (px__quote(e->path, q, sizeof(q)) != 0) {
                free(t);
                return PX_ECONFIG;
            }
            o += (size_t)snprintf(t + o, cap - o, "    path: %s\n", q);
        }
        if (e->methods[0] != '\0') {
            o += (size_t)snprintf(t + o, cap - o, "    methods: [");
            for (const char *m = e->methods; *m != '\0'; m++)
                o += (size_t)snprintf(t + o, cap - o, *m == ',' ? ", " : "%c", *m);
            o += (size_t)snprintf(t + o, cap - o, "]\n");
        }
    }
    *text = t;
    *len = o;
    return 0;
}

/* Writes text to path through a temp file in the same directory renamed over it (mode 0600):
 * the old file stays whole on any error. */
static int px__write(const char *path, const char *text, size_t len, char *err, size_t errlen)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof(tmp), "%s.tmpXXXXXX", path) >= (int)sizeof(tmp)) {
        snprintf(err, errlen, "%s: the path is too long", path);
        return PX_ETOOBIG;
    }
    int fd = mkstemp(tmp); /* 0600 */
    if (fd < 0) {
        snprintf(err, errlen, "%s: cannot create a temp file: %s", path, strerror(errno));
        return PX_EIO;
    }
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, text + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    int ok = off == len && fchmod(fd, 0600) == 0 && fsync(fd) == 0;
    int saved = errno;
    if (close(fd) != 0 && ok) {
        ok = 0;
        saved = errno;
    }
    if (ok && rename(tmp, path) == 0)
        return 0;
    if (ok)
        saved = errno;
    unlink(tmp);
    snprintf(err, errlen, "%s: cannot write: %s (the file is unchanged)", path, strerror(saved));
    return PX_EIO;
}

/* Renders d, checks that the text loads as an allowlist, writes it to path. */
static int px__save(const char *path, const px_drafts_t *d, char *err, size_t errlen)
{
    char *text = NULL;
    size_t len = 0;
    int rc = px__render(d, &text, &len);
    if (rc != 0) {
        snprintf(err, errlen, "%s: an entry holds a byte the drafts file cannot hold", path);
        return rc;
    }
    addon_policy_t *p = NULL;
    char why[512];
    rc = addon_policy_load_buffer_as(path, text, len, ADDON_POLICY_FORMAT_NATIVE, &p, why,
                                     sizeof(why));
    if (rc != 0) {
        snprintf(err, errlen, "the entry is not valid in an allowlist: %s", why);
        free(text);
        return PX_ECONFIG;
    }
    addon_policy_unref(p);
    rc = px__write(path, text, len, err, errlen);
    free(text);
    return rc;
}

int px_drafts_add(const char *path, const px_draft_t *d, unsigned *id, char *err, size_t errlen)
{
    px_drafts_t set;
    int rc = px_drafts_read(path, &set, err, errlen);
    if (rc != 0)
        return rc;
    if (set.n == PX_DRAFTS_MAX) {
        snprintf(err, errlen, "%s: already %d entries", path, PX_DRAFTS_MAX);
        px_drafts_free(&set);
        return PX_ETOOBIG;
    }
    px_draft_t *v = realloc(set.v, (set.n + 1) * sizeof(*v));
    if (v == NULL) {
        px_drafts_free(&set);
        return PX_ENOMEM;
    }
    set.v = v;
    unsigned next = 1;
    for (size_t i = 0; i < set.n; i++)
        if (v[i].id >= next)
            next = v[i].id + 1;
    px_draft_t *e = &v[set.n];
    *e = *d;
    e->id = next;
    e->host = strdup(d->host);
    e->path = strdup(d->path != NULL ? d->path : "");
    set.n++;
    rc = e->host == NULL || e->path == NULL ? PX_ENOMEM : px__save(path, &set, err, errlen);
    if (rc == 0)
        *id = next;
    px_drafts_free(&set);
    return rc;
}

int px_drafts_remove(const char *path, unsigned id, px_draft_t *gone, char *err, size_t errlen)
{
    px_drafts_t set;
    int rc = px_drafts_read(path, &set, err, errlen);
    if (rc != 0)
        return rc;
    size_t i = 0;
    while (i < set.n && set.v[i].id != id)
        i++;
    if (i == set.n) {
        snprintf(err, errlen, "%s: no approval a%u", path, id);
        px_drafts_free(&set);
        return PX_ENOENT;
    }
    px_draft_t e = set.v[i];
    memmove(&set.v[i], &set.v[i + 1], (set.n - i - 1) * sizeof(*set.v));
    set.n--;
    rc = px__save(path, &set, err, errlen);
    if (rc == 0 && gone != NULL) {
        *gone = e;
    } else {
        free(e.host);
        free(e.path);
    }
    px_drafts_free(&set);
    return rc;
}

/* 1 when methods ("GET,POST", "" any) holds method. */
static int px__has_method(const char *methods, const char *method)
{
    if (methods[0] == '\0')
        return 1;
    size_t n = strlen(method);
    for (const char *m = methods; m != NULL; m = strchr(m, ',') ? strchr(m, ',') + 1 : NULL)
        if (strncmp(m, method, n) == 0 && (m[n] == ',' || m[n] == '\0'))
            return 1;
    return 0;
}

int px_drafts_check_grant(const char *pattern, const char *methods, const char *method,
                          const char *path, char *err, size_t errlen)
{
    if (methods != NULL) {
        size_t n = strlen(methods);
        if (n == 0 || n >= PX_DRAFTS_METHODS_MAX || methods[0] == ',' || methods[n - 1] == ',' ||
            strstr(methods, ",,") != NULL) {
            snprintf(err, errlen, "--methods: a comma-separated list of methods (GET,POST)");
            return PX_ECONFIG;
        }
        for (const char *m = methods; *m != '\0'; m++) {
            if (!(*m == ',' || (*m >= 'A' && *m <= 'Z'))) {
                snprintf(err, errlen, "--methods: '%.64s' is not a list of methods (GET,POST)",
                         methods);
                return PX_ECONFIG;
            }
        }
        if (!px__has_method(methods, method)) {
            snprintf(err, errlen, "--methods %.64s leaves out the held request's method %.24s",
                     methods, method);
            return PX_ECONFIG;
        }
    }
    if (pattern != NULL) {
        size_t n = strlen(pattern), plen = strcspn(path, "?");
        if (n == 0 || pattern[0] != '/' || !px__word(pattern) || n >= PX_HOLD_FIELD_MAX) {
            snprintf(err, errlen, "--path: a path pattern that starts with / (no spaces)");
            return PX_ECONFIG;
        }
        /* as the allowlist matches a path: with or without its query */
        if (!addon_glob_match(pattern, n, path, strlen(path)) &&
            !addon_glob_match(pattern, n, path, plen)) {
            snprintf(err, errlen, "--path %.200s does not match the held request's path %.200s",
                     pattern, path);
            return PX_ECONFIG;
        }
    }
    return 0;
}

int px_drafts_merge(addon_policy_t *p, const char *allowlist, char *err, size_t errlen)
{
    char path[4096];
    struct stat st;
    if (px_drafts_path(allowlist, path, sizeof(path)) != 0 || stat(path, &st) != 0)
        return 0; /* none */
    addon_policy_t *d = NULL;
    int rc = addon_policy_load_file_as(path, ADDON_POLICY_FORMAT_NATIVE, &d, err, errlen);
    if (rc == 0)
        rc = addon_policy_drafts_check(d, err, errlen);
    if (rc == 0 &&
        (addon_policy_count(p, ADDON_POLICY_DOMAINS) + addon_policy_count(d, ADDON_POLICY_DOMAINS) >
             ADDON_POLICY_ENTRIES_MAX ||
         addon_policy_count(p, ADDON_POLICY_URL_PREFIXES) +
                 addon_policy_count(d, ADDON_POLICY_URL_PREFIXES) >
             ADDON_POLICY_ENTRIES_MAX)) { /* checked first: p is never half merged */
        snprintf(err, errlen, "%s: the allowlist and its drafts hold over %d entries", path,
                 ADDON_POLICY_ENTRIES_MAX);
        rc = PX_ETOOBIG;
    }
    if (rc == 0)
        rc = addon_policy_merge_drafts(p, d);
    addon_policy_unref(d);
    return rc;
}

int px_drafts_approve(px_hold_t *t, const px_config_t *cfg, uint64_t id, int scope,
                      const char *pattern, const char *methods, const char *by, char *msg,
                      size_t len)
{
    px_hold_info_t q;
    if (px_hold_get(t, id, &q) != 0) {
        snprintf(msg, len, "no pending hold h%llu", (unsigned long long)id);
        return PX_ENOENT;
    }
    if ((pattern != NULL || methods != NULL) && scope == PX_HOLD_SCOPE_ONCE) {
        snprintf(msg, len, "--path and --methods go with scope conversation or persist");
        return PX_ECONFIG;
    }
    int rc = px_drafts_check_grant(pattern, methods, q.method, q.path, msg, len);
    if (rc != 0)
        return rc;
    px_hold_grant_t g = {scope, pattern, methods, 0};
    char own[PX_HOLD_FIELD_MAX]; /* g.path may point here until px_hold_approve() */
    if (scope == PX_HOLD_SCOPE_PERSIST) {
        if (pattern == NULL) { /* the held path without its query: the allowlist's reading */
            snprintf(own, sizeof(own), "%.*s", (int)strcspn(q.path, "?"), q.path);
            if (addon_glob_is_glob(own, strlen(own))) {
                snprintf(msg, len, "the held path holds * or ?: say --path PATTERN");
                return PX_ECONFIG;
            }
            pattern = own;
            g.path = own;
        }
        char file[4096];
        if (px_drafts_path_for(cfg, q.scope_name, file, sizeof(file)) != 0) {
            snprintf(msg, len, "no drafts file for sandbox %s", q.scope_name);
            return PX_ECONFIG;
        }
        px_draft_t d;
        memset(&d, 0, sizeof(d));
        snprintf(d.who, sizeof(d.who), "%s", by);
        time_t now = time(NULL);
        struct tm tm;
        strftime(d.when, sizeof(d.when), "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&now, &tm));
        snprintf(d.hold, sizeof(d.hold), "h%llu", (unsigned long long)id);
        snprintf(d.methods, sizeof(d.methods), "%s", methods != NULL ? methods : q.method);
        d.host = (char *)q.host;
        d.path = (char *)pattern;
        if ((rc = px_drafts_add(file, &d, &g.draft, msg, len)) != 0)
            return rc;
    }
    return px_hold_approve(t, id, &g, by);
}
