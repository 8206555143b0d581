/* The GraphQL operation allowlist: the body is JSON {"query": ..., "operationName": ...}; the
 * document is parsed (addon_graphql_parse.c) and the top-level fields of its operations are
 * checked against the matched entry's graphql block. What the reference proxy does, with the
 * deliberate differences listed in docs/graphql.md. */
#include "addons/addon_graphql.h"

#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "addons/addon_glob.h"
#include "addons/addon_gqlreq.h"
#include "addons/addon_graphql_parse.h"
#include "addons/addon_policy.h"
#include "base/px_err.h"

/* The graphql block of the entry that allowed req, or NULL: the allowlist addon's decision in
 * the view; decided here only when no allowlist addon ran (an addon chain without one). */
static const addon_policy_graphql_t *graphql_rules(const addon_req_t *req)
{
    if (req->decided)
        return req->graphql;
    if (req->config == NULL)
        return NULL;
    addon_policy_query_t q = {
        .method = req->method,
        .host = req->host,
        .path = req->path,
        .port = req->port,
        .tls = req->tls,
    };
    addon_policy_decision_t d;
    addon_policy_decide(req->config->policy, &q, &d);
    return d.allowed ? d.graphql : NULL;
}

/* 1 when the body carries a Content-Encoding other than identity (it cannot be read). */
static int graphql_encoded(const addon_req_t *req)
{
    int i = addon_req_find(req, "content-encoding", 0);
    if (i < 0)
        return 0;
    const addon_str_t *v = &req->headers[i].value;
    return !(v->len == 8 && strncasecmp(v->base, "identity", 8) == 0) && v->len > 0;
}

/* The 403 with detail; the operation tag (may be NULL) goes on the log line. */
static int graphql_block(addon_req_t *req, addon_answer_t *ans, const char *detail, size_t dlen)
{
    ans->status = 403;
    ans->error = "graphql_operation_blocked";
    ans->verdict = "BLOCKED";
    ans->with_detail = 1;
    if (dlen > ADDON_GRAPHQL_TAG_MAX)
        dlen = ADDON_GRAPHQL_TAG_MAX;
    snprintf(ans->detail, sizeof(ans->detail), "%.*s", (int)dlen, detail);
    snprintf(ans->message, sizeof(ans->message),
             "GraphQL operation '%s' is not in the operation allowlist. To request access, add "
             "it to the graphql block of the entry in the network allowlist "
             "(network-allowlist.yaml) and ask the user to approve the change.",
             ans->detail);
    return ADDON_ANSWER;
}

static void graphql_tag(addon_req_t *req, addon_gql_type_t t, addon_str_t field)
{
    size_t n = field.len > ADDON_GRAPHQL_TAG_MAX ? ADDON_GRAPHQL_TAG_MAX : field.len;
    addon_req_annotate(req, "graphql-op: %s/%.*s%s", addon_gql_type_name(t), (int)n, field.base,
                       n < field.len ? "... (truncated)" : "");
}

static void graphql_patterns(const addon_policy_graphql_t *g, addon_gql_type_t t,
                             const addon_str_t **v, size_t *n)
{
    *v = t == ADDON_GQL_MUTATION       ? g->mutations
         : t == ADDON_GQL_SUBSCRIPTION ? g->subscriptions
                                       : g->queries;
    *n = t == ADDON_GQL_MUTATION       ? g->nmutations
         : t == ADDON_GQL_SUBSCRIPTION ? g->nsubscriptions
                                       : g->nqueries;
}

/* Checks one operation; tag: write its log tag (the executing operation). */
static int graphql_check_op(addon_req_t *req, const addon_policy_graphql_t *g,
                            const addon_gql_op_t *op, int tag, addon_answer_t *ans)
{
    if (op->root_spread)
        return graphql_block(req, ans, "<fragment-spread>", 17);
    const addon_str_t *pats;
    size_t npats;
    graphql_patterns(g, op->type, &pats, &npats);
    if (npats == 0) {
        char d[32];
        int n = snprintf(d, sizeof(d), "%s:<blocked>", addon_gql_type_name(op->type));
        graphql_tag(req, op->type, op->fields[0]);
        return graphql_block(req, ans, d, (size_t)n);
    }
    for (size_t k = 0; k < op->nfields; k++) {
        addon_str_t f = op->fields[k];
        int ok = 0;
        for (size_t i = 0; i < npats && !ok; i++)
            ok = addon_glob_fnmatch(pats[i].base, pats[i].len, f.base, f.len, 0);
        if (!ok) {
            graphql_tag(req, op->type, f);
            return graphql_block(req, ans, f.base, f.len);
        }
    }
    if (tag)
        graphql_tag(req, op->type, op->fields[0]);
    return ADDON_NEXT;
}

/* The operation that executes: the only one, or the one operationName names. */
static const addon_gql_op_t *graphql_executing(const addon_gql_doc_t *doc, const json_t *body)
{
    size_t n = addon_gql_count(doc);
    if (n == 1)
        return addon_gql_op(doc, 0);
    const json_t *name = json_object_get(body, "operationName");
    if (!json_is_string(name))
        return NULL;
    const addon_gql_op_t *found = NULL;
    for (size_t i = 0; i < n; i++) {
        const addon_gql_op_t *op = addon_gql_op(doc, i);
        if (op->name.len == json_string_length(name) &&
            memcmp(op->name.base, json_string_value(name), op->name.len) == 0) {
            if (found != NULL)
                return NULL;
            found = op;
        }
    }
    return found;
}

/* Parses and checks the document; every operation must pass, the executing one first. */
static int graphql_check_doc(addon_req_t *req, const addon_policy_graphql_t *g, const json_t *body,
                             addon_answer_t *ans)
{
    const json_t *query = json_object_get(body, "query");
    if (!json_is_string(query))
        return graphql_block(req, ans, "<unparseable>", 13);
    addon_gql_doc_t *doc;
    int rc = addon_gql_parse(json_string_value(query), json_string_length(query), &doc, NULL, 0);
    if (rc == PX_ENOMEM)
        return rc;
    if (rc != 0)
        return graphql_block(req, ans, "<unparseable>", 13);
    const addon_gql_op_t *exec = addon_gql_count(doc) > 0 ? graphql_executing(doc, body) : NULL;
    if (addon_gql_count(doc) == 0)
        rc = graphql_block(req, ans, "<unparseable>", 13);
    else if (exec == NULL)
        rc = graphql_block(req, ans, "<operation-name-invalid>", 24);
    else
        rc = graphql_check_op(req, g, exec, 1, ans);
    for (size_t i = 0; rc == ADDON_NEXT && i < addon_gql_count(doc); i++) {
        if (addon_gql_op(doc, i) != exec)
            rc = graphql_check_op(req, g, addon_gql_op(doc, i), 0, ans);
    }
    addon_gql_free(doc);
    return rc;
}

/* A GraphQL parameter in the URL's query: several servers (express-graphql, graphql-http's
 * GET, Rails controllers reading params) run the URL's document, or take its operationName,
 * ahead of the body's, so the filter that reads only the body would check the wrong one. */
static int graphql_url_params(addon_req_t *req, addon_answer_t *ans)
{
    if (!addon_gqlreq_url_params(req->path, NULL))
        return ADDON_NEXT;
    addon_req_annotate(req, "graphql-op: query-params"); /* the URL is on the log line */
    ans->status = 403;
    ans->error = "graphql_operation_blocked";
    ans->verdict = "BLOCKED";
    ans->with_detail = 1;
    snprintf(ans->detail, sizeof(ans->detail), "<query-params>");
    snprintf(ans->message, sizeof(ans->message),
             "GraphQL requests on this entry of the network allowlist may not carry query, "
             "operationName, variables or extensions as URL query parameters: send them in "
             "the JSON body of a POST.");
    return ADDON_ANSWER;
}

static int on_request_head(const addon_t *self, addon_req_t *req, addon_answer_t *ans)
{
    (void)self;
    if (graphql_rules(req) == NULL)
        return ADDON_NEXT;
    if (graphql_url_params(req, ans) == ADDON_ANSWER)
        return ADDON_ANSWER;
    if (req->filter_cap < ADDON_GRAPHQL_BODY_CAP)
        req->filter_cap = ADDON_GRAPHQL_BODY_CAP;
    return ADDON_NEXT;
}

static int on_request_body_filter(const addon_t *self, addon_req_t *req, const char *data,
                                  size_t len, const addon_sink_t *out, addon_answer_t *ans)
{
    (void)self;
    (void)out;
    const addon_policy_graphql_t *g = graphql_rules(req);
    if (g == NULL)
        return ADDON_NEXT;
    if (data == NULL || len > ADDON_GRAPHQL_BODY_CAP)
        return graphql_block(req, ans, "<too-large>", 11);
    if (graphql_encoded(req))
        return graphql_block(req, ans, "<content-encoding>", 18);
    json_t *body = NULL;
    const char *why = NULL;
    int rc = addon_gqlreq_load(data, len, 1, &body, &why);
    if (rc == PX_ENOMEM)
        return rc;
    if (rc != 0)
        rc = graphql_block(req, ans, why, strlen(why));
    else if (json_is_array(body))
        rc = graphql_block(req, ans, "<batched>", 9);
    else if (!json_is_object(body))
        rc = graphql_block(req, ans, "<unparseable>", 13);
    else
        rc = graphql_check_doc(req, g, body, ans);
    json_decref(body);
    return rc;
}

static const addon_t addon__graphql = {
    .name = "graphql-op",
    .on_request_head = on_request_head,
    .on_request_body_filter = on_request_body_filter,
};

const addon_t *addon_graphql(void)
{
    return &addon__graphql;
}
