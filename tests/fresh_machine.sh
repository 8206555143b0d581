#!/bin/bash
# Proves the README's first command on a fresh Debian 12 (issue 14): bootstraps a minimal
# bookworm root filesystem (debootstrap --variant=minbase) from the package mirror apt uses
# here, copies the files git tracks in this tree into /root/airlock, and in a chroot with an
# empty environment (HOME, PATH, TERM only) runs the README's first ```sh block exactly as
# README.md writes it: install, build, start on the bundled example. A second process in the
# same root then asks the example one dig and one curl (a blocked request's 403 JSON: there is
# no internet), and airlock is stopped with SIGTERM. Any failing step fails the script.
#
# The chroot runs in a mount and PID namespace of its own: when the script ends, every
# process it started and every mount it made is gone with the namespace. It shares the
# machine's network (apt needs the mirror), so 127.0.0.1:25353/28080/28443/28444 must be free
# (the example's default ports).
#
# Needs root, debootstrap (.ci/packages/test-fresh) and the package mirror (nothing else).
#   FRESH_CACHE   dir for the cached rootfs and .debs, keyed by date
#                 (default /var/cache/airlock-fresh; "off" makes every run cold)
#   FRESH_MIRROR  mirror URL (default: the first Debian URI in apt's sources)
#   FRESH_BREAK   a Debian package name to delete from the copied .ci/packages/* lists, to
#                 show the script failing when a README step is broken (e.g. libcmocka-dev)
#   FRESH_KEEP    1 keeps the root filesystem afterwards (its path is printed)
#   FRESH_TIMEOUT seconds the README command may take to reach "ready" (default 3600; with
#                 FRESH_TESTS=1, to end: default 7200)
#   FRESH_UNIT=1  instead: the README's third ```sh block (the unit tests alone: install the
#                 build dependencies, build, `ctest -L unit`) must exit 0 with every test passed
#                 (not part of CI's run: it adds minutes; run it by hand)
#   FRESH_TESTS=1 instead: the README's second ```sh block, the test command (install every
#                 peer the tests drive, then tests/run-all.sh), must exit 0. A chroot cannot
#                 run it (Podman's `exec` lands in the host's root, and the tests need network
#                 namespaces, cgroups, /run): tests/fresh_root.sh runs it after pivot_root into
#                 the root, in mount, PID and cgroup namespaces, with fresh /proc, /sys, cgroup
#                 hierarchies, /run and /tmp, the host's /dev and the machine's network (for
#                 apt; the tests make network namespaces of their own). The copy of the tree is
#                 a `git archive`'s shape: no .git (tests/clean_checkout.sh, format.sh and
#                 standalone.sh then take every file). About 3 GB in the root, 700 MB of .debs in the cache,
#                 40 to 60 minutes on 2 cores.
#                 Not part of CI's run (CI runs the same command on its own machine).
set -u
SRC=$(cd "$(dirname "$0")/.." && pwd)
CACHE=${FRESH_CACHE:-/var/cache/airlock-fresh}
TIMEOUT=${FRESH_TIMEOUT:-3600}
[ "${FRESH_TESTS:-0}" = 1 ] && TIMEOUT=${FRESH_TIMEOUT:-7200}
SUITE=bookworm
T0=$(date +%s)
say() { echo "fresh: [$(($(date +%s) - T0)) s] $*"; }
die() { echo "fresh: FAILED: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "needs root (debootstrap, chroot, namespaces)"
command -v debootstrap >/dev/null || die "debootstrap not installed (.ci/packages/test-fresh)"
[ "${FRESH_TESTS:-0}" = 1 ] ||
for port in 25353 28080 28443 28444; do
    if ss -Hlntu "( sport = :$port )" | grep -q .; then
        die "port $port is taken on this machine; the example binds 127.0.0.1:$port"
    fi
done

# The mirror apt uses: deb822 .sources first, then one-line sources.list entries.
mirror=${FRESH_MIRROR:-}
if [ -z "$mirror" ]; then
    mirror=$(cat /etc/apt/sources.list.d/*.sources 2>/dev/null |
        awk '/^URIs:/ && $2 ~ /\/debian\/?$/ {print $2; exit}')
fi
if [ -z "$mirror" ]; then
    mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null |
        awk '$1 == "deb" { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }')
fi
[ -n "$mirror" ] || die "no Debian mirror in /etc/apt/sources.list{,.d}; set FRESH_MIRROR"

# The README's first ```sh block, verbatim (FRESH_TESTS=1: its second, the test command;
# FRESH_UNIT=1: its third, the unit tests).
nth=1 what=first
[ "${FRESH_TESTS:-0}" = 1 ] && nth=2 what=test
[ "${FRESH_UNIT:-0}" = 1 ] && nth=3 what=unit-test
readme_cmd=$(awk -v n="$nth" '/^```sh[[:space:]]*$/ {k++; if (k == n) {f = 1; next}}
    f && /^```/ {exit} f' "$SRC/README.md")
[ -n "$readme_cmd" ] || die "README.md has no \`\`\`sh block"
say "mirror $mirror; the README's $what command:"
printf '    %s\n' "$readme_cmd"

WORK=$(mktemp -d /var/tmp/airlock-fresh.XXXXXX)
ROOT=$WORK/root
NS_PID=""
NS_SIG=KILL # NS_PID is unshare, which blocks SIGTERM; tests/fresh_root.sh takes SIGTERM
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
    local rc=$?
    if [ -n "$NS_PID" ] && kill -0 "$NS_PID" 2>/dev/null; then
        # unshare --kill-child: when unshare dies, the namespace's init gets SIGKILL
        kill -"$NS_SIG" "$NS_PID" 2>/dev/null
        wait "$NS_PID" 2>/dev/null
    fi
    # Nothing may be left mounted under the root or running in it.
    if grep -q " $ROOT/" /proc/self/mounts; then
        echo "fresh: FAILED: mounts left under $ROOT:" >&2
        grep " $ROOT/" /proc/self/mounts >&2
        rc=1
    fi
    # (after pivot_root, FRESH_TESTS=1, a process's root cannot be read from here:
    # tests/fresh_root.sh checks that its cgroup subtree, which holds them all, is empty)
    local p left=""
    for p in /proc/[0-9]*; do
        [ "$(readlink "$p/root" 2>/dev/null)" = "$ROOT" ] && left="$left ${p#/proc/}"
    done
    if [ -n "$left" ]; then echo "fresh: FAILED: processes left in the root:$left" >&2; rc=1; fi
    if [ "${FRESH_KEEP:-0}" = 1 ]; then say "kept $WORK"; elif [ -z "$left" ]; then rm -rf "$WORK"; fi
    say "done (exit $rc)"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# ---- 1. the root filesystem (cached per day: a minbase rootfs as a tar, and apt's .debs) ----
stamp=$(date -u +%Y%m%d)
tarball=""
debs=""
if [ "$CACHE" != off ]; then
    mkdir -p "$CACHE"
    tarball=$CACHE/$SUITE-minbase-$stamp.tar
    debs=$CACHE/debs-$stamp
    # Yesterday's cache is stale (the mirror moves on): drop it (only what this script made).
    find "$CACHE" -mindepth 1 -maxdepth 1 \( -name "$SUITE-minbase-*.tar" -o -name 'debs-*' \) \
        ! -name "*-$stamp*" -exec rm -rf {} +
    mkdir -p "$debs"
fi
mkdir -p "$ROOT"
if [ -n "$tarball" ] && [ -s "$tarball" ]; then
    say "unpacking the cached root filesystem $tarball"
    tar -C "$ROOT" -xpf "$tarball" || die "cannot unpack $tarball"
else
    say "debootstrap --variant=minbase $SUITE from $mirror (cold)"
    if ! debootstrap --variant=minbase "$SUITE" "$ROOT" "$mirror" > "$WORK/debootstrap.log" 2>&1; then
        tail -30 "$WORK/debootstrap.log" >&2
        die "debootstrap failed (log above)"
    fi
    if [ -n "$tarball" ]; then
        tar -C "$ROOT" -cpf "$tarball.$$.tmp" . && mv "$tarball.$$.tmp" "$tarball"
    fi
fi
say "root filesystem ready ($(du -sm "$ROOT" | cut -f1) MB)"
# A fresh machine has a resolver configured; this one's is the only thing copied from the host.
cp -L /etc/resolv.conf "$ROOT/etc/resolv.conf"

# ---- 2. a clean checkout: the working-tree files git tracks ----
mkdir -p "$ROOT/root/airlock"
(cd "$SRC" && git ls-files -z | while IFS= read -r -d '' f; do
    [ -e "$f" ] && printf '%s\0' "$f"
done | tar --null -T - -cf -) | tar -C "$ROOT/root/airlock" -xf - || die "cannot copy the tree"
say "copied $(cd "$SRC" && git ls-files | wc -l) tracked files to /root/airlock"
if [ -n "${FRESH_BREAK:-}" ]; then
    say "FRESH_BREAK: deleting '$FRESH_BREAK' from the copied .ci/packages/*"
    sed -i -E "s/(^|[[:space:]])$FRESH_BREAK([[:space:]]|\$)/\\1\\2/" \
        "$ROOT"/root/airlock/.ci/packages/*
fi

# ---- 3. the README command, in the chroot, in its own mount + PID namespace ----
cat > "$WORK/inner.sh" <<'INNER'
set -eu
root=$1 debs=$2 cmd=$3
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
mount --bind /dev "$root/dev"
mount -t devpts -o newinstance devpts "$root/dev/pts" 2>/dev/null || true
mount -t tmpfs tmpfs "$root/tmp"
if [ -n "$debs" ]; then mount --bind "$debs" "$root/var/cache/apt/archives"; fi
exec chroot "$root" /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb \
    /bin/sh -c "cd /root/airlock && $cmd"
INNER
OUT=$WORK/readme.out
if [ "${FRESH_UNIT:-0}" = 1 ]; then
    say "running the README's unit-test command in the chroot (output: $OUT)"
    t0=$(date +%s)
    unshare --mount --pid --fork --kill-child --propagation private \
        bash "$WORK/inner.sh" "$ROOT" "$debs" "$readme_cmd" < /dev/null > "$OUT" 2>&1
    rc=$?
    say "$(grep -c '^Setting up' "$OUT") packages installed; the command took $(($(date +%s) - t0)) s"
    grep -E 'tests passed|tests failed' "$OUT" | tail -1
    if [ "$rc" != 0 ] || ! grep -q '100% tests passed' "$OUT"; then
        tail -40 "$OUT" >&2
        die "the README's unit-test command exited $rc"
    fi
    say "the README's unit-test command passed on a fresh root"
    exit 0
fi
if [ "$what" = test ]; then
    say "running the README's test command after pivot_root into the root (output: $OUT)"
    t0=$(date +%s)
    bash "$SRC/tests/fresh_root.sh" "$ROOT" "$debs" "$readme_cmd" < /dev/null > "$OUT" 2>&1 &
    NS_PID=$! NS_SIG=TERM
    deadline=$((t0 + TIMEOUT))
    while kill -0 "$NS_PID" 2>/dev/null && [ "$(date +%s)" -lt "$deadline" ]; do sleep 5; done
    if kill -0 "$NS_PID" 2>/dev/null; then
        tail -40 "$OUT" >&2
        die "the README's test command did not end within $TIMEOUT s (FRESH_TIMEOUT)"
    fi
    wait "$NS_PID"
    rc=$?
    NS_PID=""
    say "$(grep -c '^Setting up' "$OUT") packages installed; the command took $(($(date +%s) - t0)) s"
    sed -n '/^=== summary ===$/,$p' "$OUT"
    if [ "$rc" != 0 ]; then
        grep -q '^=== summary ===$' "$OUT" || tail -40 "$OUT" >&2
        die "the README's test command exited $rc"
    fi
    say "PASSED: the README's test command works on a fresh Debian 12 ($SUITE minbase)"
    exit 0
fi
say "running the README's first command in the chroot (output: $OUT)"
unshare --mount --pid --fork --kill-child --propagation private \
    bash "$WORK/inner.sh" "$ROOT" "$debs" "$readme_cmd" < /dev/null > "$OUT" 2>&1 &
NS_PID=$!

# ---- 4. wait for airlock to be ready (install + build take minutes on a cold machine) ----
ready=0
deadline=$(($(date +%s) + TIMEOUT))
while [ "$(date +%s)" -lt "$deadline" ]; do
    if grep -q '^airlock .*: ready' "$OUT"; then ready=1; break; fi
    kill -0 "$NS_PID" 2>/dev/null || break
    sleep 1
done
if [ "$ready" != 1 ]; then
    echo "---- last 40 lines of the README command's output ----" >&2
    tail -40 "$OUT" >&2
    if kill -0 "$NS_PID" 2>/dev/null; then die "no 'ready' within $TIMEOUT s"; fi
    wait "$NS_PID"
    die "the README's first command exited ($?) before airlock was ready"
fi
say "airlock is ready: $(grep -m1 '^airlock .*: ready' "$OUT")"
say "$(grep -c '^Setting up' "$OUT") packages were installed by the README command"

# ---- 5. a second process in the same root and namespaces: one dig, one curl ----
# The namespace's init is unshare's child; nsenter joins its mounts, PIDs and root.
init=$(awk '{print $1}' "/proc/$NS_PID/task/$NS_PID/children" 2>/dev/null)
[ -n "$init" ] || die "cannot find the chroot's first process"
in_root() {
    nsenter --target "$init" --mount --pid --root --wd -- \
        /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb /bin/sh -c "$1"
}
fail=0
a=$(in_root 'dig +short +time=5 +tries=2 @127.0.0.1 -p 25353 anything.example A')
echo "fresh: dig +short @127.0.0.1 -p 25353 anything.example A -> $a"
[ "$a" = 127.0.0.1 ] || { echo "fresh: FAIL: dig: expected 127.0.0.1" >&2; fail=1; }
body=$(in_root "curl -s --max-time 30 -w ' HTTP %{http_code}' http://127.0.0.1:28080/ -H 'Host: evil.example'")
echo "fresh: curl -H 'Host: evil.example' http://127.0.0.1:28080/ -> $body"
case "$body" in
*'{'*'"error"'*'}'*'HTTP 403') ;;
*) echo "fresh: FAIL: curl: expected a 403 JSON answer" >&2; fail=1 ;;
esac

# ---- 6. stop airlock (SIGTERM, by its pid inside the namespace); the command must exit 0 ----
# shellcheck disable=SC2016 # expanded by the shell in the chroot
apid=$(in_root 'for p in /proc/[0-9]*; do
    [ "$(readlink $p/exe)" = /root/airlock/build/airlock ] && echo ${p#/proc/}; done')
[ -n "$apid" ] || die "cannot find airlock's pid in the chroot"
in_root "kill -TERM $apid"
rc=""
for _ in $(seq 1 60); do
    kill -0 "$NS_PID" 2>/dev/null || { wait "$NS_PID"; rc=$?; break; }
    sleep 1
done
if [ -z "$rc" ]; then echo "fresh: FAIL: airlock did not stop within 60 s of SIGTERM" >&2; fail=1
elif [ "$rc" != 0 ]; then echo "fresh: FAIL: the README command exited $rc after SIGTERM" >&2
    tail -20 "$OUT" >&2; fail=1
else say "airlock stopped on SIGTERM; the README command exited 0"; fi

[ "$fail" = 0 ] || die "see above"
say "PASSED: the README's first command works on a fresh Debian 12 ($SUITE minbase)"
exit 0
