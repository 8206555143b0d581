#include "audit/audit_replay.h"

#include <stdlib.h>
#include <string.h>

#include "addons/addon_replacements.h"
#include "audit/audit_line.h"
#include "audit/audit_named.h"
#include "audit/audit_path.h"
#include "audit/audit_req.h"
#include "audit/audit_tab.h"

/* One group of changed requests: key "D\x01host\x01pattern\x01method" (D: 'B' now blocked,
 * 'A' now allowed). */
typedef struct audit__chg {
    unsigned long count;
    unsigned long other_reasons; /* requests of the group decided by another entry/reason */
    const char *file;
    unsigned long lineno;
    char example[AUDIT_REPLAY_EXAMPLE_MAX + 1]; /* the first line */
    char why[AUDIT_WHY_MAX];                    /* its decision now */
} audit__chg_t;

struct audit_replay {
    const addon_policy_t *policy;
    const char *policy_name;
    unsigned long files;
    unsigned long lines;
    unsigned long known;    /* lines of a kind airlock writes */
    unsigned long requests; /* access lines */
    unsigned long redecided;
    unsigned long to_blocked;
    unsigned long to_allowed;
    unsigned long others[AUDIT_LINE_DECISION + 1]; /* non-request lines by kind */
    audit_tab_t *changes;
    unsigned long changes_dropped;
    const addon_replacements_t *repl;
    const char *repl_name;
    unsigned long cred_lost; /* allowed, credential swapped then, no entry covers it now */
    audit_tab_t *cred;       /* ... by host */
    audit_tab_t *not_redecided;
    audit_tab_t *malformed;
    audit_req_t req; /* scratch: 16 KiB, kept off the stack */
    char why[AUDIT_WHY_MAX];
};

audit_replay_t *audit_replay_new(const addon_policy_t *policy, const char *policy_name)
{
    audit_replay_t *r = calloc(1, sizeof(*r));
    if (r == NULL)
        return NULL;
    r->policy = policy;
    r->policy_name = policy_name;
    r->changes = audit_tab_new(AUDIT_REPLAY_GROUPS_MAX, sizeof(audit__chg_t));
    r->not_redecided = audit_named_new(AUDIT_REPLAY_NAMED_MAX);
    r->cred = audit_named_new(AUDIT_REPLAY_NAMED_MAX);
    r->malformed = audit_named_new(AUDIT_REPLAY_NAMED_MAX);
    if (r->changes == NULL || r->not_redecided == NULL || r->malformed == NULL || r->cred == NULL) {
        audit_replay_free(r);
        return NULL;
    }
    return r;
}

void audit_replay_free(audit_replay_t *r)
{
    if (r == NULL)
        return;
    audit_tab_free(r->changes);
    audit_tab_free(r->not_redecided);
    audit_tab_free(r->cred);
    audit_tab_free(r->malformed);
    free(r);
}

/* The host as logged (escaped: never a raw control byte on the operator's terminal),
 * lowercased, without a trailing dot. */
static void audit__shown_host(const audit_line_t *l, char *out, size_t cap)
{
    size_t n = l->url.host.len < cap - 1 ? l->url.host.len : cap - 1;
    for (size_t i = 0; i < n; i++) {
        char c = l->url.host.base[i];
        out[i] = c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
    }
    if (n > 0 && out[n - 1] == '.')
        n--;
    out[n] = '\0';
}

void audit_replay_set_replacements(audit_replay_t *r, const addon_replacements_t *repl,
                                   const char *name)
{
    r->repl = repl;
    r->repl_name = name;
}

/* A request that had a credential swapped and stays allowed: does the candidate map still
 * cover its host? */
static void audit__cred(audit_replay_t *r, const audit_line_t *l, const char *file,
                        unsigned long lineno, const char *line, size_t len)
{
    addon_str_t host = {r->req.host, r->req.host_len};
    size_t n = addon_replacements_count(r->repl);
    for (size_t i = 0; i < n; i++) {
        if (addon_replacements_in_scope(r->repl, i, host))
            return;
    }
    char reason[AUDIT_HOST_MAX * 4 + 64];
    char shown[AUDIT_HOST_MAX * 4 + 1];
    audit__shown_host(l, shown, sizeof(shown));
    snprintf(reason, sizeof(reason), "%s: no entry covers this host now", shown);
    audit_named_add(r->cred, reason, file, lineno, line, len);
    r->cred_lost++;
}

void audit_replay_file(audit_replay_t *r, const char *file)
{
    (void)file;
    r->files++;
}

static void audit__change(audit_replay_t *r, const audit_line_t *l, int now, const char *file,
                          unsigned long lineno, const char *line, size_t len)
{
    const audit_req_t *q = &r->req;
    char pat[AUDIT_PATTERN_MAX];
    if (q->connect)
        snprintf(pat, sizeof(pat), ":%u", q->port);
    else
        audit_path_pattern(l->url.path.base, l->url.path.len, pat, sizeof(pat));
    char host[AUDIT_HOST_MAX * 4 + 1];
    audit__shown_host(l, host, sizeof(host));
    char key[AUDIT_HOST_MAX * 4 + AUDIT_PATTERN_MAX + AUDIT_METHOD_MAX + 8];
    int kn =
        snprintf(key, sizeof(key), "%c\x01%s\x01%s\x01%s", now ? 'A' : 'B', host, pat, q->method);
    if (kn < 0 || (size_t)kn >= sizeof(key))
        kn = (int)sizeof(key) - 1;
    int created = 0;
    audit__chg_t *c = audit_tab_get(r->changes, key, (size_t)kn, 1, &created);
    if (c == NULL) {
        r->changes_dropped++;
        return;
    }
    if (created) {
        size_t n = len < AUDIT_REPLAY_EXAMPLE_MAX ? len : AUDIT_REPLAY_EXAMPLE_MAX;
        memcpy(c->example, line, n);
        c->example[n] = '\0';
        c->file = file;
        c->lineno = lineno;
        snprintf(c->why, sizeof(c->why), "%s", r->why);
    } else if (strcmp(c->why, r->why) != 0) {
        c->other_reasons++;
    }
    c->count++;
}

int audit_replay_line(audit_replay_t *r, const char *file, unsigned long lineno, const char *line,
                      size_t len, int overlong)
{
    r->lines++;
    if (overlong) {
        audit_named_add(r->malformed, "line over the length cap", file, lineno, "", 0);
        return 0;
    }
    audit_line_t l;
    if (audit_line_parse(line, len, &l) != 0) {
        audit_named_add(r->malformed, l.why, file, lineno, line, len);
        return 0;
    }
    r->known++;
    if (l.kind != AUDIT_LINE_ACCESS) {
        r->others[l.kind]++;
        return 0;
    }
    r->requests++;
    audit_req_from_line(&l, &r->req);
    if (!r->req.redecidable) {
        audit_named_add(r->not_redecided, r->req.not_why, file, lineno, line, len);
        return 0;
    }
    r->redecided++;
    int now = audit_req_decide(r->policy, &r->req, r->why, sizeof(r->why));
    if (now && r->repl != NULL && (l.masked > 0 || l.dropped > 0) && !r->req.connect)
        audit__cred(r, &l, file, lineno, line, len);
    if (now == r->req.then_allowed)
        return 0;
    if (now)
        r->to_allowed++;
    else
        r->to_blocked++;
    audit__change(r, &l, now, file, lineno, line, len);
    return 0;
}

unsigned long audit_replay_changed(const audit_replay_t *r)
{
    return r->to_allowed + r->to_blocked + r->cred_lost;
}

unsigned long audit_replay_known_lines(const audit_replay_t *r)
{
    return r->known;
}

static const audit_tab_t *audit__sort_tab;

static int audit__by_key(const void *a, const void *b)
{
    const char *ka, *kb;
    audit_tab_at(audit__sort_tab, *(const size_t *)a, &ka, NULL);
    audit_tab_at(audit__sort_tab, *(const size_t *)b, &kb, NULL);
    return strcmp(ka, kb);
}

/* The changes of one direction, by host then pattern then method. */
static void audit__write_changes(const audit_replay_t *r, FILE *out, char dir, const size_t *idx,
                                 size_t n)
{
    char last_host[AUDIT_HOST_MAX * 4 + 1] = "";
    int first = 1;
    for (size_t i = 0; i < n; i++) {
        const char *key;
        const audit__chg_t *c = audit_tab_at(r->changes, idx[i], &key, NULL);
        if (key[0] != dir)
            continue;
        const char *host = key + 2;
        const char *pat = strchr(host, '\x01');
        const char *method = pat != NULL ? strchr(pat + 1, '\x01') : NULL;
        if (pat == NULL || method == NULL)
            continue;
        size_t hl = (size_t)(pat - host);
        if (hl >= sizeof(last_host))
            continue;
        if (first || strlen(last_host) != hl || memcmp(last_host, host, hl) != 0) {
            fprintf(out, "  %.*s\n", (int)hl, host);
            memcpy(last_host, host, hl);
            last_host[hl] = '\0';
            first = 0;
        }
        fprintf(out, "    %6lu  %s %.*s\n", c->count, method + 1, (int)(method - pat - 1), pat + 1);
        fprintf(out, "            now: %s\n", c->why);
        if (c->other_reasons > 0)
            fprintf(out, "            (%lu of them decided by another entry or reason)\n",
                    c->other_reasons);
        fprintf(out, "            was: %s:%lu: %s\n", c->file != NULL ? c->file : "-", c->lineno,
                c->example);
    }
}

void audit_replay_write(const audit_replay_t *r, FILE *out)
{
    static const char *const kind_names[] = {
        [AUDIT_LINE_BLANK] = "blank",
        [AUDIT_LINE_TASK_START] = "TASK START",
        [AUDIT_LINE_DNS] = "DNS",
        [AUDIT_LINE_STRIPPED] = "STRIPPED",
        [AUDIT_LINE_COLLAPSED] = "COLLAPSED",
        [AUDIT_LINE_WARNING] = "WARNING",
        [AUDIT_LINE_TLS_REJECTED] = "TLS REJECTED",
        [AUDIT_LINE_DECISION] = "DECISION",
    };
    unsigned long nr = audit_named_total(r->not_redecided);
    unsigned long nm = audit_named_total(r->malformed);
    unsigned long other = r->known - r->requests;
    fprintf(out, "airlock replay: %lu line%s in %lu log%s, re-decided under %s\n", r->lines,
            r->lines == 1 ? "" : "s", r->files, r->files == 1 ? "" : "s", r->policy_name);
    fprintf(out, "  requests:                 %lu\n", r->requests);
    fprintf(out, "  re-decided:               %lu (%lu unchanged)\n", r->redecided,
            r->redecided - r->to_allowed - r->to_blocked);
    fprintf(out, "  allowed before, BLOCKED now: %lu\n", r->to_blocked);
    fprintf(out, "  blocked before, ALLOWED now: %lu\n", r->to_allowed);
    if (r->repl != NULL)
        fprintf(out, "  credential no longer swapped (%s): %lu\n", r->repl_name, r->cred_lost);
    fprintf(out, "  not re-decidable:         %lu\n", nr);
    fprintf(out, "  other lines:              %lu", other);
    const char *sep = " (";
    for (size_t k = 0; k < sizeof(kind_names) / sizeof(kind_names[0]); k++) {
        if (kind_names[k] != NULL && r->others[k] > 0) {
            fprintf(out, "%s%s %lu", sep, kind_names[k], r->others[k]);
            sep = ", ";
        }
    }
    fprintf(out, "%s\n", other > 0 ? ")" : "");
    fprintf(out, "  lines not read:           %lu\n", nm);

    size_t n = audit_tab_count(r->changes);
    size_t *idx = malloc((n ? n : 1) * sizeof(*idx));
    if (idx != NULL) {
        for (size_t i = 0; i < n; i++)
            idx[i] = i;
        audit__sort_tab = r->changes;
        qsort(idx, n, sizeof(*idx), audit__by_key);
        if (r->to_blocked > 0) {
            fprintf(out, "\nBLOCKED now, allowed before (%lu request%s):\n", r->to_blocked,
                    r->to_blocked == 1 ? "" : "s");
            audit__write_changes(r, out, 'B', idx, n);
        }
        if (r->to_allowed > 0) {
            fprintf(out, "\nALLOWED now, blocked before (%lu request%s):\n", r->to_allowed,
                    r->to_allowed == 1 ? "" : "s");
            audit__write_changes(r, out, 'A', idx, n);
        }
        free(idx);
    }
    if (r->cred_lost > 0) {
        fprintf(out,
                "\ncredential no longer swapped (%lu request%s): a surrogate was replaced "
                "for these hosts, and no entry of %s covers them:\n",
                r->cred_lost, r->cred_lost == 1 ? "" : "s", r->repl_name);
        audit_named_write(r->cred, out);
    }
    if (r->changes_dropped > 0)
        fprintf(out, "\n(%lu more changed requests in groups beyond the first %d not listed)\n",
                r->changes_dropped, AUDIT_REPLAY_GROUPS_MAX);
    if (nr > 0) {
        fprintf(out, "\nnot re-decidable (%lu line%s):\n", nr, nr == 1 ? "" : "s");
        audit_named_write(r->not_redecided, out);
    }
    if (nm > 0) {
        fprintf(out, "\nlines not read (%lu):\n", nm);
        audit_named_write(r->malformed, out);
    }
    if (r->to_allowed + r->to_blocked + r->cred_lost == 0)
        fprintf(out, "\nno request would change.\n");
}
