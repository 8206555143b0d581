#!/bin/sh
# Builds the airlock proxy image FROM scratch with podman: a static airlock (stripped) and the
# host's CA bundle, nothing else; no registry is contacted. Tags NAME:VERSION-HASH (HASH: the
# first 12 hex digits of the SHA-256 over the Containerfile, the binary and the bundle) and
# NAME:latest, and prints NAME:VERSION-HASH on stdout. An image with that tag is reused.
#
#   container/build-image.sh [--binary STATIC-AIRLOCK] [--build-dir DIR] [--name NAME]
#                            [--ca-bundle FILE]
#
# Without --binary, airlock is built with -DAIRLOCK_STATIC=ON -DCMAKE_BUILD_TYPE=Release in
# DIR (default build-static/ in the repository); AIRLOCK_CMAKE_ARGS adds cmake arguments.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
PODMAN=${AIRLOCK_PODMAN:-podman}
NAME=${AIRLOCK_IMAGE_NAME:-localhost/airlock-proxy}
BUILD_DIR=${AIRLOCK_STATIC_BUILD_DIR:-$ROOT/build-static}
BINARY=${AIRLOCK_STATIC_BINARY:-}
CA_BUNDLE=${AIRLOCK_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}

die() {
    echo "build-image: $*" >&2
    exit 1
}

while [ $# -gt 0 ]; do
    case $1 in
    --binary | --build-dir | --name | --ca-bundle)
        [ $# -ge 2 ] || die "$1 needs a value"
        case $1 in
        --binary) BINARY=$2 ;;
        --build-dir) BUILD_DIR=$2 ;;
        --name) NAME=$2 ;;
        --ca-bundle) CA_BUNDLE=$2 ;;
        esac
        shift 2
        ;;
    -h | --help)
        sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *) die "unexpected argument '$1' (see --help)" ;;
    esac
done

command -v "$PODMAN" >/dev/null 2>&1 || die "$PODMAN not found"
[ -s "$CA_BUNDLE" ] || die "no CA bundle at $CA_BUNDLE (install ca-certificates)"

if [ -z "$BINARY" ]; then
    command -v cmake >/dev/null 2>&1 || die "cmake not found"
    # shellcheck disable=SC2086 # AIRLOCK_CMAKE_ARGS is a list of words
    cmake -S "$ROOT" -B "$BUILD_DIR" -DAIRLOCK_STATIC=ON -DCMAKE_BUILD_TYPE=Release \
        -DAIRLOCK_TESTS=OFF ${AIRLOCK_CMAKE_ARGS:-} >&2 || die "cmake configure failed"
    cmake --build "$BUILD_DIR" --target airlock -j "$(nproc 2>/dev/null || echo 2)" >&2 ||
        die "the static build failed"
    BINARY=$BUILD_DIR/airlock
fi
[ -x "$BINARY" ] || die "$BINARY is not an executable"
if readelf -lW "$BINARY" 2>/dev/null | grep -q 'program interpreter'; then
    die "$BINARY is dynamically linked; build with -DAIRLOCK_STATIC=ON"
fi
VERSION=$("$BINARY" --version | awk '{ print $2 }')
[ -n "$VERSION" ] || die "$BINARY --version printed no version"
"$BINARY" health --help >/dev/null 2>&1 || die "$BINARY has no 'health' command"

CTX=$(mktemp -d "${TMPDIR:-/tmp}/airlock-image.XXXXXX")
trap 'rm -rf "$CTX"' EXIT
trap 'exit 1' INT TERM HUP
strip --strip-all -o "$CTX/airlock" "$BINARY" || die "strip failed"
cp "$CA_BUNDLE" "$CTX/cert.pem"
cp "$HERE/Containerfile" "$CTX/Containerfile"
chmod 0755 "$CTX/airlock"
chmod 0644 "$CTX/cert.pem"
HASH=$(cat "$CTX/Containerfile" "$CTX/airlock" "$CTX/cert.pem" | sha256sum | cut -c1-12)
TAG=$NAME:$VERSION-$HASH

if ! "$PODMAN" image exists "$TAG"; then
    # --timestamp 0: the same inputs give the same image ID
    "$PODMAN" build --pull=never --timestamp 0 -f "$CTX/Containerfile" -t "$TAG" "$CTX" >&2 ||
        die "podman build failed"
fi
"$PODMAN" tag "$TAG" "$NAME:latest" || die "podman tag failed"
SIZE=$("$PODMAN" image inspect --format '{{.Size}}' "$TAG")
echo "build-image: $TAG ($SIZE bytes; airlock $(wc -c <"$CTX/airlock") bytes stripped)" >&2
echo "$TAG"
