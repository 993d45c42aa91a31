#!/usr/bin/env bash
# A two-node Kubernetes cluster (the release of scripts/control-plane.sh, 1.37.2 by default), each
# node in a network namespace of its own, for the tests that install farm-apiserver as users do:
# the first node runs the control plane (etcd, kube-apiserver with aggregation configured,
# kube-controller-manager, kube-scheduler) and, as both nodes do, containerd 2 + runc + Debian's
# CNI bridge, a kubelet and kube-proxy (iptables), as kind and kubeadm run nodes, with what their
# add-ons give: a cluster DNS (crates/node-dns, for Services and StatefulSet Pods by name) and
# local persistent volumes of a default StorageClass.
#
#   scripts/node.sh up          start it (idempotent: a running node is left as it is); writes
#                               $NODE_DIR/kubeconfig and $NODE_DIR/env (KUBECONFIG, SERVER_IMAGE,
#                               WORKLOAD_IMAGE, NODE_NETNS, NODE_IP, CTR: containerd's client)
#   scripts/node.sh exec CMD…   run CMD inside the node's network namespace, where its addresses are
#   scripts/node.sh image       build every image the install manifests name (scripts/image.sh) and
#                               load them into the node under those names
#   scripts/node.sh recycle     empty the node's released persistent volumes and offer them again
#   scripts/node.sh down        stop and remove everything `up` made
#   scripts/node.sh status      exit 0 when the node runs
#   scripts/node.sh aggregator-routing true|false
#                               restart the kube-apiserver with --enable-aggregator-routing so (up
#                               starts it with true)
#   scripts/node.sh ctr NODE ARG…
#                               containerd's client for node NODE (farm-node or farm-node-2)
#   scripts/node.sh power-off farm-node-2
#                               the second node lost as a machine is when its power goes: every
#                               process of it killed at once (kubelet, containerd, kube-proxy,
#                               containers), its link cut, so that packets to it go unanswered
#   scripts/node.sh power-on farm-node-2
#                               the node boots again: /run emptied, its daemons started, its link up
#
# NODE_DIR defaults to target/node. The first node, `farm-node`, lives in the network namespace
# `farmnode-<hash of NODE_DIR>`: its address (10.200.0.1 on the bridge br-node), its Pods' bridge
# (10.244.0.0/24) and the Services' range (10.96.0.0/16) exist only there, and it has no default
# route, so nothing is sent outside it (loopback is its own). The second, `farm-node-2`, lives in
# `farmnode-<hash of NODE_DIR/nodes/farm-node-2>`, plugged into br-node by a veth pair
# (10.200.0.2, its Pods 10.244.1.0/24, routed through it). Each node's daemons share a private
# mount namespace, where the folders containerd and the kubelet use whatever they are told
# (/run/containerd, /var/lib/cni, /var/lib/kubelet/device-plugins, /var/log/pods,
# /var/log/containers, /run/netns) are folders of the node's own folder: every mount they make
# disappears with them. Every process of a node lives in the cgroup `<this shell's>/farmnode-<hash>`
# (daemons in `daemons`, containers in `pods`, the kubelet's --cgroup-root), which `down` freezes,
# kills and removes. A failed `up` runs `down`.
#
# Binaries: etcd and kube-* from scripts/control-plane.sh, containerd and runc from
# tools/container-runtime (each built once into $FARM_CACHE from the Go module proxy), the CNI
# plugins, iptables, conntrack and buildah from Debian, installed when missing.
set -Eeuo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=scripts/control-plane.sh
. "$ROOT/scripts/control-plane.sh"
NODE_DIR=$(realpath -m "${NODE_DIR:-$ROOT/target/node}")
ID=$(printf %s "$NODE_DIR" | sha256sum | cut -c1-8)
NS=farmnode-$ID
NETNS=/var/run/netns/$NS
NODE_NAME=farm-node
NODE_IP=10.200.0.1
POD_SUBNET=10.244.0.0/24
# The control plane's, whichever node the variables above describe (see as_worker).
CP_DIR=$NODE_DIR
CP_NS=$NS
CP_NETNS=$NETNS
CP_IP=$NODE_IP
CLUSTER_CIDR=10.244.0.0/16
SERVICE_RANGE=10.96.0.0/16
# The second node: name, address, Pods' subnet, persistent volumes. One volume: of the three
# etcd members of manifests/ha it holds one, so that losing it keeps etcd's quorum.
WORKER=(farm-node-2 10.200.0.2 10.244.1.0/24 1)
PAUSE_IMAGE=k8s.gcr.io/pause:3.2
WORKLOAD_IMAGE=localhost/farm-workload:1
CLUSTER_DOMAIN=cluster.local
VOLUMES=4
# What `kubectl get nodes` shows: the node's name.
nodes() { echo "$NODE_NAME,${WORKER[0]}"; }
log() { echo "node: $*" >&2; }
image_sh() { bash "$ROOT/scripts/image.sh" "$@"; }
# `sh -c "$JOIN" FILE CMD…`: joins the cgroups listed in FILE, then becomes CMD (same process id).
# shellcheck disable=SC2016
JOIN='while read -r f; do echo $$ > "$f"; done < "$0"; exec "$@"'

# In the node's network and mount namespaces (those of the holder process).
in_node() { nsenter --target "$(cat "$NODE_DIR/pids/holder")" --net --mount -- "$@"; }
kubectl_() { nsenter --net="$CP_NETNS" -- kubectl --kubeconfig "$CP_DIR/kubeconfig" "$@"; }
# containerd's client (without its warning, on every command, that cgroup v1 is deprecated).
ctr_() {
  CONTAINERD_SUPPRESS_DEPRECATION_WARNINGS=1 "$(container_runtime_dir)/ctr" --address "$NODE_DIR/containerd.sock" "$@"
}

ensure_packages() {
  local wanted=(containernetworking-plugins iptables conntrack buildah busybox-static libseccomp-dev) missing=() p
  # Installed, not merely known to dpkg (a removed package keeps its configuration and its status).
  for p in "${wanted[@]}"; do
    dpkg-query -W -f '${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
  done
  if [ ${#missing[@]} -gt 0 ]; then log "installing Debian's ${missing[*]}"; apt_install "${missing[@]}"; fi
}

# --- the container runtime -------------------------------------------------------------------

# containerd 2 (containerd, its runc shim and ctr) and runc, built with the machine's Go from the
# Go module proxy by tools/container-runtime, whose go.mod names their versions: Kubernetes 1.37
# supports containerd 2.3 and 2.4 (Debian 12 has 1.6, which 1.35 was the last to support).
# containerd static (CGO_ENABLED=0, without the btrfs, devmapper and zfs snapshotters, which need
# C libraries and which the configuration disables anyway); runc with cgo, which its nsenter needs,
# and seccomp from Debian's libseccomp, as its release builds have. Cached in $FARM_CACHE under the
# hash of the recipe, as the control plane's binaries are.
RUNTIME_MODULE=$ROOT/tools/container-runtime
RUNTIME_BINARIES="containerd containerd-shim-runc-v2 ctr runc"
module_version() { awk -v m="$1" '$1 == m && $2 ~ /^v/ { print $2; exit }' "$RUNTIME_MODULE/go.mod"; }
CONTAINERD_VERSION=$(module_version github.com/containerd/containerd/v2)
RUNC_VERSION=$(module_version github.com/opencontainers/runc)

build_container_runtime() {
  local out=$1 work cmd=github.com/containerd/containerd/v2/cmd
  work=$(mktemp -d "$CACHE/build.XXXXXX")
  cp "$RUNTIME_MODULE/go.mod" "$RUNTIME_MODULE/go.sum" "$work/"
  rm -rf "$out.partial" && mkdir -p "$out.partial"
  # (containerd's own build sets its version the same way, from `git describe`.)
  (cd "$work" && CGO_ENABLED=0 go build -trimpath -tags 'no_btrfs no_devmapper no_zfs' \
      -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$CONTAINERD_VERSION" \
      -o "$out.partial/" "$cmd/containerd" "$cmd/containerd-shim-runc-v2" "$cmd/ctr" >&2 &&
    CGO_ENABLED=1 go build -trimpath -tags seccomp -ldflags '-s -w' -o "$out.partial/runc" github.com/opencontainers/runc >&2)
  rm -rf "$out" && mv "$out.partial" "$out"
  rm -rf "$work"
}

container_runtime_dir() {
  echo "$CACHE/container-runtime-$CONTAINERD_VERSION-$({ cat "$RUNTIME_MODULE/go.mod" "$RUNTIME_MODULE/go.sum"
    declare -f build_container_runtime; } | sha256sum | cut -c1-12)"
}

# Why the binaries in $1 cannot be used (nothing when they can).
container_runtime_problem() {
  local binary
  for binary in $RUNTIME_BINARIES; do
    if [ ! -x "$1/$binary" ]; then echo "no $binary in $1"; return; fi
  done
  if ! "$1/containerd" --version 2>&1 | grep -qw -- "$CONTAINERD_VERSION"; then
    echo "$1/containerd --version does not print $CONTAINERD_VERSION"
  elif [ "$("$1/runc" --version 2>&1 | head -n1)" != "runc version ${RUNC_VERSION#v}" ]; then
    echo "$1/runc --version does not print runc version ${RUNC_VERSION#v}"
  fi
}

# The folder of containerd's and runc's binaries, built when the cache lacks them.
ensure_container_runtime() {
  local dir
  dir=$(container_runtime_dir)
  ensure_tools "$dir" build_container_runtime container_runtime_problem 'container-runtime-*' \
    "containerd $CONTAINERD_VERSION and runc $RUNC_VERSION"
  echo "$dir"
}

# --- cgroups ---------------------------------------------------------------------------------

# Every cgroup (v1 and the hybrid v2) hierarchy mounted, one folder each.
hierarchies() { awk '$3 == "cgroup" || $3 == "cgroup2" { print $2 }' /proc/self/mounts | sort -u; }

# This node's cgroup path, the same in every hierarchy (the kubelet's --cgroup-root needs one):
# under the deepest cgroup this shell is in, so the node stays inside whatever limits it has.
cgroup_path() {
  local base
  base=$(awk -F: '{ print length($3), $3 }' /proc/self/cgroup | sort -n | tail -n1 | cut -d' ' -f2)
  echo "${base%/}/farmnode-$ID"
}

make_cgroups() {
  local h path d f
  path=$(cgroup_path)
  echo "$path" > "$NODE_DIR/cgroup"
  for h in $(hierarchies); do
    # Each folder made is recorded, parents first, so `down` removes those and no other.
    mkdir -pv "$h$path/daemons" "$h$path/pods" | sed -n "s/^mkdir: created directory '\(.*\)'$/\1/p" >> "$NODE_DIR/cgroup-dirs"
    echo "$h$path/daemons/cgroup.procs" >> "$NODE_DIR/cgroup-procs"
  done
  # A new cpuset cgroup has no CPUs or memory nodes, and no process can join it until it has.
  while read -r d; do
    for f in cpuset.cpus cpuset.mems; do if [ -f "$d/$f" ]; then cat "$(dirname "$d")/$f" > "$d/$f"; fi; done
  done < "$NODE_DIR/cgroup-dirs"
}

# Kills every process in the node's cgroups (frozen first, so none forks meanwhile).
kill_cgroups() {
  local path freezer h
  path=$(cat "$NODE_DIR/cgroup" 2>/dev/null) || return 0
  freezer=$(hierarchies | grep '/freezer$' || true)
  if [ -n "$freezer" ] && [ -d "$freezer$path" ]; then echo FROZEN > "$freezer$path/freezer.state"; fi
  for _ in $(seq 1 50); do
    local pids
    pids=$(for h in $(hierarchies); do find "$h$path" -name cgroup.procs -exec cat {} + 2>/dev/null || true; done | sort -u)
    if [ -z "$pids" ]; then break; fi
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    if [ -n "$freezer" ] && [ -d "$freezer$path" ]; then echo THAWED > "$freezer$path/freezer.state"; fi
    sleep 0.1
  done
  # Thawed again, also when nothing was left to kill: a powered-off node's cgroups are used again.
  if [ -n "$freezer" ] && [ -d "$freezer$path" ]; then echo THAWED > "$freezer$path/freezer.state"; fi
}

remove_cgroups() {
  [ -f "$NODE_DIR/cgroup-dirs" ] || return 0
  local path h
  path=$(cat "$NODE_DIR/cgroup")
  # Folders below ours that runc and the kubelet made, deepest first, then the ones we made.
  for h in $(hierarchies); do
    if [ -d "$h$path" ]; then find "$h$path" -mindepth 1 -depth -type d -exec rmdir {} + 2>/dev/null || true; fi
  done
  tac "$NODE_DIR/cgroup-dirs" | while read -r d; do rmdir "$d" 2>/dev/null || true; done
}

# --- certificates and kubeconfigs -------------------------------------------------------------

cert() {  # cert NAME SUBJECT EXTENSIONS: a certificate signed by the cluster's CA
  local d=$CP_DIR/pki
  openssl req -newkey rsa:2048 -nodes -keyout "$d/$1.key" -out "$d/$1.csr" -subj "$2" 2>/dev/null
  printf '[ext]\nbasicConstraints = CA:FALSE\n%s\n' "$3" > "$d/$1.cnf"
  openssl x509 -req -in "$d/$1.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" -CAcreateserial -days 30 \
    -extfile "$d/$1.cnf" -extensions ext -out "$d/$1.crt" 2>/dev/null
}

make_certs() {
  local d=$CP_DIR/pki client='extendedKeyUsage = clientAuth'
  mkdir -p "$d"
  openssl req -x509 -newkey rsa:2048 -nodes -days 30 -keyout "$d/ca.key" -out "$d/ca.crt" -subj "/CN=farm-node-ca" 2>/dev/null
  cert apiserver "/CN=kube-apiserver" "extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,IP:$NODE_IP,IP:${SERVICE_RANGE%.0/*}.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local"
  cert admin "/O=system:masters/CN=farm-node-admin" "$client"
  cert apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client" "$client"
  cert controller-manager "/CN=system:kube-controller-manager" "$client"
  cert scheduler "/CN=system:kube-scheduler" "$client"
  cert proxy "/CN=system:kube-proxy" "$client"
  openssl genrsa -out "$d/sa.key" 2048 2>/dev/null && openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
  # The aggregator's client certificate and its CA (control-plane.sh's, which reads client.cnf).
  printf '[ext]\n%s\n' "$client" > "$d/client.cnf"
  make_front_proxy_certs "$d" farm-node-front-proxy-ca
}

kubeconfig() {  # kubeconfig FILE CERT: a kubeconfig of the node's kube-apiserver for CERT's identity
  local b64='base64 -w0' d=$CP_DIR/pki
  cat > "$1" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: farm-node
  cluster:
    server: https://$CP_IP:6443
    certificate-authority-data: $($b64 < "$d/ca.crt")
users:
- name: $2
  user:
    client-certificate-data: $($b64 < "$d/$2.crt")
    client-key-data: $($b64 < "$d/$2.key")
contexts:
- name: farm-node
  context: {cluster: farm-node, user: $2, namespace: default}
current-context: farm-node
EOF
}

# --- the daemons --------------------------------------------------------------------------------

start() {  # start NAME CMD…: CMD in the node's namespaces and cgroup, logging to logs/NAME.log
  local name=$1; shift
  (exec nsenter --target "$(cat "$NODE_DIR/pids/holder")" --net --mount -- sh -c "$JOIN" "$NODE_DIR/cgroup-procs" "$@" \
    < /dev/null > "$NODE_DIR/logs/$name.log" 2>&1) &
  echo $! > "$NODE_DIR/pids/$name"
  disown
}

# `start NAME sh -c "$SUPERVISED" supervised CMD…`: CMD started again a second after it exits, as
# the kubelet restarts a control plane's static Pods (kube-scheduler exits on purpose when it finds
# its cache inconsistent, and counts on being restarted).
# shellcheck disable=SC2016
SUPERVISED='while :; do "$@"; echo "node.sh: exited with $?; started again in 1 s" >&2; sleep 1; done'

wait_for() {  # wait_for WHAT SECONDS CMD…: until CMD succeeds; on timeout, what the logs end with
  local what=$1 seconds=$2; shift 2
  local deadline=$((SECONDS + seconds))
  until "$@" >/dev/null 2>&1; do
    if [ "$SECONDS" -ge "$deadline" ]; then
      log "$what: not after ${seconds}s"; tail -n 15 "$NODE_DIR"/logs/*.log >&2; return 1
    fi
    sleep 0.2
  done
}

# Whether process $1 has exited: gone, or a zombie (the daemons' parent, once `up` has exited, is
# this machine's init, which may reap them late; `kill -0` succeeds on a zombie).
stopped() {
  local state
  state=$(ps -o stat= -p "$1" 2>/dev/null) || return 0
  [[ "$state" == Z* ]]
}

own_mount_namespace() { [ "$(readlink "/proc/$1/ns/mnt")" != "$(readlink /proc/self/ns/mnt)" ]; }

# The first node's network namespace: the bridge the nodes share, its address on it.
make_netns() {
  ip netns add "$NS"
  # A route for the Services' range, as a node's default route gives it: connections from the
  # node itself to a cluster IP (the aggregator's, without --enable-aggregator-routing) need one
  # before kube-proxy's rules rewrite their destination; without it, "network is unreachable".
  nsenter --net="$NETNS" sh -c "ip link set lo up && ip link add br-node type bridge &&
    ip addr add $NODE_IP/24 dev br-node && ip link set br-node up && sysctl -qw net.ipv4.ip_forward=1 &&
    ip route add $SERVICE_RANGE dev br-node"
}

# The name, in the first node's namespace, of the veth end plugged into br-node for this worker.
veth() { echo "veth-${NODE_IP##*.}"; }

# A worker's network namespace: a veth pair, one end in br-node, the other its eth0 with its
# address; routes to the other nodes' Pods through their addresses (each way), as a cloud's
# route table or a CNI's host-gw mode gives them, and to the Services' range.
make_worker_netns() {
  ip netns add "$NS"
  ip -n "$CP_NS" link add "$(veth)" type veth peer name eth0 netns "$NS"
  ip -n "$CP_NS" link set "$(veth)" master br-node up
  nsenter --net="$NETNS" sh -c "ip link set lo up && ip addr add $NODE_IP/24 dev eth0 && ip link set eth0 up &&
    sysctl -qw net.ipv4.ip_forward=1 && ip route add $CLUSTER_CIDR via $CP_IP && ip route add $SERVICE_RANGE dev eth0"
  ip -n "$CP_NS" route add "$POD_SUBNET" via "$NODE_IP"
}

# The holder: a process whose only job is to keep the node's private mount namespace (and its
# bind mounts) alive; every daemon of the node enters both namespaces through it.
make_holder() {
  [ -x "$NODE_DIR/bin/pause" ] || gcc -static -O2 -o "$NODE_DIR/bin/pause" "$ROOT/scripts/node/pause.c"
  nsenter --net="$NETNS" unshare --mount --propagation private -- sh -c "$JOIN" "$NODE_DIR/cgroup-procs" "$NODE_DIR/bin/pause" \
    < /dev/null > /dev/null 2>&1 &
  echo $! > "$NODE_DIR/pids/holder"
  disown
  wait_for "the holder's own mount namespace" 5 own_mount_namespace "$(cat "$NODE_DIR/pids/holder")"
  local dir
  for dir in /run/containerd /var/lib/cni /var/lib/kubelet /var/log/pods /var/log/containers /run/netns; do
    if [ ! -d "$dir" ]; then mkdir -p "$dir" && echo "$dir" >> "$NODE_DIR/host-dirs"; fi
    mkdir -p "$NODE_DIR/host$dir"
    in_node mount --bind "$NODE_DIR/host$dir" "$dir"
  done
}

write_configs() {
  # containerd's configuration version 4 (containerd 2.4: its servers are plugins; what
  # `containerd config migrate` writes). NRI is off: its socket would be a host path
  # (/var/run/nri) outside the node's folders.
  cat > "$NODE_DIR/containerd.toml" <<EOF
version = 4
root = "$NODE_DIR/containerd/root"
state = "$NODE_DIR/containerd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.nri.v1.nri"]
[plugins."io.containerd.server.v1.grpc"]
  address = "$NODE_DIR/containerd.sock"
[plugins."io.containerd.server.v1.ttrpc"]
  address = "$NODE_DIR/containerd.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$NODE_DIR/containerd/opt"
[plugins."io.containerd.cri.v1.images"]
  snapshotter = "overlayfs"
  [plugins."io.containerd.cri.v1.images".pinned_images]
    sandbox = "$PAUSE_IMAGE"
[plugins."io.containerd.cri.v1.runtime"]
  # Root here lacks CAP_SYS_RESOURCE: the kubelet's -998 for sandboxes would make runc fail.
  restrict_oom_score_adj = true
  [plugins."io.containerd.cri.v1.runtime".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]
        BinaryName = "$(container_runtime_dir)/runc"
  [plugins."io.containerd.cri.v1.runtime".cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$NODE_DIR/cni"
EOF
  mkdir -p "$NODE_DIR/cni"
  cat > "$NODE_DIR/cni/10-bridge.conflist" <<EOF
{"cniVersion": "0.4.0", "name": "farm-node", "plugins": [
  {"type": "bridge", "bridge": "cni0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
   "ipam": {"type": "host-local", "dataDir": "$NODE_DIR/cni-ipam", "ranges": [[{"subnet": "$POD_SUBNET"}]],
            "routes": [{"dst": "0.0.0.0/0"}]}},
  {"type": "portmap", "capabilities": {"portMappings": true}},
  {"type": "loopback"}]}
EOF
}

# The kube-apiserver, its aggregator sending requests to the endpoints of an APIService's Service
# (`--enable-aggregator-routing=true`, as metrics-server's docs advise) or, $1 = false, to the
# Service's cluster IP through kube-proxy (the kube-apiserver's default, kubeadm's too).
start_apiserver() {
  local p=$CP_DIR/pki
  start kube-apiserver "$(kubernetes_binary kube-apiserver)" --etcd-servers http://127.0.0.1:2379 \
    --bind-address 0.0.0.0 --secure-port 6443 --advertise-address "$NODE_IP" \
    --tls-cert-file "$p/apiserver.crt" --tls-private-key-file "$p/apiserver.key" --client-ca-file "$p/ca.crt" \
    --service-account-key-file "$p/sa.pub" --service-account-signing-key-file "$p/sa.key" \
    --service-account-issuer https://kubernetes.default.svc --service-cluster-ip-range "$SERVICE_RANGE" \
    --authorization-mode Node,RBAC --allow-privileged=true \
    --kubelet-client-certificate "$p/apiserver-kubelet-client.crt" --kubelet-client-key "$p/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types InternalIP \
    --requestheader-client-ca-file "$p/front-proxy-ca.crt" --requestheader-allowed-names front-proxy-client \
    --requestheader-username-headers X-Remote-User --requestheader-group-headers X-Remote-Group \
    --requestheader-extra-headers-prefix X-Remote-Extra- \
    --proxy-client-cert-file "$p/front-proxy-client.crt" --proxy-client-key-file "$p/front-proxy-client.key" \
    --enable-aggregator-routing="$1"
  echo "$1" > "$NODE_DIR/aggregator-routing"
}

# Restarts the kube-apiserver with `--enable-aggregator-routing=$1` unless it runs with it; waits
# until it is ready.
aggregator_routing() {
  # (The node's namespaces, not its kube-apiserver's readiness: this may restart a stopped one.)
  [ -e "$NETNS" ] && kill -0 "$(cat "$NODE_DIR/pids/holder" 2>/dev/null)" 2>/dev/null ||
    { log "the node is not up: scripts/node.sh up first"; return 1; }
  [ "$1" = true ] || [ "$1" = false ] || { log "aggregator-routing: true or false"; return 2; }
  if [ "$(cat "$NODE_DIR/aggregator-routing" 2>/dev/null)" = "$1" ]; then return 0; fi
  local pid
  pid=$(cat "$NODE_DIR/pids/kube-apiserver")  # the kube-apiserver itself (start execs it)
  kill -TERM "$pid" 2>/dev/null || true
  # (kube-apiserver 1.37 stops listening within a second of SIGTERM but at times never exits, as
  # scripts/control-plane.sh's `down` found: SIGKILL after 20 s.)
  if ! wait_for "the kube-apiserver to exit after SIGTERM" 20 stopped "$pid" 2>/dev/null; then
    kill -KILL "$pid" 2>/dev/null || true
    wait_for "the kube-apiserver to exit after SIGKILL" 10 stopped "$pid"
  fi
  start_apiserver "$1"
  wait_for "kube-apiserver /readyz" 90 kubectl_ get --raw /readyz
  log "kube-apiserver restarted with --enable-aggregator-routing=$1"
}

start_control_plane() {
  local p=$CP_DIR/pki
  start etcd "$(ensure_etcd)" --data-dir "$NODE_DIR/etcd" --name farm-node \
    --listen-client-urls http://127.0.0.1:2379 --advertise-client-urls http://127.0.0.1:2379 \
    --listen-peer-urls http://127.0.0.1:2380 --initial-advertise-peer-urls http://127.0.0.1:2380 \
    --initial-cluster farm-node=http://127.0.0.1:2380
  start_apiserver true
  kubeconfig "$NODE_DIR/kubeconfig" admin
  wait_for "kube-apiserver /readyz" 90 kubectl_ get --raw /readyz
  # The cluster DNS (what CoreDNS is to kubeadm): Services and StatefulSet Pods by name.
  start node-dns env KUBECONFIG="$NODE_DIR/kubeconfig" "$(node_dns_binary)" --listen "$NODE_IP:53" --zone "$CLUSTER_DOMAIN"
  wait_for "node-dns serving" 30 grep -q serving "$NODE_DIR/logs/node-dns.log"
  kubeconfig "$NODE_DIR/controller-manager.kubeconfig" controller-manager
  start kube-controller-manager sh -c "$SUPERVISED" supervised "$(kubernetes_binary kube-controller-manager)" \
    --kubeconfig "$NODE_DIR/controller-manager.kubeconfig" --use-service-account-credentials=true \
    --service-account-private-key-file "$p/sa.key" --root-ca-file "$p/ca.crt" \
    --leader-elect=false --secure-port=0
  kubeconfig "$NODE_DIR/scheduler.kubeconfig" scheduler
  start kube-scheduler sh -c "$SUPERVISED" supervised "$(kubernetes_binary kube-scheduler)" --kubeconfig "$NODE_DIR/scheduler.kubeconfig" \
    --leader-elect=false
}

# A node's daemons: containerd, the kubelet, kube-proxy. With `boot`, containerd already has the
# images (the node is powered on again).
start_node() {
  # (containerd finds its shim on its PATH.)
  start containerd env PATH="$(container_runtime_dir):$PATH" "$(container_runtime_dir)/containerd" --config "$NODE_DIR/containerd.toml"
  wait_for containerd 30 ctr_ version
  if [ "${1:-}" != boot ]; then
    # The pause and workload images, built once for every node.
    if [ "$NODE_DIR" = "$CP_DIR" ]; then image_sh node-images "$CP_DIR/images" "$PAUSE_IMAGE" "$WORKLOAD_IMAGE"; fi
    load_images "$CP_DIR/images"/*.tar
  fi
  [ -f "$CP_DIR/pki/kubelet-$NODE_NAME.crt" ] ||
    cert "kubelet-$NODE_NAME" "/O=system:nodes/CN=system:node:$NODE_NAME" 'extendedKeyUsage = clientAuth'
  kubeconfig "$NODE_DIR/kubelet.kubeconfig" "kubelet-$NODE_NAME"
  start kubelet "$(kubernetes_binary kubelet)" --kubeconfig "$NODE_DIR/kubelet.kubeconfig" \
    --container-runtime-endpoint "unix://$NODE_DIR/containerd.sock" --fail-cgroupv1=false \
    --cgroup-driver cgroupfs --cgroups-per-qos=true --enforce-node-allocatable= \
    --cgroup-root "$(cat "$NODE_DIR/cgroup")/pods" \
    --root-dir "$NODE_DIR/kubelet" --cert-dir "$NODE_DIR/kubelet/pki" \
    --volume-plugin-dir "$NODE_DIR/kubelet/volume-plugins" \
    --node-ip "$NODE_IP" --hostname-override "$NODE_NAME" --fail-swap-on=false \
    --resolv-conf /dev/null \
    --cluster-dns "$CP_IP" --cluster-domain "$CLUSTER_DOMAIN" \
    --anonymous-auth=false --client-ca-file "$CP_DIR/pki/ca.crt" --authorization-mode AlwaysAllow \
    --image-gc-high-threshold 100 --image-gc-low-threshold 99 \
    --eviction-hard 'memory.available<100Mi' --runtime-request-timeout 2m
  # (--eviction-hard replaces the default thresholds, so a machine with little free disk does not
  # taint the node with DiskPressure and evict the tests' Pods.)
  kubeconfig "$NODE_DIR/proxy.kubeconfig" proxy
  start kube-proxy "$(kubernetes_binary kube-proxy)" --kubeconfig "$NODE_DIR/proxy.kubeconfig" \
    --hostname-override "$NODE_NAME" --proxy-mode iptables --cluster-cidr "$CLUSTER_CIDR" \
    --conntrack-max-per-core 0 --conntrack-tcp-timeout-established 0 --conntrack-tcp-timeout-close-wait 0
}

# crates/node-dns, built by cargo into the workspace's target directory; prints its path.
node_dns_binary() {
  (cd "$ROOT" && cargo build --locked --quiet -p farm-node-dns) >&2
  echo "${CARGO_TARGET_DIR:-$ROOT/target}/debug/farm-node-dns"
}

# Local persistent volumes, as a kubeadm cluster's local storage provides them (kind provisions
# the same kind of folders on demand): a default StorageClass without a provisioner and
# VOLUMES PersistentVolumes on this node, folders of its own folder open to any user as
# local-path-provisioner's are.
make_volumes() {
  local i
  {
    printf 'apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: standard\n'
    printf '  annotations: {storageclass.kubernetes.io/is-default-class: "true"}\n'
    printf 'provisioner: kubernetes.io/no-provisioner\nvolumeBindingMode: WaitForFirstConsumer\n'
    for i in $(seq 1 "$VOLUMES"); do
      mkdir -p "$NODE_DIR/volumes/pv-$i" && chmod 0777 "$NODE_DIR/volumes/pv-$i"
      printf -- '---\napiVersion: v1\nkind: PersistentVolume\nmetadata: {name: %s-pv-%s}\n' "$NODE_NAME" "$i"
      printf 'spec:\n  capacity: {storage: 10Gi}\n  accessModes: [ReadWriteOnce]\n'
      printf '  persistentVolumeReclaimPolicy: Retain\n  storageClassName: standard\n  local: {path: %s}\n' "$NODE_DIR/volumes/pv-$i"
      printf '  nodeAffinity: {required: {nodeSelectorTerms: [{matchExpressions: [{key: kubernetes.io/hostname, operator: In, values: [%s]}]}]}}\n' "$NODE_NAME"
    done
  } | kubectl_ apply -f - >/dev/null
}

# The volumes whose claims were deleted (Released: their reclaim policy is Retain), emptied and
# offered again, as a provisioner's Delete policy would give a new volume.
recycle() {
  running || { log "the node is not up: scripts/node.sh up first"; return 1; }
  local pv path
  for pv in $(kubectl_ get pv -o 'jsonpath={range .items[?(@.status.phase=="Released")]}{.metadata.name}{"\n"}{end}'); do
    path=$(kubectl_ get pv "$pv" -o 'jsonpath={.spec.local.path}')
    case "$path" in
      "$NODE_DIR/volumes/"* | "$NODE_DIR/nodes/"*/volumes/*)
        find "$path" -mindepth 1 -delete
        kubectl_ patch pv "$pv" --type merge -p '{"spec": {"claimRef": null}}' >/dev/null
        log "recycled $pv" ;;
    esac
  done
}

load_images() {
  local f
  for f in "$@"; do ctr_ -n k8s.io images import "$f" >/dev/null; done
}

node_ready() {
  [ "$(kubectl_ get node "$NODE_NAME" -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}')" = True ] &&
    [ -z "$(kubectl_ get node "$NODE_NAME" -o 'jsonpath={.spec.taints}')" ] &&
    kubectl_ get serviceaccount default -n default &&
    in_node iptables -t nat -S KUBE-SERVICES | grep -q "${SERVICE_RANGE%.0/*}.1/32"
}

# Whether the node's kubelet renewed its Lease after $1 (a time as the Lease writes them: both
# RFC 3339 in UTC with microseconds, so that they compare as strings).
renewed_since() {
  local renewed
  renewed=$(kubectl_ get lease -n kube-node-lease "$NODE_NAME" -o 'jsonpath={.spec.renewTime}')
  [[ "$renewed" > "$1" ]]
}

running() {
  [ -f "$NODE_DIR/pids/kube-apiserver" ] && [ -e "$NETNS" ] && kill -0 "$(cat "$NODE_DIR/pids/holder")" 2>/dev/null &&
    kubectl_ get --raw /readyz >/dev/null 2>&1
}

# Makes the variables describe the second node (in a subshell: `(as_worker && …)`).
as_worker() {
  NODE_NAME=${WORKER[0]} NODE_IP=${WORKER[1]} POD_SUBNET=${WORKER[2]} VOLUMES=${WORKER[3]}
  NODE_DIR=$CP_DIR/nodes/$NODE_NAME
  ID=$(printf %s "$NODE_DIR" | sha256sum | cut -c1-8)
  NS=farmnode-$ID
  NETNS=/var/run/netns/$NS
}

# The first node's daemons, or a worker's: folders, cgroups, namespaces, containerd, kubelet,
# kube-proxy, until the node is Ready; then its volumes.
up_node() {
  mkdir -p "$NODE_DIR"/{pids,logs,bin}
  make_cgroups
  if [ "$NODE_DIR" = "$CP_DIR" ]; then make_netns; else make_worker_netns; fi
  make_holder
  write_configs
  if [ "$NODE_DIR" = "$CP_DIR" ]; then start_control_plane; fi
  start_node
  wait_for "node $NODE_NAME Ready, untainted, with its Services routed" 120 node_ready
  make_volumes
}

up() {
  if running; then log "already up ($NODE_DIR)"; return; fi
  if [ -e "$NODE_DIR" ]; then down; fi
  local start=$SECONDS
  ensure_packages
  # The binaries first (a first run builds them): nothing is made before they exist.
  ensure_etcd >/dev/null
  ensure_container_runtime >/dev/null
  for component in kube-apiserver kube-controller-manager kube-scheduler kubelet kube-proxy; do
    kubernetes_binary "$component" >/dev/null
  done
  node_dns_binary >/dev/null
  local made=$SECONDS
  mkdir -p "$NODE_DIR/images"
  trap 'log "up failed; removing what it made"; down' ERR
  trap 'log "up interrupted; removing what it made"; down; exit 130' INT TERM
  make_certs
  up_node
  # (The traps are the outer shell's: a failure in the subshell fails `up`, whose trap runs `down`.)
  (trap - ERR INT TERM && as_worker && up_node)
  printf 'KUBECONFIG=%s\nSERVER_IMAGE=%s\nWORKLOAD_IMAGE=%s\nNODE_NETNS=%s\nNODE_IP=%s\nNODES=%s\nCTR=%s\n' \
    "$NODE_DIR/kubeconfig" "$(image_sh default-name)" "$WORKLOAD_IMAGE" "$NETNS" "$NODE_IP" "$(nodes)" \
    "$(container_runtime_dir)/ctr" > "$NODE_DIR/env"
  trap - ERR INT TERM
  log "up in $((SECONDS - made)) s (binaries and packages checked in $((made - start)) s); KUBECONFIG=$NODE_DIR/kubeconfig"
}

# Stops and removes one node's processes, cgroups and network namespace.
down_node() {
  if [ -f "$NODE_DIR/pids/kubelet" ]; then  # the kubelet first, so nothing restarts what is stopped
    kill "$(cat "$NODE_DIR/pids/kubelet")" 2>/dev/null || true
  fi
  kill_cgroups
  remove_cgroups
  ip netns delete "$NS" 2>/dev/null || true
}

down() {
  trap - ERR
  (as_worker && down_node)
  down_node
  # The empty mount points `up` made, unless another node runs: removing a folder that is a mount
  # point in another mount namespace would unmount it there.
  if [ -f "$NODE_DIR/host-dirs" ] && ! ls /run/netns 2>/dev/null | grep -v "^$NS$" | grep -q '^farmnode-'; then
    tac "$NODE_DIR/host-dirs" | xargs -r rmdir 2>/dev/null || true
  fi
  # Whatever is still mounted below NODE_DIR (nothing, unless a mount escaped the namespace).
  grep -F " $NODE_DIR/" /proc/self/mounts | awk '{ print $2 }' | sort -r | xargs -r -n1 umount -l 2>/dev/null || true
  rm -rf "$NODE_DIR"
  log "down: $NODE_DIR and namespace $NS removed"
}

# Runs CMD… with the variables of node $1 (the first node's or the worker's).
on_node() {
  local name=$1; shift
  case "$name" in
    "$NODE_NAME") "$@" ;;
    "${WORKER[0]}") (as_worker && "$@") ;;
    *) log "no node $name: $(nodes)"; return 2 ;;
  esac
}

# The worker lost as a machine is when its power goes: every process at once, nothing stopped
# in order, and its link cut, so that what is sent to it or its Pods goes unanswered.
power_off() {
  [ "$1" = "${WORKER[0]}" ] || { log "power-off: only ${WORKER[0]} (the first node runs the control plane)"; return 2; }
  as_worker
  ip -n "$CP_NS" link set "$(veth)" down
  kill_cgroups
  log "$NODE_NAME powered off"
}

# The worker boots again: what a reboot empties (/run: containerd's state, the Pods' network
# namespaces) emptied, the holder and the daemons started, the link up; until it is Ready.
power_on() {
  [ "$1" = "${WORKER[0]}" ] || { log "power-on: only ${WORKER[0]}"; return 2; }
  as_worker
  stopped "$(cat "$NODE_DIR/pids/holder")" || { log "$NODE_NAME is not powered off"; return 1; }
  local booted
  booted=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
  find "$NODE_DIR/host/run" "$NODE_DIR/containerd/state" -mindepth 1 -delete 2>/dev/null || true
  make_holder
  ip -n "$CP_NS" link set "$(veth)" up
  start_node boot
  # (Ready as the node last reported it is stale: the kubelet's lease renewed since the boot first.)
  wait_for "node $NODE_NAME's kubelet to renew its lease" 120 renewed_since "$booted"
  wait_for "node $NODE_NAME Ready after power-on" 120 node_ready
  log "$NODE_NAME powered on and Ready"
}

# Builds the images the install manifests name and loads them into every node: the
# Deployment's, from the Dockerfile, and etcd's for manifests/ha. A name without a recipe here fails.
images() {
  running || { log "the node is not up: scripts/node.sh up first"; return 1; }
  local name server archive
  server=$(image_sh default-name)
  for name in $(image_sh manifest-images); do
    case "$name" in
      "$server") image_sh build "$name" ;;
      */etcd:v*) image_sh etcd "$name" ;;
      *) log "no recipe for the image $name that the manifests name"; return 1 ;;
    esac
    archive="$NODE_DIR/images/$(basename "${name%%:*}").tar"
    image_sh archive "$name" "$archive"
    load_images "$archive"
    (as_worker && load_images "$archive")
    rm -f "$archive"
    log "loaded $name"
  done
}

case "${1:-}" in
  up) up ;;
  down) down ;;
  image) images ;;
  recycle) recycle ;;
  status) running ;;
  aggregator-routing) aggregator_routing "${2:-}" ;;
  ctr) shift; on_node "${1:?node}" ctr_ "${@:2}" ;;
  power-off) power_off "${2:?node}" ;;
  power-on) power_on "${2:?node}" ;;
  exec) shift; if [ -f "$NODE_DIR/env" ]; then set -a && . "$NODE_DIR/env" && set +a; fi; exec nsenter --net="$NETNS" -- "$@" ;;
  *) echo "usage: $0 up | down | image | recycle | status | aggregator-routing true|false | ctr NODE ARG… |" \
       "power-off NODE | power-on NODE | exec CMD…" >&2; exit 2 ;;
esac
