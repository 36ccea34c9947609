#!/bin/bash
# Fine-tuning run on a GPU machine without espeak-ng/sox (used for v2, issue #13).
# Needs build-demo/gpu-bundle (espeak-ng, sox, their libraries, 4 sox format
# plugins and the Danish espeak-ng data, copied from a Debian 12 machine; see
# README.md) carried along.  Generates the v2 data with 16 processes, then trains
# on the GPU for the time left, exporting the best dev model into $OUT/export-gpu.
#   device_train.sh TRAIN_UTTS TOTAL_SECONDS [extra train.py args]
set -u
PY=${PY:-python3}
START=$(date +%s)
N=${1:-12000}; BUDGET=${2:-540}; shift 2
OUT=${OUT:-build-demo/device-out}; mkdir -p "$OUT"
. "$(dirname "$0")/bundle_path.sh"
espeak-ng -v da+whisper --stdout "Hej med dig." | sox -t wav - -t raw -r 16000 -e float -b 32 -c 1 - | wc -c
sox -n -r 16000 -t mp3 -C 16 /tmp/t.mp3 synth 1 sine 440 && sox /tmp/t.mp3 -n stat 2>&1 | head -2 || { echo "sox mp3 failed"; exit 3; }
nvidia-smi --query-gpu=name,memory.used --format=csv
OMP_NUM_THREADS=1 $PY research/train-demo/make_data.py --v2 --out /tmp/data --tokenizer models/demo/tokenizer.model \
    --train "$N" --dev ${NDEV:-160} --seed 2 --jobs 16 > "$OUT/data.log" 2>&1 &
DPID=$!
# smoke test of the CUDA training path on the dev split while the training data is made
while [ ! -f /tmp/data/dev.jsonl ]; do sleep 2; kill -0 $DPID 2>/dev/null || { cat "$OUT/data.log"; exit 4; }; done
mkdir -p /tmp/tiny && cp /tmp/data/tokenizer.model /tmp/data/dev.*.f16 /tmp/tiny/ && cp /tmp/data/dev.jsonl /tmp/tiny/train.jsonl \
  && head -8 /tmp/data/dev.jsonl > /tmp/tiny/dev.jsonl && for f in /tmp/data/dev.*.f16; do cp $f /tmp/tiny/train.${f#/tmp/data/dev.}; done
$PY research/train-demo/train.py --data /tmp/tiny --run /tmp/tiny/run --export "" --init models/demo --device ${DEVICE:-cuda} \
    --max-steps 3 --ctc-only-steps 0 --ctc-weight 0 --n-test 4 --threads 2 2>&1 | tail -5
[ ${PIPESTATUS[0]} -eq 0 ] || { echo "smoke test failed"; kill $DPID; exit 5; }
wait $DPID; cat "$OUT/data.log"
EL=$(( $(date +%s) - START ))
MIN=$($PY -c "print(round(max(1.0, ($BUDGET - $EL) / 60 - 0.8), 2))")
echo "data ready after $EL s; training for $MIN min"
$PY research/train-demo/train.py --data /tmp/data --run /tmp/run --export "$OUT/export-gpu" --init models/demo \
    --device ${DEVICE:-cuda} --threads 4 --ctc-only-steps 0 --ctc-weight 0 --specaug-from 0 --n-test 50 \
    --max-minutes "$MIN" --time-schedule "$@" 2>&1 | tee "$OUT/train.log"
ls -la "$OUT" "$OUT/export-gpu"
echo "total $(( $(date +%s) - START )) s"
