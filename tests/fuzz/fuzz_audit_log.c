/* Fuzzes the network-log line parser (audit_line_parse, the URL splitter, the \xNN unescaper)
 * and everything the audit tools do with what it returns: each input is a log, split on '\n',
 * fed line by line to replay, suggest and report (which re-decide requests with the policy
 * code), and the report page and suggestion are written. Checks that views stay inside the
 * line and that an accepted access line round-trips through audit_req. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "audit/audit_line.h"
#include "audit/audit_replay.h"
#include "audit/audit_report.h"
#include "audit/audit_req.h"
#include "audit/audit_suggest.h"

static void fuzz_inside(const char *line, size_t len, audit_str_t v)
{
    if (v.len == 0)
        return;
    if (v.base < line || v.base + v.len > line + len)
        __builtin_trap();
}

static const char fuzz_policy[] = "domains: [a.test, \"*.b.test\"]\n"
                                  "url_prefixes:\n"
                                  "  - host: api.test\n"
                                  "    path: /v1/*\n"
                                  "    methods: [GET]\n"
                                  "    ports: [8443]\n";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static addon_policy_t *policy;
    static FILE *sink;
    static audit_req_t req;
    if (policy == NULL) {
        char err[256];
        if (addon_policy_load_buffer("fuzz.yaml", fuzz_policy, sizeof(fuzz_policy) - 1, &policy,
                                     err, sizeof(err)) != 0)
            __builtin_trap();
        sink = fopen("/dev/null", "w");
    }
    audit_replay_t *rp = audit_replay_new(policy, "fuzz.yaml");
    audit_suggest_t *sg = audit_suggest_new(policy);
    audit_report_t *rr = audit_report_new(size % 2 ? policy : NULL, "fuzz.yaml");
    if (rp == NULL || sg == NULL || rr == NULL)
        __builtin_trap();
    const char *p = (const char *)data;
    size_t left = size;
    unsigned long lineno = 0;
    while (left > 0 || lineno == 0) {
        const char *nl = memchr(p, '\n', left);
        size_t len = nl != NULL ? (size_t)(nl - p) : left;
        lineno++;
        audit_line_t l;
        int rc = audit_line_parse(p, len, &l);
        if (rc != 0 && (l.kind != AUDIT_LINE_MALFORMED || l.why == NULL))
            __builtin_trap();
        if (rc == 0) {
            fuzz_inside(p, len, l.method);
            fuzz_inside(p, len, l.url_text);
            fuzz_inside(p, len, l.url.host);
            fuzz_inside(p, len, l.url.path);
            fuzz_inside(p, len, l.tail);
            fuzz_inside(p, len, l.dns_name);
            fuzz_inside(p, len, l.text);
            fuzz_inside(p, len, l.reason);
            audit_req_from_line(&l, &req);
            if (req.redecidable) {
                if (req.host_len == 0 || req.host_len > AUDIT_HOST_MAX || req.not_why != NULL)
                    __builtin_trap();
                char why[AUDIT_WHY_MAX];
                int a = audit_req_decide(policy, &req, why, sizeof(why));
                if (a != 0 && a != 1)
                    __builtin_trap();
            } else if (l.kind == AUDIT_LINE_ACCESS && req.not_why == NULL) {
                __builtin_trap();
            }
        }
        int overlong = len > AUDIT_LINE_MAX;
        audit_replay_line(rp, "fuzz.log", lineno, p, overlong ? 0 : len, overlong);
        audit_suggest_line(sg, "fuzz.log", lineno, p, overlong ? 0 : len, overlong);
        audit_report_line(rr, "fuzz.log", lineno, p, overlong ? 0 : len, overlong);
        if (nl == NULL)
            break;
        left -= len + 1;
        p = nl + 1;
    }
    if (sink != NULL) {
        audit_replay_write(rp, sink);
        audit_suggest_write(sg, sink);
        audit_report_write_html(rr, sink, "fuzz");
    }
    audit_replay_free(rp);
    audit_suggest_free(sg);
    audit_report_free(rr);
    return 0;
}
