#!/usr/bin/env bash
# Installs what the tests need beyond a Rust toolchain, from Debian's packages when missing:
# kubectl (kubernetes-client), unless `KUBECTL` names one. The machine image normally ships it.
# Building and running the server need nothing here; etcd, kube-apiserver and
# kube-controller-manager come with scripts/control-plane.sh binaries.
set -euo pipefail

if ! command -v "${KUBECTL:-kubectl}" >/dev/null 2>&1; then
  echo "installing Debian's kubernetes-client (kubectl)" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq kubernetes-client >/dev/null
fi
echo "kubectl: $(command -v "${KUBECTL:-kubectl}")"
