#!/usr/bin/env bash
# Installs what the tests need beyond a Rust toolchain:
# - kubectl, from Debian's kubernetes-client package when missing, unless `KUBECTL` names one
#   (the machine image normally ships it);
# - the official Kubernetes Python client (`kubernetes` on PyPI, the version below) in a virtualenv
#   of its own, $FARM_CACHE/python-kubernetes-<version> (FARM_CACHE defaults to
#   ~/.cache/farm-apiserver), for tests/python_client.rs. pip uses the machine's own configuration
#   (pip.conf, PIP_* variables) to reach the package index.
# Building and running the server need nothing here; etcd, kube-apiserver and
# kube-controller-manager come with scripts/control-plane.sh binaries.
set -euo pipefail

PYTHON_CLIENT_VERSION=37.0.2

# One at a time with the other scripts' (scripts/control-plane.sh apt_install).
apt_install() (
  export DEBIAN_FRONTEND=noninteractive
  exec 9>/run/lock/farm-apt.lock && flock 9
  apt-get update -qq
  apt-get install -o DPkg::Lock::Timeout=600 -y -qq "$@" >/dev/null
)

if ! command -v "${KUBECTL:-kubectl}" >/dev/null 2>&1; then
  echo "installing Debian's kubernetes-client (kubectl)" >&2
  apt_install kubernetes-client
fi
echo "kubectl: $(command -v "${KUBECTL:-kubectl}")"

venv="${FARM_CACHE:-$HOME/.cache/farm-apiserver}/python-kubernetes-$PYTHON_CLIENT_VERSION"
installed() { "$venv/bin/python" -c "import kubernetes, sys; sys.exit(kubernetes.__version__ != '$PYTHON_CLIENT_VERSION')" 2>/dev/null; }
if ! installed; then
  if ! python3 -m venv --help >/dev/null 2>&1; then
    echo "installing Debian's python3-venv" >&2
    apt_install python3 python3-venv
  fi
  echo "installing the Python client kubernetes==$PYTHON_CLIENT_VERSION in $venv" >&2
  rm -rf "$venv"
  python3 -m venv "$venv"
  "$venv/bin/python" -m pip install --quiet "kubernetes==$PYTHON_CLIENT_VERSION"
  installed
fi
echo "python client: $venv/bin/python (kubernetes $PYTHON_CLIENT_VERSION)"
