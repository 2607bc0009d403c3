#!/usr/bin/env bash
# The device check: the real control plane, the real NVML agent on a real NVIDIA GPU, a real
# PyTorch training job placed by the scheduler, on one machine. Prints what happened and writes
# report.json (and the logs) to $OUT. Run from the repository root on the GPU machine, with the
# web stack importable by $PY (the device tool carries it as wheels); CI never runs this.
#   PY=python3 OUT=/tmp/out bash tests/device/h200_check.sh [job steps] [job model] [pair|resume]
# With "pair", a ResNet-18 (batch size 64) job is submitted with the ResNet-50 one: on a
# one-GPU node the scheduler must make them share the GPU, and telemetry measures the pair.
# With "resume", the agent is stopped once the job has reported its first checkpoint (the job
# gets SIGTERM, checkpoints, exits 75) and started again: the job must run again from that
# checkpoint (docs/jobs.md) and succeed with one restart.
# With "suite", only the benchmark suite's 1-GPU part runs (tests/device/profile_suite.sh), and
# its CSV is imported into the catalog set up here (the suite's new workloads created first).
# With "limits", only the power limits' check runs (tests/device/limits_check.py): the job at each
# limit a round may choose, NVML's power and the job's steps/s, the default put back; needs root.
set -u
PY=${PY:-python3}
OUT=${OUT:-/tmp/gogh-device-out}
STEPS=${1:-600}
MODEL=${2:-resnet50}
MODE=${3:-}
mkdir -p "$OUT"
export GOGH_VAR_DIR=${GOGH_VAR_DIR:-/tmp/gogh-device} GOGH_TELEMETRY_MEASUREMENT_INTERVAL_S=15 PYTHONUNBUFFERED=1
rm -rf "$GOGH_VAR_DIR"
if [ "$MODE" = limits ]; then
    OUT="$OUT" $PY tests/device/limits_check.py --steps "$STEPS" --model "$MODEL"
    exit $?
fi
started=$(date +%s)
step() { echo "[$(( $(date +%s) - started ))s] $*"; }

step "setup"
$PY manage.py migrate --noinput -v0 && $PY manage.py load_reference_catalog || exit 1
if [ "$MODE" = suite ]; then
    step "benchmark suite"
    GPU_TYPE=h200 bash tests/device/profile_suite.sh || exit 1
    $PY manage.py shell -c 'from catalog.models import Workload; from catalog.profiling.cases import NEW_WORKLOADS
for name, family, batch, text in NEW_WORKLOADS: Workload.objects.get_or_create(name=name, defaults={"family": family, "batch_size": batch, "description": text})' || exit 1
    $PY manage.py import_measurements "$OUT/suite.csv" || exit 1
    step "done"
    exit 0
fi
$PY manage.py train_predictor --if-none || exit 1
USER_TOKEN=$($PY manage.py create_demo_admin | sed -n 's/^ *Token: *//p')
AGENT_TOKEN=$($PY manage.py create_agent_token agent-gpu-node)
[ -n "$USER_TOKEN" ] && [ -n "$AGENT_TOKEN" ] || { echo "no tokens"; exit 1; }

step "control plane"
$PY manage.py run_stack --port 8000 >"$OUT/stack.log" 2>&1 &
STACK=$!
AGENT=""
trap 'kill -TERM $AGENT $STACK 2>/dev/null; wait' EXIT  # run_stack stops daphne, worker and beat on SIGTERM
ready=""
for _ in $(seq 180); do
    curl -sf -o /dev/null http://127.0.0.1:8000/api/gpu-types/ -H "Authorization: Token $USER_TOKEN" && { ready=1; break; }
    sleep 1
done
[ -n "$ready" ] || { echo "the control plane did not answer within 180 s; see stack.log"; exit 1; }

start_agent() {
    step "agent (NVML)"
    GOGH_AGENT_URL=http://127.0.0.1:8000 GOGH_AGENT_TOKEN=$AGENT_TOKEN \
        $PY -m telemetry.agent --hostname gpu-node --log-dir "$GOGH_VAR_DIR/agent-logs" --progress-interval 5 \
        >>"$OUT/agent.log" 2>&1 &
    AGENT=$!
}
job_field() {  # job id, field: the field of GET /api/jobs/{id}/ ("" when null or absent)
    curl -s http://127.0.0.1:8000/api/jobs/$1/ -H "Authorization: Token $USER_TOKEN" \
        | $PY -c 'import json,sys; value = json.load(sys.stdin).get(sys.argv[1]); print("" if value is None else value)' "$2"
}
start_agent
sleep 15  # idle samples before the job

step "submit"
submit() {  # workload, model: prints the new job's id (the answer itself on stderr if it has none)
    curl -s -X POST http://127.0.0.1:8000/api/jobs/ -H "Authorization: Token $USER_TOKEN" -H 'Content-Type: application/json' \
        -d "{\"workload\": \"$1\", \"min_throughput\": 1, \"max_gpus\": 1, \"total_steps\": $STEPS,
             \"command\": \"$PY tests/device/train_job.py --steps $STEPS --model $2\"}" \
        | $PY -c 'import json,sys; text = sys.stdin.read(); job = json.loads(text) if text.startswith("{") else {}
print(job["id"]) if "id" in job else sys.exit(f"submit refused: {text[:500]}")'
}
IDS=$(submit "ResNet-50 (batch size 64)" "$MODEL") || exit 1
[ "$MODE" = pair ] && { IDS="$IDS $(submit "ResNet-18 (batch size 64)" "${MODEL/50/18}")" || exit 1; }
echo "jobs $IDS"
if [ "$MODE" = resume ]; then
    checkpoint=""
    for _ in $(seq 120); do  # 2 minutes at most
        checkpoint=$(job_field "$IDS" checkpoint_step)
        [ -n "$checkpoint" ] && break
        sleep 1
    done
    [ -n "$checkpoint" ] || { echo "job $IDS reported no checkpoint within 120 s"; exit 1; }
    step "job $IDS checkpointed at step $checkpoint: stopping the agent"
    kill -TERM $AGENT; wait $AGENT; echo "agent exit status $?"
    step "job $IDS: $(job_field "$IDS" state) at checkpoint step $(job_field "$IDS" checkpoint_step)"
    start_agent
fi
for ID in $IDS; do
    state=""
    for _ in $(seq 120); do  # 4 minutes at most
        state=$(job_field "$ID" state)
        case $state in succeeded|failed|cancelled) break;; esac
        sleep 2
    done
    step "job $ID: $state"
done
sleep 20  # idle samples after the jobs, uploads, the last P2 refinement

kill -TERM $AGENT; wait $AGENT; echo "agent exit status $?"; AGENT=""
step "report"
curl -s http://127.0.0.1:8000/metrics -H "Authorization: Token $USER_TOKEN" | grep -E '^gogh_gpu_(power|util)' >"$OUT/metrics.txt"
$PY tests/device/report.py | tee "$OUT/report.json"
tail -n 3 "$GOGH_VAR_DIR"/agent-logs/* >"$OUT/jobs.log" 2>&1
step "done"
# The check passes when every job succeeded and telemetry made at least one measurement; with
# "resume", when the job also ran again once, from its checkpoint (its log says where).
$PY -c 'import json, sys; r = json.load(open(sys.argv[1]))
ok = r["jobs"] and all(j["state"] == "succeeded" for j in r["jobs"]) and r["telemetry_measurements"]
if sys.argv[2] == "resume":
    job = r["jobs"][0]
    ok = ok and job["restarts"] == 1 and job["resume_step"] > 0 and "resumed at step %d " % job["resume_step"] in open(sys.argv[3]).read()
print("check", "passed" if ok else "FAILED"); sys.exit(0 if ok else 1)' "$OUT/report.json" "$MODE" "$GOGH_VAR_DIR/agent-logs/job-$(echo $IDS | cut -d" " -f1).out"
