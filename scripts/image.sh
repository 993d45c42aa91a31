#!/usr/bin/env bash
# The server's container image, built from the repository's Dockerfile by buildah: no Docker
# engine and no container registry. The Dockerfile's base images are build arguments whose
# defaults are the public ones (rust:*-bookworm, distroless cc-debian12:nonroot); this script
# supplies bases made here instead:
#   - a build base: Debian bookworm by debootstrap (gcc, libc6-dev, make, ca-certificates) with
#     the machine's own Rust toolchain (`rustc --print sysroot`) at /usr/local/rust, and the
#     machine's cargo configuration, if any, and CA certificates, so crates come from wherever
#     and however this machine gets them;
#   - a runtime base: only the files of Debian's libc6 and libgcc-s1 from that rootfs, CA
#     certificates, and /etc/passwd with the distroless `nonroot` user (65532).
#
#   scripts/image.sh build [NAME]        build NAME (default: the image manifests/base/deployment.yaml names)
#   scripts/image.sh archive NAME FILE   write NAME to FILE as an OCI archive, named as a CRI
#                                        resolves it (docker.io/library/... for a short name)
#   scripts/image.sh size NAME           print NAME's size (its layers, uncompressed)
#   scripts/image.sh bases               build the two bases only and print their names
#   scripts/image.sh etcd NAME           build etcd's image NAME (quay.io/coreos/etcd:vX.Y.Z) from
#                                        the runtime base and the etcd control-plane.sh builds, of that version
#
# FARM_IMAGE_PROFILE names the Cargo profile of the server's build (default release; the node
# tests use image-test, which compiles in about half the time).
#
# Everything buildah keeps (images, layers, the Dockerfile's cache mounts) lives in
# $FARM_CACHE/containers (FARM_CACHE defaults to ~/.cache/farm-apiserver), so an empty cache is
# a fresh machine. The Debian mirror is the machine's own (its apt sources).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/control-plane.sh
. "$ROOT/scripts/control-plane.sh"  # apt_install and CACHE
SUITE=bookworm
log() { echo "image: $*" >&2; }

# buildah with its storage, run directory and temporary files (the cache mounts) in the cache.
buildah_() {
  mkdir -p "$CACHE/containers/tmp"
  TMPDIR="$CACHE/containers/tmp" buildah --root "$CACHE/containers/storage" --runroot "$CACHE/containers/run" \
    --storage-driver overlay "$@"
}

ensure_tools() {
  local missing=()
  command -v buildah >/dev/null 2>&1 || missing+=(buildah)
  command -v debootstrap >/dev/null 2>&1 || missing+=(debootstrap)
  if [ ${#missing[@]} -gt 0 ]; then
    log "installing Debian's ${missing[*]}"
    apt_install "${missing[@]}"
  fi
}

# The first Debian archive URI of the machine's apt sources (deb822 or one-line form).
debian_mirror() {
  python3 - <<'PY'
import glob, pathlib, sys
for path in sorted(glob.glob("/etc/apt/sources.list.d/*.sources")):
    for stanza in pathlib.Path(path).read_text().split("\n\n"):
        fields = {k.strip(): v.strip() for k, v in (l.split(":", 1) for l in stanza.splitlines()
                  if ":" in l and not l.lstrip().startswith("#"))}
        suites = fields.get("Suites", "").split()
        if "deb" in fields.get("Types", "").split() and any("-" not in s for s in suites) \
                and "debian-archive-keyring" in fields.get("Signed-By", "debian-archive-keyring"):
            print(fields["URIs"].split()[0]); sys.exit()
for path in ["/etc/apt/sources.list", *sorted(glob.glob("/etc/apt/sources.list.d/*.list"))]:
    p = pathlib.Path(path)
    for words in (l.split() for l in (p.read_text().splitlines() if p.is_file() else [])):
        words = [w for w in words if not w.startswith("[")]
        if words[:1] == ["deb"] and len(words) > 2 and "debian" in words[1] and "-" not in words[2]:
            print(words[1]); sys.exit()
sys.exit("image: no Debian archive in the machine's apt sources to debootstrap from")
PY
}

# The names of the two bases: a hash of everything that shapes them.
bases_hash() {
  { rustc --version; cat "${CARGO_HOME:-$HOME/.cargo}/config.toml" /etc/ssl/certs/ca-certificates.crt 2>/dev/null || true; declare -f make_bases runtime_files; } |
    sha256sum | cut -c1-12
}
build_base() { echo "localhost/farm-build-base:$(bases_hash)"; }
runtime_base() { echo "localhost/farm-runtime-base:$(bases_hash)"; }

# The files of the runtime base, from a rootfs: the dynamic loader, libc, libgcc_s and the CA
# certificates, with their symbolic links.
runtime_files() {
  local rootfs=$1 link
  # Debian's merged /usr: /lib, /lib64, /bin and /sbin are links into /usr, and dpkg names files by them.
  for link in bin lib lib64 sbin; do if [ -L "$rootfs/$link" ]; then printf 'usr/%s\n%s\n' "$link" "$link"; fi; done
  chroot "$rootfs" dpkg-query -L libc6 libgcc-s1 | while read -r f; do
    if [ -f "$rootfs$f" ] || [ -L "$rootfs$f" ]; then echo "${f#/}"; fi
  done | grep -v -E '^usr/share/(doc|lintian|man)/'
  echo etc/ssl/certs/ca-certificates.crt
}

make_bases() {
  local rootfs c mnt sysroot
  rootfs=$(mktemp -d "$CACHE/rootfs.XXXXXX")
  log "debootstrap $SUITE from $(debian_mirror) (about a minute)"
  debootstrap --variant=minbase --include=gcc,libc6-dev,make,ca-certificates "$SUITE" "$rootfs" "$(debian_mirror)" >&2
  c=$(buildah_ from scratch)
  mnt=$(buildah_ mount "$c")
  cp -a "$rootfs/." "$mnt/"
  sysroot=$(rustc --print sysroot)
  mkdir -p "$mnt/usr/local/rust" "$mnt/usr/local/cargo"
  for d in bin lib libexec etc; do if [ -e "$sysroot/$d" ]; then cp -a "$sysroot/$d" "$mnt/usr/local/rust/"; fi; done
  # The machine's own trust store: whatever it reaches the crate registry through, the build does too.
  cp /etc/ssl/certs/ca-certificates.crt "$mnt/etc/ssl/certs/ca-certificates.crt"
  if [ -f "${CARGO_HOME:-$HOME/.cargo}/config.toml" ]; then cp "${CARGO_HOME:-$HOME/.cargo}/config.toml" "$mnt/usr/local/cargo/"; fi
  buildah_ umount "$c" >/dev/null
  buildah_ config --env CARGO_HOME=/usr/local/cargo \
    --env PATH=/usr/local/rust/bin:/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$c"
  buildah_ commit -q "$c" "$(build_base)" >/dev/null && buildah_ rm "$c" >/dev/null
  c=$(buildah_ from scratch)
  mnt=$(buildah_ mount "$c")
  runtime_files "$rootfs" | tar -C "$rootfs" -c --no-recursion -T - | tar -C "$mnt" -x
  mkdir -p "$mnt/tmp" "$mnt/home/nonroot" && chmod 1777 "$mnt/tmp" && chown 65532:65532 "$mnt/home/nonroot"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' > "$mnt/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' > "$mnt/etc/group"
  buildah_ umount "$c" >/dev/null
  buildah_ config --user 65532:65532 --workingdir /home/nonroot "$c"
  buildah_ commit -q "$c" "$(runtime_base)" >/dev/null && buildah_ rm "$c" >/dev/null
  rm -rf "$rootfs"
}

# Removes the bases of other recipes.
remove_old_bases() {
  local image
  for image in $(buildah_ images --format '{{.Name}}:{{.Tag}}' | grep -E '/farm-(build|runtime)-base:' | grep -v ":$(bases_hash)$"); do
    buildah_ rmi "$image" >/dev/null
  done
  buildah_ rmi --prune >/dev/null 2>&1 || true
}

ensure_bases() {
  ensure_tools
  mkdir -p "$CACHE"
  exec 8>"$CACHE/.image-lock"
  flock 8
  if ! buildah_ inspect --type image "$(build_base)" >/dev/null 2>&1 ||
     ! buildah_ inspect --type image "$(runtime_base)" >/dev/null 2>&1; then
    # What a failed or interrupted run left: its rootfs and working containers.
    find "$CACHE" -mindepth 1 -maxdepth 1 -name 'rootfs.*' -exec rm -rf {} +
    buildah_ rm --all >/dev/null 2>&1 || true
    make_bases
    remove_old_bases
  fi
}

# The image the Deployment runs: the one name in manifests/base/deployment.yaml.
default_name() { sed -n 's/^ *image: *//p' "$ROOT/manifests/base/deployment.yaml" | head -n1; }

# A short name as the CRI (and docker) resolves it: docker.io/library/NAME.
qualified() {
  local name=$1 first=${1%%/*}
  if [[ $name != */* ]]; then echo "docker.io/library/$name"
  elif [[ $first != *.* && $first != *:* && $first != localhost ]]; then echo "docker.io/$name"
  else echo "$name"; fi
}

# How the Dockerfile's RUN steps are isolated: by the OCI runtime (buildah's default), except on
# a machine whose cgroups are hybrid with controllers on the cgroup2 hierarchy (cgroup v1 with,
# say, hugetlb only on v2), where Debian's crun refuses every container ("cgroups in hybrid mode
# not supported"): there, a chroot, which needs no runtime and no cgroup.
isolation() {
  if [ -n "$(cat /sys/fs/cgroup/unified/cgroup.controllers 2>/dev/null)" ]; then
    echo chroot
  else
    echo oci
  fi
}

build() {
  local name=${1:-$(default_name)} start=$SECONDS profile=${FARM_IMAGE_PROFILE:-release}
  ensure_bases
  log "building $name from the Dockerfile with the $profile profile (a cold build takes several minutes)"
  buildah_ bud --isolation "$(isolation)" --network host -q -t "$name" \
    --build-arg "BUILD_IMAGE=$(build_base)" --build-arg "RUNTIME_IMAGE=$(runtime_base)" \
    --build-arg "CARGO_PROFILE=$profile" \
    -f "$ROOT/Dockerfile" "$ROOT" >/dev/null
  buildah_ rmi --prune >/dev/null 2>&1 || true  # the image this one replaced
  log "built $name in $((SECONDS - start)) s: $(size "$name")"
}

# etcd's image as the StatefulSet of manifests/ha names it (quay.io/coreos/etcd:vX.Y.Z, etcd's own
# release image, with the binary at /usr/local/bin/etcd): the runtime base and the etcd
# scripts/control-plane.sh builds, which must be the version the name says.
etcd_image() {
  local name=$1 etcd version c tool
  etcd=$(ensure_etcd)
  version=$("$etcd" --version | sed -n 's/^etcd Version: //p')
  if [ "v$version" != "${name##*:}" ]; then
    log "the manifests name $name, but the etcd built here is $version: change the tag in manifests/ha/etcd.yaml"; return 1
  fi
  ensure_bases
  c=$(buildah_ from "$(runtime_base)")
  # etcd, etcdctl and etcdutl in /usr/local/bin, as etcd's release image has them.
  for tool in etcd etcdctl etcdutl; do
    buildah_ copy -q --chmod 0755 "$c" "$(dirname "$etcd")/$tool" "/usr/local/bin/$tool" >/dev/null
  done
  buildah_ config --cmd '["/usr/local/bin/etcd"]' "$c"
  buildah_ commit -q --rm "$c" "$name" >/dev/null
  log "built $name (etcd $version): $(size "$name")"
}

# The node's own images (scripts/node.sh), as OCI archives in DIR: the Pods' pause container (a
# static build of scripts/node/pause.c) and a workload image with a shell (Debian's busybox-static).
node_images() {
  local dir=$1 pause=$2 workload=$3 c tmp
  mkdir -p "$dir"
  tmp=$(mktemp -d)
  gcc -static -O2 -o "$tmp/pause" "$ROOT/scripts/node/pause.c"
  c=$(buildah_ from scratch)
  buildah_ copy -q "$c" "$tmp/pause" /pause >/dev/null
  buildah_ config --entrypoint '["/pause"]' "$c"
  buildah_ commit -q --rm "$c" "$pause" >/dev/null
  mkdir -p "$tmp/busybox/bin" "$tmp/busybox/tmp" && chmod 1777 "$tmp/busybox/tmp"
  cp /bin/busybox "$tmp/busybox/bin/"
  for applet in $(/bin/busybox --list); do [ "$applet" = busybox ] || ln -s busybox "$tmp/busybox/bin/$applet"; done
  c=$(buildah_ from scratch)
  buildah_ copy -q "$c" "$tmp/busybox" / >/dev/null
  buildah_ config --cmd '["sh"]' --env PATH=/bin "$c"
  buildah_ commit -q --rm "$c" "$workload" >/dev/null
  archive "$pause" "$dir/pause.tar"
  archive "$workload" "$dir/workload.tar"
  buildah_ rmi --prune >/dev/null 2>&1 || true  # the images these replaced
  rm -rf "$tmp"
}

# Every image the install manifests name (the generated app.yaml files aside).
manifest_images() {
  find "$ROOT/manifests" -name '*.yaml' ! -name app.yaml -exec sed -n 's/^ *image: *//p' {} + | sort -u
}

size() { buildah_ images --format '{{.Size}}' "$1"; }

archive() {
  rm -f "$2"
  buildah_ push -q "$1" "oci-archive:$2:$(qualified "$1")"
}

case "${1:-}" in
  build) build "${2:-}" ;;
  etcd) etcd_image "${2:?name}" ;;
  archive) archive "${2:?name}" "${3:?file}" ;;
  size) size "${2:?name}" ;;
  bases) ensure_bases; build_base; runtime_base ;;
  qualified) qualified "${2:?name}" ;;
  node-images) ensure_tools; node_images "${2:?dir}" "${3:?pause image}" "${4:?workload image}" ;;
  manifest-images) manifest_images ;;
  default-name) default_name ;;
  *) echo "usage: $0 build [NAME] | archive NAME FILE | size NAME | bases" >&2; exit 2 ;;
esac
