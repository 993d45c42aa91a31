#!/usr/bin/env bash
# The development loop without mirrord (which cannot be had here): a farm-apiserver built from
# this checkout runs on your machine in the place of the installed Deployment's Pods, with their
# configuration, and the cluster's aggregator sends it the group's requests.
#
#   scripts/dev.sh --address IP [--namespace farm-system] [--binary PATH] [-- serve flags...]
#   make dev ADDRESS=IP
#
# What it does, and undoes when the binary exits (Ctrl-C), as it prints:
#   1. copies the Pod's configuration: the Deployment's FARM_* environment (values only), the
#      audit policy of its ConfigMap, a token of its ServiceAccount (one hour, the TokenRequest
#      API, as the Pod's projected volume has one) and the cluster's CA (kube-root-ca.crt), in a
#      kubeconfig whose namespace is the Pod's;
#   2. scales the Deployment to 0, takes the selector off its Service and gives the Service
#      Endpoints of IP:8443 (the binary listens there): the aggregator's requests come to you;
#   3. runs the binary (default: target/debug/farm-apiserver, built first) with that
#      configuration, binding IP, its audit log in a file of the work folder.
# Caveats: the cluster (its kube-apiserver and, without --enable-aggregator-routing, kube-proxy
# on its nodes) must reach IP:8443; the binary authenticates as the ServiceAccount, so it reads
# and writes what the install's RBAC grants, and its token ends after an hour (run again); while
# it runs, the group is served by your process only, and in-memory Llamas are your process's
# (the Pods' are gone with the scale to 0); a managed serving certificate is read from the
# cluster's Secret, so the aggregator trusts your process as it trusted the Pods.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KUBECTL="${KUBECTL:-kubectl}"
NS=farm-system NAME=farm-apiserver ADDRESS="" BINARY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --address) ADDRESS=$2; shift 2 ;;
    --namespace) NS=$2; shift 2 ;;
    --binary) BINARY=$2; shift 2 ;;
    --) shift; break ;;
    *) echo "usage: $0 --address IP [--namespace NS] [--binary PATH] [-- serve flags...]" >&2; exit 2 ;;
  esac
done
[ -n "$ADDRESS" ] || { echo "dev: --address: an address of this machine the cluster reaches" >&2; exit 2; }
if [ -z "$BINARY" ]; then
  (cd "$ROOT" && cargo build --locked --quiet)
  BINARY="$ROOT/target/debug/farm-apiserver"
fi
log() { echo "dev: $*" >&2; }
k() { "$KUBECTL" -n "$NS" "$@"; }

work=$(mktemp -d)
replicas=$(k get deployment "$NAME" -o jsonpath='{.spec.replicas}')
selector=$(k get service "$NAME" -o jsonpath='{.spec.selector}')

# 1. The Pod's configuration.
k get deployment "$NAME" -o json | python3 -c '
import json, shlex, sys
container = json.load(sys.stdin)["spec"]["template"]["spec"]["containers"][0]
for variable in container.get("env", []):
    if "value" in variable:
        print("export %s=%s" % (variable["name"], shlex.quote(variable["value"])))
    else:
        print("echo \"dev: %s comes from valueFrom, left out\" >&2" % variable["name"])
' > "$work/env"
if k get configmap "$NAME-audit-policy" >/dev/null 2>&1; then
  k get configmap "$NAME-audit-policy" -o jsonpath='{.data.policy\.yaml}' > "$work/policy.yaml"
fi
k create token "$NAME" --duration=1h > "$work/token"
k get configmap kube-root-ca.crt -o jsonpath='{.data.ca\.crt}' > "$work/ca.crt"
server=$("$KUBECTL" config view --minify -o jsonpath='{.clusters[0].cluster.server}')
cat > "$work/kubeconfig" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters: [{name: cluster, cluster: {server: "$server", certificate-authority: "$work/ca.crt"}}]
users: [{name: $NAME, user: {tokenFile: "$work/token"}}]
contexts: [{name: dev, context: {cluster: cluster, user: $NAME, namespace: $NS}}]
current-context: dev
KUBECONFIG

restore() {
  set +e
  log "restoring: the Service's selector, its Endpoints, $replicas replica(s)"
  k patch service "$NAME" --type=merge -p "{\"spec\":{\"selector\":$selector}}" >/dev/null
  k delete endpoints "$NAME" --ignore-not-found >/dev/null 2>&1
  k scale deployment "$NAME" --replicas="$replicas" >/dev/null
  rm -rf "$work"
  log "restored"
}
trap restore EXIT

# 2. The aggregator's traffic to this machine.
k scale deployment "$NAME" --replicas=0 >/dev/null
k patch service "$NAME" --type=json -p '[{"op":"remove","path":"/spec/selector"}]' >/dev/null
k delete endpoints "$NAME" --ignore-not-found >/dev/null 2>&1
k apply -f - >/dev/null 2>&1 <<ENDPOINTS
{"apiVersion": "v1", "kind": "Endpoints", "metadata": {"name": "$NAME", "namespace": "$NS"},
 "subsets": [{"addresses": [{"ip": "$ADDRESS"}], "ports": [{"name": "https", "port": 8443, "protocol": "TCP"}]}]}
ENDPOINTS
log "changed: Deployment $NS/$NAME scaled from $replicas to 0; Service $NS/$NAME without its selector, its Endpoints $ADDRESS:8443"
log "the local process is ServiceAccount $NS/$NAME (a token of one hour): it may do what its RBAC grants:"
"$KUBECTL" auth can-i --list --kubeconfig "$work/kubeconfig" 2>/dev/null | grep -E 'pods|namespaces|secrets|apiservices|tokenreviews|subjectaccessreviews|configmaps' | sed 's/^/dev:   /' >&2 || true
log "its configuration and logs: $work"

# 3. The binary, with the Pod's environment and this machine's files.
set +u
# shellcheck disable=SC1091
source "$work/env"
set -u
export FARM_KUBECONFIG="$work/kubeconfig" FARM_BIND_ADDRESS="$ADDRESS" FARM_SECURE_PORT=8443
if [ -f "$work/policy.yaml" ]; then
  export FARM_AUDIT_POLICY_FILE="$work/policy.yaml" FARM_AUDIT_LOG_PATH="$work/audit.log"
fi
"$BINARY" serve "$@" &
child=$!
# Ctrl-C or SIGTERM: the binary shuts down gracefully, then the EXIT trap restores the install.
trap 'kill -TERM $child 2>/dev/null' INT TERM
while kill -0 "$child" 2>/dev/null; do wait "$child" || true; done
