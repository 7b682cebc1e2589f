#!/usr/bin/env bash
# `make run`: a local control plane, the MyApp CRD, reconcile-host with the MyApp guest, and the seed's
# demo-app; shows the Deployment and the status, then keeps running until ctrl-c.
set -euo pipefail
cd "$(dirname "$0")/.."
: "${RECONCILE_HOST_CONTROLPLANE_BIN:?set by make run}" "${HOST:?set by make run}" "${MODULE:?set by make run}" "${TESTCLUSTER:?set by make run}"
export PATH="$RECONCILE_HOST_CONTROLPLANE_BIN:$PATH"
work="$(mktemp -d -t reconcile-host-demo.XXXXXX)"
pids=()
cleanup() {
  trap - EXIT INT TERM
  echo; echo "stopping..."
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT INT TERM

echo "==> starting the local control plane (etcd, kube-apiserver, controller-manager, scheduler, kwok)"
"$TESTCLUSTER" >"$work/cluster.out" 2>"$work/cluster.log" &
pids+=($!)
until grep -q '^export KUBECONFIG=' "$work/cluster.out" 2>/dev/null; do
  kill -0 "${pids[0]}" 2>/dev/null || { echo "the control plane failed to start:" >&2; tail -n 40 "$work/cluster.log" >&2; exit 1; }
  sleep 1
done
eval "$(grep '^export KUBECONFIG=' "$work/cluster.out")"

echo "==> applying the MyApp CRD"
kubectl apply -f deploy/crd.yaml
kubectl wait --for condition=established --timeout=60s crd/myapps.example.com

echo "==> starting reconcile-host with $(basename "$MODULE"), serving the CRD's conversion webhook"
webhook_port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$HOST" run --parent example.com/v1alpha1/MyApp --child apps/v1/Deployment --module "$MODULE" \
  --conversion-webhook-addr "127.0.0.1:$webhook_port" --conversion-crd myapps.example.com \
  --webhook-cert-secret default/reconcile-host-webhook-tls \
  >"$work/host.log" 2>&1 &
pids+=($!)
# MyApp v1beta1 served (kubectl's preferred version), converted by the module through the host.
kubectl patch crd myapps.example.com --type=json -p "[
  {\"op\": \"replace\", \"path\": \"/spec/versions/1/served\", \"value\": true},
  {\"op\": \"add\", \"path\": \"/spec/conversion\", \"value\": {\"strategy\": \"Webhook\", \"webhook\": {
    \"conversionReviewVersions\": [\"v1\"], \"clientConfig\": {\"url\": \"https://127.0.0.1:$webhook_port/convert\"}}}}]"
until [ -n "$(kubectl get crd myapps.example.com -o jsonpath='{.spec.conversion.webhook.clientConfig.caBundle}')" ]; do
  kill -0 "${pids[1]}" 2>/dev/null || { echo "reconcile-host stopped:" >&2; tail -n 40 "$work/host.log" >&2; exit 1; }
  sleep 1
done

echo "==> applying the seed's demo-app"
kubectl apply -n default -f examples/myapp/myapp-instance.yaml
if ! kubectl wait -n default myapp/demo-app --for=jsonpath='{.status.phase}'=Ready --timeout=180s; then
  echo "demo-app did not become Ready; host log:" >&2
  tail -n 40 "$work/host.log" >&2
  exit 1
fi

echo; echo "==> kubectl get myapp (v1beta1, converted by the module)"; kubectl get myapp -n default
echo; echo "==> kubectl get myapps.v1alpha1.example.com (as stored)"; kubectl get myapps.v1alpha1.example.com -n default
echo; echo "==> kubectl get deployments -l app=demo-app"; kubectl get deployments -n default -l app=demo-app
echo; echo "==> kubectl get myapp demo-app -o jsonpath='{.status}'"; kubectl get myapp -n default demo-app -o jsonpath='{.status}'; echo
echo; echo "==> kubectl describe myapp demo-app"; kubectl describe myapp -n default demo-app
cat <<MSG

reconcile-host is running (log: $work/host.log). In another shell:
  export PATH="$RECONCILE_HOST_CONTROLPLANE_BIN:\$PATH"
  export KUBECONFIG=$KUBECONFIG
  kubectl get myapp,deployments
Press ctrl-c to stop everything.
MSG
tail -f "$work/host.log" &
pids+=($!)
wait "${pids[1]}"
