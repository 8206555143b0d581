#!/usr/bin/python3
"""Runs a Kubernetes Pod manifest with plain podman commands: a small stand-in for the kubelet,
for tests/integration/test_k8s.sh.

Podman 4.3's `podman kube play` starts an init container and removes it at once, failing
("cannot remove container ... as it is running") unless it has already exited, and knows no
native sidecars (init containers with restartPolicy: Always). So the pod is built from the manifest's own pieces, in Kubernetes'
order: `podman pod create` (network, dnsConfig), each init container run to completion, each
native sidecar started and its startupProbe polled, then the containers. Images, commands,
args, env, securityContext, volumes and probes all come from the manifest; the test's changes
are given in an overrides file and printed.

    k8s_pod.py up OVERRIDES.json MANIFEST.yaml...    prints {"pod":..., "containers": {...}}
    k8s_pod.py down OVERRIDES.json MANIFEST.yaml...

OVERRIDES (JSON): dir (volumes are written below it), network (podman network), images
({manifest image: image to use}), configmaps / secrets ({name: {key: text or "@file"}}: keys
given replace the manifest's, others stay; a Secret the manifests do not hold must be given
here), append_args ({container: [args]}).

A field this script does not translate fails the run, so the manifest cannot grow a setting
the test silently skips. Translated: see the code; printed as ignored: resources (no cgroup
limits here), livenessProbe and readinessProbe (not polled), seccompProfile RuntimeDefault
(podman's default), automountServiceAccountToken and enableServiceLinks (no API server).
"""
import json
import os
import subprocess
import sys
import time

import yaml

POD_KEYS = {"dnsPolicy", "dnsConfig", "automountServiceAccountToken", "enableServiceLinks",
            "securityContext", "initContainers", "containers", "volumes"}
CTR_KEYS = {"name", "image", "command", "args", "env", "securityContext", "volumeMounts",
            "startupProbe", "livenessProbe", "readinessProbe", "resources", "restartPolicy"}
SC_KEYS = {"runAsUser", "runAsGroup", "runAsNonRoot", "allowPrivilegeEscalation",
           "readOnlyRootFilesystem", "capabilities"}


def log(msg):
    print(f"k8s_pod: {msg}", file=sys.stderr, flush=True)


def die(msg):
    log(msg)
    sys.exit(1)


def check_keys(what, obj, allowed):
    extra = set(obj) - allowed
    if extra:
        die(f"{what}: k8s_pod.py does not translate {sorted(extra)}")


def podman(*args, check=True, timeout=300):
    r = subprocess.run(["podman", *args], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        die(f"podman {' '.join(args[:3])}...: exit {r.returncode}: {r.stderr.strip()[-600:]}")
    return r


def load(paths, ov):
    docs = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            docs += [d for d in yaml.safe_load_all(f) if d]
    pods = [d for d in docs if d.get("kind") == "Pod"]
    if len(pods) != 1:
        die(f"expected one Pod in {paths}, found {len(pods)}")
    data = {"ConfigMap": {}, "Secret": {}}
    for d in docs:
        if d.get("kind") in data:
            kv = dict(d.get("data") or {})
            if d.get("kind") == "Secret" and d.get("data"):
                die("Secret data in base64 is not supported here; use stringData")
            kv.update(d.get("stringData") or {})
            data[d["kind"]][d["metadata"]["name"]] = kv
    for kind, key in (("ConfigMap", "configmaps"), ("Secret", "secrets")):
        for name, kv in (ov.get(key) or {}).items():
            m = data[kind].setdefault(name, {})
            for k, v in kv.items():
                if isinstance(v, str) and v.startswith("@"):
                    with open(v[1:], encoding="utf-8") as f:
                        v = f.read()
                m[k] = v
                log(f"override: {kind} {name} key {k}")
    return pods[0], data


def write_volume(base, vol, data, fs_group):
    """Materializes a configMap, secret or emptyDir volume as a host directory."""
    name = vol["name"]
    path = os.path.join(base, "volumes", name)
    os.makedirs(path, exist_ok=True)
    if "emptyDir" in vol:
        os.chmod(path, 0o777)
        if fs_group is not None:
            os.chown(path, 0, fs_group)
            os.chmod(path, 0o2777)
        return path
    if "configMap" in vol:
        src, kind, ref = vol["configMap"], "ConfigMap", vol["configMap"]["name"]
    elif "secret" in vol:
        src, kind, ref = vol["secret"], "Secret", vol["secret"]["secretName"]
    else:
        die(f"volume {name}: only configMap, secret and emptyDir are translated")
    check_keys(f"volume {name}", src, {"name", "secretName", "defaultMode", "items",
                                       "optional"})
    kv = data[kind].get(ref)
    if kv is None:
        if src.get("optional"):
            return path
        die(f"volume {name}: {kind} {ref} is neither in the manifests nor in the overrides")
    mode = src.get("defaultMode", 0o644)
    items = src.get("items") or [{"key": k, "path": k} for k in kv]
    for it in items:
        if it["key"] not in kv:
            die(f"volume {name}: {kind} {ref} has no key {it['key']}")
        f = os.path.join(path, it["path"])
        os.makedirs(os.path.dirname(f), exist_ok=True)
        with open(f, "w", encoding="utf-8") as out:
            out.write(kv[it["key"]])
        os.chmod(f, it.get("mode", mode))
        if fs_group is not None:
            os.chown(f, 0, fs_group)
    return path


def env_args(ctr, data):
    out = []
    for e in ctr.get("env") or []:
        if "value" in e:
            val = str(e["value"])
        else:
            vf = e.get("valueFrom") or {}
            ref = vf.get("configMapKeyRef") or vf.get("secretKeyRef")
            if ref is None:
                die(f"env {e['name']}: only value, configMapKeyRef and secretKeyRef")
            kind = "ConfigMap" if "configMapKeyRef" in vf else "Secret"
            val = (data[kind].get(ref["name"]) or {}).get(ref["key"])
            if val is None:
                die(f"env {e['name']}: {kind} {ref['name']} has no key {ref['key']}")
        out += ["-e", f"{e['name']}={val}"]
    return out


def sec_args(what, sc, pod_sc):
    check_keys(f"{what} securityContext", sc, SC_KEYS)
    out = []
    uid = sc.get("runAsUser")
    gid = sc.get("runAsGroup")
    if sc.get("runAsNonRoot") and (uid is None or uid == 0):
        die(f"{what}: runAsNonRoot needs a non-zero runAsUser here")
    if uid is not None:
        out += ["--user", f"{uid}:{gid if gid is not None else 0}"]
    if pod_sc.get("fsGroup") is not None:
        out += ["--group-add", str(pod_sc["fsGroup"])]
    caps = sc.get("capabilities") or {}
    for c in caps.get("drop") or []:
        out += ["--cap-drop", c.lower()]
    for c in caps.get("add") or []:
        out += ["--cap-add", c.lower()]
    if sc.get("allowPrivilegeEscalation") is False:
        out += ["--security-opt", "no-new-privileges"]
    if sc.get("readOnlyRootFilesystem"):
        out += ["--read-only", "--read-only-tmpfs=false"]
    return out


def probe(name, p):
    """Polls an exec probe as the kubelet does; True once it succeeds."""
    check_keys(f"{name} startupProbe", p, {"exec", "periodSeconds", "failureThreshold",
                                            "timeoutSeconds", "initialDelaySeconds"})
    cmd = p["exec"]["command"]
    time.sleep(p.get("initialDelaySeconds", 0))
    for _ in range(p.get("failureThreshold", 3)):
        t = p.get("timeoutSeconds", 1)
        try:
            r = podman("exec", name, *cmd, check=False, timeout=t + 10)
            if r.returncode == 0:
                return True
        except subprocess.TimeoutExpired:
            pass
        time.sleep(p.get("periodSeconds", 10))
    return False


def run_container(pod_name, ctr, kind, ov, data, vols, pod_sc):
    check_keys(f"container {ctr['name']}", ctr, CTR_KEYS)
    name = f"{pod_name}-{ctr['name']}"
    for k in ("resources", "livenessProbe", "readinessProbe"):
        if k in ctr:
            log(f"{name}: ignored: {k}")
    image = (ov.get("images") or {}).get(ctr["image"], ctr["image"])
    if image != ctr["image"]:
        log(f"override: {name} image {ctr['image']} -> {image}")
    args = ["run", "--pod", pod_name, "--name", name]
    args += sec_args(name, ctr.get("securityContext") or {}, pod_sc)
    args += env_args(ctr, data)
    for m in ctr.get("volumeMounts") or []:
        check_keys(f"{name} volumeMount", m, {"name", "mountPath", "readOnly"})
        args += ["-v", f"{vols[m['name']]}:{m['mountPath']}{':ro' if m.get('readOnly') else ''}"]
    if ctr.get("command"):
        args += ["--entrypoint", json.dumps(ctr["command"])]
    extra = (ov.get("append_args") or {}).get(ctr["name"]) or []
    if extra:
        log(f"override: {name} args += {extra}")
    cargs = [str(a) for a in (ctr.get("args") or [])] + extra
    if kind == "init":
        r = podman(*args, image, *cargs, check=False)
        if r.returncode != 0:
            die(f"init container {name} exited {r.returncode}: {(r.stdout + r.stderr)[-600:]}")
        podman("rm", name)
        log(f"{name}: init container completed")
        return name
    podman(*args, "-d", image, *cargs)
    if "startupProbe" in ctr:
        if not probe(name, ctr["startupProbe"]):
            logs = podman("logs", name, check=False)
            die(f"{name}: startupProbe never passed: {(logs.stdout + logs.stderr)[-800:]}")
        log(f"{name}: started, startupProbe passed")
    else:
        log(f"{name}: started")
    return name


def up(ov, pod, data):
    spec = pod["spec"]
    check_keys("pod spec", spec, POD_KEYS)
    pod_name = pod["metadata"]["name"]
    pod_sc = spec.get("securityContext") or {}
    check_keys("pod securityContext", pod_sc, {"fsGroup", "seccompProfile"})
    if (pod_sc.get("seccompProfile") or {}).get("type", "RuntimeDefault") != "RuntimeDefault":
        die("only seccompProfile RuntimeDefault is translated")
    args = ["pod", "create", "--name", pod_name, "--network", ov["network"]]
    if spec.get("dnsPolicy") == "None":
        dc = spec.get("dnsConfig") or {}
        check_keys("dnsConfig", dc, {"nameservers", "searches", "options"})
        for ns in dc.get("nameservers") or []:
            args += ["--dns", ns]
        for s in dc.get("searches") or ["."]:
            args += ["--dns-search", s]
        for o in dc.get("options") or []:
            args += ["--dns-opt", f"{o['name']}:{o['value']}" if "value" in o else o["name"]]
    elif spec.get("dnsPolicy") is not None:
        die("only dnsPolicy None is translated")
    podman(*args)
    log(f"pod {pod_name} created on network {ov['network']}")
    vols = {v["name"]: write_volume(ov["dir"], v, data, pod_sc.get("fsGroup"))
            for v in spec.get("volumes") or []}
    names = {}
    for ctr in spec.get("initContainers") or []:
        kind = "sidecar" if ctr.get("restartPolicy") == "Always" else "init"
        names[ctr["name"]] = run_container(pod_name, ctr, kind, ov, data, vols, pod_sc)
    for ctr in spec["containers"]:
        if "restartPolicy" in ctr:
            die(f"container {ctr['name']}: restartPolicy belongs to init containers")
        names[ctr["name"]] = run_container(pod_name, ctr, "main", ov, data, vols, pod_sc)
    infra = podman("pod", "inspect", pod_name, "--format", "{{.InfraContainerID}}").stdout.strip()
    pid = podman("inspect", infra, "--format", "{{.State.Pid}}").stdout.strip()
    print(json.dumps({"pod": pod_name, "containers": names, "infra_pid": int(pid)}))


def main():
    if len(sys.argv) < 4 or sys.argv[1] not in ("up", "down"):
        die("usage: k8s_pod.py up|down OVERRIDES.json MANIFEST.yaml...")
    with open(sys.argv[2], encoding="utf-8") as f:
        ov = json.load(f)
    pod, data = load(sys.argv[3:], ov)
    if sys.argv[1] == "down":
        podman("pod", "rm", "-f", "-t", "3", pod["metadata"]["name"], check=False)
        return
    up(ov, pod, data)


if __name__ == "__main__":
    main()
