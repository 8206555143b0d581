#!/bin/bash
# Runs one shell command in a root filesystem as if that root were the machine: used by
# tests/fresh_machine.sh (FRESH_TESTS=1), where the README's test command must be able to run
# Podman and network namespaces, which a chroot cannot give (in a chroot, `podman exec` joins
# the container's namespaces and lands in the host's root).
#   bash tests/fresh_root.sh ROOT DEBS 'COMMAND'
# (as root; DEBS: a directory bind-mounted on the root's /var/cache/apt/archives, or "").
#
# The command runs with an empty environment (HOME, PATH, TERM), in /root/airlock, in mount,
# PID and cgroup namespaces of its own, after pivot_root (not chroot) into ROOT, with a fresh
# /proc, /sys and cgroup hierarchies, the host's /dev (devpts, /dev/shm and mqueue fresh),
# /run and /tmp as tmpfs (/run/netns for `ip netns`). It shares the machine's network (apt
# needs the mirror). Its cgroups are a subtree made here under this process's own cgroup in
# every hierarchy (airlock-fresh-PID), the root of its cgroup namespace: what Podman creates
# there goes with the subtree, removed when the command has ended. Every process and mount
# goes with the namespaces when the command ends or this script is stopped (SIGTERM/INT/HUP).
# Exit: the command's.
set -u
[ $# = 3 ] || { echo "usage: $0 ROOT DEBS COMMAND" >&2; exit 2; }
root=$(cd "$1" && pwd) || exit 2
debs=$2 cmd=$3
[ "$(id -u)" = 0 ] || { echo "fresh-root: needs root" >&2; exit 2; }

# ---- the cgroup subtree: one directory per hierarchy, under this process's own cgroup ----
# /proc/self/cgroup: "ID:CONTROLLERS:PATH"; a hierarchy's mount point is the mount whose
# options name its controllers (cgroup v1) or the cgroup2 mount ("0::PATH").
CG=airlock-fresh-$$
CG_DIRS=()
while IFS=: read -r _ ctrls path; do
    if [ -z "$ctrls" ]; then
        mnt=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/self/mounts)
    else
        mnt=$(awk -v c="$ctrls" '$3 == "cgroup" {
            n = split($4, o, ","); m = split(c, w, ","); k = 0
            for (i = 1; i <= m; i++) for (j = 1; j <= n; j++) if (o[j] == w[i]) k++
            if (k == m) {print $2; exit}}' /proc/self/mounts)
    fi
    [ -n "$mnt" ] || continue
    d=$mnt${path%/}/$CG
    mkdir "$d" || { echo "fresh-root: cannot make the cgroup $d" >&2; exit 1; }
    CG_DIRS+=("$d")
    # a new cpuset v1 group has no CPUs and no memory nodes: a process cannot join it
    for f in cpuset.cpus cpuset.mems; do
        if [ -f "$d/$f" ]; then cat "$(dirname "$d")/$f" > "$d/$f" || exit 1; fi
    done
done < /proc/self/cgroup

NS_PID=""
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
    local rc=$? d
    if [ -n "$NS_PID" ] && kill -0 "$NS_PID" 2>/dev/null; then
        # unshare (util-linux 2.38) blocks SIGTERM and SIGINT while it waits for its child;
        # SIGKILL ends it, and --kill-child then gives the namespace's init SIGKILL
        kill -KILL "$NS_PID" 2>/dev/null
        wait "$NS_PID" 2>/dev/null
    fi
    # back to where this shell came from, so that the subtree can go
    for d in "${CG_DIRS[@]}"; do echo $$ > "$(dirname "$d")/cgroup.procs" 2>/dev/null; done
    # The subtree empties once the namespace's processes are gone (a moment after SIGKILL).
    for d in "${CG_DIRS[@]}"; do
        for _ in $(seq 1 50); do
            find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
            [ -d "$d" ] || break
            sleep 0.2
        done
        # every process of the namespaces is in the subtree (the cgroup namespace keeps
        # them there): one still running keeps it
        [ -d "$d" ] || continue
        echo "fresh-root: FAILED: cgroup $d left; processes in it:" \
            "$(find "$d" -name cgroup.procs -exec cat {} + | tr '\n' ' ')" >&2
        rc=1
    done
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
trap 'exit 129' HUP

# ---- inside the namespaces: mounts, pivot_root, the command ----
# shellcheck disable=SC2016 # expanded by the inner bash
inner='set -eu
root=$1 debs=$2 cmd=$3 cgroups=$4
mount --bind "$root" "$root" # pivot_root needs a mount point
mount -t proc proc "$root/proc"
mount -t sysfs sysfs "$root/sys"
# the hierarchies as the host mounts them, seen from the cgroup namespace (its root: ours)
if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]; then
    mount -t cgroup2 cgroup2 "$root/sys/fs/cgroup"
else
    mount -t tmpfs -o mode=0755 tmpfs "$root/sys/fs/cgroup"
    printf "%s\n" "$cgroups" | while read -r fs mnt opts; do
        [ -n "$fs" ] || continue
        mkdir -p "$root$mnt"
        mount -t "$fs" -o "$opts" "$fs" "$root$mnt"
    done
fi
mount --bind /dev "$root/dev"
mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$root/dev/pts"
mount --bind "$root/dev/pts/ptmx" "$root/dev/ptmx"
mount -t tmpfs -o mode=1777 tmpfs "$root/dev/shm"
mount -t mqueue mqueue "$root/dev/mqueue" 2>/dev/null || true
mount -t tmpfs -o mode=0755 tmpfs "$root/run"
mkdir -p "$root/run/netns" "$root/run/lock"
mount -t tmpfs -o mode=1777 tmpfs "$root/tmp"
if [ -n "$debs" ]; then mount --bind "$debs" "$root/var/cache/apt/archives"; fi
cd "$root"
mkdir .oldroot
pivot_root . .oldroot
cd /
umount -l /.oldroot
rmdir /.oldroot
exec /usr/bin/env -i HOME=/root PATH=/usr/sbin:/usr/bin:/sbin:/bin TERM=dumb \
    /bin/sh -c "cd /root/airlock && $cmd"'
cgroups=$(awk '$2 ~ "^/sys/fs/cgroup/" && ($3 == "cgroup" || $3 == "cgroup2") {
    print $3, $2, $4}' /proc/self/mounts)
# This shell joins the subtree; unshare then makes it the cgroup namespace's root.
for d in "${CG_DIRS[@]}"; do echo $$ > "$d/cgroup.procs" || exit 1; done
unshare --mount --pid --cgroup --fork --kill-child --propagation private \
    bash -c "$inner" fresh-root "$root" "$debs" "$cmd" "$cgroups" &
NS_PID=$!
wait "$NS_PID"
rc=$?
NS_PID=""
exit "$rc"
