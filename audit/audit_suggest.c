#include "audit/audit_suggest.h"

#include <stdlib.h>
#include <string.h>

#include "audit/audit_line.h"
#include "audit/audit_named.h"
#include "audit/audit_req.h"

#define AUDIT__NAMED_MAX 256

struct audit_suggest {
    const addon_policy_t *current;
    addon_policy_t *probe;
    audit_sugg_t *sugg;
    unsigned long lines;
    unsigned long known;
    unsigned long blocked;    /* requests considered */
    audit_tab_t *unallowable; /* blocked, but no entry can allow them */
    audit_tab_t *skipped;     /* blocked lines not re-decidable, hosts not suggestible */
    audit_tab_t *malformed;
    audit_req_t req;
    char why[AUDIT_WHY_MAX];
};

audit_suggest_t *audit_suggest_new(const addon_policy_t *current)
{
    audit_suggest_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return NULL;
    s->current = current;
    s->probe = audit_req_probe_policy();
    s->sugg = audit_sugg_new();
    s->unallowable = audit_named_new(AUDIT__NAMED_MAX);
    s->skipped = audit_named_new(AUDIT__NAMED_MAX);
    s->malformed = audit_named_new(AUDIT__NAMED_MAX);
    if (s->probe == NULL || s->sugg == NULL || s->unallowable == NULL || s->skipped == NULL ||
        s->malformed == NULL) {
        audit_suggest_free(s);
        return NULL;
    }
    return s;
}

void audit_suggest_free(audit_suggest_t *s)
{
    if (s == NULL)
        return;
    addon_policy_unref(s->probe);
    audit_sugg_free(s->sugg);
    audit_tab_free(s->unallowable);
    audit_tab_free(s->skipped);
    audit_tab_free(s->malformed);
    free(s);
}

int audit_suggest_line(audit_suggest_t *s, const char *file, unsigned long lineno, const char *line,
                       size_t len, int overlong)
{
    s->lines++;
    if (overlong) {
        audit_named_add(s->malformed, "line over the length cap", file, lineno, "", 0);
        return 0;
    }
    audit_line_t l;
    if (audit_line_parse(line, len, &l) != 0) {
        audit_named_add(s->malformed, l.why, file, lineno, line, len);
        return 0;
    }
    s->known++;
    if (l.kind != AUDIT_LINE_ACCESS)
        return 0;
    audit_req_from_line(&l, &s->req);
    if (!s->req.redecidable) {
        if (l.verdict == AUDIT_BLOCKED)
            audit_named_add(s->skipped, s->req.not_why, file, lineno, line, len);
        return 0;
    }
    int blocked =
        s->current != NULL ? !audit_req_decide(s->current, &s->req, NULL, 0) : !s->req.then_allowed;
    if (!blocked)
        return 0;
    s->blocked++;
    if (audit_req_unallowable(s->probe, &s->req, s->why, sizeof(s->why))) {
        audit_named_add(s->unallowable, s->why, file, lineno, line, len);
        return 0;
    }
    if (audit_sugg_add(s->sugg, &s->req, l.url_text.base, l.url_text.len) != 0)
        audit_named_add(s->skipped, "host not written as a plain pattern, or too many hosts", file,
                        lineno, line, len);
    return 0;
}

const audit_sugg_t *audit_suggest_sugg(const audit_suggest_t *s)
{
    return s->sugg;
}

unsigned long audit_suggest_known_lines(const audit_suggest_t *s)
{
    return s->known;
}

/* The named counters as YAML comments. */
static void audit__comments(const audit_tab_t *t, const char *title, FILE *out)
{
    unsigned long n = audit_named_total(t);
    if (n == 0)
        return;
    fprintf(out, "# %s (%lu):\n", title, n);
    for (size_t i = 0; i < audit_tab_count(t); i++) {
        const char *reason;
        const audit_named_t *v = audit_tab_at(t, i, &reason, NULL);
        fprintf(out, "#   %lu  %s\n#        e.g. %s:%lu: %s\n", v->count, reason,
                v->file != NULL ? v->file : "-", v->lineno, v->example);
    }
}

void audit_suggest_write(const audit_suggest_t *s, FILE *out)
{
    size_t hosts = audit_sugg_hosts(s->sugg);
    fprintf(out,
            "# airlock suggest: %lu blocked request%s %s; entries for %lu of them on %zu "
            "host%s.\n"
            "# Review each entry before adding it to the allowlist: nothing was changed.\n",
            s->blocked, s->blocked == 1 ? "" : "s",
            s->current != NULL ? "that the current allowlist still blocks"
                               : "in the log (blocked by the allowlist)",
            audit_sugg_requests(s->sugg), hosts, hosts == 1 ? "" : "s");
    if (hosts == 0) {
        fprintf(out, "url_prefixes: []\n");
    } else {
        fprintf(out, "url_prefixes:\n");
        char buf[AUDIT_SUGG_ENTRY_MAX];
        for (size_t i = 0; i < hosts; i++) {
            size_t n = audit_sugg_entry(s->sugg, i, buf, sizeof(buf));
            fwrite(buf, 1, n < sizeof(buf) ? n : sizeof(buf) - 1, out);
        }
    }
    audit__comments(s->unallowable, "not suggested: blocked requests no entry can allow", out);
    audit__comments(s->skipped, "not suggested: blocked lines not decided by the allowlist", out);
    audit__comments(s->malformed, "lines not read", out);
}
