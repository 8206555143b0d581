"""decision_events.py SCHEMA EVENTS TEXT_LOG: the JSON events of a hold test (--events FILE).

Prints one line per event of kind "decision" (docs/events.md): its text line rebuilt from the
object's members ("DECISION h1 approved GET other.test /a by uid 1000 (scope once, 1 request)"),
then "text-missing N": how many of those rebuilt lines are not a line of TEXT_LOG (the network
log, text), then "invalid N": how many events of the file the schema refuses ("invalid -" when
python3-jsonschema is not installed)."""
import json
import sys


def text_of(o):
    g = o.get
    scope = "scope %s, " % g("scope") if "scope" in o else ""
    n = g("requests")
    return "DECISION %s %s %s %s %s by %s (%s%d request%s)" % (
        g("hold"), g("decision"), g("method", "-"), g("host", "-"), g("path", "-"),
        g("by", "-"), scope, n, "" if n == 1 else "s")


events = [json.loads(line) for line in open(sys.argv[2], encoding="utf-8") if line.strip()]
text = set(open(sys.argv[3], encoding="ascii").read().splitlines())
missing = 0
for o in events:
    if o.get("kind") != "decision":
        continue
    t = text_of(o)
    print(t)
    missing += t not in text
print("text-missing %d" % missing)
try:
    import jsonschema
except ImportError:
    print("invalid -")
    sys.exit(0)
val = jsonschema.Draft202012Validator(json.load(open(sys.argv[1])),
                                      format_checker=jsonschema.FormatChecker())
bad = 0
for o in events:
    for e in val.iter_errors(o):
        print("schema: %s: %s" % (e.message, json.dumps(o)), file=sys.stderr)
        bad += 1
print("invalid %d" % bad)
