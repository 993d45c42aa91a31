#!/usr/bin/env bash
# Installs what building and testing need on a fresh machine, from Debian's packages when missing:
#   protoc (protobuf-compiler): the etcd client's gRPC code is generated at build time;
#   kubectl (kubernetes-client): for the kubectl tests (`all`, the default; `build` skips it).
# The machine image normally ships kubectl. etcd comes with scripts/control-plane.sh binaries.
set -euo pipefail

missing=()
if ! command -v protoc >/dev/null 2>&1 && [ -z "${PROTOC:-}" ]; then
  missing+=(protobuf-compiler)
fi
if [ "${1:-all}" = all ] && ! command -v kubectl >/dev/null 2>&1 && [ -z "${KUBECTL:-}" ]; then
  missing+=(kubernetes-client)
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing Debian packages: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq "${missing[@]}" >/dev/null
fi
echo "protoc: $(command -v "${PROTOC:-protoc}")"
if [ "${1:-all}" = all ]; then echo "kubectl: $(command -v "${KUBECTL:-kubectl}")"; fi
