#!/usr/bin/env bash
# Puts Debian's nginx binary in $FARM_CACHE/nginx (FARM_CACHE defaults to ~/.cache/farm-apiserver)
# for `make bench`, which compares large LISTs with nginx serving the same bytes over TLS. The
# package is downloaded with the machine's own apt configuration and unpacked, not installed: no
# service starts, nothing outside the cache changes. Prints the binary's path.
# An nginx already on the PATH (or named by NGINX) is used as it is.
set -euo pipefail

if command -v "${NGINX:-nginx}" >/dev/null 2>&1; then
  command -v "${NGINX:-nginx}"
  exit 0
fi
dir="${FARM_CACHE:-$HOME/.cache/farm-apiserver}/nginx"
binary="$dir/root/usr/sbin/nginx"
if ! "$binary" -v >/dev/null 2>&1; then
  echo "unpacking Debian's nginx into $dir" >&2
  rm -rf "$dir"
  mkdir -p "$dir"
  # apt-get download writes into the current directory; apt's sandbox user may not reach it.
  chmod 777 "$dir"
  (cd "$dir" && apt-get download -qq nginx >/dev/null 2>&1 || { apt-get update -qq && apt-get download -qq nginx; })
  dpkg -x "$dir"/nginx_*.deb "$dir/root"
  "$binary" -v >/dev/null 2>&1
fi
echo "$binary"
