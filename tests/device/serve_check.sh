#!/usr/bin/env bash
# The service's device check: telemetry/agent/serve_model.py on the GPU (CUDA), driven by the
# load generator at each rate given, its own GOGH_TRAFFIC lines beside the generator's summary.
# No control plane: what it checks is that the real service runs on the device, batches, and
# measures the rate it is sent (tests/integration/test_service_agent.py covers the agent and
# the control plane on the CPU). Writes serve.log and load-<rate>.json to $OUT.
#   PY=python3 OUT=/tmp/out DEVICE=cuda bash tests/device/serve_check.sh [rate ...]
set -u
PY=${PY:-python3}
OUT=${OUT:-/tmp/gogh-device-out}
DEVICE=${DEVICE:-cuda}
RATES=${*:-50 400}
PORT=${PORT:-8181}
mkdir -p "$OUT"
GOGH_SERVICE_PORT=$PORT $PY -m telemetry.agent.serve_model --device "$DEVICE" --batch-size 16 --hidden 2048 \
    --layers 4 --report-interval-s 1 --window-s 5 >"$OUT/serve.log" 2>&1 &
SERVICE=$!
trap 'kill -TERM $SERVICE 2>/dev/null; wait' EXIT
for _ in $(seq 120); do
    grep -q "^serving on " "$OUT/serve.log" && break
    kill -0 $SERVICE 2>/dev/null || { echo "the service exited:"; cat "$OUT/serve.log"; exit 1; }
    sleep 1
done
grep "^serving on " "$OUT/serve.log" || { echo "the service did not start within 120 s"; exit 1; }
status=0
for rate in $RATES; do
    $PY -m telemetry.agent.load_generator --url "http://127.0.0.1:$PORT/predict" --rate "$rate" --duration-s 15 \
        --workers 256 | tee "$OUT/load-$rate.json" || status=1
    sleep 2
    echo "service's last report at $rate requests/s: $(grep '^GOGH_TRAFFIC' "$OUT/serve.log" | tail -n 1)"
done
echo "check $([ $status = 0 ] && echo passed || echo FAILED)"
exit $status
