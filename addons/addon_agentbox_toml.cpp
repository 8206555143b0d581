// The one C++ translation unit: reads an agentbox config.toml with toml++ (a maintained TOML
// 1.0 parser, header-only C++17, Debian's libtomlplusplus-dev) and hands its [network] table to
// the C policy builder as plain data (addon_agentbox_int.h). Nothing here decides anything: the
// semantics (defaults, allow_file, block_hosts) live in addon_agentbox.c. Parse failures are
// reported without exceptions (TOML_EXCEPTIONS 0); an allocation failure inside toml++ or the
// standard library (std::bad_alloc) is caught here and becomes PX_ENOMEM.
// toml++'s internal checks: TOML_ASSERT is defined away and NDEBUG dropped so that
// TOML_ASSERT_ASSUME never becomes __builtin_assume. toml++ 3.3 asserts on input it then rejects
// cleanly ("[\x04network]", "[[" at the end), which must be a parse error, never an abort nor
// an assumption the optimizer may act on.
#undef NDEBUG
#define TOML_ASSERT(expr) static_assert(true)
#define TOML_EXCEPTIONS 0
#define TOML_HEADER_ONLY 1
#define TOML_ENABLE_FORMATTERS 0
#include <toml++/toml.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <new>
#include <string_view>

#include "addons/addon_agentbox_int.h"
#include "base/px_err.h"

namespace {

struct reader {
    const char *name;
    char *err;
    size_t errlen;

    int fail(int rc, const toml::source_region &at, const char *fmt, ...)
        __attribute__((format(printf, 4, 5)))
    {
        char msg[512];
        va_list ap;
        va_start(ap, fmt);
        std::vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        std::snprintf(err, errlen, "%s:%u:%u: %s", name, static_cast<unsigned>(at.begin.line),
                      static_cast<unsigned>(at.begin.column), msg);
        return rc;
    }
};

const char *type_name(const toml::node &n)
{
    switch (n.type()) {
    case toml::node_type::table:
        return "a table";
    case toml::node_type::array:
        return "an array";
    case toml::node_type::string:
        return "a string";
    case toml::node_type::integer:
        return "an integer";
    case toml::node_type::floating_point:
        return "a float";
    case toml::node_type::boolean:
        return "a boolean";
    default:
        return "a date or time";
    }
}

addon__ab_pos_t pos_of(const toml::node &n)
{
    return addon__ab_pos_t{static_cast<unsigned>(n.source().begin.line),
                           static_cast<unsigned>(n.source().begin.column)};
}

char *dup(std::string_view s)
{
    char *d = static_cast<char *>(std::malloc(s.size() + 1));
    if (d == nullptr)
        return nullptr;
    std::memcpy(d, s.data(), s.size());
    d[s.size()] = '\0';
    return d;
}

int read_string(reader &r, const toml::node &n, const char *what, char **out, addon__ab_pos_t *pos)
{
    const toml::value<std::string> *s = n.as_string();
    if (s == nullptr)
        return r.fail(PX_ECONFIG, n.source(), "%s: expected a string, got %s", what,
                      type_name(n));
    *out = dup(s->get());
    if (*out == nullptr)
        return PX_ENOMEM;
    *pos = pos_of(n);
    return 0;
}

int read_ports(reader &r, const toml::node &n, const char *what, addon__ab_host_t *h)
{
    const toml::array *a = n.as_array();
    if (a == nullptr)
        return r.fail(PX_ECONFIG, n.source(), "%s: expected an array of ports, got %s", what,
                      type_name(n));
    if (a->size() > ADDON__AB_PORTS_MAX)
        return r.fail(PX_ECONFIG, n.source(), "%s: more than %d ports", what,
                      ADDON__AB_PORTS_MAX);
    for (size_t i = 0; i < a->size(); i++) {
        const toml::node &p = *a->get(i);
        const toml::value<int64_t> *v = p.as_integer();
        if (v == nullptr)
            return r.fail(PX_ECONFIG, p.source(), "%s[%zu]: expected an integer, got %s", what, i,
                          type_name(p));
        if (v->get() < 1 || v->get() > 65535)
            return r.fail(PX_ECONFIG, p.source(), "%s[%zu]: must be between 1 and 65535, got %lld",
                          what, i, static_cast<long long>(v->get()));
        h->ports[h->nports++] = static_cast<uint16_t>(v->get());
    }
    return 0;
}

// allow_hosts / block_hosts: an array of strings; allow_hosts items may also be
// { host = "sso.internal", ports = [443, 8443] }.
int read_hosts(reader &r, const toml::node &n, const char *what, int tables,
               addon__ab_host_t **out, size_t *count)
{
    const toml::array *a = n.as_array();
    if (a == nullptr)
        return r.fail(PX_ECONFIG, n.source(), "%s: expected an array, got %s", what,
                      type_name(n));
    if (a->empty())
        return 0;
    *out = static_cast<addon__ab_host_t *>(std::calloc(a->size(), sizeof(**out)));
    if (*out == nullptr)
        return PX_ENOMEM;
    for (size_t i = 0; i < a->size(); i++) {
        const toml::node &item = *a->get(i);
        addon__ab_host_t *h = &(*out)[i];
        *count = i + 1;
        char sub[64];
        std::snprintf(sub, sizeof(sub), "%s[%zu]", what, i);
        const toml::table *t = item.as_table();
        if (t == nullptr || !tables) {
            if (item.as_string() == nullptr)
                return r.fail(PX_ECONFIG, item.source(), "%s: expected a host string%s, got %s",
                              sub, tables ? " or {host = \"...\", ports = [...]}" : "",
                              type_name(item));
            int rc = read_string(r, item, sub, &h->host, &h->pos);
            if (rc != 0)
                return rc;
            h->len = std::strlen(h->host);
            continue;
        }
        for (auto &&kv : *t) {
            std::string_view k = kv.first.str();
            if (k != "host" && k != "ports")
                return r.fail(PX_ECONFIG, kv.first.source(),
                              "%s: unknown key '%.*s' (expected host or ports)", sub,
                              static_cast<int>(k.size() > 64 ? 64 : k.size()), k.data());
        }
        const toml::node *host = t->get("host");
        if (host == nullptr)
            return r.fail(PX_ECONFIG, item.source(), "%s: missing required key 'host'", sub);
        char hw[80];
        std::snprintf(hw, sizeof(hw), "%s.host", sub);
        int rc = read_string(r, *host, hw, &h->host, &h->pos);
        if (rc != 0)
            return rc;
        h->len = std::strlen(h->host);
        const toml::node *ports = t->get("ports");
        if (ports != nullptr) {
            std::snprintf(hw, sizeof(hw), "%s.ports", sub);
            rc = read_ports(r, *ports, hw, h);
            if (rc != 0)
                return rc;
        }
    }
    return 0;
}

int read_network(reader &r, const toml::table &root, addon__ab_net_t *out)
{
    const toml::node *net = root.get("network");
    if (net == nullptr) {
        toml::source_region top{};
        top.begin = {1, 1};
        return r.fail(PX_ECONFIG, top,
                      "no [network] table (an agentbox config keeps its allowlist there: "
                      "mode = \"allowlist\", allow_hosts, block_hosts, allow_file)");
    }
    const toml::table *t = net->as_table();
    if (t == nullptr)
        return r.fail(PX_ECONFIG, net->source(), "network: expected a table, got %s",
                      type_name(*net));
    out->table = pos_of(*net);
    for (auto &&kv : *t) {
        std::string_view k = kv.first.str();
        if (k != "mode" && k != "allow_hosts" && k != "block_hosts" && k != "allow_file")
            return r.fail(PX_ECONFIG, kv.first.source(),
                          "network: unknown key '%.*s' (expected mode, allow_hosts, block_hosts "
                          "or allow_file)",
                          static_cast<int>(k.size() > 64 ? 64 : k.size()), k.data());
    }
    int rc = 0;
    if (const toml::node *m = t->get("mode"))
        rc = read_string(r, *m, "network.mode", &out->mode, &out->mode_pos);
    if (rc == 0) {
        if (const toml::node *a = t->get("allow_hosts"))
            rc = read_hosts(r, *a, "network.allow_hosts", 1, &out->allow, &out->nallow);
    }
    if (rc == 0) {
        if (const toml::node *b = t->get("block_hosts"))
            rc = read_hosts(r, *b, "network.block_hosts", 0, &out->block, &out->nblock);
    }
    if (rc == 0) {
        if (const toml::node *f = t->get("allow_file"))
            rc = read_string(r, *f, "network.allow_file", &out->allow_file,
                             &out->allow_file_pos);
    }
    return rc;
}

// Checked before toml++ sees the text (check_text):
// - TOML allows no raw control character but tab and CRLF/LF anywhere (strings escape them,
//   comments and keys cannot hold them); toml++ 3.3 asserts on one in a table header.
// - toml++ 3.3 (Debian 12) reaches __builtin_unreachable when it asks whether a non-ASCII code
//   point such as U+00A1 is whitespace (marzer/tomlplusplus#190 and #295, fixed upstream by #305):
//   it asks at token boundaries and after a line-ending backslash in a """ string. TOML 1.0 has
//   no non-ASCII character outside strings and comments, so one there is refused here with its
//   position, and so is one right after a line-ending backslash (valid TOML, but rare).
struct scan {
    reader &r;
    const char *s;
    size_t len;
    size_t i = 0;
    unsigned line = 1;
    size_t bol = 0;

    int fail(size_t at, const char *what)
    {
        toml::source_region reg{};
        reg.begin = {line, static_cast<toml::source_index>(at - bol + 1)};
        return r.fail(PX_EPARSE, reg, "%s (byte 0x%02x)", what,
                      static_cast<unsigned char>(s[at]));
    }

    // The length of the valid UTF-8 sequence at i (RFC 3629: no overlongs, surrogates or code
    // points past U+10FFFF), or 0.
    size_t utf8_len() const
    {
        const unsigned char *u = reinterpret_cast<const unsigned char *>(s + i);
        size_t n = len - i;
        unsigned char c = u[0];
        size_t need = c >= 0xc2 && c <= 0xdf ? 2 : c >= 0xe0 && c <= 0xef ? 3 : c >= 0xf0 && c <= 0xf4 ? 4 : 0;
        if (need == 0 || n < need)
            return 0;
        unsigned char lo = 0x80, hi = 0xbf;
        if (c == 0xe0)
            lo = 0xa0;
        else if (c == 0xed)
            hi = 0x9f;
        else if (c == 0xf0)
            lo = 0x90;
        else if (c == 0xf4)
            hi = 0x8f;
        if (u[1] < lo || u[1] > hi)
            return 0;
        for (size_t k = 2; k < need; k++) {
            if (u[k] < 0x80 || u[k] > 0xbf)
                return 0;
        }
        return need;
    }

    // One character anywhere: newlines counted, controls and invalid UTF-8 refused.
    int step()
    {
        unsigned char c = static_cast<unsigned char>(s[i]);
        if (c >= 0x80) {
            size_t n = utf8_len();
            if (n == 0)
                return fail(i, "invalid UTF-8");
            i += n;
            return 0;
        }
        if (c == '\n') {
            line++;
            bol = i + 1;
        } else if (!(c == '\t' || (c >= 0x20 && c != 0x7f) ||
                     (c == '\r' && i + 1 < len && s[i + 1] == '\n'))) {
            return fail(i, "control characters are not allowed in TOML");
        }
        i++;
        return 0;
    }

    bool at(const char *tok) const
    {
        size_t n = std::strlen(tok);
        return len - i >= n && std::memcmp(s + i, tok, n) == 0;
    }

    // A string opened by quote q (1 or 3 quotes) at i; i is past the opening quotes.
    int string(char q, bool multi)
    {
        char close[4] = {q, multi ? q : '\0', multi ? q : '\0', '\0'};
        while (i < len) {
            if (at(close)) {
                i += std::strlen(close);
                for (int k = 0; multi && k < 2 && i < len && s[i] == q; k++)
                    i++;
                return 0;
            }
            if (!multi && (s[i] == '\n' || s[i] == '\r'))
                return 0; /* toml++ reports the unterminated string */
            if (q == '"' && s[i] == '\\') {
                size_t j = i + 1;
                while (multi && j < len && (s[j] == ' ' || s[j] == '\t'))
                    j++;
                if (multi && j < len && (s[j] == '\n' || s[j] == '\r')) {
                    // a line-ending backslash: toml++ skips the blanks that follow
                    int rc = step();
                    while (rc == 0 && i < len &&
                           (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
                        rc = step();
                    if (rc != 0)
                        return rc;
                    if (i < len && static_cast<unsigned char>(s[i]) >= 0x80)
                        return fail(i, "a non-ASCII character right after a line-ending "
                                       "backslash is not supported");
                    continue;
                }
                int rc = step();
                if (rc == 0 && i < len)
                    rc = step();
                if (rc != 0)
                    return rc;
                continue;
            }
            int rc = step();
            if (rc != 0)
                return rc;
        }
        return 0;
    }

    int run()
    {
        if (len >= 3 && std::memcmp(s, "\xef\xbb\xbf", 3) == 0)
            i = bol = 3;
        while (i < len) {
            char c = s[i];
            int rc = 0;
            if (c == '#') {
                while (rc == 0 && i < len && s[i] != '\n')
                    rc = step();
            } else if (c == '"' || c == '\'') {
                bool multi = at(c == '"' ? "\"\"\"" : "\'\'\'");
                i += multi ? 3 : 1;
                rc = string(c, multi);
            } else if (static_cast<unsigned char>(c) >= 0x80) {
                rc = fail(i, "non-ASCII characters are allowed only in strings and comments");
            } else {
                rc = step();
            }
            if (rc != 0)
                return rc;
        }
        return 0;
    }
};

int check_text(reader &r, const char *data, size_t len)
{
    scan sc{r, data, len};
    return sc.run();
}

} // namespace

extern "C" int addon__ab_toml_read(const char *name, const char *data, size_t len,
                                   addon__ab_net_t *out, char *err, size_t errlen)
{
    std::memset(out, 0, sizeof(*out));
    char dummy[1];
    if (err == nullptr || errlen == 0) {
        err = dummy;
        errlen = sizeof(dummy);
    }
    err[0] = '\0';
    reader r{name, err, errlen};
    int rc;
    rc = check_text(r, data, len);
    if (rc != 0)
        return rc;
    try {
        toml::parse_result res = toml::parse(std::string_view(data, len));
        if (!res) {
            const toml::parse_error &e = res.error();
            std::string_view d = e.description();
            return r.fail(PX_EPARSE, e.source(), "%.*s",
                          static_cast<int>(d.size() > 400 ? 400 : d.size()), d.data());
        }
        rc = read_network(r, res.table(), out);
    } catch (const std::bad_alloc &) {
        rc = PX_ENOMEM;
    }
    if (rc == PX_ENOMEM)
        std::snprintf(err, errlen, "%s: out of memory", name);
    return rc;
}

static void free_hosts(addon__ab_host_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        std::free(v[i].host);
    std::free(v);
}

extern "C" void addon__ab_net_free(addon__ab_net_t *n)
{
    std::free(n->mode);
    std::free(n->allow_file);
    free_hosts(n->allow, n->nallow);
    free_hosts(n->block, n->nblock);
    std::memset(n, 0, sizeof(*n));
}
