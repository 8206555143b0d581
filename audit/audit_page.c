/* The report page: audit_report_write_html. Everything is inline (style, SVG); there is no
 * script at all, so nothing in a log can run in the reader's browser, and every text that
 * came from a log goes through audit_html_esc. Figures carry ids and data- attributes so a
 * test (or a script of the operator's) can read them back from the DOM. */
#include <stdlib.h>
#include <string.h>

#include "audit/audit_dns.h"
#include "audit/audit_html.h"
#include "audit/audit_named.h"
#include "audit/audit_report_int.h"

#define AUDIT__SVG_W 960
#define AUDIT__SVG_H 180

static const char audit__style[] =
    "body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1b1b1b;max-width:1200px}"
    "h1{font-size:22px}h2{font-size:18px;margin-top:32px;border-bottom:1px solid #ccc}"
    "table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ddd;padding:3px 8px;"
    "text-align:left;vertical-align:top}td.n,th.n{text-align:right}"
    "code,pre{font:12px/1.4 ui-monospace,monospace}pre.yaml{background:#f4f6f8;padding:8px;"
    "border:1px solid #ccd;user-select:all;white-space:pre-wrap}"
    ".allowed{color:#2e7d32}.blocked{color:#c62828}.error{color:#ef6c00}.flag{color:#c62828;"
    "font-weight:bold}.note{color:#555}.ex{color:#555;word-break:break-all}"
    "div.host{margin:16px 0 24px}";

/* Indexes of t's entries sorted by cmp. Caller frees. */
static size_t *audit__sorted(const audit_tab_t *t, int (*cmp)(const void *, const void *))
{
    size_t n = audit_tab_count(t);
    size_t *idx = malloc((n ? n : 1) * sizeof(*idx));
    if (idx == NULL)
        return NULL;
    for (size_t i = 0; i < n; i++)
        idx[i] = i;
    qsort(idx, n, sizeof(*idx), cmp);
    return idx;
}

static const audit_tab_t *audit__st; /* the table being sorted (qsort has no context) */

static int audit__by_group_count(const void *a, const void *b)
{
    const audit_rep_group_t *x = audit_tab_at(audit__st, *(const size_t *)a, NULL, NULL);
    const audit_rep_group_t *y = audit_tab_at(audit__st, *(const size_t *)b, NULL, NULL);
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static int audit__by_host_requests(const void *a, const void *b)
{
    const audit_rep_host_t *x = audit_tab_at(audit__st, *(const size_t *)a, NULL, NULL);
    const audit_rep_host_t *y = audit_tab_at(audit__st, *(const size_t *)b, NULL, NULL);
    if (x->requests != y->requests)
        return x->requests > y->requests ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static const audit_tab_t *audit__hosts_for_sort;

/* Blocked groups: by their host's blocked count, host, then the group's count. */
static int audit__by_blocked_host(const void *a, const void *b)
{
    const char *ka, *kb;
    const audit_rep_group_t *x = audit_tab_at(audit__st, *(const size_t *)a, &ka, NULL);
    const audit_rep_group_t *y = audit_tab_at(audit__st, *(const size_t *)b, &kb, NULL);
    size_t la = strcspn(ka, "\x01"), lb = strcspn(kb, "\x01");
    const audit_rep_host_t *ha =
        audit_tab_get((audit_tab_t *)audit__hosts_for_sort, ka, la, 0, NULL);
    const audit_rep_host_t *hb =
        audit_tab_get((audit_tab_t *)audit__hosts_for_sort, kb, lb, 0, NULL);
    unsigned long ba = ha != NULL ? ha->blocked : 0, bb = hb != NULL ? hb->blocked : 0;
    if (ba != bb)
        return ba > bb ? -1 : 1;
    int c = la == lb ? memcmp(ka, kb, la) : (la < lb ? -1 : 1);
    if (c != 0)
        return c;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

static void audit__total_row(FILE *out, const char *id, const char *label, unsigned long v,
                             const char *cls)
{
    fprintf(out, "<tr><th>%s</th><td class=\"n%s%s\" id=\"%s\">%lu</td></tr>\n", label,
            cls != NULL ? " " : "", cls != NULL ? cls : "", id, v);
}

static void audit__example(FILE *out, const audit_rep_group_t *g)
{
    fputs("<div class=\"ex\"><code>", out);
    audit_html_escs(out, g->file != NULL ? g->file : "-");
    fprintf(out, ":%lu: ", g->lineno);
    audit_html_escs(out, g->example);
    fputs("</code></div>", out);
}

static void audit__more(FILE *out, size_t shown, size_t n, const char *what)
{
    if (n > shown)
        fprintf(out,
                "<p class=\"note\">%zu more %s not shown (the %d with the most requests "
                "are).</p>\n",
                n - shown, what, AUDIT_REPORT_ROWS_MAX);
}

static void audit__refused(FILE *out, const audit_tab_t *t, const char *what)
{
    if (audit_tab_refused(t) > 0)
        fprintf(out,
                "<p class=\"note cap\">%lu %s beyond the first %zu were counted in the "
                "totals only (memory cap).</p>\n",
                audit_tab_refused(t), what, audit_tab_max(t));
}

static void audit__timeline(const audit_report_t *r, FILE *out)
{
    unsigned long used = r->requests == 0 ? 0 : (r->requests - 1) / r->width + 1;
    unsigned long top = 1;
    for (unsigned long i = 0; i < used; i++) {
        const audit_rep_bucket_t *b = &r->buckets[i];
        unsigned long t = b->allowed + b->blocked + b->errors;
        if (t > top)
            top = t;
    }
    fprintf(out,
            "<p class=\"note\">The network log has no time on each line: bars follow the order "
            "of the requests, %lu request%s per bar; dashed lines mark each TASK START.</p>\n",
            r->width, r->width == 1 ? "" : "s");
    fprintf(out,
            "<svg id=\"timeline\" xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" "
            "height=\"%d\" viewBox=\"0 0 %d %d\" data-bars=\"%lu\" data-per-bar=\"%lu\" "
            "data-max=\"%lu\" role=\"img\" aria-label=\"requests over the log\">\n",
            AUDIT__SVG_W, AUDIT__SVG_H + 20, AUDIT__SVG_W, AUDIT__SVG_H + 20, used, r->width, top);
    fprintf(out,
            "<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#fafafa\" "
            "stroke=\"#ddd\"/>\n",
            AUDIT__SVG_W, AUDIT__SVG_H);
    double bw = used > 0 ? (double)AUDIT__SVG_W / (double)used : AUDIT__SVG_W;
    for (unsigned long i = 0; i < used; i++) {
        const audit_rep_bucket_t *b = &r->buckets[i];
        double x = bw * (double)i;
        double y = AUDIT__SVG_H;
        unsigned long first = i * r->width + 1;
        unsigned long last = (i + 1) * r->width < r->requests ? (i + 1) * r->width : r->requests;
        fprintf(out,
                "<g class=\"bar\" data-allowed=\"%lu\" data-blocked=\"%lu\" "
                "data-errors=\"%lu\"><title>requests %lu-%lu: %lu allowed, %lu blocked, %lu "
                "errors</title>",
                b->allowed, b->blocked, b->errors, first, last, b->allowed, b->blocked, b->errors);
        const unsigned long parts[3] = {b->allowed, b->blocked, b->errors};
        static const char *const colors[3] = {"#2e7d32", "#c62828", "#ef6c00"};
        for (int k = 0; k < 3; k++) {
            if (parts[k] == 0)
                continue;
            double h = (double)parts[k] * (AUDIT__SVG_H - 10) / (double)top;
            y -= h;
            fprintf(out,
                    "<rect x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" "
                    "fill=\"%s\"/>",
                    x, y, bw > 2 ? bw - 1 : bw, h, colors[k]);
        }
        fputs("</g>\n", out);
    }
    for (size_t t = 0; t < r->ntasks && used > 0; t++) {
        double x = (double)r->tasks[t].at / (double)(used * r->width) * AUDIT__SVG_W;
        fprintf(out,
                "<line class=\"task\" x1=\"%.2f\" y1=\"0\" x2=\"%.2f\" y2=\"%d\" "
                "stroke=\"#333\" stroke-dasharray=\"4 3\"><title>TASK START ",
                x, x, AUDIT__SVG_H);
        audit_html_escs(out, r->tasks[t].ts);
        fputs("</title></line>\n", out);
    }
    fprintf(out,
            "<text x=\"0\" y=\"%d\" font-size=\"12\">request 1</text>"
            "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"end\">request %lu</text>"
            "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">"
            "<tspan fill=\"#2e7d32\">&#9632; allowed</tspan> "
            "<tspan fill=\"#c62828\">&#9632; blocked</tspan> "
            "<tspan fill=\"#ef6c00\">&#9632; errors</tspan> (tallest bar: %lu)</text>\n</svg>\n",
            AUDIT__SVG_H + 15, AUDIT__SVG_W, AUDIT__SVG_H + 15, r->requests, AUDIT__SVG_W / 2,
            AUDIT__SVG_H + 15, top);
}

static void audit__hosts(const audit_report_t *r, FILE *out)
{
    audit__st = r->hosts;
    size_t *idx = audit__sorted(r->hosts, audit__by_host_requests);
    if (idx == NULL)
        return;
    size_t n = audit_tab_count(r->hosts);
    fprintf(out,
            "<p class=\"note\">%zu host%s. The network log records no sizes, so bytes "
            "are not known.</p>\n",
            n, n == 1 ? "" : "s");
    fputs("<table id=\"hosts\"><tr><th>host</th><th class=\"n\">requests</th>"
          "<th class=\"n\">allowed</th><th class=\"n\">blocked</th><th class=\"n\">errors</th>"
          "<th class=\"n\">credential swapped</th></tr>\n",
          out);
    size_t shown = n < AUDIT_REPORT_ROWS_MAX ? n : AUDIT_REPORT_ROWS_MAX;
    for (size_t i = 0; i < shown; i++) {
        const char *host;
        const audit_rep_host_t *h = audit_tab_at(r->hosts, idx[i], &host, NULL);
        fputs("<tr class=\"host\" data-host=\"", out);
        audit_html_escs(out, host);
        fputs("\"><td>", out);
        audit_html_escs(out, host);
        fprintf(out,
                "</td><td class=\"n req\">%lu</td><td class=\"n allowed\">%lu</td>"
                "<td class=\"n blocked\">%lu</td><td class=\"n error\">%lu</td>"
                "<td class=\"n\">%lu</td></tr>\n",
                h->requests, h->allowed, h->blocked, h->errors, h->masked);
    }
    fputs("</table>\n", out);
    audit__more(out, shown, n, "hosts");
    audit__refused(out, r->hosts, "hosts");
    free(idx);
}

static void audit__snippet(const audit_report_t *r, FILE *out, const char *host, size_t hlen)
{
    /* suggestions are keyed by the unescaped host; a host with escapes has none */
    size_t i = audit_sugg_find(r->sugg, host, hlen);
    if (i == (size_t)-1)
        return;
    char buf[AUDIT_SUGG_ENTRY_MAX];
    size_t n = audit_sugg_entry(r->sugg, i, buf, sizeof(buf));
    fputs("<p>Suggested entry (review before adding; <code>airlock suggest</code> prints all "
          "of them):</p>\n<pre class=\"yaml\">url_prefixes:\n",
          out);
    audit_html_esc(out, buf, n < sizeof(buf) ? n : sizeof(buf) - 1);
    fputs("</pre>\n", out);
}

static void audit__blocked(const audit_report_t *r, FILE *out)
{
    size_t n = audit_tab_count(r->groups);
    if (n == 0) {
        fputs("<p id=\"blocked-none\">No request was blocked.</p>\n", out);
        return;
    }
    audit__st = r->groups;
    audit__hosts_for_sort = r->hosts;
    size_t *idx = audit__sorted(r->groups, audit__by_blocked_host);
    if (idx == NULL)
        return;
    if (r->unallowable > 0)
        fprintf(out,
                "<p class=\"note\">%lu blocked request%s failed a pre-check that no "
                "allowlist entry can lift; they get no suggestion.</p>\n",
                r->unallowable, r->unallowable == 1 ? "" : "s");
    size_t shown = n < AUDIT_REPORT_ROWS_MAX ? n : AUDIT_REPORT_ROWS_MAX;
    const char *cur = NULL;
    size_t curlen = 0;
    for (size_t i = 0; i < shown; i++) {
        const char *key;
        const audit_rep_group_t *g = audit_tab_at(r->groups, idx[i], &key, NULL);
        size_t hl = strcspn(key, "\x01");
        const char *pat = key + hl + (key[hl] != '\0');
        if (cur == NULL || hl != curlen || memcmp(cur, key, hl) != 0) {
            if (cur != NULL) {
                fputs("</table>\n", out);
                audit__snippet(r, out, cur, curlen);
                fputs("</div>\n", out);
            }
            const audit_rep_host_t *h = audit_tab_get(r->hosts, key, hl, 0, NULL);
            fputs("<div class=\"host blocked-host\" data-host=\"", out);
            audit_html_esc(out, key, hl);
            fprintf(out, "\" data-blocked=\"%lu\"><h3>", h != NULL ? h->blocked : 0);
            audit_html_esc(out, key, hl);
            fprintf(out, " <span class=\"blocked\">%lu blocked</span></h3>\n",
                    h != NULL ? h->blocked : 0);
            fputs("<table><tr><th>path pattern</th><th class=\"n\">requests</th>"
                  "<th>methods</th><th>reason</th></tr>\n",
                  out);
            cur = key;
            curlen = hl;
        }
        fprintf(out, "<tr class=\"group\" data-count=\"%lu\"><td><code>", g->count);
        audit_html_escs(out, pat);
        fprintf(out, "</code></td><td class=\"n\">%lu</td><td>", g->count);
        audit_html_escs(out, g->methods);
        fprintf(out, "%s</td><td>", g->more_methods ? ", ..." : "");
        audit_html_escs(out, g->reason);
        if (g->other_reasons > 0)
            fprintf(out, " <span class=\"note\">(%lu with other reasons)</span>", g->other_reasons);
        audit__example(out, g);
        fputs("</td></tr>\n", out);
    }
    if (cur != NULL) {
        fputs("</table>\n", out);
        audit__snippet(r, out, cur, curlen);
        fputs("</div>\n", out);
    }
    audit__more(out, shown, n, "groups of blocked requests");
    audit__refused(out, r->groups, "groups of blocked requests");
    free(idx);
}

/* A two-column table (key split at \x01 into columns) of a group table, by count. */
static void audit__group_table(FILE *out, const audit_tab_t *t, const char *id,
                               const char *const *heads, int ncols, const char *none)
{
    size_t n = audit_tab_count(t);
    if (n == 0) {
        fprintf(out, "<p id=\"%s-none\">%s</p>\n", id, none);
        return;
    }
    audit__st = t;
    size_t *idx = audit__sorted(t, audit__by_group_count);
    if (idx == NULL)
        return;
    fprintf(out, "<table id=\"%s\"><tr>", id);
    for (int c = 0; c < ncols; c++)
        fprintf(out, "<th>%s</th>", heads[c]);
    fputs("<th class=\"n\">lines</th></tr>\n", out);
    size_t shown = n < AUDIT_REPORT_ROWS_MAX ? n : AUDIT_REPORT_ROWS_MAX;
    for (size_t i = 0; i < shown; i++) {
        const char *key;
        const audit_rep_group_t *g = audit_tab_at(t, idx[i], &key, NULL);
        fprintf(out, "<tr data-count=\"%lu\">", g->count);
        const char *p = key;
        for (int c = 0; c < ncols; c++) {
            size_t k = c + 1 < ncols ? strcspn(p, "\x01") : strlen(p);
            fputs("<td>", out);
            audit_html_esc(out, p, k);
            if (c + 1 == ncols)
                audit__example(out, g);
            fputs("</td>", out);
            p += k + (p[k] != '\0');
        }
        fprintf(out, "<td class=\"n\">%lu</td></tr>\n", g->count);
    }
    fputs("</table>\n", out);
    audit__more(out, shown, n, "rows");
    audit__refused(out, t, "distinct keys");
    free(idx);
}

typedef struct audit__dnsrow {
    size_t i;
    int flags;
    unsigned long count;
} audit__dnsrow_t;

static int audit__by_dns(const void *a, const void *b)
{
    const audit__dnsrow_t *x = a, *y = b;
    if ((x->flags != 0) != (y->flags != 0))
        return x->flags != 0 ? -1 : 1;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return x->i < y->i ? -1 : 1;
}

static void audit__dns(const audit_report_t *r, FILE *out)
{
    size_t n = audit_tab_count(r->dns);
    audit__dnsrow_t *rows = malloc((n ? n : 1) * sizeof(*rows));
    audit_tab_t *parents = audit_tab_new(n ? n : 1, sizeof(unsigned long));
    if (rows == NULL || parents == NULL) {
        free(rows);
        audit_tab_free(parents);
        return;
    }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        const char *name;
        size_t nl;
        const audit_rep_dns_t *d = audit_tab_at(r->dns, i, &name, &nl);
        if (audit_tab_get(r->hosts, name, nl, 0, NULL) != NULL)
            continue; /* requested over HTTP(S) */
        size_t p = audit_dns_parent(name, nl);
        unsigned long *c = audit_tab_get(parents, name + p, nl - p, 1, NULL);
        if (c != NULL)
            (*c)++;
        rows[m].i = i;
        rows[m].flags = audit_dns_flags(name, nl);
        rows[m].count = d->count;
        m++;
    }
    size_t flagged = 0;
    for (size_t k = 0; k < m; k++) {
        const char *name;
        size_t nl;
        audit_tab_at(r->dns, rows[k].i, &name, &nl);
        size_t p = audit_dns_parent(name, nl);
        unsigned long *c = audit_tab_get(parents, name + p, nl - p, 0, NULL);
        if (c != NULL && *c >= AUDIT_DNS_SIBLINGS)
            rows[k].flags |= AUDIT_DNS_FLAG_SIBLINGS;
        flagged += rows[k].flags != 0;
    }
    qsort(rows, m, sizeof(*rows), audit__by_dns);
    fprintf(out,
            "<p>Names queried: <b id=\"dns-names\">%zu</b>; never requested over HTTP(S): "
            "<b id=\"dns-unrequested\">%zu</b>; flagged: <b id=\"dns-flagged\" "
            "class=\"flag\">%zu</b>.</p>\n"
            "<p class=\"note\">airlock answers every name with its own address and never "
            "forwards a query, but the name itself reaches whoever watches the resolver path "
            "when a tool resolves it elsewhere: names that were queried and never used are "
            "what DNS exfiltration attempts look like. Flags: <i>long</i> (%d+ characters or "
            "a %d+ character label), <i>entropy</i> (%d+ characters left of the parent "
            "domain at %.1f+ bits each), <i>many</i> (%d+ such names under one parent).</p>\n",
            n, m, flagged, AUDIT_DNS_LONG_NAME, AUDIT_DNS_LONG_LABEL, AUDIT_DNS_ENTROPY_MIN,
            AUDIT_DNS_ENTROPY_BITS, AUDIT_DNS_SIBLINGS);
    if (audit_tab_refused(r->hosts) > 0)
        fputs("<p class=\"note cap\">The host table was full: some names listed here may "
              "have been requested.</p>\n",
              out);
    if (m > 0) {
        fputs("<table id=\"dns\"><tr><th>name</th><th>types</th><th class=\"n\">queries</th>"
              "<th>flags</th></tr>\n",
              out);
        size_t shown = m < AUDIT_REPORT_ROWS_MAX ? m : AUDIT_REPORT_ROWS_MAX;
        for (size_t k = 0; k < shown; k++) {
            const char *name;
            const audit_rep_dns_t *d = audit_tab_at(r->dns, rows[k].i, &name, NULL);
            size_t hn = 0;
            double h = audit_dns_entropy(name, strlen(name), &hn);
            fprintf(out, "<tr class=\"dns%s\" data-flags=\"%d\"><td><code>",
                    rows[k].flags ? " flagged" : "", rows[k].flags);
            audit_html_escs(out, name);
            fprintf(out, "</code></td><td>%s%s%s</td><td class=\"n\">%lu</td><td class=\"flag\">",
                    d->types & 1 ? "A " : "", d->types & 2 ? "AAAA " : "",
                    d->types & 4 ? "other" : "", d->count);
            if (rows[k].flags & AUDIT_DNS_FLAG_LONG)
                fputs("long ", out);
            if (rows[k].flags & AUDIT_DNS_FLAG_ENTROPY)
                fprintf(out, "entropy(%.2f) ", h);
            if (rows[k].flags & AUDIT_DNS_FLAG_SIBLINGS)
                fputs("many", out);
            fputs("</td></tr>\n", out);
        }
        fputs("</table>\n", out);
        audit__more(out, shown, m, "names");
    }
    audit__refused(out, r->dns, "DNS names");
    free(rows);
    audit_tab_free(parents);
}

static void audit__unread(const audit_report_t *r, FILE *out)
{
    size_t n = audit_tab_count(r->malformed);
    if (n == 0) {
        fputs("<p id=\"unread-none\">Every line was read.</p>\n", out);
        return;
    }
    fputs("<table id=\"unread\"><tr><th>why</th><th class=\"n\">lines</th><th>first</th></tr>\n",
          out);
    for (size_t i = 0; i < n; i++) {
        const char *why;
        const audit_named_t *v = audit_tab_at(r->malformed, i, &why, NULL);
        fputs("<tr><td>", out);
        audit_html_escs(out, why);
        fprintf(out, "</td><td class=\"n\">%lu</td><td class=\"ex\"><code>", v->count);
        audit_html_escs(out, v->file != NULL ? v->file : "-");
        fprintf(out, ":%lu: ", v->lineno);
        audit_html_escs(out, v->example);
        fputs("</code></td></tr>\n", out);
    }
    fputs("</table>\n", out);
}

void audit_report_write_html(audit_report_t *r, FILE *out, const char *title)
{
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
          "style-src 'unsafe-inline'; img-src data:\">\n<title>",
          out);
    audit_html_escs(out, title);
    fprintf(out, "</title>\n<style>%s</style></head><body>\n<h1>", audit__style);
    audit_html_escs(out, title);
    fputs("</h1>\n<p>From ", out);
    for (size_t i = 0; i < r->nfiles; i++) {
        fputs(i > 0 ? ", <code>" : "<code>", out);
        audit_html_escs(out, r->files[i]);
        fputs("</code>", out);
    }
    if (r->ntasks > 0) {
        fputs("; tasks started ", out);
        audit_html_escs(out, r->tasks[0].ts);
        if (r->ntasks > 1) {
            fputs(" to ", out);
            audit_html_escs(out, r->tasks[r->ntasks - 1].ts);
        }
    }
    if (r->current != NULL) {
        fputs(". Blocked requests explained by <code>", out);
        audit_html_escs(out, r->current_name);
        fputs("</code>", out);
    }
    fputs(".</p>\n<h2 id=\"totals-h\">Totals</h2>\n<table id=\"totals\">\n", out);
    audit__total_row(out, "total-lines", "lines", r->lines, NULL);
    audit__total_row(out, "total-requests", "requests", r->requests, NULL);
    audit__total_row(out, "total-allowed", "allowed", r->allowed, "allowed");
    audit__total_row(out, "total-blocked", "blocked", r->blocked, "blocked");
    audit__total_row(out, "total-errors", "errors", r->errors, "error");
    audit__total_row(out, "total-masked", "credential swapped", r->masked, NULL);
    audit__total_row(out, "total-dns", "DNS queries", r->dns_lines, NULL);
    audit__total_row(out, "total-health", "airlock health probes (not counted above)", r->health,
                     NULL);
    audit__total_row(out, "total-tasks", "TASK START", r->tasks_seen, NULL);
    audit__total_row(out, "total-tls-rejected", "TLS REJECTED", r->tls_rejected, NULL);
    audit__total_row(out, "total-stripped", "STRIPPED", r->stripped, NULL);
    audit__total_row(out, "total-collapsed", "COLLAPSED", r->collapsed, NULL);
    audit__total_row(out, "total-warnings", "WARNING", r->warnings, NULL);
    audit__total_row(out, "total-approved", "DECISION approved (holds)", r->approved, NULL);
    audit__total_row(out, "total-denied", "DECISION denied (holds)", r->denied, NULL);
    audit__total_row(out, "total-unread", "lines not read", audit_named_total(r->malformed), NULL);
    fputs("</table>\n<h2>Timeline</h2>\n", out);
    audit__timeline(r, out);
    fputs("<h2>Hosts</h2>\n", out);
    audit__hosts(r, out);
    fputs("<h2>Blocked requests</h2>\n", out);
    audit__blocked(r, out);
    fputs("<h2>Upstream errors</h2>\n", out);
    static const char *const cause_h[] = {"cause"};
    audit__group_table(out, r->causes, "errors", cause_h, 1, "No ERROR line.");
    fputs("<h2>TLS REJECTED</h2>\n", out);
    static const char *const tls_h[] = {"host", "reason"};
    audit__group_table(out, r->tls, "tls", tls_h, 2, "No TLS REJECTED line.");
    fputs("<h2>DNS names never requested</h2>\n", out);
    audit__dns(r, out);
    fputs("<h2>Foreign credentials (STRIPPED, COLLAPSED)</h2>\n", out);
    static const char *const cred_h[] = {"line", "header", "host"};
    audit__group_table(out, r->creds, "creds", cred_h, 3, "No STRIPPED or COLLAPSED line.");
    fputs("<h2>Warnings</h2>\n", out);
    static const char *const warn_h[] = {"warning"};
    audit__group_table(out, r->warns, "warnings", warn_h, 1, "No WARNING line.");
    fputs("<h2>Lines not read</h2>\n", out);
    audit__unread(r, out);
    fputs("<p class=\"note\">Written by airlock report.</p>\n</body></html>\n", out);
}
