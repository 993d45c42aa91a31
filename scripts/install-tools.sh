#!/usr/bin/env bash
# Installs what the test suite needs on a fresh machine: kubectl (for the kubectl tests).
# The machine image normally ships kubectl; Debian's kubernetes-client is the fallback.
set -euo pipefail

if ! command -v kubectl >/dev/null 2>&1 && [ -z "${KUBECTL:-}" ]; then
  echo "kubectl not found: installing Debian's kubernetes-client" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq kubernetes-client >/dev/null
fi
echo "kubectl: $(command -v "${KUBECTL:-kubectl}")"
