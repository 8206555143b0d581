#!/usr/bin/env python3
"""Summarizes the raw results of http_bench.sh: medians over the runs, ratios, goals.

Input: lines "METRIC SUBJECT VALUE" (one per run and measurement). Prints every run's value
and the median, then the ratios of airlock to the better relay (nginx or HAProxy, whichever
has the better median of that measurement), to each relay, and to mitmdump, computed from
medians, with the goal each ratio is held against (information only: the exit status does not
depend on it, a benchmark never asserts on timings).
"""
import statistics
import sys

# metric -> (label, unit, higher is better)
METRICS = [
    ("http.ka.rps", "HTTP keep-alive 1 KiB GET", "req/s"),
    ("http.ka.cpu_us", "  proxy CPU per request", "us"),
    ("http.ka.sys", "  proxy system calls per request", ""),
    ("http.ka.util", "  proxy on-CPU", "%"),
    ("http.ka.wait", "  proxy runnable, waiting for a CPU", "%"),
    ("http.ka.upwait", "  upstream nginx runnable, waiting for a CPU", "%"),
    ("http.ka.wrk_us", "  load side: wrk's CPU per request", "us"),
    ("http.ka.up_us", "  load side: the upstream nginx's CPU per request", "us"),
    ("http.ka.load_idle", "  load CPU idle (pinned runs)", "%"),
    ("http.ka_low.rps", "HTTP keep-alive, fewer connections (LOW_CONNS)", "req/s"),
    ("http.ka_low.cpu_us", "  proxy CPU per request", "us"),
    ("http.ka_low.sys", "  proxy system calls per request", ""),
    ("http.ka_low.wait", "  proxy runnable, waiting for a CPU", "%"),
    ("http.ka_low.upwait", "  upstream nginx runnable, waiting for a CPU", "%"),
    ("http.ka_low.wrk_us", "  load side: wrk's CPU per request", "us"),
    ("http.ka_low.up_us", "  load side: the upstream nginx's CPU per request", "us"),
    ("http.ka_low.load_idle", "  load CPU idle (pinned runs)", "%"),
    ("http.big.mbps", "HTTP 1 GiB download", "MB/s"),
    ("http.big.cpu_ms_gib", "  proxy CPU per GiB", "ms"),
    ("http.big.util", "  proxy on-CPU", "%"),
    ("http.big.wait", "  proxy runnable, waiting for a CPU", "%"),
    ("http.big.upwait", "  upstream nginx runnable, waiting for a CPU", "%"),
    ("https.ka.rps", "HTTPS keep-alive 1 KiB GET", "req/s"),
    ("https.ka.cpu_us", "  proxy CPU per request", "us"),
    ("https.ka.sys", "  proxy system calls per request", ""),
    ("https.ka.util", "  proxy on-CPU", "%"),
    ("https.ka.wait", "  proxy runnable, waiting for a CPU", "%"),
    ("https.ka.upwait", "  upstream nginx runnable, waiting for a CPU", "%"),
    ("https.ka.wrk_us", "  load side: wrk's CPU per request", "us"),
    ("https.ka.up_us", "  load side: the upstream nginx's CPU per request", "us"),
    ("https.ka.load_idle", "  load CPU idle (pinned runs)", "%"),
    ("https.ka_low.rps", "HTTPS keep-alive, fewer connections (LOW_CONNS)", "req/s"),
    ("https.ka_low.cpu_us", "  proxy CPU per request", "us"),
    ("https.ka_low.sys", "  proxy system calls per request", ""),
    ("https.ka_low.wait", "  proxy runnable, waiting for a CPU", "%"),
    ("https.ka_low.upwait", "  upstream nginx runnable, waiting for a CPU", "%"),
    ("https.ka_low.wrk_us", "  load side: wrk's CPU per request", "us"),
    ("https.ka_low.up_us", "  load side: the upstream nginx's CPU per request", "us"),
    ("https.ka_low.load_idle", "  load CPU idle (pinned runs)", "%"),
    ("https.new.rps", "HTTPS new connection per request", "req/s"),
    ("https.new.cpu_us", "  proxy CPU per connection", "us"),
    ("https.new.sys", "  proxy system calls per request", ""),
    ("https.new.util", "  proxy on-CPU", "%"),
    ("https.new.wait", "  proxy runnable, waiting for a CPU", "%"),
    ("https.new.upwait", "  upstream nginx runnable, waiting for a CPU", "%"),
    ("https.new.wrk_us", "  load side: wrk's CPU per request", "us"),
    ("https.new.up_us", "  load side: the upstream nginx's CPU per request", "us"),
    ("https.new.load_idle", "  load CPU idle (pinned runs)", "%"),
    ("https.big.mbps", "HTTPS 1 GiB download (HTTP/1.1)", "MB/s"),
    ("https.big.cpu_ms_gib", "  proxy CPU per GiB", "ms"),
    ("https.big.util", "  proxy on-CPU", "%"),
    ("https.big.wait", "  proxy runnable, waiting for a CPU", "%"),
    ("https.big.upwait", "  upstream nginx runnable, waiting for a CPU", "%"),
    ("https.big_h2.mbps", "HTTPS 1 GiB download (HTTP/2)", "MB/s"),
    ("https.big_h2.cpu_ms_gib", "  proxy CPU per GiB", "ms"),
    ("https.big_h2.util", "  proxy on-CPU", "%"),
    ("https.big_h2.wait", "  proxy runnable, waiting for a CPU", "%"),
    ("https.big_h2.upwait", "  upstream nginx runnable, waiting for a CPU", "%"),
    ("https.mint.app_first_ms", "first request to a fresh name: TLS handshake done", "ms"),
    ("https.mint.app_second_ms", "same name again: TLS handshake done", "ms"),
    ("https.mint.app_diff_ms", "  difference (minting), median of per-name diffs", "ms"),
    ("https.mint.total_first_ms", "first request to a fresh name: total", "ms"),
    ("https.mint.total_second_ms", "same name again: total", "ms"),
    ("https.mint.total_diff_ms", "  difference (minting + upstream resolve/connect)", "ms"),
    ("https.mint.hs_first_ms", "in-process: TLS handshake, fresh name", "ms"),
    ("https.mint.hs_second_ms", "in-process: TLS handshake, same name again", "ms"),
    ("https.mint.hs_diff_ms", "  difference (minting), median of per-name diffs", "ms"),
    ("https.mint.req_first_ms", "in-process: GET after the handshake, fresh name", "ms"),
    ("https.mint.req_second_ms", "in-process: GET after the handshake, same name again", "ms"),
    ("https.mint.req_diff_ms", "  difference (upstream resolve + connect + TLS)", "ms"),
    ("https.idle.hs_kb", "idle TLS conns, handshake only: RSS per conn", "KB"),
    ("https.idle.kb", "idle intercepted conns after 1 GET each: RSS per conn", "KB"),
    ("https.idle.fds", "  open fds of the proxy while idle (all conns)", ""),
    ("https.idle.closed_kb", "  RSS above baseline after closing them", "KB"),
]

# (label, metric, goal, higher_is_better)
# "relay": the better of nginx and HAProxy for that measurement
RELAYS = ("nginx", "haproxy")
RATIOS = [
    ("HTTP keep-alive req/s", "http.ka.rps", {"relay": 1.0, "mitmdump": 30.0}),
    ("HTTP keep-alive (LOW_CONNS)", "http.ka_low.rps", {"relay": 1.0, "mitmdump": 30.0}),
    ("HTTP 1 GiB MB/s", "http.big.mbps", {"relay": 1.0, "mitmdump": 30.0}),
    ("HTTPS keep-alive req/s", "https.ka.rps", {"relay": 1.0, "mitmdump": 30.0}),
    ("HTTPS keep-alive (LOW_CONNS)", "https.ka_low.rps", {"relay": 1.0, "mitmdump": 30.0}),
    ("HTTPS new-connection req/s", "https.new.rps", {"relay": 1.0, "mitmdump": 30.0}),
    ("HTTPS 1 GiB MB/s (HTTP/1.1)", "https.big.mbps", {"relay": 1.0, "mitmdump": 30.0}),
    ("HTTPS 1 GiB MB/s (HTTP/2)", "https.big_h2.mbps", {"relay": 1.0}),
]
CPU_RATIOS = [
    ("HTTP keep-alive", "http.ka.cpu_us"),
    ("HTTP keep-alive (LOW_CONNS)", "http.ka_low.cpu_us"),
    ("HTTPS keep-alive", "https.ka.cpu_us"),
    ("HTTPS keep-alive (LOW_CONNS)", "https.ka_low.cpu_us"),
    ("HTTPS new connection", "https.new.cpu_us"),
    ("HTTP 1 GiB", "http.big.cpu_ms_gib"),
    ("HTTPS 1 GiB (HTTP/1.1)", "https.big.cpu_ms_gib"),
    ("HTTPS 1 GiB (HTTP/2)", "https.big_h2.cpu_ms_gib"),
]
SYS_RATIOS = [
    ("HTTP keep-alive", "http.ka.sys"),
    ("HTTPS keep-alive", "https.ka.sys"),
    ("HTTPS new connection", "https.new.sys"),
]
ORDER = ["airlock", "airlock-seq", "airlock-burst", "nginx", "haproxy", "mitmdump"]


def fmt(v):
    if v is None:
        return "-"
    a = abs(v)
    if a >= 1000:
        return "%.0f" % v
    if a >= 100:
        return "%.1f" % v
    if a >= 10:
        return "%.2f" % v
    return "%.3f" % v


def main():
    data = {}
    for line in open(sys.argv[1]):
        p = line.split()
        if len(p) != 3:
            continue
        try:
            data.setdefault((p[0], p[1]), []).append(float(p[2]))
        except ValueError:
            pass
    med = {k: statistics.median(v) for k, v in data.items()}

    print("%-58s %-14s %-30s %s" % ("measurement", "subject", "runs", "median"))
    for metric, label, unit in METRICS:
        subjects = sorted({s for (m, s) in data if m == metric},
                          key=lambda s: ORDER.index(s) if s in ORDER else 99)
        for s in subjects:
            runs = " ".join(fmt(v) for v in data[(metric, s)])
            print("%-58s %-14s %-30s %s %s" % (label, s, runs, fmt(med[(metric, s)]), unit))

    print()
    print("ratios from medians (goal is information only; 'relay' is the better of nginx and "
          "HAProxy for each measurement)")

    def best(metric, higher=True):
        """(subject, median) of the better relay, or (None, None)."""
        have = [(med[(metric, r)], r) for r in RELAYS if (metric, r) in med]
        if not have:
            return None, None
        v, r = max(have) if higher else min(have)
        return r, v

    for label, metric, goals in RATIOS:
        a = med.get((metric, "airlock"))
        for other, goal in goals.items():
            name = other
            if other == "relay":
                rname, o = best(metric)
                name = "%s" % rname
            else:
                o = med.get((metric, other))
            if a is None or o is None or o == 0:
                continue
            r = a / o
            print("  %-28s airlock/%-9s %8.2fx   goal >= %.1fx: %s" % (
                label, name, r, goal, "met" if r >= goal else "MISSED"))
        for relay in RELAYS:  # each relay on its own, for the record
            o = med.get((metric, relay))
            if a is not None and o:
                print("  %-28s   (airlock/%s %.2fx)" % ("", relay, a / o))
    for label, metric in CPU_RATIOS:
        a = med.get((metric, "airlock"))
        rname, rv = best(metric, higher=False)
        for other, o in ((rname, rv), ("mitmdump", med.get((metric, "mitmdump")))):
            if a and o:
                print("  %-28s proxy CPU per unit of work %s/airlock %6.2fx (> 1: airlock cheaper)" % (
                    label, other, o / a))
    for label, metric in SYS_RATIOS:
        a = med.get((metric, "airlock"))
        rname, o = best(metric, higher=False)
        if a and o:
            print("  %-28s system calls per request airlock %.2f, %s %.2f   goal <= relay: %s" % (
                label, a, rname, o, "met" if a <= o else "MISSED"))
    for mode in ("seq", "burst"):
        kb = med.get(("https.idle.kb", "airlock-" + mode))
        if kb is not None:
            print("  %-28s airlock %.1f KB per idle intercepted conn   goal <= 16 KB: %s" % (
                "idle memory (%s)" % mode, kb, "met" if kb <= 16 else "MISSED"))
    for metric, how in (("https.mint.app_diff_ms", "curl"), ("https.mint.hs_diff_ms", "in-process")):
        d = med.get((metric, "airlock"))
        if d is not None:
            print("  %-28s airlock %+.3f ms on the first handshake of a name   goal < 1 ms: %s" % (
                "minting (%s)" % how, d, "met" if d < 1 else "MISSED"))


if __name__ == "__main__":
    main()
