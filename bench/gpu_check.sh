#!/usr/bin/env bash
# GPU smoke check for converted scripts (needs one CUDA GPU; not run in CI, which is CPU-only).
#
# Converts fixtures/canonical (or fixtures/mnist_style when canonical is absent) and
# fixtures/equivalence, runs each converted script under `torchrun --standalone --nproc_per_node=1`
# with the test probe (tests/support/probe) on, and prints per run: exit code, process-group backend
# (expect nccl), ddpify_runtime.local_device() (expect cuda:LOCAL_RANK = cuda:0), DDP device_ids
# (expect [0]) and the parameters' device. Exits non-zero when any of these is not as expected.
#
#   bash bench/gpu_check.sh            # from the repository root; PYTHON=... to pick the interpreter
set -u
cd "$(dirname "$0")/.."
REPO=$(pwd)
PYTHON=${PYTHON:-$( [ -x .venv/bin/python ] && echo "$REPO/.venv/bin/python" || command -v python3 )}
export OMP_NUM_THREADS=1 PYTHONUNBUFFERED=1
unset RANK LOCAL_RANK WORLD_SIZE MASTER_ADDR MASTER_PORT
WORK=$(mktemp -d "${TMPDIR:-/tmp}/ddpify-gpu-check.XXXXXX")
echo "work dir: $WORK"

"$PYTHON" - <<'PY' || { echo "FAIL: no CUDA device visible to torch"; exit 2; }
import torch
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, available {torch.cuda.is_available()}, "
      f"devices {torch.cuda.device_count()}, nccl {torch.cuda.nccl.version() if torch.cuda.is_available() else None}")
for i in range(torch.cuda.device_count()):
    print(f"  cuda:{i} {torch.cuda.get_device_name(i)}")
raise SystemExit(0 if torch.cuda.is_available() else 1)
PY

if [ -f fixtures/canonical/before.py ]; then
    FIRST=canonical; FIRST_ARGS=(--epochs 2 --out "$WORK/canonical.pt")
else
    FIRST=mnist_style; FIRST_ARGS=(--epochs 1 --num-train 512 --num-test 200 --save-model)
fi
status=0
for case in "$FIRST" equivalence; do
    if [ "$case" = equivalence ]; then args=(--epochs 2 --batch-size 8 --out "$WORK/equivalence.pt"); else args=("${FIRST_ARGS[@]}"); fi
    script="$WORK/${case}_ddp.py"
    if ! "$PYTHON" -m ddpify convert "fixtures/$case/before.py" -o "$script" > "$WORK/$case.convert.log" 2>&1; then
        echo "FAIL $case: conversion failed"; cat "$WORK/$case.convert.log"; status=1; continue
    fi
    mkdir -p "$WORK/$case.run" "$WORK/$case.probe"
    (cd "$WORK/$case.run" && DDPIFY_PROBE_DIR="$WORK/$case.probe" \
        PYTHONPATH="$REPO/tests/support/probe${PYTHONPATH:+:$PYTHONPATH}" \
        timeout 300 "$PYTHON" -m torch.distributed.run --standalone --nproc_per_node=1 "$script" "${args[@]}" \
        > "$WORK/$case.log" 2>&1)
    rc=$?
    echo "== $case: exit code $rc (log: $WORK/$case.log)"
    [ "$rc" -eq 0 ] || { tail -20 "$WORK/$case.log"; status=1; }
    "$PYTHON" - "$WORK/$case.probe" <<'PY' || status=1
import json, pathlib, sys
events = [json.loads(l) for p in sorted(pathlib.Path(sys.argv[1]).glob("*.jsonl")) for l in p.read_text().splitlines()]
init = [e for e in events if e["ev"] == "init"]
ddp = [e for e in events if e["ev"] == "ddp"]
ok = bool(init) and bool(ddp)
for e in init:
    print(f"   rank {e['rank']}: backend {e['backend']}, world {e['world']}, LOCAL_RANK {e['env']['LOCAL_RANK']}")
    ok &= e["backend"] == "nccl"
for e in ddp:
    expected = f"cuda:{e['local_rank']}"
    print(f"   rank {e['rank']}: device {e['local_device']} (expect {expected}), device_ids {e['device_ids']}, "
          f"params on {e['param_devices']}")
    ok &= e["local_device"] == expected and e["device_ids"] == [e["local_rank"]] and e["param_devices"] == [expected]
print("   " + ("OK" if ok else "FAIL: expected nccl, cuda:LOCAL_RANK, device_ids [LOCAL_RANK]"))
raise SystemExit(0 if ok else 1)
PY
done
echo "overall: $([ $status -eq 0 ] && echo OK || echo FAIL)"
exit $status
