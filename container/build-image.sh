#!/bin/sh
# Builds the airlock proxy image FROM scratch with podman: a static airlock (stripped), the
# host's CA bundle and the host's nft with its shared libraries (for the Kubernetes init
# container, container/k8s/), nothing else; no registry is contacted. Tags NAME:VERSION-HASH
# (HASH: the first 12 hex digits of the SHA-256 over the Containerfile and every file of the
# image) and NAME:latest, and prints NAME:VERSION-HASH on stdout. An image with that tag is
# reused.
#
#   container/build-image.sh [--binary STATIC-AIRLOCK] [--build-dir DIR] [--name NAME]
#                            [--ca-bundle FILE] [--nft PATH | --no-nft]
#
# Without --binary, airlock is built with -DAIRLOCK_STATIC=ON -DCMAKE_BUILD_TYPE=Release in
# DIR (default build-static/ in the repository); AIRLOCK_CMAKE_ARGS adds cmake arguments.
# nft: /usr/sbin/nft (package nftables) unless --nft or AIRLOCK_NFT names another; --no-nft
# (AIRLOCK_NFT=none) leaves it out.
set -eu

HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(dirname "$HERE")
PODMAN=${AIRLOCK_PODMAN:-podman}
NAME=${AIRLOCK_IMAGE_NAME:-localhost/airlock-proxy}
BUILD_DIR=${AIRLOCK_STATIC_BUILD_DIR:-$ROOT/build-static}
BINARY=${AIRLOCK_STATIC_BINARY:-}
CA_BUNDLE=${AIRLOCK_CA_BUNDLE:-/etc/ssl/certs/ca-certificates.crt}
NFT=${AIRLOCK_NFT:-/usr/sbin/nft}

die() {
    echo "build-image: $*" >&2
    exit 1
}

while [ $# -gt 0 ]; do
    case $1 in
    --no-nft)
        NFT=none
        shift
        ;;
    --binary | --build-dir | --name | --ca-bundle | --nft)
        [ $# -ge 2 ] || die "$1 needs a value"
        case $1 in
        --binary) BINARY=$2 ;;
        --build-dir) BUILD_DIR=$2 ;;
        --name) NAME=$2 ;;
        --ca-bundle) CA_BUNDLE=$2 ;;
        --nft) NFT=$2 ;;
        esac
        shift 2
        ;;
    -h | --help)
        sed -n '2,15p' "$0" | sed 's/^# \{0,1\}//'
        exit 0
        ;;
    *) die "unexpected argument '$1' (see --help)" ;;
    esac
done

command -v "$PODMAN" >/dev/null 2>&1 || die "$PODMAN not found"
[ -s "$CA_BUNDLE" ] || die "no CA bundle at $CA_BUNDLE (install ca-certificates)"
if [ "$NFT" != none ]; then
    [ -x "$NFT" ] || die "no nft at $NFT (apt-get install nftables, or --no-nft)"
    command -v ldd >/dev/null 2>&1 || die "ldd not found (needed to copy nft's libraries)"
fi

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
# nft for the init container that installs the pod's redirect (container/k8s/README.md): the
# binary at /usr/sbin/nft, its libraries and the loader at the paths ldd names. The static
# airlock never loads any of them.
mkdir -p "$CTX/root"
if [ "$NFT" != none ]; then
    mkdir -p "$CTX/root/usr/sbin"
    cp -L "$NFT" "$CTX/root/usr/sbin/nft" || die "cannot copy $NFT"
    libs=$(ldd "$NFT" | awk '/=> \// { print $3 } /^\t\// { print $1 }')
    [ -n "$libs" ] || die "ldd names no library of $NFT"
    for f in $libs; do
        mkdir -p "$CTX/root$(dirname "$f")"
        cp -L "$f" "$CTX/root$f" || die "cannot copy $f"
    done
fi
HASH=$(cd "$CTX" && {
    cat Containerfile airlock cert.pem
    find root -type f | LC_ALL=C sort | xargs -r sha256sum
} | sha256sum | cut -c1-12)
TAG=$NAME:$VERSION-$HASH

if ! "$PODMAN" image exists "$TAG"; then
    # --timestamp 0: the same inputs give the same image ID
    "$PODMAN" build --pull=never --timestamp 0 -f "$CTX/Containerfile" -t "$TAG" "$CTX" >&2 ||
        die "podman build failed"
fi
"$PODMAN" tag "$TAG" "$NAME:latest" || die "podman tag failed"
SIZE=$("$PODMAN" image inspect --format '{{.Size}}' "$TAG")
NFT_BYTES=$(find "$CTX/root" -type f -exec cat {} + | wc -c)
echo "build-image: $TAG ($SIZE bytes; airlock $(wc -c <"$CTX/airlock") bytes stripped;" \
    "nft and its libraries $NFT_BYTES bytes)" >&2
echo "$TAG"
