#!/usr/bin/env bash
# k8s.io/sample-apiserver at the reference release beside a control plane of
# scripts/control-plane.sh, for the bench's side-by-side comparison (issue 60; the recipe and
# why each flag: benches/load/peers_setup.md):
#
#   scripts/sample-apiserver.sh up DIR     DIR holds a control plane started by `control-plane.sh up DIR`:
#                                          sample-apiserver on its etcd (prefix /registry/wardle.example.com),
#                                          on a free loopback port, its identity a client certificate
#                                          of the cluster's CA with the RBAC it needs, registered as the
#                                          APIService v1alpha1.wardle.example.com (an ExternalName Service
#                                          to localhost); returns once the APIService is Available.
#                                          Appends WARDLE_PORT and SAMPLE_APISERVER_BINARY to DIR/env; its
#                                          pid is DIR/sample-apiserver.pid.
#   scripts/sample-apiserver.sh down DIR   stops it (before the control plane: it retries etcd forever)
#   scripts/sample-apiserver.sh start DIR  after `up` and `down`: starts it again as `up` did, on its
#                                          port, and returns at once (the bench times its start)
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
log() { echo "sample-apiserver: $*" >&2; }

# A client certificate (CN wardle-apiserver) and a serving certificate (the name the aggregator
# checks, api.wardle.svc, and loopback) from the cluster's CA, and the kubeconfig of that identity.
certificates() {
  local d=$1
  (
    cd "$d"
    openssl req -newkey rsa:2048 -nodes -keyout wardle-client.key -out wardle-client.csr -subj "/CN=wardle-apiserver" 2>/dev/null
    openssl x509 -req -in wardle-client.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile client.cnf -extensions ext -out wardle-client.crt 2>/dev/null
    printf '[ext]\nsubjectAltName = DNS:api.wardle.svc,DNS:localhost,IP:127.0.0.1\nextendedKeyUsage = serverAuth\n' > wardle-serving.cnf
    openssl req -newkey rsa:2048 -nodes -keyout wardle-serving.key -out wardle-serving.csr -subj "/CN=api.wardle.svc" 2>/dev/null
    openssl x509 -req -in wardle-serving.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 2 -extfile wardle-serving.cnf -extensions ext -out wardle-serving.crt 2>/dev/null
    sed -e "s#$d/admin.crt#$d/wardle-client.crt#" -e "s#$d/admin.key#$d/wardle-client.key#" \
        -e "s#name: admin#name: wardle#" -e "s#user: admin#user: wardle#" admin.kubeconfig > wardle.kubeconfig
  )
}

# What it needs of the kube-apiserver: sample-apiserver's artifacts/example RBAC for a user
# instead of its ServiceAccount, plus the MutatingAdmissionPolicy resources its ClusterRole
# lacks (without them every create is refused while /readyz says ok).
rbac() {
  kubectl apply -f - >/dev/null <<'YAML'
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "wardle:system:auth-delegator"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:auth-delegator"}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: wardle-apiserver}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: wardle-auth-reader, namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: wardle-apiserver}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: aggregated-apiserver-clusterrole}
rules:
- apiGroups: [""]
  resources: [namespaces]
  verbs: [get, watch, list]
- apiGroups: [admissionregistration.k8s.io]
  resources: [mutatingwebhookconfigurations, validatingwebhookconfigurations, validatingadmissionpolicies, validatingadmissionpolicybindings, mutatingadmissionpolicies, mutatingadmissionpolicybindings]
  verbs: [get, watch, list]
- apiGroups: [flowcontrol.apiserver.k8s.io]
  resources: [prioritylevelconfigurations, flowschemas]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: sample-apiserver-clusterrolebinding}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: aggregated-apiserver-clusterrole}
subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: wardle-apiserver}]
YAML
}

# The ExternalName Service to localhost and the APIService trusting the cluster's CA.
register() {
  local d=$1 port=$2
  kubectl apply -f - >/dev/null <<YAML
apiVersion: v1
kind: Namespace
metadata: {name: wardle}
---
apiVersion: v1
kind: Service
metadata: {name: api, namespace: wardle}
spec: {type: ExternalName, externalName: localhost, ports: [{port: $port, protocol: TCP}]}
---
apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1alpha1.wardle.example.com}
spec:
  group: wardle.example.com
  version: v1alpha1
  groupPriorityMinimum: 1000
  versionPriority: 15
  service: {name: api, namespace: wardle, port: $port}
  caBundle: $(base64 -w0 "$d/ca.crt")
YAML
  kubectl wait --for=condition=Available apiservice/v1alpha1.wardle.example.com --timeout=60s >/dev/null
}

# Starts the binary of DIR/env (SAMPLE_APISERVER_BINARY) on the control plane of $1 and port $2,
# in the background.
start() {
  local d=$1 port=$2
  # shellcheck disable=SC1091
  . "$d/env"
  "$SAMPLE_APISERVER_BINARY" \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" --etcd-prefix /registry/wardle.example.com \
    --bind-address 127.0.0.1 --secure-port "$port" \
    --tls-cert-file "$d/wardle-serving.crt" --tls-private-key-file "$d/wardle-serving.key" \
    --kubeconfig "$d/wardle.kubeconfig" \
    --authentication-kubeconfig "$d/wardle.kubeconfig" \
    --authorization-kubeconfig "$d/wardle.kubeconfig" \
    >>"$d/sample-apiserver.log" 2>&1 &
  echo $! > "$d/sample-apiserver.pid"
}

up() {
  local d port
  d=$(cd "$1" && pwd)
  export KUBECONFIG="$d/admin.kubeconfig"
  port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  certificates "$d"
  rbac
  printf 'SAMPLE_APISERVER_BINARY=%s\nWARDLE_PORT=%s\n' "$(bash "$ROOT/scripts/control-plane.sh" sample-apiserver)" "$port" >> "$d/env"
  start "$d" "$port"
  until curl -sf --cacert "$d/ca.crt" --cert "$d/admin.crt" --key "$d/admin.key" "https://127.0.0.1:$port/readyz" >/dev/null; do
    kill -0 "$(cat "$d/sample-apiserver.pid")" 2>/dev/null || { log "it exited:"; tail -n 30 "$d/sample-apiserver.log" >&2; exit 1; }
    sleep 0.5
  done
  register "$d" "$port"
  log "serving on 127.0.0.1:$port, registered as v1alpha1.wardle.example.com"
}

down() {
  local pid_file="$1/sample-apiserver.pid" pid
  [ -f "$pid_file" ] || return 0
  pid=$(cat "$pid_file")
  kill "$pid" 2>/dev/null || true
  while kill -0 "$pid" 2>/dev/null; do sleep 0.2; done
  rm -f "$pid_file"
}

case "${1:-}" in
  up) up "${2:?directory}" ;;
  start) d=$(cd "${2:?directory}" && pwd); . "$d/env"; start "$d" "${WARDLE_PORT:?no WARDLE_PORT in $d/env: run up first}" ;;
  down) down "${2:?directory}" ;;
  *) sed -n '2,16p' "$0" >&2; exit 2 ;;
esac
